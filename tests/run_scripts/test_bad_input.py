"""Issue 23, round two, as a user meets it: each bad input below ended in a traceback or an unclear message, and
now ends as one line naming the file, line, flag or checkpoint and the fix (exit 2, no traceback), or as a warning
when the run can go on. Script runs, so marked slow; the same behaviour is checked fast at the library level in
tests/nlp/common/test_text_files.py, tests/nlp/data/test_encodings.py, tests/nlp/training/test_damaged_checkpoints.py
and tests/nlp/tasks/test_job_inputs.py."""

from __future__ import annotations

import glob
import json
import os
import shutil

import pytest

from tests import pretraining_records
from tests.run_scripts.script_runs import CONFIG, assert_user_error, run_in_one_process, run_script, save_tiny_encoder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vocab(tmp_path_factory) -> str:
    return pretraining_records.write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt")


@pytest.fixture(scope="module")
def model(tmp_path_factory, vocab) -> str:
    return save_tiny_encoder(str(tmp_path_factory.mktemp("models") / "encoder"), vocab, "ours")


def truncate(prefix: str) -> None:
    (data,) = glob.glob(prefix + ".data-*")
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)


def test_pretraining_warmup_settings_on_resume_and_a_truncated_checkpoint(tmp_path, vocab):
    pretraining_records.write_records(tmp_path / "data", num_files=1, per_file=32)
    (tmp_path / "bert_config.json").write_text(json.dumps(CONFIG))
    model_dir = tmp_path / "run"
    flags = [
        f"--input_file={tmp_path / 'data' / '*'}",
        f"--bert_config_file={tmp_path / 'bert_config.json'}",
        f"--vocab_file={vocab}",
        f"--model_dir={model_dir}",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--num_train_steps=4",
        "--save_checkpoints_steps=2",
        "--steps_per_loop=2",
    ]
    # A smoke run with the default 10,000 warmup steps: a warning, and it trains.
    first = run_script("run_pretraining.py", *flags, "--train_batch_size=4")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "--num_warmup_steps=10000 is larger than --num_train_steps=4" in first.stderr

    # Resumed with another batch size (a shape traceback before): refused before any work, naming the flag.
    other = run_script("run_pretraining.py", *flags, "--train_batch_size=8", "--max_predictions_per_seq=4")
    message = assert_user_error(
        other, f"--model_dir={model_dir} holds a run with other settings", "--train_batch_size: 4 there, 8 now"
    )
    assert "--max_predictions_per_seq: 5 there, 4 now" in message
    assert f"--init_checkpoint={model_dir / 'export'}" in message

    # The last checkpoint truncated: named with the previous one; deleting it, as the message says, resumes there.
    truncate(str(model_dir / "ckpt-4"))
    again = run_script("run_pretraining.py", *flags, "--train_batch_size=4")
    assert_user_error(
        again,
        f"cannot resume: {model_dir / 'ckpt-4'} is truncated",
        f"To resume from the previous checkpoint, {model_dir / 'ckpt-2'}, delete {model_dir / 'ckpt-4'}.index",
    )
    for path in glob.glob(str(model_dir / "ckpt-4.*")):
        os.remove(path)
    resumed = run_script("run_pretraining.py", *flags, "--train_batch_size=4")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"Resumed from {model_dir / 'ckpt-2'} (step 2)" in resumed.stderr
    assert "step 4/4" in resumed.stderr


def test_convert_checkpoint_and_fine_tuning_name_a_truncated_checkpoint(tmp_path, model, shared_data):
    damaged = tmp_path / "damaged"
    shutil.copytree(model, damaged)
    (prefix,) = {p.rsplit(".", 1)[0] for p in glob.glob(str(damaged / "ckpt-*.index"))}
    truncate(prefix)
    data = _mrpc(tmp_path / "mrpc", shared_data)
    results = run_in_one_process({
        "convert": ("convert_checkpoint.py", [f"--input={damaged}", f"--output_dir={tmp_path / 'out'}"]),
        "fine-tune": ("run_classifier.py", [
            "--task_name=MRPC", f"--data_dir={data}", f"--init_checkpoint={damaged}", "--max_seq_length=32",
            "--do_train", f"--output_dir={tmp_path / 'o'}",
        ]),
    })  # fmt: skip
    assert_user_error(results["convert"], f"{prefix} is truncated", "Copy the checkpoint again")
    assert not (tmp_path / "out").exists()
    assert_user_error(results["fine-tune"], f"{prefix} is truncated", "Copy the checkpoint again")


def _mrpc(folder, shared_data, rows: int = 110, codec: str = "utf-8"):
    folder.mkdir()
    lines = (shared_data / "glue" / "MRPC" / "train.tsv").read_text(encoding="utf-8-sig").split("\n")
    (folder / "train.tsv").write_bytes(("\n".join(lines[: rows + 1]) + "\n").encode(codec, errors="replace"))
    return folder


def test_run_classifier_latin1_data_and_a_missing_dev_file(tmp_path, model, shared_data):
    common = ["--task_name=MRPC", f"--init_checkpoint={model}", "--max_seq_length=32", "--do_train"]
    latin1 = _mrpc(tmp_path / "latin1", shared_data, codec="latin-1")
    no_dev = _mrpc(tmp_path / "no_dev", shared_data)
    results = run_in_one_process({
        "latin1": ("run_classifier.py", [*common, f"--data_dir={latin1}", f"--output_dir={tmp_path / 'o1'}"]),
        "no dev": (
            "run_classifier.py", [*common, "--do_eval", f"--data_dir={no_dev}", f"--output_dir={tmp_path / 'o2'}"]
        ),
    })  # fmt: skip
    train = latin1 / "train.tsv"
    assert_user_error(
        results["latin1"],
        f"{train}:105: not valid UTF-8",
        "seems to be Latin-1 (ISO-8859-1) or Windows-1252",
        f"iconv -f CP1252 -t UTF-8 {train} > {train}.utf8",
    )
    # --do_eval with no dev.tsv: refused before the first step, not after an epoch.
    result = results["no dev"]
    assert_user_error(result, f"--do_eval needs {no_dev / 'dev.tsv'} (--data_dir)")
    assert "Training from step" not in result.stderr and not (tmp_path / "o2").exists()


def test_run_squad_ner_swag_name_a_file_in_another_encoding(tmp_path, model, shared_data):
    common = [f"--init_checkpoint={model}", "--max_seq_length=32", "--do_train"]
    squad_file = tmp_path / "squad.json"
    data = json.loads((shared_data / "squad" / "dev-v2.0-subset-Normans-Rhine.json").read_text(encoding="utf-8"))
    squad_file.write_bytes(json.dumps(data, ensure_ascii=False).encode("utf-16"))
    squad_args = [
        *common, f"--train_file={squad_file}", "--doc_stride=16", "--max_query_length=8", "--version_2_with_negative",
        f"--output_dir={tmp_path / 'q'}",
    ]  # fmt: skip

    conll_file = tmp_path / "train.txt"
    lines = (shared_data / "conll2003" / "iob2" / "train.txt").read_text(encoding="utf-8").splitlines(True)
    conll_file.write_bytes("".join(lines[:300]).encode("utf-16"))

    swag_file = tmp_path / "swag.jsonl"
    rows = [json.loads(r) for r in (shared_data / "swag" / "hf_transformers_sample.jsonl").read_text().splitlines()]
    rows[3]["sent1"] += " at the café"
    swag_file.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("latin-1"))
    results = run_in_one_process(
        {  # one process (`run_in_one_process`): each still one line, exit 2, no traceback
            "squad": ("run_squad.py", squad_args),
            "ner": ("run_ner.py", [*common, f"--train_file={conll_file}", f"--output_dir={tmp_path / 'n'}"]),
            "swag": ("run_swag.py", [*common, f"--train_file={swag_file}", f"--output_dir={tmp_path / 's'}"]),
        }
    )
    assert_user_error(
        results["squad"], f"{squad_file}:1: not valid UTF-8", "seems to be UTF-16", "iconv -f UTF-16 -t UTF-8"
    )
    assert_user_error(results["ner"], f"{conll_file}:1: not valid UTF-8", "seems to be UTF-16")
    assert_user_error(results["swag"], f"{swag_file}:4: not valid UTF-8", "seems to be Latin-1")
