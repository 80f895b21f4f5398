"""What a resumed pretraining run must share with the run that wrote `model_dir` (the script-level run, with the
shape traceback it replaces, is in tests/run_scripts/test_bad_input.py)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.common.errors import InputError
from official.nlp.tasks import pretraining_config
from official.nlp.training import run_settings


def _config(model_dir, **changes):
    config = pretraining_config.PretrainingConfig(input_file="data/*", model_dir=str(model_dir), train_batch_size=32)
    return dataclasses.replace(config, **changes)


def _record(config):
    settings = run_settings.training_settings(config)
    run_settings.record_settings(
        config.model_dir, pretraining_config.PRETRAINING_SETTINGS_FILE, settings, flag="--model_dir"
    )


def _commit_a_checkpoint(model_dir):
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(np.zeros(2))), str(model_dir), 1)
    manager.save()


def test_a_resume_with_settings_that_change_the_training_is_refused_by_flag(tmp_path):
    _record(_config(tmp_path))
    _commit_a_checkpoint(tmp_path)
    assert pretraining_config.check_pretraining_resume(_config(tmp_path)) is True
    # Loop, device and path settings may change on resume.
    assert pretraining_config.check_pretraining_resume(
        _config(tmp_path, steps_per_loop=7, input_file="gs://b/data/*", num_gpus=2)
    )
    with pytest.raises(InputError) as e:
        pretraining_config.check_pretraining_resume(_config(tmp_path, train_batch_size=64, masked_lm_prob=0.2))
    assert str(e.value).startswith(
        f"--model_dir={tmp_path} holds a run with other settings (--masked_lm_prob: 0.15 there, 0.2 now; "
        "--train_batch_size: 32 there, 64 now). Rerun with the same flags to resume it"
    )


def test_settings_without_a_checkpoint_bind_nothing(tmp_path):
    """A run stopped before its first checkpoint trained nothing: the next one may change anything."""
    _record(_config(tmp_path, learning_rate=1e-2))
    assert pretraining_config.check_pretraining_resume(_config(tmp_path, learning_rate=1e-4)) is False


def test_an_older_model_dir_without_settings_is_resumed_with_a_warning(tmp_path, caplog):
    _commit_a_checkpoint(tmp_path)
    with caplog.at_level("WARNING"):
        assert pretraining_config.check_pretraining_resume(_config(tmp_path)) is False
    assert "holds checkpoints but no pretraining_settings.json" in caplog.text


def test_a_run_recorded_before_a_setting_existed_resumes_with_its_default(tmp_path):
    """A settings file without `objective` (written before the flag existed) was an MLM run: it resumes with the
    default, and is refused for --objective=ltr."""
    _record(_config(tmp_path))
    path = tmp_path / pretraining_config.PRETRAINING_SETTINGS_FILE
    recorded = json.loads(path.read_text())
    del recorded["objective"]
    path.write_text(json.dumps(recorded))
    _commit_a_checkpoint(tmp_path)
    assert pretraining_config.check_pretraining_resume(_config(tmp_path)) is True
    with pytest.raises(InputError, match="--objective: 'mlm' there, 'ltr' now"):
        pretraining_config.check_pretraining_resume(_config(tmp_path, objective="ltr", use_next_sentence_label=False))


@pytest.mark.parametrize("whole_word", [False, True])
def test_a_run_recorded_under_the_earlier_whole_word_mask_name_resumes(tmp_path, whole_word):
    """run_pretraining's --whole_word_mask took the original's name, --do_whole_word_mask (one masking flag set for
    both jobs): a model_dir recorded under the earlier name resumes with the same value and refuses another."""
    _record(_config(tmp_path, do_whole_word_mask=whole_word))
    path = tmp_path / pretraining_config.PRETRAINING_SETTINGS_FILE
    recorded = json.loads(path.read_text())
    recorded["whole_word_mask"] = recorded.pop("do_whole_word_mask")
    path.write_text(json.dumps(recorded))
    _commit_a_checkpoint(tmp_path)
    assert pretraining_config.check_pretraining_resume(_config(tmp_path, do_whole_word_mask=whole_word)) is True
    with pytest.raises(InputError, match=f"--do_whole_word_mask: {whole_word} there, {not whole_word} now"):
        pretraining_config.check_pretraining_resume(_config(tmp_path, do_whole_word_mask=not whole_word))


def test_both_jobs_take_the_masking_flags_of_one_definition():
    from official.nlp.data.pretraining.masking.config import MaskingFlags
    from official.nlp.data.pretraining.settings import PretrainingDataConfig

    names = [f.name for f in dataclasses.fields(MaskingFlags)]
    assert names == ["masked_lm_prob", "do_whole_word_mask", "mask_token_prob", "random_token_prob"]
    for job in (PretrainingDataConfig, pretraining_config.PretrainingConfig):
        fields = {f.name: f for f in dataclasses.fields(job)}
        assert all(fields[name] is dict((f.name, f) for f in dataclasses.fields(MaskingFlags))[name] for name in names)
        assert "whole_word_mask" not in fields


def test_a_refused_resume_suggests_only_an_export_that_exists(tmp_path):
    """A killed run exported nothing: the refusal must not suggest --init_checkpoint=<model_dir>/export."""
    _record(_config(tmp_path))
    _commit_a_checkpoint(tmp_path)
    with pytest.raises(InputError) as e:
        pretraining_config.check_pretraining_resume(_config(tmp_path, train_batch_size=64))
    assert "/export" not in str(e.value)
    assert "holds no finished model to start from with --init_checkpoint" in str(e.value)
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "bert_config.json").write_text("{}")
    with pytest.raises(InputError) as e:
        pretraining_config.check_pretraining_resume(_config(tmp_path, train_batch_size=64))
    assert f"with --init_checkpoint={tmp_path / 'export'} to start from its finished model" in str(e.value)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "bert_config.json").write_text("{}")
    with pytest.raises(InputError) as e:
        pretraining_config.check_pretraining_resume(_config(tmp_path, train_batch_size=64, export_dir=str(elsewhere)))
    assert f"--init_checkpoint={elsewhere} " in str(e.value)
