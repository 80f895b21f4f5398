r"""Classifies raw text with an exported classifier, in a process that imports only TensorFlow.

    python run_scripts/examples/classify_with_saved_model.py output/quickstart/export/1 sentences.tsv predictions.tsv

This is all a client of the SavedModel needs: TensorFlow, `import tensorflow_text` (it registers the tokenizer's
ops that the graph uses) and the SavedModel folder, not this library. `sentences.tsv` has a header: a `sentence`
(or `text_a`) column, a `text_b` column for models exported for sentence pairs, and optionally an `expected`
column (a label name). A file without that header is read as one sentence per line. The predictions (the input
columns, label, probability) are written as TSV and printed.
"""

import csv
import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the ops of the in-graph tokenizer)


def read_rows(path):
    with tf.io.gfile.GFile(path, "rb") as f:  # any filesystem: local, gs://
        lines = f.read().decode("utf-8").splitlines()
    header = lines[0].split("\t") if lines else []
    if "sentence" in header or "text_a" in header:
        rows = list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))
        return [
            {
                "text_a": r.get("text_a", r.get("sentence")),
                "text_b": r.get("text_b"),
                "expected": r.get("expected") or "",
            }
            for r in rows
        ]
    return [{"text_a": line, "text_b": None, "expected": ""} for line in lines if line.strip()]


def main(saved_model_dir, input_file, output_file):
    rows = read_rows(input_file)
    serve = tf.saved_model.load(saved_model_dir).signatures["serving_default"]
    inputs = {"text_a": tf.constant([row["text_a"] for row in rows])}
    pair = "text_b" in serve.structured_input_signature[1]
    if pair:
        if any(row["text_b"] is None for row in rows):
            sys.exit(f"{saved_model_dir} classifies sentence pairs: give {input_file} a text_b column")
        inputs["text_b"] = tf.constant([row["text_b"] for row in rows])
    outputs = serve(**inputs)
    labels = [name.decode("utf-8") for name in outputs["label_name"].numpy()]
    probabilities = tf.reduce_max(outputs["probabilities"], axis=-1).numpy()
    columns = ["sentence", "text_b"] if pair else ["sentence"]
    with tf.io.gfile.GFile(output_file, "w") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE, escapechar="\\")
        writer.writerow(columns + ["expected", "label", "probability"])
        for row, label, p in zip(rows, labels, probabilities):
            texts = [row["text_a"]] + ([row["text_b"]] if pair else [])
            writer.writerow(texts + [row["expected"], label, f"{p:.4f}"])
            print(f"{label:>12} {p:.3f}  {' ||| '.join(texts)}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
