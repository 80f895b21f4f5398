"""What a training job deletes at start-up in its --model_dir (issue 30: delete only what the library wrote): the
files of a save that a killed job never committed, and nothing else, not even files named like checkpoints."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from official.nlp.training.checkpointing import CheckpointKeeper
from official.nlp.training.distribution import WorkerInfo

CHIEF = WorkerInfo(index=0, count=1, is_chief=True)


def _files(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_only_a_killed_save_is_removed(tmp_path):
    weights = tf.Variable(np.ones([8, 8], np.float32))
    run = tmp_path / "run"
    CheckpointKeeper(str(run), tf.train.Checkpoint(weights=weights), CHIEF).save(10)
    committed = _files(run)
    tf.train.Checkpoint(weights=weights).write(str(run / "ckpt-20"))  # a save killed before its commit
    (run / "ckpt-20_temp").mkdir()
    (run / "ckpt-20_temp" / "part-00000-of-00001.index").write_bytes(b"half")
    copied = {"ckpt-5.index": b"a checkpoint copied in", "ckpt-5.data-00000-of-00001": b"by hand"}
    for name, data in copied.items():
        (run / name).write_bytes(data)
    CheckpointKeeper(str(run), tf.train.Checkpoint(weights=weights), CHIEF)
    assert _files(run) == {**committed, **copied}

    # A folder without any commit record holds no leftover of a run: nothing is removed.
    other = tmp_path / "copied"
    tf.train.Checkpoint(weights=weights).write(str(other / "ckpt-300"))
    before = _files(other)
    CheckpointKeeper(str(other), tf.train.Checkpoint(weights=weights), CHIEF)
    assert _files(other) == before
