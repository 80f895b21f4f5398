"""A TF-Hub BERT pair used as TF-Hub's BERT tutorials use one, in a process that imports TensorFlow,
tensorflow_text and tensorflow_hub, never `official`:

    python tf_hub_user.py PREPROCESSOR ENCODER OUT.npz [PREPROCESSOR ENCODER OUT.npz ...] -- TEXT...

`preprocessor(texts)` -> `encoder(inputs)`; `bert_pack_inputs` of `tokenize`d pairs (the texts and the texts
reversed) at `seq_length=24`, and of single texts with the preprocessor's default length; `hub.KerasLayer` on both;
the `vocab_file` and `do_lower_case` the encoder carries; `tokenize.get_special_tokens_dict()`. Run on the Model
Garden's pair (the fixtures) and on ours, both in one process (one start-up of TensorFlow instead of two).
"""

import sys

import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tensorflow_text  # noqa: F401  registers the tokenizer ops


def main():
    separator = sys.argv.index("--")
    pairs, texts = sys.argv[1:separator], sys.argv[separator + 1 :]
    assert pairs and len(pairs) % 3 == 0, pairs
    for i in range(0, len(pairs), 3):
        use_pair(*pairs[i : i + 3], texts)
    leaked = sorted(m for m in sys.modules if m == "official" or m.startswith("official."))
    assert not leaked, leaked
    print("modules ok")


def use_pair(preprocessor_path: str, encoder_path: str, out_file: str, texts: list[str]) -> None:
    preprocessor = tf.saved_model.load(preprocessor_path)
    encoder = tf.saved_model.load(encoder_path)
    texts = tf.constant(texts)
    inputs = preprocessor(texts)
    outputs = encoder(inputs)
    pair = preprocessor.bert_pack_inputs(
        [preprocessor.tokenize(texts), preprocessor.tokenize(texts[::-1])], seq_length=tf.constant(24)
    )
    single = preprocessor.bert_pack_inputs([preprocessor.tokenize(texts)])
    layer_outputs = hub.KerasLayer(encoder_path)(hub.KerasLayer(preprocessor_path)(texts))
    with tf.io.gfile.GFile(encoder.vocab_file.asset_path.numpy().decode("utf-8")) as f:
        vocab = f.read().split()
    result = {
        **{name: value.numpy() for name, value in inputs.items()},
        **{f"pair_{name}": value.numpy() for name, value in pair.items()},
        **{f"single_{name}": value.numpy() for name, value in single.items()},
        "sequence_output": outputs["sequence_output"].numpy(),
        "pooled_output": outputs["pooled_output"].numpy(),
        "default": outputs["default"].numpy(),
        "encoder_outputs": np.stack([x.numpy() for x in outputs["encoder_outputs"]]),
        "layer_pooled_output": layer_outputs["pooled_output"].numpy(),
        "vocab_size": np.array(len(vocab)),
        "do_lower_case": np.array(bool(encoder.do_lower_case.numpy())),
        **{f"special_{k}": v.numpy() for k, v in preprocessor.tokenize.get_special_tokens_dict().items()},
    }
    np.savez(out_file, **result)


if __name__ == "__main__":
    main()
