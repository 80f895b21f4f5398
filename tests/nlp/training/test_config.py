"""The checks of the shared training-loop settings, for pretraining and every fine-tuning job before any data is
read: each bad value is named by its flag (a zero batch or loop used to end in ZeroDivisionError or a TensorFlow
traceback). A field's own range is checked when the config is made; `check_training_settings` checks the fields
that must fit together."""

from __future__ import annotations

import dataclasses

import pytest

from official.nlp.common.errors import InputError
from official.nlp.tasks.finetuning_config import FineTuningConfig
from official.nlp.tasks.pretraining_config import PretrainingConfig
from official.nlp.training.config import check_training_settings


@pytest.mark.parametrize(
    "setting, message",
    [
        (dict(train_batch_size=0), "--train_batch_size=0: must be >= 1"),
        (dict(train_batch_size=-8), "--train_batch_size=-8: must be >= 1"),
        (dict(gradient_accumulation_steps=0), "--gradient_accumulation_steps=0: must be >= 1"),
        (dict(steps_per_loop=0), "--steps_per_loop=0: must be >= 1"),
        (dict(save_checkpoints_steps=0), "--save_checkpoints_steps=0: must be >= 1"),
        (dict(keep_checkpoint_max=0), "--keep_checkpoint_max=0: must be >= 1"),
        (dict(num_gpus=-1), "--num_gpus=-1: must be >= 0"),
        (dict(learning_rate=float("inf")), "--learning_rate=inf: must be a finite number"),
        (dict(seed=-1), r"--seed=-1: must be in \[0, 4294967295\]"),
        (dict(mixed_precision="fp8"), "--mixed_precision='fp8': must be one of float32, bfloat16, float16, auto"),
        (dict(distribution_strategy="gpu"), "--distribution_strategy='gpu': must be one of one_device, mirrored, .*"),
        (dict(jit_compile="false"), "--jit_compile='false': must be True or False; got a str"),
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
def test_loop_settings_that_cannot_run_are_refused_by_flag_when_the_config_is_made(base, setting, message):
    with pytest.raises(InputError, match=f"^{message}$"):
        dataclasses.replace(base, **setting)


def test_several_problems_are_named_together():
    with pytest.raises(InputError, match="^--steps_per_loop=0: must be >= 1; --keep_checkpoint_max=0: must be >= 1$"):
        FineTuningConfig(output_dir="/tmp/unused", steps_per_loop=0, keep_checkpoint_max=0)


def test_settings_that_do_not_fit_together_are_refused_by_the_loop_check():
    config = FineTuningConfig(output_dir="/tmp/unused", train_batch_size=6, gradient_accumulation_steps=4)
    with pytest.raises(InputError, match=r"--train_batch_size=6 must divide by replicas \(1\) x"):
        check_training_settings(config, num_replicas=1)


def test_the_defaults_pass():
    check_training_settings(FineTuningConfig(output_dir="/tmp/unused"), num_replicas=1)
    check_training_settings(PretrainingConfig(input_file="x", model_dir="/tmp/unused"), num_replicas=2)


@pytest.mark.parametrize(
    "setting, message",
    [
        (dict(num_train_epochs=float("nan")), "--num_train_epochs=nan: must be a finite number"),
        (dict(num_train_epochs=0.0), r"--num_train_epochs=0.0: must be > 0"),
        (dict(learning_rate=float("inf")), "--learning_rate=inf: must be a finite number"),
        (dict(max_train_examples=0), "--max_train_examples=0: must be >= 1"),
        (dict(max_train_examples=-3), "--max_train_examples=-3: must be >= 1"),
        (dict(warmup_proportion=1.5), r"--warmup_proportion=1.5: must be in \[0, 1\]"),
    ],
)
def test_fine_tuning_numbers_issue_30(setting, message):
    """`--num_train_epochs=nan` crashed converting NaN to int, `--learning_rate=inf` was accepted,
    `--max_train_examples=0` trained on everything and -3 on all but the last 3."""
    from official.nlp.tasks.classification import ClassifierConfig

    with pytest.raises(InputError, match=f"^{message}$"):
        ClassifierConfig(output_dir="/tmp/unused", **setting)
    assert ClassifierConfig(output_dir="/tmp/unused", max_train_examples=None).max_train_examples is None


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
