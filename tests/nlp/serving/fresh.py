"""Serves SavedModels in a fresh process that imports only TensorFlow (and tensorflow_text unless `mode` is
"no_tf_text"): `fresh_process.py`, run on a list of jobs, its outputs returned. Every served-equals-trained test
compares against what this returns, so the process and its checks live in one place."""

import json
import pathlib
import subprocess
import sys

import numpy as np

SCRIPT = pathlib.Path(__file__).resolve().parent / "fresh_process.py"


def serve(folder, jobs: list, mode: str = "tf_text", probe: tuple = ()) -> dict:
    """Runs `jobs` (see `fresh_process.py`) in a fresh process working in `folder`; returns `<name>/<output>` ->
    array. With `probe` (`TASK=SAVED_MODEL` arguments), the bad-shape probe writes `folder/probed_<mode>.json`.
    Fails unless the process exits cleanly having imported nothing of this library ("modules ok")."""
    folder = pathlib.Path(folder)
    jobs_file, out_file = folder / f"jobs_{mode}.json", folder / f"out_{mode}.npz"
    jobs_file.write_text(json.dumps(jobs))
    probe_args = [str(folder / f"probed_{mode}.json"), *probe] if probe else []
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(jobs_file), str(out_file), mode, *probe_args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(folder),
    )
    assert done.returncode == 0 and "modules ok" in done.stdout, done.stderr[-4000:]
    return dict(np.load(out_file))
