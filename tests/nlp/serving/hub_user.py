"""The TF-Hub pair as a TF-Hub user runs it, in a process that imports TensorFlow, tensorflow_text,
tensorflow_hub and tf_keras, never `official`:

    python hub_user.py HUB_DIR OUT.json

`hub.KerasLayer(preprocessor)` -> `hub.KerasLayer(encoder, trainable=True)` -> Dense, fitted on a toy task; then
the encoder's Reusable SavedModel attributes, `training` on and off, and the pair path through `tokenize` and
`bert_pack_inputs` (`arguments=dict(seq_length=...)`). Writes what it saw to OUT.json.
"""

import json
import sys

import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tensorflow_text  # noqa: F401  registers the tokenizer ops
import tf_keras


def main():
    root, out_file = sys.argv[1:3]
    tf_keras.utils.set_random_seed(0)
    preprocessor = hub.KerasLayer(f"{root}/preprocessor")
    encoder = hub.KerasLayer(f"{root}/encoder", trainable=True)
    text = tf_keras.layers.Input(shape=(), dtype=tf.string)
    logits = tf_keras.layers.Dense(2)(encoder(preprocessor(text))["pooled_output"])
    model = tf_keras.Model(text, logits)
    x = np.array(["a good movie", "a bad film", "great fun", "awful and dull"] * 4)
    y = np.array([1, 0, 1, 0] * 4)
    model.compile(tf_keras.optimizers.Adam(1e-3), tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [w.numpy().copy() for w in encoder.trainable_weights]
    history = model.fit(x, y, epochs=30, batch_size=8, verbose=0)
    changed = sum(not np.array_equal(a, w.numpy()) for a, w in zip(before, encoder.trainable_weights))

    loaded = tf.saved_model.load(f"{root}/encoder")
    inputs = tf.saved_model.load(f"{root}/preprocessor")(tf.constant(["a good movie", "東京 café"]))
    runs = {t: [loaded(inputs, training=t)["pooled_output"].numpy() for _ in range(2)] for t in (False, True)}

    raw = tf.saved_model.load(f"{root}/preprocessor")
    tokenize = hub.KerasLayer(raw.tokenize)
    pack = hub.KerasLayer(raw.bert_pack_inputs, arguments=dict(seq_length=20))
    first, second = tf_keras.layers.Input(shape=(), dtype=tf.string), tf_keras.layers.Input(shape=(), dtype=tf.string)
    pair_model = tf_keras.Model([first, second], pack([tokenize(first), tokenize(second)]))
    packed = pair_model([tf.constant(["Who wrote it?", "Naïve 東京"]), tf.constant(["Ann Smith.", ""])])

    result = {
        "losses": history.history["loss"],
        "trainable_weights": len(encoder.trainable_weights),
        "weights": len(encoder.weights),
        "changed": int(changed),
        "variables": len(loaded.variables),
        "trainable_variables": len(loaded.trainable_variables),
        "regularization_losses": len(loaded.regularization_losses),
        "inference_repeats": float(np.abs(runs[False][0] - runs[False][1]).max()),
        "training_repeats": float(np.abs(runs[True][0] - runs[True][1]).max()),
        "pooled": runs[False][0].tolist(),
        "packed": {k: v.numpy().tolist() for k, v in packed.items()},
        "leaked": sorted(m for m in sys.modules if m == "official" or m.startswith("official.")),
    }
    with open(out_file, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
