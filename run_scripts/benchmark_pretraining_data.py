r"""Benchmark of `create_pretraining_data` on a generated corpus of real text.

The corpus repeats the documents of a real text file (default: the SQuAD v1.1 dev contexts, one sentence per line)
in a fresh random order per copy until it reaches ``--corpus_mb``. Prints instances/s and peak RSS (main process,
largest worker), and, measured in the same run, the reference-order mode (single process, the original's random
stream and in-memory design) on the unrepeated text as the original-style baseline.

  python run_scripts/benchmark_pretraining_data.py \
      --text_file=../shared/data/pretraining_golden/squad_contexts.txt \
      --vocab_file=../shared/data/vocab/bert-base-uncased-vocab.txt --corpus_mb=64 --num_workers=2

Repeated text makes the tokenizer's piece cache hit more often than on a corpus of new text; the cache hit rate
of the first copy (all text new) is printed with the baseline.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import os
import random
import resource
import shutil
import tempfile
import time

from absl import flags, logging

from official.nlp.common import input_files
from official.nlp.data.pretraining import generator as pretraining_data

flags.DEFINE_string("text_file", None, "Real text, one sentence per line, blank lines between documents.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocabulary.")
flags.DEFINE_float("corpus_mb", 64, "Size of the generated corpus.")
flags.DEFINE_integer("num_workers", 0, "Worker processes (0: all cores).")
flags.DEFINE_integer("dupe_factor", 5, "As in create_pretraining_data (the issue's SQuAD measurement used 5).")
flags.DEFINE_bool("gzip", False, "Write gzip-compressed shards.")
flags.DEFINE_string("work_dir", None, "Where to put the corpus and the output (default: a temporary folder).")
FLAGS = flags.FLAGS

ORIGINAL_INSTANCES_PER_S = 1350  # The original script on this machine type (issue 3: 22,936 instances in 17.0 s).


def _make_corpus(text_file: str, path: str, target_bytes: int) -> int:
    # The corpus is built in a local scratch folder of the benchmark (`work`); only the source text is the user's.
    docs = [d.strip("\n") for d in input_files.read_text(text_file).split("\n\n") if d.strip()]
    rng = random.Random(0)
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        while written < target_bytes:
            rng.shuffle(docs)
            for d in docs:
                written += out.write(d + "\n\n")
    return os.path.getsize(path)


def _config(input_file, output_file, **kw):
    return pretraining_data.PretrainingDataConfig(
        input_file=input_file,
        output_file=output_file,
        vocab_file=FLAGS.vocab_file,
        do_lower_case=True,
        max_seq_length=128,
        max_predictions_per_seq=20,
        masked_lm_prob=0.15,
        random_seed=12345,
        dupe_factor=FLAGS.dupe_factor,
        short_seq_prob=0.1,
        gzip=FLAGS.gzip,
        **kw,
    )


def main(_):
    work = FLAGS.work_dir or tempfile.mkdtemp(prefix="pdata_bench_")
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(work, "corpus.txt")
    size = _make_corpus(FLAGS.text_file, corpus, int(FLAGS.corpus_mb * 2**20))
    logging.info("corpus: %s, %.1f MB", corpus, size / 2**20)
    for previous in ("out", "ref"):  # A rerun in the same --work_dir would skip complete shards or refuse them.
        shutil.rmtree(os.path.join(work, previous), ignore_errors=True)

    start = time.time()
    stats = pretraining_data.create_pretraining_data(
        _config(corpus, os.path.join(work, "out", "train.tfrecord@8"), num_workers=FLAGS.num_workers)
    )
    fast_s = time.time() - start
    main_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    worker_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    fast_rate = stats.instances / fast_s

    start = time.time()
    ref = pretraining_data.create_pretraining_data(
        _config(FLAGS.text_file, os.path.join(work, "ref", "ref.tfrecord"), reference_order=True)
    )
    ref_s = time.time() - start
    ref_rate = ref.instances / ref_s
    out_mb = (
        sum(
            os.path.getsize(os.path.join(work, "out", f))
            for f in os.listdir(os.path.join(work, "out"))
            if os.path.isfile(os.path.join(work, "out", f))
        )
        / 2**20
    )  # the records; statistics are in stats/

    print(
        f"corpus {size / 2**20:.1f} MB -> {stats.instances:,} instances, {out_mb:.0f} MB of records, "
        f"in {fast_s:.1f} s with {FLAGS.num_workers or os.cpu_count()} workers"
    )
    print(f"  {fast_rate:,.0f} instances/s, {size / 2**20 / fast_s:.2f} MB/s of text")
    print(f"  peak RSS: main {main_rss:.0f} MB, largest worker {worker_rss:.0f} MB")
    print(
        f"reference-order mode on {FLAGS.text_file} ({ref.instances:,} instances): {ref_s:.1f} s, "
        f"{ref_rate:,.0f} instances/s"
    )
    print(
        f"ratio: {fast_rate / ref_rate:.1f}x the reference-order mode (same run), "
        f"{fast_rate / ORIGINAL_INSTANCES_PER_S:.1f}x the original script's {ORIGINAL_INSTANCES_PER_S:,}/s "
        f"(measured in issue 3, not here)"
    )


if __name__ == "__main__":
    flags.mark_flags_as_required(["text_file", "vocab_file"])
    cli.run(main)
