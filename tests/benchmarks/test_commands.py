"""docs/benchmarks.md's commands name entry points that exist, with flags they define. The benchmarks run for
minutes, so the page's blocks are not run as pasted (`not-tested`); a moved file or a renamed flag is caught here.
"""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys

import pytest
from absl import flags

from tests.conftest import REPO_ROOT

DOC = REPO_ROOT / "docs" / "benchmarks.md"
COMMAND = re.compile(r"python (?:-m benchmarks\.(\w+)|benchmarks/(\w+)\.py)((?:\s+--\w+(?:=\S*)?)*)")
ENTRY_POINTS = {
    "compare",
    "goemotions",
    "pretraining_data",
    "pretraining_loop",
    "tokenizer",
    "serving_rate",
    "pilot_batches",
    "pretrain_levers",
    "learning_per_cpu",
    "representation_spread",
}


def _commands() -> list[tuple[str, list[str]]]:
    text = DOC.read_text(encoding="utf-8").replace("\\\n", " ")
    return [(m.group(1) or m.group(2), re.findall(r"--(\w+)", m.group(3))) for m in COMMAND.finditer(text)]


def _defined_flags(module: str) -> set[str]:
    """The flags benchmarks/`module`.py defines: absl's, loaded as a module (its `main` does not run) and removed
    again after, or argparse's for the one that imports nothing from the library."""
    source = (REPO_ROOT / "benchmarks" / f"{module}.py").read_text()
    if "argparse" in source:
        return set(re.findall(r'add_argument\("--(\w+)"', source))
    name = f"benchmarks.{module}"
    runpy.run_path(str(REPO_ROOT / "benchmarks" / f"{module}.py"), run_name=name)
    defined = {f.name for f in flags.FLAGS.flags_by_module_dict().get(name, [])}
    for flag_name in defined:
        delattr(flags.FLAGS, flag_name)
    return defined


def test_every_entry_point_is_on_the_page():
    assert {module for module, _ in _commands()} == ENTRY_POINTS


@pytest.mark.parametrize("module", sorted(ENTRY_POINTS))
def test_the_pages_flags_are_the_entry_points(module):
    defined = _defined_flags(module)
    used = {flag for name, used in _commands() if name == module for flag in used}
    used = {flag[2:] if flag.startswith("no") and flag[2:] in defined else flag for flag in used}  # --nojit
    assert used and used <= defined, f"benchmarks/{module}.py has no flag {sorted(used - defined)}"


@pytest.mark.slow
def test_pretraining_loop_help_keeps_its_line_breaks():
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # what a user's shell has
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.pretraining_loop", "--help"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "flags:" in result.stdout, result.stderr[-2000:]
    usage = result.stdout.split("flags:")[0]
    assert "python -m benchmarks.pretraining_loop \\\n" in usage, usage  # the example's continuation lines stay
    assert not re.search(r"\S {3,}--", usage), usage  # no runs of spaces where line breaks were
    assert "oneDNN" not in result.stderr, result.stderr[-2000:]
