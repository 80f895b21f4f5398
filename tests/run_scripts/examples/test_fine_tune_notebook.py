"""Runs run_scripts/examples/fine_tune_with_keras.ipynb end to end (nbclient), on tiny settings, so it never rots.

The notebook converts the real all-MiniLM-L6-v2 weights, fine-tunes a `bert.TextClassifier` on 64 sentences of
data/reviews for one epoch, plots the curve, classifies raw sentences, saves the `.keras` file and exports. The plot
is kept as a PNG: under $BERT_TEST_ARTIFACTS when set (CI keeps that folder), else in the test's tmp dir.
"""

import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

REPO = pathlib.Path(__file__).resolve().parents[3]
NOTEBOOK = REPO / "run_scripts" / "examples" / "fine_tune_with_keras.ipynb"


@pytest.mark.slow
def test_notebook_runs_and_leaves_its_plot(tmp_path, monkeypatch):
    artifacts = pathlib.Path(os.environ.get("BERT_TEST_ARTIFACTS", tmp_path))
    plot = artifacts / "fine_tune_with_keras_training_curve.png"
    if plot.exists():
        plot.unlink()
    # The kernel inherits this process's environment: the settings, and PYTHONPATH to this checkout.
    monkeypatch.setenv("NOTEBOOK_MODEL_DIR", str(tmp_path / "minilm"))
    monkeypatch.setenv("NOTEBOOK_MAX_TRAIN_EXAMPLES", "64")
    monkeypatch.setenv("NOTEBOOK_EPOCHS", "1")
    monkeypatch.setenv("NOTEBOOK_SEQ_LENGTH", "24")
    monkeypatch.setenv("NOTEBOOK_PLOT_FILE", str(plot))
    monkeypatch.setenv("NOTEBOOK_OUTPUT_DIR", str(tmp_path / "out"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()

    assert plot.stat().st_size > 10_000  # a real figure: two panels, axes, lines
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    outputs = "".join(
        out.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
    )
    assert "64 training and 300 dev sentences" in outputs
    assert "dev accuracy per epoch:" in outputs
    nbformat.write(notebook, artifacts / "fine_tune_with_keras.executed.ipynb")
    # The four raw sentences were classified, one line each with a label name.
    predicted = next(cell for cell in notebook.cells if "classifier.predict(" in cell.source)
    lines = [line for line in predicted.outputs[0]["text"].splitlines() if line.strip()]
    assert len(lines) == 4 and all(line.split()[0] in ("negative", "positive") for line in lines)
    # The task was saved whole and exported: a .keras file and a SavedModel that is complete.
    assert (tmp_path / "out" / "classifier.keras").stat().st_size > 1_000_000
    assert (tmp_path / "out" / "export" / "1" / "saved_model.pb").exists()
