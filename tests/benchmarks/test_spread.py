"""benchmarks/spread.py's two measures (benchmarks/representation_spread.py prints them) on hand-worked vectors."""

import os
import subprocess
import sys

import numpy as np
import pytest

from benchmarks.spread import mean_cosine, variance_share
from tests.conftest import REPO_ROOT


def test_variance_share_is_zero_for_one_vector_and_one_for_vectors_centred_on_zero():
    same = np.tile([[3.0, -1.0, 2.0]], (5, 1))
    assert variance_share(same) == pytest.approx(0.0)
    opposite = np.array([[1.0, 2.0], [-1.0, -2.0]])
    assert variance_share(opposite) == pytest.approx(1.0)
    # [0, 0] and [2, 0]: variance 1 in the first dimension, mean squared norm (0 + 4) / 2 = 2.
    assert variance_share(np.array([[0.0, 0.0], [2.0, 0.0]])) == pytest.approx(0.5)


def test_mean_cosine_leaves_out_each_vector_with_itself():
    assert mean_cosine(np.eye(3)) == pytest.approx(0.0)
    assert mean_cosine(np.array([[1.0, 0.0], [2.0, 0.0], [5.0, 0.0]])) == pytest.approx(1.0)
    # Pairs: (a, b) cos 0, (a, c) cos 1/sqrt(2), (b, c) cos 1/sqrt(2); the mean over ordered pairs is the same.
    a, b, c = [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]
    assert mean_cosine(np.array([a, b, c])) == pytest.approx(2 / np.sqrt(2) / 3)


def test_representation_spread_refuses_too_few_texts_in_one_line(tmp_path):
    one_line = tmp_path / "texts.txt"
    one_line.write_text("a single text\n\n")
    command = [sys.executable, "-m", "benchmarks.representation_spread", f"--text_file={one_line}", "--model_dirs=x"]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("un café\nune crêpe\n".encode("latin-1"))
    for extra, message in (
        ("--examples=1", "--examples=1"),
        ("--examples=2", f"--text_file={one_line}: 1 non-empty"),
        (f"--text_file={latin1}", f"{latin1}:1"),  # not UTF-8: the line, not a UnicodeDecodeError
    ):
        done = subprocess.run(command + [extra], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("representation_spread: ") and message in lines[0], done.stderr
