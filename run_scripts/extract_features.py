r"""Extracts per-token vectors (and optionally sentence vectors) from a BERT model.

    python run_scripts/extract_features.py --input_file=data/sentence_pairs.txt \
        --init_checkpoint=models/minilm --layers=-1,-2,-3,-4 --output_file=features.jsonl

Input: one example per line, `text_a` or `text_a ||| text_b` (a line with the separator but no text on one side
is refused, naming the line; the original tokenized the bars as text). Output: JSON lines in the layout of
google-research/bert's extract_features.py (`--output_format=concat` concatenates the layers per token), and with
`--sentence_vectors_file` an `.npy` of one vector per non-blank line.
--init_checkpoint is a model directory or an original TF1 checkpoint prefix; --bert_config_file, --vocab_file
and --do_lower_case default to the files found with it.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags, logging

from official.nlp.common import config_flags
from official.nlp.tasks.feature_extraction import FeatureExtractionConfig, run_feature_extraction

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, FeatureExtractionConfig)


def main(argv):
    del argv
    config = config_flags.config_from_flags(FLAGS, FeatureExtractionConfig)
    result = run_feature_extraction(config)
    logging.info("Wrote %d examples to %s", result.examples, config.output_file)
    if result.sentence_vectors_shape is not None:
        logging.info("Wrote sentence vectors %s to %s", result.sentence_vectors_shape, config.sentence_vectors_file)


if __name__ == "__main__":
    cli.run(main)
