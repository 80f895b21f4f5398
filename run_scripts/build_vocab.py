r"""Learns a WordPiece vocabulary (vocab.txt) from text, with BERT's reserved tokens.

  python run_scripts/build_vocab.py --input_file='corpus/*.txt' --output_file=vocab.txt \
      --vocab_size=30522 --do_lower_case=True --num_unused=99

Words are counted with the library's BasicTokenizer (the original BERT rules), so the vocabulary matches how
`FullTokenizer` / `BertTokenizer` split text; pieces are learned by tensorflow-text's WordPiece learner.
See `official.nlp.tokenizers.wordpiece_vocab`.
"""
from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

from absl import flags, logging

from official.nlp.tokenizers import wordpiece_vocab

flags.DEFINE_string("input_file", None, "Input text files: a comma-separated list of paths and glob patterns.")
flags.DEFINE_string("output_file", None, "Where to write vocab.txt.")
flags.DEFINE_integer("vocab_size", 30522, "Maximum vocabulary size, reserved tokens included.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents before counting (uncased vocabulary).")
flags.DEFINE_integer("num_unused", 0, "Number of [unusedN] tokens to reserve after [PAD].")
flags.DEFINE_integer("min_count", 10, "Minimum count of a word to be a vocabulary candidate (learner lower_thresh).")
flags.DEFINE_integer("max_token_length", 50, "Longest token to learn, in characters.")
flags.DEFINE_integer("max_unique_chars", 1000, "Alphabet size: words with rarer characters are not counted.")
flags.DEFINE_integer("max_lines", None, "Read at most this many lines (all by default).")
flags.mark_flags_as_required(["input_file", "output_file"])
FLAGS = flags.FLAGS


def main(_):
    files = wordpiece_vocab.expand_input_files(FLAGS.input_file)
    vocab = wordpiece_vocab.build_vocab(
        files, FLAGS.vocab_size, FLAGS.do_lower_case, num_unused=FLAGS.num_unused, max_lines=FLAGS.max_lines,
        lower_thresh=FLAGS.min_count, max_token_length=FLAGS.max_token_length,
        max_unique_chars=FLAGS.max_unique_chars)
    wordpiece_vocab.write_vocab(vocab, FLAGS.output_file)
    logging.info("Wrote %d tokens to %s", len(vocab), FLAGS.output_file)


if __name__ == "__main__":
    cli.run(main)
