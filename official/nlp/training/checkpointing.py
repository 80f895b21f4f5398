"""Training checkpoints that survive preemption: atomic commits, the last K kept, the input position per worker.

Layout of a model directory during training:

    model_dir/checkpoint                 the commit record (written atomically by tf.train.CheckpointManager)
    model_dir/ckpt-<step>.{index,data-*} model, optimizer, step and RNG state
    model_dir/input_state/worker-<i>/    the position of input worker i in its tf.data pipeline, per step

A checkpoint counts only once the commit record names it, and the record is replaced with an atomic rename after
the checkpoint files are complete. A job killed while writing leaves at most unreferenced files of a later step,
which the next start removes (those only: files of an earlier step, which this run did not leave, stay); it resumes
from the last committed step. The input position is written before the model checkpoint of the same step, so a
committed step always has its input position.

Under multi_worker_mirrored every worker takes part in each save (the strategy requires it); only the chief writes
checkpoints into `model_dir`. The others write theirs to a local temporary directory of their own, emptied after
each save: on a multi-host TPU slice `model_dir` is a bucket that they must not race the chief in. Each worker does
write its own input position (`input_state/worker-<i>/`, a name no other worker writes), which a resume needs.

A committed checkpoint whose files turn out truncated or corrupt (a disk that failed, a copy of the folder that
stopped early) is refused with a message that names it and the previous checkpoint: deleting the damaged
checkpoint's files resumes from the newest one whose files are there. The job does not fall back on its own, since
that would silently retrain steps a user may rather recover.
"""

from __future__ import annotations

import os
import re
import tempfile

import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import integrity
from official.nlp.checkpoints.our_checkpoints import CHECKPOINT_NAME
from official.nlp.common import input_files
from official.nlp.common.errors import InputError
from official.nlp.training.distribution import WorkerInfo

_CKPT_FILE = re.compile(rf"^{CHECKPOINT_NAME}-(\d+)(\.index|\.data-\d+-of-\d+|_temp.*)$")


class CheckpointKeeper:
    """Saves and restores training state in `model_dir` (see the module docstring).

    Args:
      model_dir: where checkpoints go.
      checkpoint: the root object to save (model, optimizer, step variable, ...).
      worker: this process's place in the job.
      max_to_keep: committed checkpoints to keep; older ones are deleted.
      iterator: a `tf.data.Iterator` whose position is saved per worker, or None.
    """

    def __init__(
        self,
        model_dir: str,
        checkpoint: tf.train.Checkpoint,
        worker: WorkerInfo,
        *,
        max_to_keep: int = 5,
        iterator: tf.data.Iterator | None = None,
    ):
        self.model_dir = model_dir
        self.worker = worker
        self.checkpoint = checkpoint
        # A library-created local temporary directory: nothing a non-chief saves goes near `model_dir`.
        write_dir = model_dir if worker.is_chief else tempfile.mkdtemp(prefix=f"bert-worker-{worker.index}-")
        tf.io.gfile.makedirs(write_dir)
        self._write_dir = write_dir
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, write_dir, max_to_keep=max_to_keep, checkpoint_name=CHECKPOINT_NAME
        )
        self.input_dir = os.path.join(model_dir, "input_state", f"worker-{worker.index}")
        self.input_manager = None
        if iterator is not None:
            tf.io.gfile.makedirs(self.input_dir)
            self.input_manager = tf.train.CheckpointManager(
                tf.train.Checkpoint(iterator=iterator),
                self.input_dir,
                max_to_keep=max_to_keep,
                checkpoint_name=CHECKPOINT_NAME,
            )
        if worker.is_chief:
            _remove_uncommitted(model_dir, self.manager.checkpoints)
        if self.input_manager is not None:
            _remove_uncommitted(self.input_dir, self.input_manager.checkpoints)

    @property
    def latest_checkpoint(self) -> str | None:
        """Prefix of the last committed checkpoint in `model_dir` whose files are there, or None."""
        path = tf.train.latest_checkpoint(self.model_dir)
        if path is not None:
            return path
        earlier = self._committed_with_files()
        if earlier:
            logging.warning(
                "The files of %s, the last checkpoint committed in %s, are gone: resuming from %s",
                self._committed()[-1],
                self.model_dir,
                earlier[-1],
            )
            return earlier[-1]
        return None

    def _committed(self) -> list[str]:
        state = tf.train.get_checkpoint_state(self.model_dir)
        paths = state.all_model_checkpoint_paths if state else []
        return [os.path.join(self.model_dir, os.path.basename(p)) for p in paths]

    def _committed_with_files(self) -> list[str]:
        """The committed checkpoints whose index is there, oldest first."""
        return [p for p in self._committed() if tf.io.gfile.exists(p + ".index")]

    def _damaged(self, what: str, path: str) -> integrity.DamagedCheckpointError:
        previous = [p for p in self._committed_with_files() if p != path]
        if previous:
            fix = (
                f"To resume from the previous checkpoint, {previous[-1]}, delete {path}.index and "
                f"{path}.data-*; or train in a new folder"
            )
        else:
            fix = f"It is the only checkpoint in {self.model_dir}: train in a new folder (or delete this one)"
        return integrity.DamagedCheckpointError(f"cannot resume: {what}. {fix}")

    def restore(self) -> int | None:
        """Restores the last committed checkpoint; returns its step, or None when there is none."""
        path = self.latest_checkpoint
        if path is None:
            return None
        step = int(path.rsplit("-", 1)[1])
        try:
            self.checkpoint.read(path).assert_existing_objects_matched().expect_partial()
        except (*integrity.READ_ERRORS, tf.errors.OpError, AssertionError, ValueError) as e:
            what = integrity.damage(path, e)
            if what is not None:
                raise self._damaged(what, path) from None
            if isinstance(e, IndexError):
                raise
            raise InputError(
                f"cannot resume from {path}: it does not match the model being trained ({e}). Use a new "
                "--model_dir, or the flags (config, optimizer) the checkpoint was written with"
            ) from e
        if self.input_manager is not None:
            input_path = os.path.join(self.input_dir, f"{CHECKPOINT_NAME}-{step}")
            if input_files.exists(input_path + ".index"):
                try:
                    self.input_manager.checkpoint.read(input_path).assert_existing_objects_matched().expect_partial()
                except (*integrity.READ_ERRORS, tf.errors.OpError, AssertionError, ValueError) as e:
                    what = integrity.damage(input_path, e)
                    if what is not None:
                        raise integrity.DamagedCheckpointError(
                            f"cannot resume: the input position {what}. Delete {self.input_dir} to restart "
                            "reading the data from its beginning"
                        ) from None
                    if isinstance(e, IndexError):
                        raise
                    raise InputError(
                        f"the input position saved in {input_path} does not fit the current input pipeline "
                        f"(did --input_file, --train_batch_size or the shuffle settings change?): {e}. Delete "
                        f"{self.input_dir} to restart reading the data from its beginning"
                    ) from e
            else:
                logging.warning(
                    "No input position for step %d in %s: the data is read again from its beginning",
                    step,
                    self.input_dir,
                )
        logging.info("Resumed from %s (step %d)", path, step)
        return step

    def save(self, step: int) -> str | None:
        """Writes the input position, then the checkpoint of `step`, then commits it. Returns the chief's path."""
        if self.input_manager is not None:
            self.input_manager.save(checkpoint_number=step)
        path = self.manager.save(checkpoint_number=step)
        if not self.worker.is_chief:
            tf.io.gfile.rmtree(self._write_dir)
            tf.io.gfile.makedirs(self._write_dir)
            return None
        logging.info("Saved checkpoint %s", path)
        return path


def _remove_uncommitted(directory: str, committed: list[str]) -> None:
    """Deletes what a job killed while saving left behind: TensorFlow's temporary `ckpt-<step>_temp` folders, and the
    files of a checkpoint after the last committed one that no commit record names. Checkpoint files of an earlier
    step, or in a folder without any commit record, were not left by this run (a checkpoint copied in by hand, say):
    they stay, and a save of the same step writes over them."""
    keep = {os.path.basename(p) for p in committed}
    last = max((int(p.rsplit("-", 1)[1]) for p in keep), default=None)
    for name in tf.io.gfile.listdir(directory):
        name = name.rstrip("/")
        match = _CKPT_FILE.match(name)
        if not match or f"{CHECKPOINT_NAME}-{match.group(1)}" in keep:
            continue
        if match.group(2).startswith("_temp") or (last is not None and int(match.group(1)) > last):
            path = os.path.join(directory, name)
            logging.warning("Removing %s: written by a job that stopped before committing it", path)
            if input_files.isdir(path):
                tf.io.gfile.rmtree(path)
            else:
                tf.io.gfile.remove(path)
