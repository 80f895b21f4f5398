"""Runs a script of run_scripts/ as a user would, but only once a go file appears: two of them start at the same
instant, however long each took to import TensorFlow.

    python start_together.py READY_FILE GO_FILE SCRIPT [FLAGS...]

Test-only wrapper: it imports what the scripts import, writes READY_FILE, waits for GO_FILE, then runs the real
script's main with the flags (through `cli`, so the exit status and the error line are the script's).
"""

import os
import runpy
import sys
import time

from official.nlp.common import cli  # noqa: F401  (first, as in every script)

# isort: split

import official.nlp.checkpoints.conversion  # noqa: F401
import official.nlp.serving.export_config  # noqa: F401

if __name__ == "__main__":
    ready, go, script, *flags = sys.argv[1:]
    with open(ready, "w") as f:
        f.write(str(os.getpid()))
    deadline = time.monotonic() + 300
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.005)
    path = os.path.join(os.path.dirname(__file__), "..", "..", "run_scripts", script)
    sys.argv = [path, *flags]
    runpy.run_path(path, run_name="__main__")
