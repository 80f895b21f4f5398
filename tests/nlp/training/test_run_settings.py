"""The one resume rule of pretraining and fine-tuning (`training.run_settings`); pretraining's use of it is in
tests/nlp/tasks/test_pretraining_settings.py, fine-tuning's in tests/nlp/tasks/test_finetuning.py."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.common.errors import InputError
from official.nlp.training import run_settings
from official.nlp.training.config import TrainingConfig

SETTINGS_FILE = "settings.json"


def _commit_a_checkpoint(directory):
    tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(np.zeros(2))), str(directory), 1).save()


def test_training_settings_leave_out_the_loop_and_device_fields():
    settings = run_settings.training_settings(TrainingConfig(steps_per_loop=7, learning_rate=1e-3))
    assert settings["learning_rate"] == 1e-3 and settings["train_batch_size"] == 32
    assert not set(settings) & set(TrainingConfig.NOT_TRAINING_SETTINGS)


def test_other_settings_are_refused_by_flag_once_a_checkpoint_exists(tmp_path):
    run_settings.record_settings(str(tmp_path), SETTINGS_FILE, {"a": 1, "b": 2}, flag="--output_dir")
    # Nothing trained yet: any settings may replace the recorded ones.
    assert run_settings.check_resume(str(tmp_path), SETTINGS_FILE, {"a": 5}, flag="--output_dir") is False
    _commit_a_checkpoint(tmp_path)
    assert run_settings.check_resume(str(tmp_path), SETTINGS_FILE, {"a": 1, "b": 2}, flag="--output_dir") is True
    with pytest.raises(InputError) as e:
        run_settings.check_resume(str(tmp_path), SETTINGS_FILE, {"a": 1, "b": 3}, flag="--output_dir", hint=" (or X)")
    assert str(e.value) == (
        f"--output_dir={tmp_path} holds a run with other settings (--b: 2 there, 3 now). Rerun with the same flags "
        "to resume it, or choose another --output_dir (or X)."
    )


def test_checkpoints_without_settings_are_refused_or_resumed_with_a_warning(tmp_path, caplog):
    _commit_a_checkpoint(tmp_path)
    with pytest.raises(InputError, match=f"--output_dir={tmp_path} holds checkpoints but no settings.json"):
        run_settings.check_resume(str(tmp_path), SETTINGS_FILE, {"a": 1}, flag="--output_dir")
    with caplog.at_level("WARNING"):
        assert not run_settings.check_resume(str(tmp_path), SETTINGS_FILE, {}, flag="--model_dir", unrecorded="warn")
    assert "holds checkpoints but no settings.json (written by an older version)" in caplog.text


def test_a_setting_recorded_before_its_flag_existed_counts_as_its_default(tmp_path):
    """A flag added after a run was recorded: that run worked as the flag's default does, so a resume at the
    default goes on and one with another value is refused, naming the flag."""
    config = TrainingConfig()
    settings = run_settings.training_settings(config)
    older = {k: v for k, v in settings.items() if k != "weight_decay"}  # as if --weight_decay came later
    run_settings.record_settings(str(tmp_path), SETTINGS_FILE, older, flag="--model_dir")
    _commit_a_checkpoint(tmp_path)
    defaults = run_settings.field_defaults(config)
    assert run_settings.check_resume(str(tmp_path), SETTINGS_FILE, settings, flag="--model_dir", defaults=defaults)
    with pytest.raises(InputError, match=r"--weight_decay: 0.01 there, 0.02 now"):
        run_settings.check_resume(
            str(tmp_path), SETTINGS_FILE, {**settings, "weight_decay": 0.02}, flag="--model_dir", defaults=defaults
        )
    with pytest.raises(InputError, match=r"--weight_decay: None there, 0.01 now"):
        run_settings.check_resume(str(tmp_path), SETTINGS_FILE, settings, flag="--model_dir")
