"""Optimizers and learning-rate schedules for BERT pretraining and fine-tuning.

The recipe of the original BERT: linear warmup to the peak learning rate, then polynomial (by default linear)
decay to `end_learning_rate` at `num_train_steps`; Adam with decoupled weight decay 0.01 that skips LayerNorm and
bias weights; gradients clipped to global norm 1.0.

The optimizers are Keras 3's own `AdamW` and `Lamb`, each changed in one place to match the reference:

- `BertAdamW` takes `bias_correction`. False (our default) is the original `AdamWeightDecayOptimizer`, which has
  no Adam bias correction: its first steps are larger by (1 - beta_1^t) / sqrt(1 - beta_2^t), 3.16x at step 1 and
  still 1.26x at step 1000, and the paper's fine-tuning learning rates were tuned with it. True is PyTorch's
  `torch.optim.AdamW`, the optimizer of the Hugging Face recipes, epsilon included: it is added to the
  bias-corrected `sqrt(v_hat)` (Keras' own `AdamW` adds it before the correction, which makes the same epsilon up
  to 30x larger in the first steps). The default epsilon follows the recipe: 1e-6 for the original optimizer and
  LAMB, 1e-8 (PyTorch's) with bias correction. With 1e-6 placed as Keras places it, a MiniLM SQuAD fine-tuning
  (zero-initialized head, dropout off) made half the progress of PyTorch's in its first 40 steps.
- `BertLamb` leaves LayerNorm and bias variables out of the layer adaptation (trust ratio), as the LAMB paper's
  BERT recipe and the reference implementations do: a zero-initialized bias has norm 0, so the trust ratio would
  keep it near 0 forever. Its weight decay is part of the update the trust ratio scales (Keras' `Lamb` applies it
  outside), as in the paper.

Example:

>>> optimizer = create_optimizer("adamw", learning_rate=1e-4, num_train_steps=1000, num_warmup_steps=100)
>>> float(optimizer.learning_rate)  # step 0 of the warmup
0.0
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import keras
import tensorflow as tf
from absl import logging
from keras import ops

from official.nlp.common.errors import InputError
from official.nlp.training import precision

OPTIMIZERS = ("adamw", "lamb")

# Keras matches these with `re.search` against each variable's short name: Keras' LayerNormalization names its
# weights `gamma` and `beta`, dense layers `bias`; the CamelCase and snake_case spellings cover custom layers.
DEFAULT_WEIGHT_DECAY_EXCLUSIONS = ("LayerNorm", "layer_norm", "gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="bert")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to `initial_learning_rate`, then polynomial decay to `end_learning_rate`.

    As in the original BERT `optimization.py`: during warmup the rate is `initial_learning_rate * step /
    warmup_steps`; afterwards it is the polynomial decay of the *global* step over `decay_steps` (the total
    number of training steps, warmup included):
    `(initial - end) * (1 - min(step, decay_steps) / decay_steps) ** power + end`.

    Example:

    >>> schedule = WarmupPolynomialDecay(1e-4, decay_steps=100, warmup_steps=10)
    >>> [round(float(schedule(s)), 7) for s in (0, 5, 10, 55, 100)]
    [0.0, 5e-05, 9e-05, 4.5e-05, 0.0]
    """

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        warmup_steps: int = 0,
        end_learning_rate: float = 0.0,
        power: float = 1.0,
        name: str = "WarmupPolynomialDecay",
    ):
        super().__init__()
        if decay_steps <= 0:
            raise InputError(f"decay_steps must be positive (the number of training steps), got {decay_steps}")
        if warmup_steps < 0:
            raise InputError(f"warmup_steps must be >= 0, got {warmup_steps}")
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = int(decay_steps)
        self.warmup_steps = int(warmup_steps)
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)
        self.name = name

    def __call__(self, step):
        step = keras.ops.cast(step, "float32")
        fraction = keras.ops.minimum(step, float(self.decay_steps)) / float(self.decay_steps)
        decayed = (self.initial_learning_rate - self.end_learning_rate) * keras.ops.power(
            1.0 - fraction, self.power
        ) + self.end_learning_rate
        if self.warmup_steps == 0:
            return decayed
        warmup = self.initial_learning_rate * step / float(self.warmup_steps)
        return keras.ops.where(step < float(self.warmup_steps), warmup, decayed)

    def get_config(self) -> dict:
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
            "name": self.name,
        }


@keras.saving.register_keras_serializable(package="bert")
class BertAdamW(keras.optimizers.AdamW):
    """Keras' `AdamW` with Adam's bias correction made optional (see the module docstring).

    With `bias_correction=False`, a step is the original `AdamWeightDecayOptimizer`'s:
    `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`, `w -= lr * (m / (sqrt(v) + eps) + wd * w)` (the decay only
    on variables not excluded from it). With True, it is `torch.optim.AdamW`'s: `w -= lr * wd * w`, then
    `w -= lr * m_hat / (sqrt(v_hat) + eps)` with `m_hat = m / (1 - b1^t)`, `v_hat = v / (1 - b2^t)`.
    `amsgrad=True` is Keras' `AdamW` unchanged.

    Example:

    >>> opt = BertAdamW(learning_rate=0.1, weight_decay=0.0, bias_correction=False)
    >>> w = keras.Variable([1.0])
    >>> opt.apply([keras.ops.convert_to_tensor([2.0])], [w])
    >>> round(float(w.numpy()[0]), 4)  # 1 - 0.1 * 0.1 * 2 / (sqrt(0.001 * 4) + 1e-7)
    0.6838
    """

    def __init__(self, *args, bias_correction: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        if self.amsgrad and not bias_correction:
            raise ValueError("amsgrad needs bias_correction=True")
        self.bias_correction = bool(bias_correction)

    def _apply_weight_decay(self, variables):
        if self.amsgrad:
            super()._apply_weight_decay(variables)
        # Otherwise in `update_step`, as one multiply and one in-place subtraction (Keras' takes three passes).

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        lr = ops.cast(learning_rate, dtype)
        if self.weight_decay and self._use_weight_decay(variable):  # decoupled: w -= lr * wd * w, first
            variable.assign_sub(variable * (lr * ops.cast(self.weight_decay, dtype)))
        gradient = tf.convert_to_tensor(ops.cast(gradient, dtype))  # IndexedSlices (embeddings) -> dense
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        epsilon = ops.cast(self.epsilon, dtype)
        if self.bias_correction:
            step = ops.cast(self.iterations + 1, dtype)
            beta_1_power = ops.power(ops.cast(self.beta_1, dtype), step)
            beta_2_power = ops.power(ops.cast(self.beta_2, dtype), step)
            # The kernel adds epsilon to sqrt(v) before the correction (Keras' placement); scaling it by
            # sqrt(1 - b2^t) puts it after, as PyTorch does: lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
            epsilon = epsilon * ops.sqrt(1 - beta_2_power)
        else:  # zero powers make the kernel's correction factor sqrt(1 - 0) / (1 - 0) = 1
            beta_1_power = beta_2_power = ops.zeros((), dtype)
        # One fused kernel per variable (m, v and w in one pass) instead of about ten element-wise ops: the
        # optimizer was a tenth of a small model's train step, most of it on the word-embedding table.
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=m.handle,
            v=v.handle,
            beta1_power=beta_1_power,
            beta2_power=beta_2_power,
            lr=lr,
            beta1=ops.cast(self.beta_1, dtype),
            beta2=ops.cast(self.beta_2, dtype),
            epsilon=epsilon,
            grad=gradient,
            use_locking=False,
        )

    def get_config(self) -> dict:
        return {**super().get_config(), "bias_correction": self.bias_correction}


@keras.saving.register_keras_serializable(package="bert")
class BertLamb(keras.optimizers.Lamb):
    """Keras' `Lamb` without layer adaptation for the variables named by `exclude_from_layer_adaptation`, and with
    the weight decay inside the update that the trust ratio scales (see the module docstring).

    A step: `u = m_hat / (sqrt(v_hat) + eps) + wd * w` (decay only on variables not excluded from it), then
    `w -= lr * r * u` with the trust ratio `r = ||w|| / ||u||` (1 when either norm is 0), or `r = 1` for a
    variable whose name matches one of `exclude_from_layer_adaptation` (regular expressions, searched in the
    variable's name). None adapts every variable, as Keras' `Lamb` does.

    Example:

    >>> opt = BertLamb(learning_rate=0.1, exclude_from_layer_adaptation=["bias"])
    >>> bias = keras.Variable([0.01, 0.0], name="bias")
    >>> opt.apply([keras.ops.convert_to_tensor([1.0, 1.0])], [bias])
    >>> [round(float(x), 3) for x in bias.numpy()]  # a plain Adam step of 0.1; the trust ratio would give 0.0071
    [-0.09, -0.1]
    """

    def __init__(self, *args, exclude_from_layer_adaptation: Sequence[str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.exclude_from_layer_adaptation = (
            list(exclude_from_layer_adaptation) if exclude_from_layer_adaptation is not None else None
        )
        self._no_adaptation = (
            re.compile("|".join(self.exclude_from_layer_adaptation)) if self.exclude_from_layer_adaptation else None
        )

    def uses_layer_adaptation(self, variable) -> bool:
        """Whether the trust ratio scales the updates of `variable`."""
        return self._no_adaptation is None or self._no_adaptation.search(variable.name) is None

    def _apply_weight_decay(self, variables):
        pass  # Part of `update_step`, inside the trust ratio.

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        local_step = ops.cast(self.iterations + 1, variable.dtype)
        beta_1_power = ops.power(ops.cast(self.beta_1, variable.dtype), local_step)
        beta_2_power = ops.power(ops.cast(self.beta_2, variable.dtype), local_step)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        update = ops.divide(
            ops.divide(m, 1.0 - beta_1_power), ops.add(ops.sqrt(ops.divide(v, 1.0 - beta_2_power)), self.epsilon)
        )
        if self.weight_decay is not None and self._use_weight_decay(variable):
            update = ops.add(update, ops.multiply(ops.cast(self.weight_decay, variable.dtype), variable))
        if self.uses_layer_adaptation(variable):
            w_norm = ops.sqrt(ops.sum(ops.square(variable)))
            u_norm = ops.sqrt(ops.sum(ops.square(update)))
            ratio = ops.where(ops.logical_and(ops.greater(w_norm, 0), ops.greater(u_norm, 0)), w_norm / u_norm, 1.0)
            update = ops.multiply(ratio, update)
        self.assign_sub(variable, ops.multiply(lr, update))

    def get_config(self) -> dict:
        return {**super().get_config(), "exclude_from_layer_adaptation": self.exclude_from_layer_adaptation}


def create_optimizer(
    optimizer_type: str = "adamw",
    *,
    learning_rate: float,
    num_train_steps: int,
    num_warmup_steps: int = 0,
    end_learning_rate: float = 0.0,
    poly_power: float = 1.0,
    weight_decay: float = 0.01,
    clip_norm: float | None = 1.0,
    beta_1: float = 0.9,
    beta_2: float = 0.999,
    epsilon: float | None = None,
    exclude_from_weight_decay: Sequence[str] = DEFAULT_WEIGHT_DECAY_EXCLUSIONS,
    adam_bias_correction: bool = False,
    exclude_from_layer_adaptation: Sequence[str] | None = None,
    mixed_precision: str = "float32",
    initial_loss_scale: float = 2.0**15,
    loss_scale_growth_steps: int = 2000,
) -> keras.optimizers.Optimizer:
    """Returns a Keras optimizer with BERT's schedule, weight decay and gradient clipping.

    Args:
      optimizer_type: "adamw" (the paper's recipe) or "lamb" (for large batches).
      learning_rate: peak learning rate, reached at the end of warmup.
      num_train_steps: total steps; the decay reaches `end_learning_rate` here.
      num_warmup_steps: linear warmup steps from 0.
      end_learning_rate, poly_power: the polynomial decay (power 1 is linear).
      weight_decay: decoupled weight decay, not applied to variables whose name matches
        `exclude_from_weight_decay` (LayerNorm and bias by default).
      adam_bias_correction: "adamw" only. False (the default) is the original BERT optimizer, without Adam's bias
        correction; True is PyTorch's `AdamW`, the optimizer of the Hugging Face recipes.
      epsilon: added to Adam's denominator; None: the recipe's own (`default_epsilon`): 1e-6 as the original
        BERT and LAMB, 1e-8 as PyTorch's `AdamW` when `adam_bias_correction`.
      exclude_from_layer_adaptation: "lamb" only: variables (name patterns) whose updates the trust ratio does not
        scale; None means the same as `exclude_from_weight_decay` (LayerNorm and bias).
      clip_norm: clip gradients to this global norm; None or 0 turns clipping off. Under a distribution strategy
        our training loop reduces gradients over replicas before the optimizer sees them, so the norm is the norm
        of the global gradient (Keras' own `fit` clips per replica before reducing).
      mixed_precision: "float16" wraps the optimizer in a dynamic `LossScaleOptimizer`: steps with non-finite
        gradients are skipped and the scale halves; it doubles after `loss_scale_growth_steps` good steps.

    Works with `model.compile(optimizer=...)` and with `official.nlp.training.trainer.Trainer`.
    """
    optimizer_type = optimizer_type.lower()
    if optimizer_type not in OPTIMIZERS:
        raise InputError(f"optimizer_type must be one of {OPTIMIZERS}, got {optimizer_type!r}")
    precision.check_mixed_precision(mixed_precision)
    if epsilon is not None and not epsilon > 0:
        raise InputError(f"--adam_epsilon={epsilon} must be positive (or left unset for the recipe's default)")
    check_schedule(
        learning_rate=learning_rate,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        end_learning_rate=end_learning_rate,
        weight_decay=weight_decay,
        clip_norm=clip_norm,
    )
    if num_warmup_steps > num_train_steps:
        # A short smoke run with the default warmup is a normal thing to try: it trains, at a lower rate.
        logging.warning(
            "--num_warmup_steps=%d is larger than --num_train_steps=%d: the learning rate rises to %.3g, not "
            "to its peak --learning_rate=%g; lower --num_warmup_steps for a real run",
            num_warmup_steps,
            num_train_steps,
            learning_rate * num_train_steps / num_warmup_steps,
            learning_rate,
        )
    schedule = WarmupPolynomialDecay(
        learning_rate,
        decay_steps=num_train_steps,
        warmup_steps=num_warmup_steps,
        end_learning_rate=end_learning_rate,
        power=poly_power,
    )
    common = dict(
        learning_rate=schedule,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=default_epsilon(optimizer_type, adam_bias_correction) if epsilon is None else float(epsilon),
        weight_decay=weight_decay if weight_decay else None,
        global_clipnorm=clip_norm if clip_norm else None,
    )
    if optimizer_type == "adamw":
        # Keras' AdamW refuses weight_decay=None; 0.0 decays nothing.
        optimizer = BertAdamW(
            **dict(common, weight_decay=float(weight_decay or 0.0)), bias_correction=adam_bias_correction
        )
    else:
        if exclude_from_layer_adaptation is None:
            exclude_from_layer_adaptation = exclude_from_weight_decay
        optimizer = BertLamb(**common, exclude_from_layer_adaptation=exclude_from_layer_adaptation)
    if weight_decay and exclude_from_weight_decay:
        optimizer.exclude_from_weight_decay(var_names=list(exclude_from_weight_decay))
    if precision.resolve_mixed_precision(mixed_precision) == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(
            optimizer, initial_scale=initial_loss_scale, dynamic_growth_steps=loss_scale_growth_steps
        )
    return optimizer


def check_schedule(
    *,
    learning_rate: float,
    num_train_steps: int,
    num_warmup_steps: int = 0,
    end_learning_rate: float = 0.0,
    weight_decay: float = 0.0,
    clip_norm: float | None = None,
) -> None:
    """Refuses training settings that would run but train wrongly (a negative learning rate climbs the loss),
    naming the flag; the same check for pretraining and fine-tuning, since both build their optimizer here."""

    def number(value) -> float:
        return float(value) if value is not None else 0.0

    problems = []
    # 0 is allowed: it keeps the weights as loaded (a loss-only run); `not >=` also catches NaN.
    if not number(learning_rate) >= 0:
        problems.append(f"--learning_rate must not be negative, got {learning_rate} (a negative rate climbs the loss)")
    if not number(num_train_steps) > 0:
        problems.append(f"--num_train_steps must be positive, got {num_train_steps}")
    if not number(num_warmup_steps) >= 0:
        problems.append(f"--num_warmup_steps must be >= 0, got {num_warmup_steps}")
    if not number(end_learning_rate) >= 0:
        problems.append(f"--end_learning_rate must be >= 0, got {end_learning_rate}")
    if not number(weight_decay) >= 0:
        problems.append(f"--weight_decay must be >= 0, got {weight_decay}")
    if not number(clip_norm) >= 0:
        problems.append(f"--clip_norm must be >= 0 (0 turns clipping off), got {clip_norm}")
    if problems:
        raise InputError("; ".join(problems))


def default_epsilon(optimizer_type: str = "adamw", adam_bias_correction: bool = False) -> float:
    """Adam's epsilon in the recipe the optimizer follows: PyTorch's 1e-8 for AdamW with bias correction (the
    Hugging Face recipes), else the original BERT's (and LAMB's) 1e-6."""
    return 1e-8 if optimizer_type.lower() == "adamw" and adam_bias_correction else 1e-6


def current_learning_rate(optimizer: keras.optimizers.Optimizer) -> float:
    """The learning rate the next step will use (the schedule evaluated at the optimizer's iteration count)."""
    return float(keras.ops.convert_to_numpy(optimizer.learning_rate))


def uses_weight_decay(optimizer: keras.optimizers.Optimizer, variable) -> bool:
    """Whether `optimizer` applies weight decay to `variable` (follows a LossScaleOptimizer to its inner one)."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    if not inner.weight_decay:
        return False
    return inner._use_weight_decay(variable)  # Keras keeps the exclusion logic private; reuse, not re-implement.
