"""The training step: what one optimizer step computes on the replicas, and the traced loop of those steps.

`TrainStep` is what `trainer.Trainer` runs inside `strategy.run` and its `tf.function`:

- the task's losses normalized over the global batch (the weights of each loss are summed over the replicas first;
  see `objectives`), and the (sum, count) of every metric;
- gradient accumulation done in the step (k micro-batches, one optimizer update), not with the Keras optimizer
  option, which fails under MirroredStrategy;
- gradients summed over replicas *before* the optimizer sees them, so that clipping uses the norm of the global
  gradient (`keras_compat` keeps the optimizer from summing them again);
- float16 dynamic loss scaling through `keras.optimizers.LossScaleOptimizer`: non-finite steps are skipped and
  counted (`nonfinite_steps`);
- optional XLA (`jit_compile`) of the forward and backward pass;
- the loop of `num_steps` steps as one traced call, which returns each step's sums on their own: `metrics` gets
  them added up on the host in step order, so the training is the same, bit for bit, however a loop is cut.

What lasts across calls (the restore and checkpoints, the input, the logs, how a loop is cut into calls) is the
trainer's.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from official.nlp.training import distribution, keras_compat
from official.nlp.training.objectives import Objective
from official.nlp.training.optimization import current_learning_rate


def _with_nones(grads: list, present: list[bool]) -> list:
    """Puts the Nones (variables without a gradient) back in place."""
    grads = list(reversed(grads))
    return [grads.pop() if p else None for p in present]


class TrainStep:
    """One optimizer step on the replicas, and the traced loop of steps (see the module docstring).

    Args:
      model: a Keras model built inside `strategy.scope()`, taking `x` of the dataset.
      optimizer: its Keras optimizer, created inside `strategy.scope()`.
      objective: the task's losses and metrics (`objectives.Objective`).
      strategy: the `tf.distribute.Strategy` the model and the optimizer were built in.
      step: the global step variable, which the loop advances by one per step.
      nonfinite_steps: the count of float16 steps skipped for a non-finite gradient, which `metrics` advances.
      gradient_accumulation_steps: micro-batches per step; the per-replica batch must divide by it.
      jit_compile: compile the forward and backward pass with XLA.

    Call `metrics` on what the loop returned (the loop's trace names the sums it reads).
    """

    def __init__(
        self,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        objective: Objective,
        strategy: tf.distribute.Strategy,
        *,
        step: tf.Variable,
        nonfinite_steps: tf.Variable,
        gradient_accumulation_steps: int,
        jit_compile: bool,
    ):
        self.model = model
        self.optimizer = optimizer
        self.objective = objective
        self.strategy = strategy
        self.step = step
        self.nonfinite_steps = nonfinite_steps
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self._loss_scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        self._micro_step_fn = tf.function(self._micro_step, jit_compile=True) if jit_compile else self._micro_step
        self._names: list[str] = []
        self._loss_names: list[str] = []

    def _sums(self, labels, outputs, denominators):
        """Loss of this micro-batch (normalized by the global weights) and the (sum, count) of every metric."""
        weights = self.objective.loss_weights(labels)
        losses = self.objective.losses(labels, outputs)
        if set(weights) != set(losses):
            raise ValueError(f"objective.losses keys {sorted(losses)} differ from loss_weights keys {sorted(weights)}")
        total = tf.constant(0.0)
        sums = {}
        for name in weights:
            w = tf.cast(weights[name], tf.float32)
            numerator = tf.reduce_sum(tf.cast(losses[name], tf.float32) * w)
            total += tf.math.divide_no_nan(numerator, denominators[name])
            sums[name] = (numerator, tf.reduce_sum(w))
        for name, (numerator, count) in self.objective.metrics(labels, outputs).items():
            if name in sums:
                raise ValueError(f"metric name {name!r} is also a loss name")
            sums[name] = (tf.cast(numerator, tf.float32), tf.cast(count, tf.float32))
        # The names, in the objective's order, as `metrics` reads the loop's result: set while the loop traces (a
        # trace of the model only to learn them cost a forward trace per run).
        self._loss_names, self._names = list(weights), list(sums)
        return total, sums

    def _micro_step(self, x, y, denominators):
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = self.model(x, training=True)
            loss, sums = self._sums(y, outputs, denominators)
            scaled = self.optimizer.scale_loss(loss) if self._loss_scaled else loss
        grads = tape.gradient(scaled, variables)
        # Dense: IndexedSlices (embeddings) cannot be accumulated in a loop nor summed bitwise-reproducibly.
        grads = [None if g is None else tf.convert_to_tensor(g) for g in grads]
        vector = tf.stack([value for name in self._names for value in sums[name]])
        return grads, vector

    def _replica_step(self, x, y):
        ctx = tf.distribute.get_replica_context()
        weights = self.objective.loss_weights(y)
        denominators = ctx.all_reduce(
            tf.distribute.ReduceOp.SUM, {name: tf.reduce_sum(tf.cast(w, tf.float32)) for name, w in weights.items()}
        )
        k = self.gradient_accumulation_steps
        if k == 1:
            grads, vector = self._micro_step_fn(x, y, denominators)
        else:

            def split(t):
                return tf.reshape(t, tf.concat([[k, tf.shape(t)[0] // k], tf.shape(t)[1:]], 0))

            def micro_batch(index):
                return tf.nest.map_structure(lambda t: t[index], (xs, ys))

            xs, ys = tf.nest.map_structure(split, (x, y))
            grads, vector = self._micro_step_fn(*micro_batch(0), denominators)
            present = [g is not None for g in grads]
            summed = [g for g in grads if g is not None]
            for i in tf.range(1, k):
                more, more_vector = self._micro_step_fn(*micro_batch(i), denominators)
                summed = [a + b for a, b in zip(summed, [g for g in more if g is not None])]
                vector += more_vector
            grads = _with_nones(summed, present)
        variables = self.model.trainable_variables
        pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
        reduced = ctx.all_reduce(tf.distribute.ReduceOp.SUM, [g for g, _ in pairs])
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in reduced])
        self.optimizer.apply(reduced, [v for _, v in pairs])
        return tf.concat([vector, [1.0 - tf.cast(finite, tf.float32)]], 0)

    def make_loop(self, iterator, *, distributed: bool, worker_index: int):
        """The traced loop: `loop(num_steps)` runs that many steps on the next batches of `iterator` (tf.distribute's
        distributed iterator when `distributed`, else this worker's plain iterator, whose batches go to its local
        replicas) and returns each step's sums, `[num_steps, 2 * names + 1]`, for `metrics`."""
        local = distribution.local_replica_count(self.strategy)
        first_replica = worker_index * local

        def next_inputs():
            if distributed or local == 1:
                return next(iterator)
            batches = [next(iterator) for _ in range(local)]
            return self.strategy.experimental_distribute_values_from_function(
                lambda ctx: batches[ctx.replica_id_in_sync_group - first_replica]
            )

        @tf.function
        def loop(num_steps):
            # Each step's sums, not their total: the host adds them in step order, so the metrics do not depend on
            # how a loop is cut into calls. Their number (2 per name, plus the non-finite flag) is known once the
            # step is traced; `num_steps` is at least 1.
            per_step = tf.TensorArray(tf.float32, size=num_steps, element_shape=[None])
            for i in tf.range(num_steps):
                x, y = next_inputs()
                with keras_compat.gradients_already_reduced(self.optimizer):
                    per_replica = self.strategy.run(self._replica_step, args=(x, y))
                per_step = per_step.write(i, self.strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None))
                self.step.assign_add(1)
            return per_step.stack()

        return loop

    @tf.function
    def weights_finite(self):
        """Whether every trainable weight is finite."""
        return tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in self.model.trainable_variables])

    def metrics(self, total: np.ndarray) -> dict[str, float]:
        """The loop's metrics from the sum of its steps' sums: the total loss, each loss and metric, the loss scale
        and the non-finite steps (float16), the learning rate."""
        values = total.tolist()
        metrics: dict[str, float] = {}
        loss_names = list(self._loss_names)
        loss = 0.0
        for i, name in enumerate(self._names):
            numerator, count = values[2 * i], values[2 * i + 1]
            metrics[name] = numerator / count if count else float("nan" if numerator else 0.0)
            if name in loss_names:
                loss += metrics[name]
        metrics = {"loss": loss, **metrics}
        nonfinite = round(values[-1] / self.strategy.num_replicas_in_sync)
        if self._loss_scaled:
            self.nonfinite_steps.assign_add(nonfinite)
            metrics["loss_scale"] = float(self.optimizer.dynamic_scale.numpy())
            metrics["nonfinite_steps"] = float(self.nonfinite_steps.numpy())
        elif nonfinite:
            metrics["nonfinite_steps"] = float(nonfinite)
        metrics["learning_rate"] = current_learning_rate(self.optimizer)
        return metrics
