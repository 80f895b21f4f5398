"""The custom training loop shared by pretraining and fine-tuning: the run around the step.

One `Trainer.train` call runs `num_train_steps` steps of `strategy.run` inside a `tf.function`, `steps_per_loop`
steps per call, with:

- the step of `train_step.TrainStep`: losses normalized over the global batch, gradient accumulation in the step,
  gradients summed over replicas before the optimizer, float16 loss scaling that skips and counts non-finite
  steps, optional XLA;
- checkpoints of the model, optimizer, step, dropout RNG state and input position (`checkpointing`), resumed
  automatically when `model_dir` has one;
- a dropout stream per replica, derived from the seed and the global replica id, also after a restore
  (`distribution.seed_replica_streams`);
- a NaN or infinite loss stops training with `TrainingDivergedError`, keeping the last good checkpoint;
- TensorBoard scalars in `model_dir/summaries` (`summaries`) and an absl log line per loop with steps/s,
  examples/s and the time left;
- progress between those lines: a loop of `steps_per_loop` steps runs as calls sized to take about
  `progress_seconds` each (measured as it goes), and a line with the step, examples/s and the time left is logged
  whenever `progress_seconds` have passed (with several worker processes, which would each cut the loop at
  other steps, a loop stays one call). The device is synced once per call, not per step, and the training is
  the same, bit for bit, however the loop is cut: each step's metric sums come back on their own and are added up
  on the host in step order.

Example (fine-tuning a classifier; pretraining does the same with `PretrainingObjective`):

    strategy = distribution.get_distribution_strategy("mirrored")
    with strategy.scope():
        model = build_classifier()
        optimizer = optimization.create_optimizer(learning_rate=2e-5, num_train_steps=1000, num_warmup_steps=100)
    trainer = Trainer(model, optimizer, SparseCategoricalObjective("label"), strategy,
                      TrainerConfig(model_dir="/tmp/run", num_train_steps=1000), global_batch_size=32)
    result = trainer.train(lambda ctx: make_dataset(batch_size=ctx.get_per_replica_batch_size(32)))
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable
from typing import NamedTuple

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import our_checkpoints
from official.nlp.common import output_files
from official.nlp.common.errors import InputError
from official.nlp.common.processes import interruption
from official.nlp.training import distribution, summaries
from official.nlp.training.checkpointing import CheckpointKeeper
from official.nlp.training.config import TrainingConfig
from official.nlp.training.objectives import Objective
from official.nlp.training.progress import Progress
from official.nlp.training.train_step import TrainStep

DatasetFn = Callable[[tf.distribute.InputContext], tf.data.Dataset]


class TrainingDivergedError(InputError):
    """The loss or the weights became NaN or infinite: the user's to fix (the learning rate, clipping, the
    precision), so a script reports it as one line (an `InputError`)."""


@dataclasses.dataclass
class TrainerConfig:
    """Settings of the training loop.

    Attributes:
      model_dir: checkpoints, `summaries/` and the input position go here; a checkpoint there is resumed.
      num_train_steps: optimizer steps (each on one global batch, whatever the accumulation).
      steps_per_loop: steps per `tf.function` call; metrics are logged and summarized once per loop.
      save_checkpoints_steps: a checkpoint every this many steps, and one at the end.
      max_checkpoints_to_keep: the last K checkpoints are kept.
      gradient_accumulation_steps: micro-batches per step; the per-replica batch must divide by it.
      jit_compile: compile the forward and backward pass with XLA.
      checkpoint_input: save the tf.data position with each checkpoint, so a resumed job continues the data where
        it stopped. The input is then read through a plain iterator per worker and handed to the replicas in the
        step (tf.distribute's own distributed iterators cannot be saved). With False, tf.distribute's
        distributed dataset is used and a resumed job reads the data from its beginning.
      write_summaries: TensorBoard scalars in `model_dir/summaries` (chief only).
      progress_seconds: a progress line at least this often between the loop's log lines (see the module doc).
    """

    model_dir: str
    num_train_steps: int
    steps_per_loop: int = 100
    save_checkpoints_steps: int = 1000
    max_checkpoints_to_keep: int = 5
    gradient_accumulation_steps: int = 1
    jit_compile: bool = False
    checkpoint_input: bool = True
    write_summaries: bool = True
    progress_seconds: float = 10.0

    @classmethod
    def from_training_config(
        cls, config: TrainingConfig, *, model_dir: str, num_train_steps: int, **fields
    ) -> TrainerConfig:
        """The loop settings of a job's `config`: its `--steps_per_loop`, `--save_checkpoints_steps`,
        `--keep_checkpoint_max`, `--gradient_accumulation_steps` and `--jit_compile` (pretraining's and every
        fine-tuning job's, read in one place); `fields` sets the others."""
        return cls(
            model_dir=model_dir,
            num_train_steps=num_train_steps,
            steps_per_loop=config.steps_per_loop,
            save_checkpoints_steps=config.save_checkpoints_steps,
            max_checkpoints_to_keep=config.keep_checkpoint_max,
            gradient_accumulation_steps=config.gradient_accumulation_steps,
            jit_compile=config.jit_compile,
            **fields,
        )


@dataclasses.dataclass
class TrainResult:
    """What `Trainer.train` returns: the final step, the metrics of the last loop and of every loop."""

    step: int
    metrics: dict[str, float]
    history: list[dict[str, float]]
    checkpoint: str | None


class _Session(NamedTuple):
    """What one `Trainer.train` call leaves for the next call on the same input: where it stopped, and how."""

    dataset_fn: DatasetFn
    step: int
    iterator: object
    loop: Callable


class Trainer:
    """Runs the training loop (see the module docstring).

    Args:
      model: a Keras model built inside `strategy.scope()`, taking `x` of the dataset.
      optimizer: a Keras optimizer created inside `strategy.scope()` (`optimization.create_optimizer`).
      objective: the task's losses and metrics (`objectives.Objective`).
      strategy: from `distribution.get_distribution_strategy`.
      config: `TrainerConfig`.
      global_batch_size: examples per step over all replicas (for examples/s).
      init_fn: called when `model_dir` has no checkpoint yet, e.g. to load `--init_checkpoint`.
      clock: seconds, for the speed, the time left and when to log progress (tests pass their own).

    Checkpoints hold a BERT model in the library's layout (`our_checkpoints.training_checkpoint_root`), so that every
    training checkpoint is also a valid `--init_checkpoint` for the next job.
    """

    def __init__(
        self,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        objective: Objective,
        strategy: tf.distribute.Strategy,
        config: TrainerConfig,
        *,
        global_batch_size: int,
        init_fn: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        if config.num_train_steps <= 0:
            raise InputError(f"num_train_steps must be positive, got {config.num_train_steps}")
        if config.steps_per_loop <= 0 or config.save_checkpoints_steps <= 0:
            raise InputError("steps_per_loop and save_checkpoints_steps must be positive")
        if config.gradient_accumulation_steps <= 0:
            raise InputError(f"gradient_accumulation_steps must be positive, got {config.gradient_accumulation_steps}")
        self.model = model
        self.optimizer = optimizer
        self.objective = objective
        self.strategy = strategy
        self.config = config
        self.global_batch_size = global_batch_size
        self.init_fn = init_fn
        self.clock = clock
        self.worker = distribution.worker_info(strategy)
        # Steps per call of the traced loop: the first call traces; later ones are sized (one worker process only).
        self._call_steps = 1 if self.worker.count == 1 else config.steps_per_loop
        self._check_scope()
        with strategy.scope():
            self.step = tf.Variable(
                0,
                dtype=tf.int64,
                trainable=False,
                name="global_step",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
            self.nonfinite_steps = tf.Variable(
                0,
                dtype=tf.int64,
                trainable=False,
                name="nonfinite_steps",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
            if not optimizer.built:
                optimizer.build(model.trainable_variables)
        self._rng_states = distribution.seed_generator_states(model)
        self._initial_rng_seeds = distribution.primary_seeds(self._rng_states)
        self._checkpoint = our_checkpoints.training_checkpoint_root(
            model, optimizer=optimizer, step=self.step, nonfinite_steps=self.nonfinite_steps, rng_state=self._rng_states
        )
        self._train_step = TrainStep(
            model,
            optimizer,
            objective,
            strategy,
            step=self.step,
            nonfinite_steps=self.nonfinite_steps,
            gradient_accumulation_steps=config.gradient_accumulation_steps,
            jit_compile=config.jit_compile,
        )
        self.keeper: CheckpointKeeper | None = None
        self._session: _Session | None = None  # the last `train` call's input and loop, to continue them

    def _check_scope(self) -> None:
        variable = self.model.trainable_variables[0]
        variable = getattr(variable, "value", variable)
        if not self.strategy.extended.variable_created_in_scope(variable):
            raise ValueError("the model must be built inside `strategy.scope()` of the strategy given to Trainer")
        # Every optimizer creates its first variable (the step count, or the loss scale's) in its constructor.
        variable = self.optimizer.variables[0]
        if not self.strategy.extended.variable_created_in_scope(getattr(variable, "value", variable)):
            raise ValueError("the optimizer must be created inside `strategy.scope()` of the strategy given to Trainer")

    def train(self, dataset_fn: DatasetFn, *, stop_at_step: int | None = None) -> TrainResult:
        """Trains to `num_train_steps`, resuming from `model_dir` when it holds a checkpoint.

        Args:
          dataset_fn: `tf.distribute.InputContext` -> dataset of per-replica `(x, y)` batches (fixed batch size).
          stop_at_step: stop (with a checkpoint) at this step instead, e.g. to evaluate between calls; the
            schedule is still the one of `num_train_steps`.
        """
        with interruption.resumable(self.interrupted_note):  # from the restore on: a Ctrl-C names the checkpoint
            return self._train(dataset_fn, stop_at_step)

    def _train(self, dataset_fn: DatasetFn, stop_at_step: int | None) -> TrainResult:
        cfg = self.config
        last_step = cfg.num_train_steps if stop_at_step is None else min(stop_at_step, cfg.num_train_steps)
        session = self._session
        if session is not None and session.dataset_fn is dataset_fn and int(self.step.numpy()) == session.step:
            # The same input, continued where the last call stopped (fine-tuning's epochs): the iterator, the
            # checkpoint keeper and the traced loop are reused, which saves a fresh trace (10-40 s) per call. The
            # state is the one a restore would bring back, so the run is the same as one uninterrupted call.
            iterator, loop = session.iterator, session.loop
        else:
            iterator, loop = self._open(dataset_fn)
        step = int(self.step.numpy())
        if step >= last_step:
            logging.info("model_dir %s is already at step %d of %d: nothing to train", cfg.model_dir, step, last_step)
            return TrainResult(step, {}, [], self.keeper.latest_checkpoint)
        self._session = None  # a call that fails (divergence) leaves nothing to continue: the next one restores
        result = self._train_until(loop, step, last_step)
        self._session = _Session(dataset_fn, result.step, iterator, loop)
        return result

    def _open(self, dataset_fn: DatasetFn):
        """Makes the input iterator and the traced loop, and restores `model_dir` (or runs `init_fn`)."""
        cfg = self.config
        context = tf.distribute.InputContext(
            num_input_pipelines=self.worker.count,
            input_pipeline_id=self.worker.index,
            num_replicas_in_sync=self.strategy.num_replicas_in_sync,
        )
        with tf.device("/cpu:0"):
            dataset = dataset_fn(context)
        element_spec = dataset.element_spec
        batch = tf.nest.flatten(element_spec)[0].shape[0]
        k = cfg.gradient_accumulation_steps
        if batch is None or batch % k:
            raise InputError(
                f"the per-replica batch ({batch}) must divide by gradient_accumulation_steps={k}: use a "
                "train_batch_size that divides by replicas * gradient_accumulation_steps (and drop_remainder)"
            )
        if cfg.checkpoint_input:
            with tf.device("/cpu:0"):
                iterator = iter(dataset)
        else:
            iterator = iter(self.strategy.distribute_datasets_from_function(dataset_fn))

        output_files.makedirs(cfg.model_dir, name="--model_dir")
        self.keeper = CheckpointKeeper(
            cfg.model_dir,
            self._checkpoint,
            self.worker,
            max_to_keep=cfg.max_checkpoints_to_keep,
            iterator=iterator if cfg.checkpoint_input else None,
        )
        restored = self.keeper.restore()
        if restored is None and self.init_fn is not None:
            self.init_fn()
        # A checkpoint holds replica 0's state, whose seed is the base one; a fresh start uses the seeds the model
        # was built with (not the current values: an earlier call may have split them already).
        seeds = self._initial_rng_seeds if restored is None else distribution.primary_seeds(self._rng_states)
        distribution.seed_replica_streams(self.strategy, self._rng_states, seeds)
        loop = self._train_step.make_loop(
            iterator, distributed=not cfg.checkpoint_input, worker_index=self.worker.index
        )
        return iterator, loop

    def interrupted_note(self) -> str:
        """What a Ctrl-C leaves (for `interruption.resumable`): the step reached and the checkpoint the same command
        resumes from. Training notes it itself; a caller that trains in several calls (fine-tuning's epochs) notes
        its stretches between them with it too."""
        if self.keeper is None:  # nothing restored yet: what model_dir holds
            last, what = tf.train.latest_checkpoint(self.config.model_dir), "interrupted"
        else:
            last, what = self.keeper.latest_checkpoint, f"interrupted at step {int(self.step.numpy())}"
        if last is None:
            return f"{what}, before the first checkpoint; the same command starts over"
        return f"{what}; the same command resumes from {os.path.basename(last)}"

    def _train_until(self, loop, step: int, last_step: int) -> TrainResult:
        cfg = self.config
        writer = summaries.summary_writer(
            os.path.join(cfg.model_dir, "summaries") if cfg.write_summaries and self.worker.is_chief else None
        )
        history: list[dict[str, float]] = []
        metrics: dict[str, float] = {}
        logging.info(
            "Training from step %d to %d: %d replica(s), global batch %d, %d step(s) per loop",
            step,
            cfg.num_train_steps,
            self.strategy.num_replicas_in_sync,
            self.global_batch_size,
            cfg.steps_per_loop,
        )
        progress = Progress(self.clock, cfg.progress_seconds, cfg.num_train_steps, self.global_batch_size, step)
        while step < last_step:
            next_save = (step // cfg.save_checkpoints_steps + 1) * cfg.save_checkpoints_steps
            end = min(step + cfg.steps_per_loop, next_save, last_step)
            num_steps = end - step
            parts, elapsed = [], 0.0
            while step < end:
                calls = min(self._call_steps, end - step)
                start = self.clock()
                parts.append(loop(tf.constant(calls)).numpy())  # reading the result waits for the call to finish
                took = self.clock() - start
                elapsed += took
                step += calls
                # As many steps as fit in `progress_seconds` at this speed, for the next call (at least one). With
                # several worker processes, each would measure its own speed and cut the loop elsewhere; they keep
                # one call per loop, the same on all of them.
                if self.worker.count == 1:
                    fit = int(cfg.progress_seconds * calls / max(took, 1e-9))
                    self._call_steps = max(1, min(cfg.steps_per_loop, fit))
                if step < end:
                    progress.maybe_log(step)
            metrics = self._train_step.metrics(np.concatenate(parts).astype(np.float64).sum(axis=0))
            step = int(self.step.numpy())
            elapsed = max(elapsed, 1e-9)
            metrics["steps_per_second"] = num_steps / elapsed
            metrics["examples_per_second"] = num_steps * self.global_batch_size / elapsed
            history.append({"step": step, **metrics})
            self._check_finite(metrics["loss"], step, num_steps)
            summaries.write_scalars(writer, step, metrics)
            progress.logged(step)
            logging.info(
                "step %d/%d: %s | %.2f steps/s, %.1f examples/s%s",
                step,
                cfg.num_train_steps,
                ", ".join(f"{n}={v:.4g}" for n, v in metrics.items() if not n.endswith("per_second")),
                metrics["steps_per_second"],
                metrics["examples_per_second"],
                progress.time_left(step),
            )
            if step % cfg.save_checkpoints_steps == 0 or step >= last_step:
                if not bool(self._train_step.weights_finite()):
                    self._diverged(f"the weights became NaN or infinite by step {step}")
                self.keeper.save(step)
        writer.flush()
        return TrainResult(step, metrics, history, self.keeper.latest_checkpoint)

    def _check_finite(self, loss: float, step: int, num_steps: int) -> None:
        if not math.isfinite(loss):
            self._diverged(f"the loss is {loss} in steps {step - num_steps + 1}-{step}")

    def _diverged(self, what: str) -> None:
        last = self.keeper.latest_checkpoint if self.keeper else None
        fix = "lower --learning_rate (or --clip_norm, or use float32/bfloat16 instead of float16)"
        # A resume of this directory must keep its settings (the learning rate among them): a new one it is.
        kept = (
            f"The last good checkpoint, {last}, is kept: {fix} and train into a new model directory, from "
            f"--init_checkpoint={last} to keep what it learned"
            if last
            else f"No checkpoint had been written yet: {fix} and train into a new model directory"
        )
        raise TrainingDivergedError(f"Training stopped: {what}. {kept}")
