"""Runs every script in run_scripts/ in this one process (TensorFlow is imported once) with each command line given
as JSON on stdin, as `python run_scripts/<script>.py <args>` would; prints {script: [[exit status, stderr], ...]}.
With `--cases`, stdin is a list of `[script, working folder, args]` instead, each run once in its folder; prints
`[[exit status, stderr], ...]`.

For command lines that end before `main` runs (flag errors, stray arguments): a script's flags are removed again
after it ran, so that the next script can define its own."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import runpy
import sys

from absl import app, flags

from official.nlp.common import cli  # noqa: F401 (first, as in the scripts)

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "run_scripts"


def run(script: pathlib.Path, args: list[str]) -> tuple[int, str]:
    before = set(flags.FLAGS)
    sys.argv = [str(script), *args]
    stderr = io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stderr(stderr):
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as e:  # absl's app.run ends with sys.exit(main(argv)): None is a success, as in a process
        code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
    finally:
        for name in set(flags.FLAGS) - before:
            delattr(flags.FLAGS, name)
        flags.FLAGS.unparse_flags()
        app._run_init.done = False
        app._register_and_parse_flags_with_usage.done = False
    return code, stderr.getvalue()


def run_in(script: str, cwd: str, args: list[str]) -> tuple[int, str]:
    """`run` of run_scripts/`script` in working folder `cwd`."""
    before = os.getcwd()
    os.chdir(cwd)
    try:
        return run(SCRIPTS / script, args)
    finally:
        os.chdir(before)


if __name__ == "__main__":
    if sys.argv[1:] == ["--cases"]:
        print(json.dumps([run_in(*case) for case in json.load(sys.stdin)]))
        sys.exit(0)
    command_lines = json.load(sys.stdin)
    results = {script.name: [run(script, args) for args in command_lines] for script in sorted(SCRIPTS.glob("*.py"))}
    print(json.dumps(results))
