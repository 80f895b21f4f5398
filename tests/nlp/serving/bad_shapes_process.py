"""Feeds every signature of a loaded SavedModel a wrong rank and an empty batch; `fresh_process.py` runs it on the
models it has loaded, in its process that imports only TensorFlow (and tensorflow_text).

For each `<task>/<saved model>/<signature>/<input>/<case>` the results hold `{"ok": output shapes}` or `{"error": the
error's type and message}` (or the process's own crash, which is what the checks prevent).
"""

import tensorflow as tf


def _valid(spec_name, dtype, batch, rank):
    """A well-formed input of `batch` rows for the input `spec_name` (rank as the signature's inputs take it)."""
    if dtype == tf.string:
        if spec_name == "endings":
            return tf.constant([["a b."] * 4] * batch, tf.string, shape=[batch, 4])
        if spec_name == "examples":
            return tf.constant([b""] * batch, tf.string, shape=[batch])  # an empty tf.Example parses to defaults
        return tf.constant(["a b"] * batch, tf.string, shape=[batch])
    if spec_name == "masked_lm_positions":
        return tf.ones([batch, 2], dtype)
    return tf.ones([batch] + [4] * (rank - 1), dtype)  # SWAG's ids are [batch, choices, sequence]


def probe(task, path, model, results):
    """Adds to `results` what every signature of the loaded SavedModel `model` (task `task`, at `path`) does with
    an empty batch, a scalar and an extra dimension on each input."""
    for signature, function in model.signatures.items():
        specs = function.structured_input_signature[1]
        # The published specs leave the shape open: the ranks the exports take, by task and input name.
        ranks = {
            n: 3 if task == "swag" and n.startswith("input_") else 1 if s.dtype == tf.string else 2
            for n, s in specs.items()
        }
        ranks.update({"endings": 2})
        results[f"{task}/{path}/{signature}/spec"] = {n: str(s.shape) for n, s in specs.items()}
        cases = {"empty": {n: _valid(n, s.dtype, 0, ranks[n]) for n, s in specs.items()}}
        for name in specs:
            good = {n: _valid(n, s.dtype, 2, ranks[n]) for n, s in specs.items()}
            cases[f"{name}/scalar"] = {**good, name: tf.reshape(good[name], [-1])[0]}
            cases[f"{name}/extra_dim"] = {**good, name: good[name][:, None]}
        for case, inputs in cases.items():
            key = f"{task}/{path}/{signature}/{case}"
            try:
                outputs = function(**inputs)
                results[key] = {"ok": {k: v.shape.as_list() for k, v in outputs.items()}}
            except Exception as e:  # noqa: BLE001  every failure is what the test looks at
                message = getattr(e, "message", str(e))
                results[key] = {"error": type(e).__name__, "message": message}
