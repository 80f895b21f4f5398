r"""Creates masked-LM / next-sentence pretraining TFRecords from text (the original script's flags and semantics).

  python run_scripts/create_pretraining_data.py \
      --input_file='corpus/*.txt' --output_file=out/train.tfrecord@16 \
      --vocab_file=vocab.txt --do_lower_case=True --max_seq_length=128 --max_predictions_per_seq=20 \
      --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5 --short_seq_prob=0.1

Input: one sentence per line, blank lines between documents. Output: the original record schema; statistics go
to a JSON file next to the output. See `official.nlp.data.pretraining.generator` for how work is split and resumed.
"""
from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

from absl import flags, logging

from official.nlp.data.pretraining import generator as pretraining_data

flags.DEFINE_string("input_file", None, "Input text files: a comma-separated list of paths and glob patterns.")
flags.DEFINE_string("output_file", None,
                    "Output TFRecord files: a comma-separated list, or PATH@N for N shards PATH-0000i-of-0000N.")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (True for uncased models, False for cased).")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked-LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10, "Number of passes over the input (each with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked-LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target length for a document.")
flags.DEFINE_bool("do_whole_word_mask", False, "Mask whole words rather than single WordPiece tokens.")
flags.DEFINE_integer("max_ngram_size", 1, "Mask spans of up to this many words (ALBERT n-gram masking, P(n) ~ 1/n).")
flags.DEFINE_bool("use_next_sentence_label", True, "Write next_sentence_labels. False gives MLM-only records of "
                  "contiguous text: B always continues A (no random next segments).")
flags.DEFINE_bool("static_masking", True,
                  "Mask here. False writes unmasked records for on-the-fly masking (masking.dynamic_masking).")
flags.DEFINE_integer("num_workers", 0, "Worker processes (0: all cores). The output does not depend on it.")
flags.DEFINE_bool("gzip", False, "Write gzip-compressed TFRecords (read with compression_type='GZIP').")
flags.DEFINE_float("unit_mb", 4.0,
                   "Size of the independent work units (at least two documents each; the shard count does not "
                   "change them); the random next document and the instance shuffle are drawn within a unit, and "
                   "a worker holds one unit in memory.")
flags.DEFINE_integer("max_line_bytes", 1 << 20, "Longer lines are an error (or skipped with --skip_bad_lines).")
flags.DEFINE_bool("skip_bad_lines", False, "Count and skip lines that are not UTF-8 or too long, instead of failing.")
flags.DEFINE_string("stats_file", None, "Statistics JSON (default: next to the output).")
flags.DEFINE_bool("reference_order", False,
                  "Single process, whole corpus in memory, the original script's exact random stream (slow; for "
                  "comparisons with the original).")
FLAGS = flags.FLAGS


def main(_):
    config = pretraining_data.PretrainingDataConfig(
        input_file=FLAGS.input_file, output_file=FLAGS.output_file, vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq, random_seed=FLAGS.random_seed,
        dupe_factor=FLAGS.dupe_factor, masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob,
        do_whole_word_mask=FLAGS.do_whole_word_mask, max_ngram_size=FLAGS.max_ngram_size,
        use_next_sentence_label=FLAGS.use_next_sentence_label, static_masking=FLAGS.static_masking,
        gzip=FLAGS.gzip, num_workers=FLAGS.num_workers, unit_mb=FLAGS.unit_mb, max_line_bytes=FLAGS.max_line_bytes,
        skip_bad_lines=FLAGS.skip_bad_lines, stats_file=FLAGS.stats_file, reference_order=FLAGS.reference_order)
    stats = pretraining_data.create_pretraining_data(config)
    rates = stats.to_dict()["rates"]
    logging.info("wrote %d instances; masked %.3f of tokens (%.3f of non-special), random next %.3f",
                 stats.instances, rates["masked_fraction"] or 0, rates["masked_fraction_of_non_special"] or 0,
                 rates["random_next_rate"] or 0)


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_file", "output_file", "vocab_file"])
    cli.run(main)
