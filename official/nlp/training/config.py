"""`TrainingConfig`: the settings of the training loop that pretraining and every fine-tuning job share.

Optimizer and schedule, precision, distribution, the loop and its checkpoints.
`tasks.pretraining_config.PretrainingConfig` and `tasks.finetuning_config.FineTuningConfig` extend it with their data
and model fields (a subclass may change a default with `config_flags.override`); each field is a flag of the job's
script, with the help written here once (`common.config_flags`).

The fields are keyword-only, so that a subclass may put its own required fields (`output_dir`, `input_file`)
first.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import keras
import tensorflow as tf

from official.nlp.common.config_flags import CheckedConfig, field
from official.nlp.common.errors import InputError
from official.nlp.training import distribution, optimization, precision


@dataclasses.dataclass(kw_only=True)
class TrainingConfig(CheckedConfig):
    """The shared training-loop settings; the field names are the flags (original ones first)."""

    train_batch_size: int = field(32, minimum=1, help="Global batch size (over all replicas and accumulation steps).")
    learning_rate: float = field(5e-5, minimum=0, help="Peak learning rate (0 keeps the weights as loaded).")
    save_checkpoints_steps: int = field(1000, minimum=1, help="A checkpoint every this many steps (and at the end).")
    # ---
    optimizer: str = field(
        "adamw",
        enum=optimization.OPTIMIZERS,
        help=(
            "adamw (the paper) or lamb (large batches). Weight decay is not applied to LayerNorm and bias weights, nor "
            "LAMB's trust ratio."
        ),
    )
    weight_decay: float = field(0.01, minimum=0, help="Decoupled weight decay.")
    clip_norm: float = field(1.0, minimum=0, help="Clip gradients to this global norm (0: no clipping).")
    adam_bias_correction: bool = field(
        False,
        help=(
            "AdamW with Adam's bias correction (PyTorch's AdamW, the Hugging Face recipes). The default, false, is the "
            "original BERT optimizer, whose first steps are larger (3.16x at step 1, 1.26x at step 1000)."
        ),
    )
    adam_epsilon: float | None = field(
        None,
        exclusive_minimum=0,
        help=(
            "Adam's epsilon (default: 1e-8 with --adam_bias_correction, as PyTorch's AdamW; else 1e-6, as the original "
            "BERT)."
        ),
    )
    steps_per_loop: int = field(
        100,
        minimum=1,
        help="Steps per loop: one log line and summary per loop (a long loop logs progress every ~10 s).",
    )
    keep_checkpoint_max: int = field(5, minimum=1, help="Training checkpoints kept (the newest).")
    gradient_accumulation_steps: int = field(1, minimum=1, help="Micro-batches per optimizer step.")
    mixed_precision: str = field(
        "float32",
        enum=precision.MIXED_PRECISION,
        help=(
            "Compute dtype (auto: the fastest for the hardware); float16 uses dynamic loss scaling and skips (and "
            "counts) steps with non-finite gradients."
        ),
    )
    jit_compile: bool = field(False, help="Compile the forward and backward pass with XLA.")
    distribution_strategy: str = field("one_device", enum=distribution.STRATEGIES, help="How to use devices.")
    num_gpus: int | None = field(None, minimum=0, help="GPUs on this host (default: all visible; 0: the CPU).")
    tpu: str | None = field(None, help="TPU name or address; 'local' on a TPU VM.")
    all_reduce_alg: str | None = field(None, help="mirrored: nccl|hierarchical_copy; multi_worker_mirrored: ring|nccl.")
    seed: int = field(12345, minimum=0, maximum=2**32 - 1, help="Seed of the initialization, dropout and data order.")
    deterministic: bool = field(False, help="Enable TensorFlow op determinism (bitwise reproducible, slower).")

    # The fields a resumed run may change (`run_settings.training_settings` leaves them out): how the loop is run
    # and saved, and the devices. A job's config adds its own (where things go, evaluation batch sizes, ...).
    NOT_TRAINING_SETTINGS: ClassVar[tuple[str, ...]] = (
        "save_checkpoints_steps",
        "steps_per_loop",
        "keep_checkpoint_max",
        "distribution_strategy",
        "num_gpus",
        "tpu",
        "all_reduce_alg",
        "deterministic",
        "jit_compile",
    )

    def make_strategy(self) -> tf.distribute.Strategy:
        """The strategy of `--distribution_strategy`, `--num_gpus`, `--tpu` and `--all_reduce_alg` (made first:
        multi_worker_mirrored and tpu must configure TensorFlow before anything else touches it)."""
        return distribution.get_distribution_strategy(
            self.distribution_strategy, num_gpus=self.num_gpus, tpu=self.tpu, all_reduce_alg=self.all_reduce_alg
        )

    def build_optimizer(self, num_train_steps: int, num_warmup_steps: int, **schedule) -> keras.optimizers.Optimizer:
        """`optimization.create_optimizer` with this job's `--optimizer`, `--learning_rate`, `--weight_decay`,
        `--clip_norm`, `--adam_bias_correction`, `--adam_epsilon` and `--mixed_precision`, for `num_train_steps`
        steps of which `num_warmup_steps` warm up; `schedule` gives the rest (pretraining's `end_learning_rate` and
        `poly_power`). Call it inside the strategy's scope."""
        return optimization.create_optimizer(
            self.optimizer,
            learning_rate=self.learning_rate,
            num_train_steps=num_train_steps,
            num_warmup_steps=num_warmup_steps,
            weight_decay=self.weight_decay,
            clip_norm=self.clip_norm,
            adam_bias_correction=self.adam_bias_correction,
            epsilon=self.adam_epsilon,
            mixed_precision=self.mixed_precision,
            **schedule,
        )


def check_training_settings(config: TrainingConfig, num_replicas: int) -> None:
    """Refuses loop settings that cannot run together, naming each flag, before any data is read: a batch that does
    not split over the replicas and accumulation steps. Each field's own type, allowed values and range are checked
    when the config is made (`config_flags.CheckedConfig`)."""
    check_batch_size(config.train_batch_size, num_replicas, config.gradient_accumulation_steps)


def check_batch_size(train_batch_size: int, num_replicas: int, gradient_accumulation_steps: int = 1) -> None:
    """Refuses a global batch that is not positive or does not split evenly over replicas and accumulation steps."""
    per_step = num_replicas * gradient_accumulation_steps
    if train_batch_size <= 0:
        raise InputError(f"--train_batch_size must be positive, got {train_batch_size}")
    if gradient_accumulation_steps <= 0:
        raise InputError(f"--gradient_accumulation_steps must be positive, got {gradient_accumulation_steps}")
    if train_batch_size % per_step:
        raise InputError(
            f"--train_batch_size={train_batch_size} must divide by replicas ({num_replicas}) x "
            f"--gradient_accumulation_steps ({gradient_accumulation_steps}) = {per_step}"
        )
