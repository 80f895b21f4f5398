"""run_pretraining.py as users run it: killed mid-run and restarted with the same command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests import pretraining_records
from tests.conftest import REPO_ROOT

SCRIPT = str(REPO_ROOT / "run_scripts" / "run_pretraining.py")
CONFIG = dict(
    vocab_size=1000,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=128,
    max_position_embeddings=64,
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
)


def _run(args, env=None, script=SCRIPT):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), **(env or {}))
    return subprocess.run(
        [sys.executable, script, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def _checkpoint_values(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if name != "_CHECKPOINTABLE_OBJECT_GRAPH"
    }


@pytest.mark.slow
def test_sigkill_while_saving_then_ctrl_c_then_same_command_resumes_bitwise(tmp_path):
    pretraining_records.write_records(tmp_path / "data", num_files=2, per_file=128)
    vocab = pretraining_records.write_vocab(tmp_path / "vocab.txt")
    (tmp_path / "bert_config.json").write_text(json.dumps(CONFIG))
    flags = [
        f"--input_file={tmp_path / 'data' / '*.tfrecord'}",
        f"--bert_config_file={tmp_path / 'bert_config.json'}",
        f"--vocab_file={vocab}",
        "--do_lower_case",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--train_batch_size=16",
        "--num_train_steps=30",
        "--num_warmup_steps=5",
        "--learning_rate=3e-3",
        "--steps_per_loop=5",
        "--save_checkpoints_steps=10",
        "--deterministic",
        "--shuffle_buffer_size=64",
    ]
    full_dir, killed_dir = tmp_path / "full", tmp_path / "killed"

    full = _run(flags + [f"--model_dir={full_dir}"])
    assert full.returncode == 0, full.stderr[-3000:]

    # Killed after writing ckpt-20's files, before committing them (dropout is on: its RNG state must resume too).
    killed = _run(
        flags + [f"--model_dir={killed_dir}"],
        env={"KILL_AT_STEP": "20"},
        script=str(REPO_ROOT / "tests" / "run_scripts" / "kill_during_save.py"),
    )
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert (killed_dir / "ckpt-20.index").exists()  # on disk...
    assert tf.train.latest_checkpoint(str(killed_dir)).endswith("ckpt-10")  # ...but not committed

    # The same command resumes from ckpt-10; a Ctrl-C once it has committed ckpt-20 says so in one line.
    interrupted = _run(
        flags + [f"--model_dir={killed_dir}"],
        env={"INTERRUPT_AT_STEP": "20"},
        script=str(REPO_ROOT / "tests" / "run_scripts" / "interrupt_after_save.py"),
    )
    assert interrupted.returncode == 130, interrupted.stderr[-3000:]
    assert "Resumed from" in interrupted.stderr and "ckpt-10 (step 10)" in interrupted.stderr
    assert "Removing" in interrupted.stderr and "ckpt-20" in interrupted.stderr  # the uncommitted files went first
    assert "Traceback" not in interrupted.stderr and "KeyboardInterrupt" not in interrupted.stderr
    assert interrupted.stderr.strip().splitlines()[-1] == (
        "run_pretraining: interrupted at step 20; the same command resumes from ckpt-20"
    )

    resumed = _run(flags + [f"--model_dir={killed_dir}"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Resumed from" in resumed.stderr and "ckpt-20 (step 20)" in resumed.stderr

    # Same step count, same weights, same optimizer state: bitwise (determinism is on).
    a = _checkpoint_values(tf.train.latest_checkpoint(str(full_dir)))
    b = _checkpoint_values(tf.train.latest_checkpoint(str(killed_dir)))
    assert tf.train.latest_checkpoint(str(killed_dir)).endswith("ckpt-30")
    assert a.keys() == b.keys() and any("optimizer" in k for k in a)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    # Nothing half-written is left; the export is a model directory.
    leftovers = [n for n in os.listdir(killed_dir) if "_temp" in n or n.endswith((".partial", ".incomplete"))]
    assert not leftovers
    assert {"bert_config.json", "vocab.txt", "do_lower_case", "checkpoint"} <= set(os.listdir(killed_dir / "export"))


def test_script_reports_bad_input(tmp_path):
    pretraining_records.write_records(tmp_path / "data", num_files=1, per_file=8)
    (tmp_path / "bert_config.json").write_text(json.dumps(CONFIG))
    result = _run(
        [
            f"--input_file={tmp_path / 'data' / '*'}",
            f"--bert_config_file={tmp_path / 'bert_config.json'}",
            f"--model_dir={tmp_path / 'run'}",
            "--max_seq_length=64",
            "--max_predictions_per_seq=5",
        ]
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "part-000.tfrecord have input_ids of length 32 but max_seq_length=64" in result.stderr


@pytest.mark.slow
def test_two_phase_launcher(tmp_path):
    pretraining_records.write_records(tmp_path / "seq32", num_files=1, per_file=64)
    pretraining_records.write_records(tmp_path / "seq64", num_files=1, per_file=32, seq_length=64, max_predictions=10)
    vocab = pretraining_records.write_vocab(tmp_path / "vocab.txt")
    (tmp_path / "bert_config.json").write_text(json.dumps(CONFIG))
    env = dict(
        os.environ,
        PYTHON=sys.executable,
        DATA_128=str(tmp_path / "seq32" / "*"),
        DATA_512=str(tmp_path / "seq64" / "*"),
        BERT_CONFIG=str(tmp_path / "bert_config.json"),
        VOCAB=vocab,
        OUT=str(tmp_path / "out"),
        TOTAL_STEPS="10",
        SEQ_1="32",
        PREDICTIONS_1="5",
        BATCH_1="8",
        SEQ_2="64",
        PREDICTIONS_2="10",
        BATCH_2="4",
        WARMUP_1="2",
    )
    result = subprocess.run(
        ["bash", str(REPO_ROOT / "run_scripts" / "pretrain_two_phase.sh"), "--steps_per_loop=3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Restored the pretraining model from" in result.stderr  # phase 2 starts from phase 1
    assert tf.train.latest_checkpoint(str(tmp_path / "out" / "phase1")).endswith("ckpt-9")
    assert tf.train.latest_checkpoint(str(tmp_path / "out" / "phase2")).endswith("ckpt-1")
    export = tmp_path / "out" / "phase2" / "export"
    assert {"bert_config.json", "vocab.txt", "do_lower_case"} <= set(os.listdir(export))
