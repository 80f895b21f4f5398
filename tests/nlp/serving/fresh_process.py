"""Runs SavedModel signatures in a process that imports only TensorFlow (and tensorflow_text unless told not to).

    python fresh_process.py JOBS.json OUT.npz tf_text|no_tf_text [PROBED.json TASK=SAVED_MODEL...]

JOBS.json is a list of {"name", "path", "signature", "inputs": {input: {"dtype", "value"}}}; every output is saved
as `<name>/<output>` in OUT.npz (strings decoded), with the loaded model's `max_seq_length`, `do_lower_case` and
`label_names` variables as `<name>/var:<variable>`. With PROBED.json, the SavedModels named after it also get
wrong ranks and empty batches on every signature (`bad_shapes_process.probe`), loaded once for both. The process
fails if anything imported `official`.
"""

import json
import sys

import numpy as np
import tensorflow as tf


def _array(value):
    value = value.numpy()
    return np.char.decode(value.astype(bytes), "utf-8") if value.dtype == object else value


def _tensor(spec):
    if spec["dtype"] == "latin1":  # serialized protos travel through JSON as latin-1 text
        return tf.constant([s.encode("latin-1") for s in spec["value"]], tf.string)
    return tf.constant(spec["value"], dtype=spec["dtype"])


def main():
    jobs_file, out_file, mode, *probe_args = sys.argv[1:]
    if mode == "tf_text":
        import tensorflow_text  # noqa: F401  registers the tokenizer ops
    with open(jobs_file) as f:
        jobs = json.load(f)
    loaded, results = {}, {}
    for job in jobs:
        if job["path"] not in loaded:
            loaded[job["path"]] = tf.saved_model.load(job["path"])
        model = loaded[job["path"]]
        inputs = {k: _tensor(v) for k, v in job["inputs"].items()}
        for key, value in model.signatures[job["signature"]](**inputs).items():
            results[f"{job['name']}/{key}"] = _array(value)
        for var in ("max_seq_length", "do_lower_case", "label_names"):
            results[f"{job['name']}/var:{var}"] = _array(getattr(model, var))
    np.savez(out_file, **results)
    if probe_args:
        from bad_shapes_process import probe  # beside this file, which is on sys.path as the script's folder

        probed = {}
        for job in probe_args[1:]:
            task, path = job.split("=", 1)
            if path not in loaded:
                loaded[path] = tf.saved_model.load(path)
            probe(task, path, loaded[path], probed)
        with open(probe_args[0], "w") as f:
            json.dump(probed, f)
    leaked = sorted(m for m in sys.modules if m == "official" or m.startswith("official."))
    assert not leaked, leaked
    assert mode == "tf_text" or "tensorflow_text" not in sys.modules
    print("modules ok")


if __name__ == "__main__":
    main()
