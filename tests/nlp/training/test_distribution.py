"""Strategy factory: names, device counts and the errors users hit."""

from __future__ import annotations

import json

import pytest
import tensorflow as tf

from official.nlp.training import distribution


def test_one_device_and_worker_info():
    strategy = distribution.get_distribution_strategy("one_device")
    assert isinstance(strategy, tf.distribute.OneDeviceStrategy)
    assert distribution.worker_info(strategy) == distribution.WorkerInfo(index=0, count=1, is_chief=True)
    assert distribution.local_replica_count(strategy) == 1


def test_errors_name_the_flag():
    with pytest.raises(ValueError, match="--distribution_strategy must be one of"):
        distribution.get_distribution_strategy("parameter_server")
    visible = len(tf.config.list_physical_devices("GPU"))
    with pytest.raises(ValueError, match=rf"--num_gpus={visible + 1} but only {visible} GPU"):
        distribution.get_distribution_strategy("mirrored", num_gpus=visible + 1)
    with pytest.raises(ValueError, match="needs --tpu"):
        distribution.get_distribution_strategy("tpu")


def test_tf_config_for_local_workers():
    config = json.loads(distribution.tf_config_for_local_workers([2001, 2002], 1))
    assert config == {
        "cluster": {"worker": ["localhost:2001", "localhost:2002"]},
        "task": {"type": "worker", "index": 1},
    }


@pytest.mark.parametrize("root", ["local", "ram://non-chief"])
def test_only_the_chief_writes_checkpoints_into_the_model_dir(tmp_path, root):
    """A non-chief worker takes part in every save (multi_worker_mirrored requires it) but writes its checkpoint to a
    local temporary directory of its own, never next to the chief's in a shared bucket; only its input position
    (a name no other worker writes) goes into model_dir."""
    from official.nlp.common import input_files
    from official.nlp.training.checkpointing import CheckpointKeeper

    model_dir = str(tmp_path / "run") if root == "local" else f"{root}/run"
    dataset = tf.data.Dataset.range(10)
    iterator = iter(dataset)
    step = tf.Variable(0, dtype=tf.int64)
    keepers = {
        index: CheckpointKeeper(
            model_dir,
            tf.train.Checkpoint(step=step),
            distribution.WorkerInfo(index=index, count=2, is_chief=index == 0),
            iterator=iterator,
        )
        for index in (1, 0)
    }
    step.assign(3)
    assert keepers[1].save(3) is None
    assert input_files.listdir(model_dir) == ["input_state"]  # nothing of the non-chief's checkpoint
    assert keepers[1].latest_checkpoint is None
    assert keepers[0].save(3).endswith("ckpt-3")
    assert sorted(input_files.listdir(model_dir)) == [
        "checkpoint",
        "ckpt-3.data-00000-of-00001",
        "ckpt-3.index",
        "input_state",
    ]
    assert sorted(input_files.listdir(f"{model_dir}/input_state")) == ["worker-0", "worker-1"]
    assert not input_files.is_remote(keepers[1]._write_dir)  # local scratch, outside the bucket
