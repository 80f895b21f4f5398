"""Loads `.keras` text tasks in a fresh process with Keras' safe_mode on and writes their predictions as JSON.

    python keras_process.py JOBS.json OUT.json

JOBS.json is a list of {"name", "path", "x"} (`x` what the task's predict takes, lists for tuples); OUT.json maps
each name to the predictions, arrays as lists. Nothing of the saving process carries over: only the file.
"""

import json
import sys

import keras
import numpy as np

import official.bert  # noqa: F401  registers the library's serializable classes, as a user's import does


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def main():
    jobs_file, out_file = sys.argv[1:]
    with open(jobs_file) as f:
        jobs = json.load(f)
    results = {}
    for job in jobs:
        task = keras.saving.load_model(job["path"], safe_mode=True)
        x = tuple(job["x"]) if job.get("pair") else job["x"]
        results[job["name"]] = _plain(task.predict(x))
    with open(out_file, "w") as f:
        json.dump(results, f)
    print("loaded ok")


if __name__ == "__main__":
    main()
