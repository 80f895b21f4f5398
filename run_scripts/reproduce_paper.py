r"""The BERT paper's ablations, rerun from raw text: Tables 5, 6 and 7 (and the appendix's masking rates).

  python run_scripts/reproduce_paper.py --input_file='../shared/data/wikipedia/wiki_*' --output_dir=output/paper

Prepares the corpus, learns a vocabulary, writes the pretraining records once, pretrains each variant (MLM + NSP,
MLM only, left-to-right LM; several sizes) on the same step budget, fine-tunes each (and a model without
pretraining) on MRPC, SST-2, QNLI, SQuAD v1.1 and CoNLL-2003 with several seeds, and writes results.csv,
results.md (the paper's tables, its numbers beside ours) and plots into --output_dir. --budget=smoke runs the whole
grid in minutes; the default budget is sized for 3 hours on a 2-core CPU. Rerun the same command to resume. One
progress line per stage goes to stdout (the jobs' logs go to stderr). See `official.nlp.paper` and docs/paper.md.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags

from official.nlp.common import config_flags
from official.nlp.paper.config import PaperConfig
from official.nlp.paper.reproduce import reproduce_paper

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, PaperConfig)


def main(_):
    reproduce_paper(config_flags.config_from_flags(FLAGS, PaperConfig))


if __name__ == "__main__":
    cli.run(main)
