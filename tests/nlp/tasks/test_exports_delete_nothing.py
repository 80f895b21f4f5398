"""Exports that deleted the user's files (issue 30): each output folder below is refused before any training, and
every file in the scratch folder is still there afterwards with the same bytes.

Before, `run_pretraining --export_dir=.` trained and then deleted the working folder, `--export_dir=<model_dir>/..`
the parent folder, and `--export_dir` set to a fine-tuning run's `--output_dir` or to `--model_dir` replaced that run;
`save_classifier` replaced whatever folder it was given, and saved 3 label names for a 2-class model."""

from __future__ import annotations

import json
import os
import pathlib

import keras
import pytest

from official.nlp.checkpoints import model_dir, model_loading
from official.nlp.common.errors import InputError, OutputExistsError
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier
from official.nlp.tasks import classification, pretraining, pretraining_config
from tests import pretraining_records
from tests.run_scripts.script_runs import CONFIG


def snapshot(folder) -> dict[str, bytes]:
    """{relative path: bytes} of every file under `folder`."""
    folder = pathlib.Path(folder)
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _fine_tuning_run(folder: pathlib.Path) -> pathlib.Path:
    """What a fine-tuning job leaves in its --output_dir (the bytes do not matter to the guard; they must survive)."""
    for name in (
        "checkpoint", "ckpt-8.index", "ckpt-8.data-00000-of-00001", "finetuning_settings.json", "eval_results.txt",
        "eval_history.json", "MRPC.tsv", "train.tf_record", "best_model/checkpoint", "best_model/ckpt-4.index",
        "best_model/finetuning.json", "summaries/eval/events.out.tfevents.1",
    ):  # fmt: skip
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(f"{name} of the user's run\n".encode())
    return folder


@pytest.fixture
def scratch(tmp_path):
    """A user's working folder: notes, a corpus, pretraining records, a fine-tuning run, a pretraining run."""
    (tmp_path / "notes.txt").write_text("my notes\n")
    (tmp_path / "corpus.txt").write_text("a sentence.\nanother one.\n")
    pretraining_records.write_records(tmp_path / "data", num_files=1, per_file=8)
    pretraining_records.write_vocab(tmp_path / "vocab.txt")
    _fine_tuning_run(tmp_path / "mrpc_run")
    run = tmp_path / "runs" / "pretrain"  # a pretraining run of the same model, as far as it got
    for name in ("input_state/worker-0/ckpt-2.index", "summaries/train/events.out.tfevents.1", "notes.md"):
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text(f"{name}\n")
    BertConfig(**CONFIG).to_json_file(str(run / "bert_config.json"))
    return tmp_path


def _pretraining(scratch, **fields) -> pretraining_config.PretrainingConfig:
    return pretraining_config.PretrainingConfig(
        input_file=str(scratch / "data" / "*.tfrecord"),
        bert_config=BertConfig(**CONFIG),
        vocab_file=str(scratch / "vocab.txt"),
        max_seq_length=32,
        max_predictions_per_seq=5,
        train_batch_size=4,
        num_train_steps=2,
        num_warmup_steps=0,
        **fields,
    )


@pytest.mark.parametrize(
    "model_dir_name,export_dir,refusal",  # before: the first two deleted the folder, the others replaced it
    [
        ("run", ".", "--export_dir=. is the working folder: the output would replace everything in it"),
        ("runs/new", "runs/new/..", "--export_dir=runs/new/.. holds --model_dir=runs/new: writing the output there"),
        ("runs/new", "mrpc_run", "--export_dir=mrpc_run holds files this run did not write (MRPC.tsv, best_model/"),
        ("runs/pretrain", "runs/pretrain", "--export_dir=runs/pretrain is --model_dir=runs/pretrain: writing"),
        ("runs/new", "data", "--export_dir=data holds --input_file="),
    ],
)
def test_run_pretraining_refuses_an_export_folder_that_is_not_its_own_before_training(
    scratch, monkeypatch, model_dir_name, export_dir, refusal
):
    monkeypatch.chdir(scratch)
    before = snapshot(scratch)
    config = _pretraining(scratch, model_dir=model_dir_name, export_dir=export_dir)
    with pytest.raises(InputError) as refused:
        pretraining.run_pretraining(config)
    assert str(refused.value).startswith(refusal), str(refused.value)
    assert snapshot(scratch) == before  # nothing deleted, nothing replaced, nothing trained or written


@pytest.fixture(scope="module")
def classifier():
    keras.utils.set_random_seed(0)
    return BertClassifier(BertEncoder.from_bert_config(BertConfig(**CONFIG)), num_classes=2)


def test_save_classifier_writes_a_new_folder_and_refuses_any_other(scratch, classifier):
    config = classifier.encoder.config
    files = model_dir.ModelFiles(config=config, vocab_file=str(scratch / "vocab.txt"), do_lower_case=True)
    before = snapshot(scratch)
    run = str(scratch / "mrpc_run")
    with pytest.raises(OutputExistsError, match=r"mrpc_run already holds files \(MRPC.tsv, best_model, checkpoint"):
        classification.save_classifier(classifier, run, files, task_name="mrpc", labels=["0", "1"])
    with pytest.raises(InputError, match=r"3 label names \(a, b, c\) for a classifier with 2 classes"):
        classification.save_classifier(classifier, str(scratch / "new"), files, task_name="mrpc", labels="abc")
    assert snapshot(scratch) == before and not (scratch / "new").exists()

    saved = classification.save_classifier(classifier, str(scratch / "fit"), files, task_name="mrpc", labels=["0", "1"])
    assert json.loads((scratch / "fit" / model_dir.TASK_FILE).read_text())["labels"] == ["0", "1"]
    assert model_loading.read_model_files(saved).checkpoint == os.path.join(saved, "ckpt-1")
    written = snapshot(scratch / "fit")
    with pytest.raises(OutputExistsError, match="fit already holds files"):  # onto an existing model directory
        classification.save_classifier(classifier, saved, files, task_name="mrpc", labels=["no", "yes"])
    assert snapshot(scratch / "fit") == written
    assert sorted(p.name for p in scratch.iterdir() if p.name.startswith(".")) == []  # no staging left behind
