"""The one check of the shared training-loop settings, run by pretraining and every fine-tuning job before any
data is read: each bad value is named by its flag (a zero batch or loop used to end in ZeroDivisionError or a
TensorFlow traceback)."""

from __future__ import annotations

import dataclasses

import pytest

from official.nlp.common.errors import InputError
from official.nlp.tasks.finetuning import FineTuningConfig
from official.nlp.tasks.pretraining import PretrainingConfig
from official.nlp.training.config import check_training_settings


@pytest.mark.parametrize(
    "setting, message",
    [
        (dict(train_batch_size=0), "--train_batch_size must be positive, got 0"),
        (dict(train_batch_size=-8), "--train_batch_size must be positive, got -8"),
        (dict(gradient_accumulation_steps=0), "--gradient_accumulation_steps must be positive, got 0"),
        (dict(steps_per_loop=0), "--steps_per_loop=0 must be positive"),
        (dict(save_checkpoints_steps=0), "--save_checkpoints_steps=0 must be positive"),
        (dict(keep_checkpoint_max=0), "--keep_checkpoint_max=0 must be positive"),
        (dict(num_gpus=-1), "--num_gpus=-1 must be >= 0"),
        (dict(mixed_precision="fp8"), "--mixed_precision=fp8 must be one of"),
    ],
)
@pytest.mark.parametrize(
    "base",
    [
        FineTuningConfig(output_dir="/tmp/unused"),
        PretrainingConfig(input_file="x", model_dir="/tmp/unused"),
    ],
    ids=["finetuning", "pretraining"],
)
def test_loop_settings_that_cannot_run_are_refused_by_flag(base, setting, message):
    config = dataclasses.replace(base, **setting)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        check_training_settings(config, num_replicas=1)


def test_several_problems_are_named_together():
    config = FineTuningConfig(output_dir="/tmp/unused", steps_per_loop=0, keep_checkpoint_max=0)
    with pytest.raises(InputError, match="--steps_per_loop=0 must be positive; --keep_checkpoint_max=0"):
        check_training_settings(config, num_replicas=1)


def test_the_defaults_pass():
    check_training_settings(FineTuningConfig(output_dir="/tmp/unused"), num_replicas=1)
    check_training_settings(PretrainingConfig(input_file="x", model_dir="/tmp/unused"), num_replicas=2)


def test_a_jobs_optimizer_and_strategy_come_from_its_flags():
    """Pretraining and fine-tuning build their optimizer and strategy from the shared flags in one place."""
    from official.nlp.training.config import TrainingConfig

    config = TrainingConfig(optimizer="lamb", learning_rate=1e-3, weight_decay=0.02, adam_epsilon=1e-7, clip_norm=0.5)
    optimizer = config.build_optimizer(10, 2, end_learning_rate=1e-4)
    assert type(optimizer).__name__ == "BertLamb"
    assert (optimizer.epsilon, optimizer.weight_decay, optimizer.global_clipnorm) == (1e-7, 0.02, 0.5)
    # BERT's schedule: linear decay from --learning_rate to end_learning_rate at step 10, warmup below step 2.
    schedule = optimizer._learning_rate
    assert float(schedule(2)) == pytest.approx(1e-3 * 0.82, rel=1e-5) and float(schedule(10)) == pytest.approx(1e-4)
    assert type(config.make_strategy()).__name__ == "OneDeviceStrategy"
