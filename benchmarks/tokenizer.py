r"""Tokenizer throughput: our in-graph BertTokenizer next to stock tf-text FastBertTokenizer on the same text.

  python -m benchmarks.tokenizer \
      --text_file=../shared/data/pretraining_golden/squad_contexts.txt \
      --vocab_file=../shared/data/vocab/bert-base-uncased-vocab.txt --do_lower_case=True --batch_size=256

Every tokenizer runs on the same non-empty lines. The in-graph ones run as one `tf.function` per batch of
`--batch_size` strings (batches built beforehand, so only tokenization is timed), one pass each per round, in
interleaved rounds (`--repeats`; the median counts, and MB per CPU-second is printed next to it: our layer cuts a
batch into slices tokenized in parallel, stock runs one op on one core, so the per-CPU-second ratio is the
like-for-like one); the Python ones run line by line; Hugging Face `tokenizers` (if installed) runs
`encode_batch` with its default threads. MB/s counts UTF-8 input bytes. It also checks that our in-graph ids
equal our Python tokenizer's, and counts the lines where stock FastBertTokenizer differs from them.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import time

from absl import flags

flags.DEFINE_string("text_file", None, "Text file; every non-empty line is one input string.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocabulary.")
flags.DEFINE_bool("do_lower_case", True, "Uncased (True) or cased (False) tokenization.")
flags.DEFINE_integer("batch_size", 256, "Strings per in-graph call.")
flags.DEFINE_integer(
    "repeats", 5, "Interleaved rounds (one pass over the text per in-graph tokenizer each); the median counts."
)
flags.DEFINE_bool("python", True, "Also time the pure-Python FullTokenizer (slow).")
flags.mark_flags_as_required(["text_file", "vocab_file"])
FLAGS = flags.FLAGS


def _graph_pass(fn, batches):
    """(pass() -> MB, outputs): `fn` traced once and warmed up; each call tokenizes every batch once."""
    import tensorflow as tf

    traced = tf.function(fn, input_signature=[tf.TensorSpec([None], tf.string)])
    outputs = [traced(b) for b in batches]  # trace and warm up
    mb = sum(len(t) for b in batches for t in b.numpy()) / 1e6

    def one_pass():
        for b in batches:
            traced(b)
        return mb

    return one_pass, outputs


def main(_):
    import tensorflow as tf
    import tensorflow_text as tf_text

    from benchmarks import timing
    from official.nlp.common import text_files
    from official.nlp.tokenizers import text_layers, tokenization

    lines = [line for line in text_files.read_text(FLAGS.text_file).split("\n") if line.strip()]
    mb = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    batches = [tf.constant(lines[i : i + FLAGS.batch_size]) for i in range(0, len(lines), FLAGS.batch_size)]
    print(f"{len(lines)} lines, {mb:.2f} MB, batch_size={FLAGS.batch_size}, do_lower_case={FLAGS.do_lower_case}")

    ours = text_layers.BertTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    one_shard = text_layers.BertTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case, parallel_shards=1)
    exact_only = text_layers.BertTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case, fast_path=False)
    stock = tf_text.FastBertTokenizer(
        ours.vocabulary, token_out_type=tf.int32, lower_case_nfd_strip_accents=FLAGS.do_lower_case
    )
    stock_name = "tf-text FastBertTokenizer (stock, inexact)"
    ours_name = f"BertTokenizer (ours, exact, {ours.parallel_shards} shards)"
    graph = {
        stock_name: stock.tokenize,
        ours_name: ours.tokenize,
        "BertTokenizer parallel_shards=1": one_shard.tokenize,
        "BertTokenizer fast_path=False (exact path only)": exact_only.tokenize,
    }
    passes, outputs = {}, {}
    for name, fn in graph.items():
        passes[name], outputs[name] = _graph_pass(fn, batches)
    rates = timing.interleaved(passes, FLAGS.repeats)
    timing.print_table("in-graph tokenizers", rates, reference=stock_name, unit="MB/s")
    stock_out, ours_out = outputs[stock_name], outputs[ours_name]
    stock_s = mb / rates[stock_name].median
    results = {name: mb / rate.median for name, rate in rates.items()}

    python = tokenization.FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    start = time.perf_counter()
    python_ids = [python.convert_tokens_to_ids(python.tokenize(line)) for line in lines] if FLAGS.python else None
    if FLAGS.python:
        results["FullTokenizer (ours, pure Python, exact)"] = time.perf_counter() - start
    try:
        import tokenizers

        hf = tokenizers.BertWordPieceTokenizer(
            FLAGS.vocab_file, lowercase=FLAGS.do_lower_case, strip_accents=FLAGS.do_lower_case
        )
        hf.encode_batch(lines[:100], add_special_tokens=False)
        start = time.perf_counter()
        hf.encode_batch(lines, add_special_tokens=False)
        results[f"HF tokenizers {tokenizers.__version__} (Rust, encode_batch)"] = time.perf_counter() - start
    except ImportError:
        pass

    print(f"{'tokenizer':<52} {'MB/s':>7} {'vs stock':>9}")
    for name, seconds in results.items():
        print(f"{name:<52} {mb / seconds:7.2f} {stock_s / seconds:8.2f}x")
    if python_ids is not None:
        flat = lambda outs: [row for out in outs for row in out.to_list()]  # noqa: E731
        ours_ids, stock_ids = flat(ours_out), flat(stock_out)
        print(
            f"ours in-graph == ours Python on {sum(a == b for a, b in zip(ours_ids, python_ids))}/{len(lines)} "
            f"lines; stock FastBertTokenizer differs on {sum(a != b for a, b in zip(stock_ids, python_ids))}"
        )


if __name__ == "__main__":
    cli.run(main)
