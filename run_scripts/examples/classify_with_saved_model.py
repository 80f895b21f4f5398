r"""Classifies raw sentences with an exported classifier, in a process that imports only TensorFlow.

    python run_scripts/examples/classify_with_saved_model.py output/quickstart/export/1 sentences.tsv predictions.tsv

This is what a client of the SavedModel needs: TensorFlow, `import tensorflow_text` (it registers the tokenizer's
ops that the graph uses), and the model directory; not this library. `sentences.tsv` has a `sentence` column and
optionally an `expected` column (a label name), or is plain text with one sentence per line. The predictions
(sentence, expected, label, probability) are written as TSV and printed.
"""
import csv
import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the ops of the in-graph tokenizer)


def read_sentences(path):
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().splitlines()
    if lines and lines[0].split("\t")[0] == "sentence":
        rows = list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))
        return [(r["sentence"], r.get("expected") or "") for r in rows]
    return [(line, "") for line in lines if line.strip()]


def main(saved_model_dir, sentences_file, output_file):
    rows = read_sentences(sentences_file)
    serve = tf.saved_model.load(saved_model_dir).signatures["serving_default"]
    outputs = serve(text_a=tf.constant([sentence for sentence, _ in rows]))
    labels = [name.decode("utf-8") for name in outputs["label_name"].numpy()]
    probabilities = tf.reduce_max(outputs["probabilities"], axis=-1).numpy()
    with open(output_file, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE, escapechar="\\")
        writer.writerow(["sentence", "expected", "label", "probability"])
        for (sentence, expected), label, p in zip(rows, labels, probabilities):
            writer.writerow([sentence, expected, label, f"{p:.4f}"])
            print(f"{label:>12} {p:.3f}  {sentence}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
