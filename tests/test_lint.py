"""The code is formatted by `ruff format` and clean under the lint rules in pyproject.toml (E, F, I, B, UP).

Run as a test so that `.ci/run` (the README's test command) checks it on every clean clone; fix locally with
`.venv/bin/ruff format . && .venv/bin/ruff check --fix .`.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff(command):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, str(REPO_ROOT)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
