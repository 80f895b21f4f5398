r"""The pretraining-data generator against the original google-research/bert script, side by side (the logic is in
`benchmarks.generator_vs_original`).

Both scripts run as fresh processes (start-up included) on the same corpus, the documents of ``--text_file``
repeated in a fresh random order per copy until ``--corpus_mb``, with the same flags and one output file, in
turn for ``--rounds`` rounds; it prints wall time, instances, instances/s and peak RSS of each, the ratio, and the
CPU model and core count. ``--original`` is the folder of your own google-research/bert checkout; without it only
our rate is measured. ``--stages`` instead times one worker's stages on the same corpus (microseconds per instance).

  python -m benchmarks.pretraining_data \
      --text_file=../shared/data/pretraining_golden/squad_contexts.txt \
      --vocab_file=../shared/data/vocab/bert-base-uncased-vocab.txt --corpus_mb=64 --original=../bert
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import os
import tempfile

from absl import flags

from benchmarks import generator_vs_original, pretraining_stages

flags.DEFINE_string("text_file", None, "Real text, one sentence per line, blank lines between documents.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocabulary (uncased: the comparison runs --do_lower_case=True).")
flags.DEFINE_float("corpus_mb", 64, "Size of the generated corpus.")
flags.DEFINE_string("original", None, "A google-research/bert checkout (the folder of create_pretraining_data.py).")
flags.DEFINE_float(
    "original_corpus_mb", None, "The original's corpus size, when smaller than ours (default: --corpus_mb)."
)
flags.DEFINE_integer("rounds", 1, "Interleaved rounds (the median counts).")
flags.DEFINE_list("ours_flags", [], "Extra flags for our script only, e.g. --ours_flags=--num_workers=2.")
flags.DEFINE_string("work_dir", None, "Where to put the corpus and the outputs (default: a temporary folder).")
flags.DEFINE_bool("stages", False, "Instead: time one worker's stages on the first --stage_units units of the corpus.")
flags.DEFINE_integer("stage_units", 3, "--stages: how many 4 MB work units to time.")
FLAGS = flags.FLAGS


def main(_):
    if FLAGS.stages:
        work = FLAGS.work_dir or tempfile.mkdtemp(prefix="pdata_stages_")
        corpus = os.path.join(work, "corpus.txt")
        generator_vs_original.make_corpus(FLAGS.text_file, corpus, int(FLAGS.corpus_mb * 2**20))
        pretraining_stages.print_stages(corpus, FLAGS.vocab_file, FLAGS.stage_units)
        return
    generator_vs_original.run(
        generator_vs_original.DataBenchConfig(
            text_file=FLAGS.text_file,
            vocab_file=FLAGS.vocab_file,
            corpus_mb=FLAGS.corpus_mb,
            original=FLAGS.original,
            original_corpus_mb=FLAGS.original_corpus_mb,
            rounds=FLAGS.rounds,
            extra_flags=tuple(FLAGS.ours_flags),
            work_dir=FLAGS.work_dir,
        )
    )


if __name__ == "__main__":
    flags.mark_flags_as_required(["text_file", "vocab_file"])
    cli.run(main)
