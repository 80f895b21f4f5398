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

from absl import flags, logging

from official.nlp.checkpoints import model_dir
from official.nlp.tasks import feature_extraction

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Text file: `text_a` or `text_a ||| text_b` per line.")
flags.DEFINE_string("output_file", None, "JSON lines output.")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Comma-separated encoder layer indexes (-1 is the last).")
flags.DEFINE_string("init_checkpoint", None, "Model directory or original TF1 checkpoint prefix.")
flags.DEFINE_string("bert_config_file", None, "Defaults to bert_config.json next to --init_checkpoint.")
flags.DEFINE_string("vocab_file", None, "Defaults to vocab.txt next to --init_checkpoint.")
flags.DEFINE_bool("do_lower_case", None, "Defaults to the model directory's do_lower_case.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum WordPiece tokens per example, [CLS] and [SEP] included.",
                     lower_bound=3)
flags.DEFINE_integer("batch_size", 32, "Examples per forward pass.", lower_bound=1)
flags.DEFINE_enum("output_format", "original", ["original", "concat"],
                  "original: one values list per layer; concat: the chosen layers concatenated per token.")
flags.DEFINE_string("sentence_vectors_file", None, "Optional .npy with one sentence vector per example.")
flags.DEFINE_enum("sentence_pooling", "pooled", ["pooled", "mean"],
                  "pooled: the tanh pooler on [CLS]; mean: mean over tokens of the chosen layers concatenated.")
flags.mark_flags_as_required(["input_file", "output_file", "init_checkpoint"])


def main(argv):
    del argv
    layers = feature_extraction.parse_layers(FLAGS.layers)
    examples = feature_extraction.read_examples(FLAGS.input_file)  # first: bad input fails before any model work
    files = model_dir.resolve_model_files(
        FLAGS.init_checkpoint, bert_config_file=FLAGS.bert_config_file, vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case)
    results = feature_extraction.extract(
        files.build_encoder(), files.tokenizer(), examples, layers=layers, max_seq_length=FLAGS.max_seq_length,
        batch_size=FLAGS.batch_size)
    vectors = []  # One sentence vector per example, kept while the token vectors stream to the file.
    if FLAGS.sentence_vectors_file:
        results = feature_extraction.collect_sentence_vectors(results, FLAGS.sentence_pooling, vectors)
    count = feature_extraction.write_jsonl(FLAGS.output_file, results, layers=layers,
                                           output_format=FLAGS.output_format)
    logging.info("Wrote %d examples to %s", count, FLAGS.output_file)
    if FLAGS.sentence_vectors_file:
        array = feature_extraction.write_sentence_vectors(FLAGS.sentence_vectors_file, vectors)
        logging.info("Wrote sentence vectors %s to %s", array.shape, FLAGS.sentence_vectors_file)


if __name__ == "__main__":
    cli.run(main)
