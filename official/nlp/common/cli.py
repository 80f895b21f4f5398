"""Runs an absl script's ``main`` so that a user's mistake ends as one clean line and a non-zero exit.

    if __name__ == "__main__":
        cli.run(main)

`InputError` (see `errors.py`) is printed as ``<script>: <message>`` on stderr with exit status 2, and no
traceback: tracebacks are for bugs, which still get theirs.
"""
from __future__ import annotations

import os
import sys
from typing import Callable

from absl import app

from official.nlp.common.errors import InputError

USER_ERROR_EXIT = 2


def _guarded(main: Callable, script: str) -> Callable:
    def wrapped(argv):
        try:
            return main(argv)
        except InputError as e:
            print(f"{script}: {e}", file=sys.stderr, flush=True)
            sys.exit(USER_ERROR_EXIT)
    return wrapped


def run(main: Callable, *, script: str | None = None) -> None:
    """`absl.app.run(main)`, with `InputError` reported as one line (``script`` defaults to the file's name)."""
    script = script or os.path.splitext(os.path.basename(sys.argv[0]))[0]
    app.run(_guarded(main, script))
