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
