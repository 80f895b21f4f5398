r"""What keras-hub's `BertTextClassifier` gives for the job of docs/python.md's table: fit and predict on strings, a
`.keras` file, and a SavedModel that takes raw text.

    python -m benchmarks.keras_hub_export --output_dir=output/keras_hub_export

A tiny classifier (a 9-token vocabulary, one layer: no preset needs downloading) is fit and asked for a prediction,
saved and reloaded as `.keras`, exported with `export()` (whose signature this prints), and exported with the
`keras.export.ExportArchive` flow around the preprocessor that keras-hub#1175 gives, which prints its answer or its
error. Needs the `bench` extra (keras-hub).
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import os

from absl import flags

flags.DEFINE_string("output_dir", "output/keras_hub_export", "Where the .keras file and the SavedModels go.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    import keras
    import keras_hub
    import tensorflow as tf

    from official.nlp.common import output_files

    output_files.makedirs(FLAGS.output_dir)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "!"]
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=8)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(vocab), num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=8
    )
    classifier = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=preprocessor)
    classifier.fit(x=["good film", "bad film"], y=[1, 0], batch_size=2, verbose=0)
    print(f"keras-hub {keras_hub.__version__}: predict gives {classifier.predict(x=['good film'], verbose=0)}")

    keras_file = os.path.join(FLAGS.output_dir, "classifier.keras")
    classifier.save(keras_file)
    reloaded = keras.saving.load_model(keras_file)
    print(f"reloaded from .keras: {reloaded.predict(x=['good film'], verbose=0)}")

    exported = os.path.join(FLAGS.output_dir, "export")
    output_files.rmtree(exported)
    classifier.export(exported)
    signature = tf.saved_model.load(exported).signatures["serving_default"].structured_input_signature[1]
    print(f"export() serving_default takes: {sorted(signature)}")

    archive = keras.export.ExportArchive()
    archive.track(classifier)
    archive.add_endpoint(
        name="serve",
        fn=lambda x: classifier(classifier.preprocessor(x)),
        input_signature=[tf.TensorSpec(shape=(None,), dtype=tf.string)],
    )
    target = os.path.join(FLAGS.output_dir, "export_archive")
    output_files.rmtree(target)
    try:
        archive.write_out(target)
        print(f"ExportArchive: {tf.saved_model.load(target).serve(tf.constant(['good film']))}")
    except Exception as e:  # the outcome being measured
        print(f"ExportArchive around the preprocessor fails: {type(e).__name__}: {e}")


if __name__ == "__main__":
    cli.run(main)
