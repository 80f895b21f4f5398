"""Raw-text throughput of an exported SavedModel, measured in a process that imports only TensorFlow.

Run as a script (this file imports nothing from `official`, so the process is what a serving client sees):

    python benchmarks/serving_rate.py --saved_model=/tmp/mrpc_export/1 \\
        --text_file=pairs.tsv --batch_sizes=1,32 --seconds=10

Each line of `--text_file` is one request's text; tab-separated fields feed the signature's string inputs in
order (`text_a`, `text_b`; a single field feeds every input). The lines are cycled in batches, every call's
outputs are fetched to host memory, and one line per batch size is printed:

    batch 1: 61.3 requests/s (61.3 texts/s, 16.3 ms per request, 500 requests)

From Python (e.g. `python -m benchmarks.compare --what=serve`), `run_fresh(saved_model, texts, ...)` writes the texts
to a file, runs this script in a new interpreter and returns `{batch_size: requests_per_second}`.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def measure(
    saved_model: str,
    lines,
    batch_sizes=(1, 32),
    seconds: float = 10.0,
    signature: str = "serving_default",
    min_requests: int = 20,
) -> dict:
    """`{batch_size: {"requests_per_second", "texts_per_second", "requests"}}`, measured in this process."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the tokenizer ops the SavedModel uses

    function = tf.saved_model.load(saved_model).signatures[signature]
    names = sorted(function.structured_input_signature[1])
    names = [n for n in ("text_a", "text_b", "question", "context") if n in names] + [
        n for n in names if n not in ("text_a", "text_b", "question", "context")
    ]
    rows = [line.split("\t") for line in lines]
    columns = [[row[min(i, len(row) - 1)] for row in rows] for i in range(len(names))]
    results = {}
    for batch_size in batch_sizes:
        batches = []
        for start in range(0, max(len(rows), batch_size), batch_size):
            index = [(start + k) % len(rows) for k in range(batch_size)]
            batches.append({name: tf.constant([columns[i][j] for j in index]) for i, name in enumerate(names)})
        for batch in batches[:3]:  # warm-up: the first calls build kernels and caches
            _ = {k: v.numpy() for k, v in function(**batch).items()}
        count, begin = 0, time.perf_counter()
        while count < min_requests or time.perf_counter() - begin < seconds:
            _ = {k: v.numpy() for k, v in function(**batches[count % len(batches)]).items()}
            count += 1
        elapsed = time.perf_counter() - begin
        results[batch_size] = {
            "requests_per_second": count / elapsed,
            "texts_per_second": count * batch_size / elapsed,
            "requests": count,
        }
    return results


def run_fresh(
    saved_model: str,
    texts,
    batch_sizes=(1, 32),
    seconds: float = 10.0,
    signature="serving_default",
    timeout: float = 900,
) -> dict:
    """Runs `measure` in a new Python process (imports only TensorFlow); returns `{batch_size: requests/s}`.

    `texts` are strings, or tuples of strings for signatures with several inputs (joined with tabs).
    """
    with tempfile.TemporaryDirectory() as tmp:
        text_file = os.path.join(tmp, "texts.txt")
        with open(text_file, "w", encoding="utf-8") as f:
            for text in texts:
                fields = [text] if isinstance(text, str) else list(text)
                f.write("\t".join(s.replace("\t", " ").replace("\n", " ") for s in fields) + "\n")
        out = os.path.join(tmp, "results.json")
        command = [
            sys.executable,
            os.path.abspath(__file__),
            f"--saved_model={saved_model}",
            f"--text_file={text_file}",
            f"--batch_sizes={','.join(map(str, batch_sizes))}",
            f"--seconds={seconds}",
            f"--signature={signature}",
            f"--json_output={out}",
        ]
        subprocess.run(command, check=True, timeout=timeout)
        with open(out) as f:
            return {int(k): v["requests_per_second"] for k, v in json.load(f).items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saved_model", required=True, help="An export's version directory (export_dir/<version>).")
    parser.add_argument("--text_file", required=True, help="One request text per line; tabs separate inputs.")
    parser.add_argument("--batch_sizes", default="1,32", help="Comma-separated batch sizes.")
    parser.add_argument("--seconds", type=float, default=10.0, help="Measuring time per batch size.")
    parser.add_argument("--signature", default="serving_default")
    parser.add_argument("--json_output", default=None, help="Also write the results as JSON here.")
    args = parser.parse_args(argv)
    with open(args.text_file, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    if not lines:
        sys.exit(f"benchmark: {args.text_file} holds no text")
    results = measure(
        args.saved_model, lines, [int(b) for b in args.batch_sizes.split(",")], args.seconds, args.signature
    )
    leaked = sorted(m for m in sys.modules if m == "official" or m.startswith("official."))
    assert not leaked, f"the benchmark process imported {leaked}"
    for batch_size, r in results.items():
        print(
            f"batch {batch_size}: {r['requests_per_second']:.1f} requests/s ({r['texts_per_second']:.1f} texts/s, "
            f"{1000 / r['requests_per_second']:.1f} ms per request, {r['requests']} requests)",
            flush=True,
        )
    if args.json_output:
        with open(args.json_output, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
