"""What `export_model` leaves when it stops half-way: every file of an export, the `.keras` one included, counts only
when whole, and the version it was writing is neither shown to TF Serving nor taken by a later export (issue 30:
an interrupted export left a 1,250-byte `keras/1.keras` under its final name, and the rerun wrote version 2 beside
it)."""

from __future__ import annotations

import os

import keras
import pytest

from official.nlp.common.errors import InputError, OutputExistsError
from official.nlp.serving import exporter, versions
from tests.run_scripts.test_concurrent_outputs import save_tiny_classifiers


@pytest.fixture(scope="module")
def classifier(tmp_path_factory) -> str:
    return next(iter(save_tiny_classifiers(tmp_path_factory.mktemp("classifiers")).values()))


@pytest.mark.slow
def test_an_export_interrupted_while_writing_its_keras_file_leaves_nothing_under_a_final_name(
    classifier, tmp_path, monkeypatch
):
    export_dir = tmp_path / "export"
    real_save = keras.Model.save

    def save_then_interrupt(model, path, *args, **kwargs):
        with open(path, "wb") as f:
            f.write(b"PK\x03\x04" + b"\0" * 1246)  # the first 1,250 bytes of the zip, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(keras.Model, "save", save_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        exporter.export_model("classifier", classifier, str(export_dir), max_seq_length=16)
    assert not (export_dir / "keras" / "1.keras").exists() and not (export_dir / "1").exists()
    assert [p.relative_to(export_dir).as_posix() for p in export_dir.rglob("*")] == ["keras"]  # no claim, no staging
    monkeypatch.setattr(keras.Model, "save", real_save)

    paths = exporter.export_model("classifier", classifier, str(export_dir), max_seq_length=16)
    assert paths["saved_model"] == str(export_dir / "1") and versions.is_complete(paths["saved_model"])
    assert os.listdir(export_dir / "keras") == ["1.keras"]
    assert keras.saving.load_model(paths["keras"]).count_params() > 0
    with pytest.raises(OutputExistsError, match="1 already exists; TF Serving versions are immutable"):
        exporter.export_model("classifier", classifier, str(export_dir), max_seq_length=16, version=1)


def test_an_export_folder_that_holds_anything_but_exports_is_refused_before_loading_the_model(tmp_path, monkeypatch):
    from tests.nlp.tasks.test_exports_delete_nothing import _fine_tuning_run, snapshot

    run = _fine_tuning_run(tmp_path / "mrpc_run")
    before = snapshot(tmp_path)
    monkeypatch.setattr(exporter, "load_task_model", lambda *a: pytest.fail("the model was loaded"))
    with pytest.raises(OutputExistsError, match=r"--export_dir=.*mrpc_run holds files that are not exports \(MRPC.tsv"):
        exporter.export_model("classifier", str(tmp_path / "model"), str(run))
    with pytest.raises(InputError, match="--export_dir=.*best_model is --init_checkpoint=.*best_model"):
        exporter.export_model("classifier", str(run / "best_model"), str(run / "best_model"))
    monkeypatch.chdir(run)
    with pytest.raises(InputError, match="--export_dir=. is the working folder"):
        exporter.export_model("classifier", "best_model", ".")
    assert snapshot(tmp_path) == before
