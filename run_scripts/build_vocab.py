r"""Learns a WordPiece vocabulary (vocab.txt) from text, with BERT's reserved tokens.

  python run_scripts/build_vocab.py --input_file='corpus/*.txt' --output_file=vocab.txt \
      --vocab_size=30522 --do_lower_case=True --num_unused=99

Words are counted with the library's BasicTokenizer (the original BERT rules), so the vocabulary matches how
`FullTokenizer` / `BertTokenizer` split text; pieces are learned by tensorflow-text's WordPiece learner.
See `official.nlp.tokenizers.wordpiece_vocab`.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags, logging

from official.nlp.common import config_flags
from official.nlp.tokenizers.wordpiece_vocab import VocabConfig, build_vocab_file

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, VocabConfig)


def main(_):
    result = build_vocab_file(config_flags.config_from_flags(FLAGS, VocabConfig))
    logging.info("Wrote %d tokens to %s", len(result.tokens), result.output_file)


if __name__ == "__main__":
    cli.run(main)
