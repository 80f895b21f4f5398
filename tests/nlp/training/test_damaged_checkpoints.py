"""A committed checkpoint whose files are cut short (a failed disk, a copy that stopped early) is refused on resume
with one message naming it and the previous checkpoint; deleting its files, as the message says, resumes from
that one instead of starting over. The same damage in a checkpoint given to convert or fine-tune names it too."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import integrity
from official.nlp.checkpoints.peers import tf1_checkpoints
from official.nlp.training.checkpointing import CheckpointKeeper
from official.nlp.training.distribution import WorkerInfo

CHIEF = WorkerInfo(index=0, count=1, is_chief=True)


def truncate(prefix: str) -> None:
    (data,) = glob.glob(prefix + ".data-*")
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)


def keeper(model_dir: str, value: tf.Variable) -> CheckpointKeeper:
    return CheckpointKeeper(model_dir, tf.train.Checkpoint(weights=value), CHIEF)


def test_resume_refuses_a_truncated_checkpoint_and_names_the_previous_one(tmp_path):
    model_dir = str(tmp_path / "run")
    weights = tf.Variable(np.zeros([64, 64], np.float32))
    saving = keeper(model_dir, weights)
    for step in (10, 20):
        weights.assign(np.full([64, 64], step, np.float32))
        saving.save(step)
    truncate(os.path.join(model_dir, "ckpt-20"))

    with pytest.raises(integrity.DamagedCheckpointError) as e:
        keeper(model_dir, tf.Variable(np.zeros([64, 64], np.float32))).restore()
    latest, previous = os.path.join(model_dir, "ckpt-20"), os.path.join(model_dir, "ckpt-10")
    assert str(e.value) == (
        f"cannot resume: {latest} is truncated: its .data file is shorter than its .index says. To resume from the "
        f"previous checkpoint, {previous}, delete {latest}.index and {latest}.data-*; or train in a new folder"
    )

    for path in glob.glob(latest + ".*"):  # what the message says to do
        os.remove(path)
    restored = tf.Variable(np.zeros([64, 64], np.float32))
    assert keeper(model_dir, restored).restore() == 10
    np.testing.assert_array_equal(restored.numpy(), np.full([64, 64], 10, np.float32))


def test_the_only_checkpoint_truncated_says_so(tmp_path):
    model_dir = str(tmp_path / "run")
    weights = tf.Variable(np.ones([64, 64], np.float32))
    keeper(model_dir, weights).save(5)
    truncate(os.path.join(model_dir, "ckpt-5"))
    with pytest.raises(integrity.DamagedCheckpointError, match=r"It is the only checkpoint in .*run: train in a new"):
        keeper(model_dir, weights).restore()


def test_a_truncated_tf1_checkpoint_is_named(tmp_path):
    prefix = tf1_checkpoints.write_tf1_checkpoint(
        str(tmp_path / "bert_model.ckpt"), {"bert/embeddings/word_embeddings": np.ones([500, 32], np.float32)}
    )
    truncate(prefix)
    with pytest.raises(integrity.DamagedCheckpointError, match=rf"^{prefix} is truncated: .* Copy the checkpoint"):
        tf1_checkpoints.read_tf1_checkpoint(prefix)


def test_other_index_errors_are_not_mistaken_for_damage():
    @integrity.names_damage
    def read(prefix):
        return [][1]

    with pytest.raises(IndexError, match="list index out of range"):
        read("some/prefix")


def _remove_data(prefix: str) -> str:
    (data,) = glob.glob(prefix + ".data-*")
    os.remove(data)
    return data


def test_a_missing_data_file_is_named_on_resume_and_in_any_checkpoint_given(tmp_path):
    """Issue 30: a checkpoint whose .data file is missing (a copy of the .index alone) ended in an OpError
    traceback, and a resume said the checkpoint "does not match the model being trained"."""
    from official.nlp.checkpoints import model_loading

    run = str(tmp_path / "run")
    weights = tf.Variable(np.ones([4, 4], np.float32))
    saving = keeper(run, weights)
    saving.save(10)
    saving.save(20)
    data = _remove_data(os.path.join(run, "ckpt-20"))
    with pytest.raises(integrity.DamagedCheckpointError) as e:
        keeper(run, weights).restore()
    assert str(e.value).startswith(
        f"cannot resume: {run}/ckpt-20 is incomplete: {data} is missing. To resume from the previous checkpoint, "
        f"{run}/ckpt-10, delete"
    )
    # A model directory given as --init_checkpoint (or to convert, export, extract): found when it is resolved.
    with pytest.raises(integrity.DamagedCheckpointError, match=rf"^{run}/ckpt-20 is incomplete: .* Copy the"):
        model_loading.find_checkpoint(run)
    prefix = tf1_checkpoints.write_tf1_checkpoint(
        str(tmp_path / "bert_model.ckpt"), {"bert/embeddings/word_embeddings": np.ones([5, 3], np.float32)}
    )
    data = _remove_data(prefix)
    with pytest.raises(integrity.DamagedCheckpointError, match=rf"^{prefix} is incomplete: {data} is missing; "):
        tf1_checkpoints.read_tf1_checkpoint(prefix)
