"""Why a path with a glob character is refused (`input_files.check_no_glob`, applied to every path field by
`config_flags.CheckedConfig`): TensorFlow matches the paths its checkpoint and SavedModel readers are given as
patterns. Measured here on real folders, so that the rule goes if TensorFlow ever stops doing so (issue 30:
`--output_dir='out [9]'` trained, then predicted with the wrong checkpoint; a resume said the checkpoint "does not
match the model")."""

from __future__ import annotations

import os

import pytest
import tensorflow as tf

from official.nlp.common import input_files


def _save(folder) -> str:
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])), str(folder), max_to_keep=1)
    return manager.save()


@pytest.mark.parametrize("name", ["out [9]", "back\\slash"])
def test_tensorflow_does_not_find_a_checkpoint_in_a_folder_with_brackets_or_a_backslash(tmp_path, name):
    prefix = _save(tmp_path / name)
    assert os.path.exists(prefix + ".index")  # written ...
    assert tf.train.latest_checkpoint(str(tmp_path / name)) is None  # ... but not found again
    with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files"):
        tf.train.Checkpoint(v=tf.Variable([0.0, 0.0])).read(prefix)
    with pytest.raises(ValueError, match="TensorFlow reads"):
        input_files.check_no_glob(str(tmp_path / name), name="--output_dir")


def test_tensorflow_deletes_another_folders_checkpoint_for_a_star(tmp_path):
    """CheckpointManager deletes an old checkpoint by pattern: `a*b`'s clean-up deleted `aXb`'s checkpoint."""
    other = _save(tmp_path / "aXb")
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), str(tmp_path / "a*b"), max_to_keep=1)
    manager.save()
    manager.save()  # deletes a*b/ckpt-1 ... and aXb/ckpt-1
    assert not os.path.exists(other + ".index")
    for name in ("a*b", "a?b"):
        with pytest.raises(ValueError, match="TensorFlow reads"):
            input_files.check_no_glob(str(tmp_path / name), name="--output_dir")


@pytest.mark.parametrize("name", ["out 9]", "out [9", "ti~de"])
def test_what_is_no_pattern_to_tensorflow_works_and_is_accepted(tmp_path, name):
    prefix = _save(tmp_path / name)
    assert tf.train.latest_checkpoint(str(tmp_path / name)) == prefix
    restored = tf.Variable([0.0, 0.0])
    tf.train.Checkpoint(v=restored).read(prefix).assert_existing_objects_matched()
    assert restored.numpy().tolist() == [1.0, 2.0]
    if "[" not in name:  # a lone '[' is no pattern either, but the rule names every '[' (simpler to state)
        input_files.check_no_glob(str(tmp_path / name), name="--output_dir")
