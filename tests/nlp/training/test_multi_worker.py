"""multi_worker_mirrored with two worker processes on loopback (TF_CONFIG with localhost ports)."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.tasks.pretraining import run_pretraining
from official.nlp.tasks.pretraining_config import PretrainingConfig
from tests import pretraining_records
from tests.conftest import REPO_ROOT
from tests.nlp.tasks.test_pretraining import TINY


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
def test_two_workers_match_one_device(tmp_path):
    # One record file: each worker keeps every other record of the same shuffled stream, so the two workers'
    # batches together are the global batch a single device sees.
    pretraining_records.write_records(tmp_path / "data", num_files=1, per_file=256)
    vocab = pretraining_records.write_vocab(tmp_path / "vocab.txt")
    (tmp_path / "bert_config.json").write_text(json.dumps(TINY))
    config = PretrainingConfig(
        input_file=str(tmp_path / "data" / "*"),
        bert_config_file=str(tmp_path / "bert_config.json"),
        vocab_file=vocab,
        do_lower_case=True,
        model_dir=str(tmp_path / "multi"),
        max_seq_length=32,
        max_predictions_per_seq=5,
        train_batch_size=16,
        num_train_steps=20,
        num_warmup_steps=2,
        learning_rate=3e-3,
        steps_per_loop=5,
        save_checkpoints_steps=10,
        distribution_strategy="multi_worker_mirrored",
    )
    ports = _free_ports(2)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    config_json = json.dumps(dataclasses.asdict(config))
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.nlp.training.multi_worker_child",
                str(i),
                ",".join(map(str, ports)),
                config_json,
            ],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    try:
        outputs = [w.communicate(timeout=240) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
    results = []
    for worker, (out, err) in zip(workers, outputs):
        lines = [line for line in out.splitlines() if line.startswith("RESULTS ")]
        assert worker.returncode == 0 and lines, err[-3000:]
        results.append(json.loads(lines[0][len("RESULTS ") :]))

    single = run_pretraining(
        dataclasses.replace(config, model_dir=str(tmp_path / "single"), distribution_strategy="one_device")
    )
    reference = [h["loss"] for h in single.history]
    for result in results:
        assert result["step"] == 20
        np.testing.assert_allclose(result["losses"], reference, rtol=1e-5)
    assert reference[-1] < reference[0] - 0.3
    # Only the chief exports and writes checkpoints; every worker saves its own input position.
    assert results[0]["export_dir"] and results[1]["export_dir"] is None
    assert tf.train.latest_checkpoint(config.model_dir).endswith("ckpt-20")
    for i in range(2):
        assert os.path.exists(os.path.join(config.model_dir, "input_state", f"worker-{i}", "ckpt-20.index"))
    # The other worker saved its checkpoints into a local temporary directory of its own: in model_dir (a bucket on
    # a TPU slice) nothing but its input position is of its making.
    assert not [n for n in os.listdir(config.model_dir) if "worker" in n or n.startswith(".")]
    multi, one = (tf.train.load_checkpoint(d) for d in (results[0]["export_dir"], single.export_dir))
    for name in one.get_variable_to_shape_map():
        if name.startswith("encoder/") and name.endswith("VARIABLE_VALUE"):
            np.testing.assert_allclose(multi.get_tensor(name), one.get_tensor(name), atol=1e-5, err_msg=name)
