"""Precision: the `--mixed_precision` values and the Keras dtype policy of each (`MIXED_PRECISION`,
`dtype_policy`); what `--mixed_precision=auto` picks for the hardware, and a warning when bfloat16 is emulated.

bfloat16 halves memory traffic and, with native units, doubles or quadruples matmul speed. Without them it is
emulated, and slower than float32: on an Intel Xeon without AVX512_BF16, a bfloat16 matmul ran at a quarter of
the float32 speed. So `auto` picks:

- TPU: bfloat16 (native everywhere);
- GPU: bfloat16 from compute capability 8.0 (Ampere) on, float16 with dynamic loss scaling on 6.0-7.x (Pascal to
  Turing: fast float16, no bfloat16), float32 below;
- CPU: bfloat16 with AVX512_BF16 or AMX-BF16 (`/proc/cpuinfo` flags), float32 otherwise.

Asking for `bfloat16` where it is not native still runs it, with a warning that gives the slowdown measured on
the spot (a float32 and a bfloat16 matmul, about a second). Detection takes a `Hardware` value, so it can be
tested without the hardware.

Example:

>>> resolve_mixed_precision("auto", Hardware("gpu", gpu_compute_capability=(7, 0)))
'float16'
>>> resolve_mixed_precision("auto", Hardware("cpu", cpu_flags=frozenset({"avx512f", "amx_bf16"})))
'bfloat16'
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import TYPE_CHECKING

from absl import logging

from official.nlp.common.errors import InputError

if TYPE_CHECKING:
    import keras

# `--mixed_precision` values and the Keras dtype policy each one computes in (variables stay float32). `auto` is
# one of the others, picked for the hardware by `precision.resolve_mixed_precision`.
MIXED_PRECISION = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16", "auto": None}

# CPU flags (as /proc/cpuinfo spells them) of native bfloat16 arithmetic that oneDNN uses.
BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@dataclasses.dataclass(frozen=True)
class Hardware:
    """What the step runs on: `kind` is "cpu", "gpu" or "tpu"."""

    kind: str
    cpu_flags: frozenset = frozenset()
    gpu_compute_capability: tuple[int, int] | None = None

    def describe(self) -> str:
        if self.kind == "gpu":
            return f"GPU with compute capability {self.gpu_compute_capability}"
        if self.kind == "cpu":
            native = sorted(BF16_CPU_FLAGS & self.cpu_flags)
            return f"CPU with {', '.join(native)}" if native else "CPU without AVX512_BF16/AMX-BF16"
        return self.kind.upper()


def _cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset:
    try:
        with open(cpuinfo, encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:  # not Linux: no flags known, so no native bfloat16 assumed
        pass
    return frozenset()


@functools.lru_cache(maxsize=1)
def detect_hardware() -> Hardware:
    """The accelerator TensorFlow sees (TPU, else the first GPU), else the CPU."""
    import tensorflow as tf

    if tf.config.list_logical_devices("TPU"):
        return Hardware("tpu")
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        capability = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability")
        return Hardware("gpu", gpu_compute_capability=tuple(capability) if capability else None)
    return Hardware("cpu", cpu_flags=_cpu_flags())


def native_bfloat16(hardware: Hardware) -> bool:
    if hardware.kind == "tpu":
        return True
    if hardware.kind == "gpu":
        return (hardware.gpu_compute_capability or (0, 0)) >= (8, 0)
    return bool(BF16_CPU_FLAGS & hardware.cpu_flags)


def auto_precision(hardware: Hardware) -> str:
    """The `--mixed_precision` value that `auto` means on `hardware` (see the module docstring)."""
    if native_bfloat16(hardware):
        return "bfloat16"
    if hardware.kind == "gpu" and (hardware.gpu_compute_capability or (0, 0)) >= (6, 0):
        return "float16"
    return "float32"


def measure_bfloat16_slowdown(size: int = 1024, seconds: float = 0.5) -> float:
    """How many times longer a `[size, size]` bfloat16 matmul takes than a float32 one here (best of a few)."""
    import tensorflow as tf

    def best(dtype):
        a = tf.cast(tf.random.normal((size, size)), dtype)
        matmul = tf.function(lambda: tf.reduce_sum(tf.cast(tf.linalg.matmul(a, a), tf.float32)))
        matmul().numpy()
        fastest, deadline = float("inf"), time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            matmul().numpy()
            fastest = min(fastest, time.perf_counter() - start)
        return fastest

    return best(tf.bfloat16) / best(tf.float32)


@functools.cache
def _warn_emulated_bfloat16(hardware: Hardware) -> None:
    slowdown = measure_bfloat16_slowdown()
    logging.warning(
        "--mixed_precision=bfloat16 on a %s: bfloat16 is emulated here, and a bfloat16 matmul just took %.1fx as "
        "long as a float32 one. Use --mixed_precision=auto (float32 here) unless you are testing bfloat16 numerics.",
        hardware.describe(),
        slowdown,
    )


def resolve_mixed_precision(mixed_precision: str, hardware: Hardware | None = None) -> str:
    """`auto` resolved for `hardware` (default: this machine's); `bfloat16` without native support warns once."""
    if mixed_precision not in ("auto", "bfloat16"):
        return mixed_precision
    hardware = hardware or detect_hardware()
    if mixed_precision == "auto":
        chosen = auto_precision(hardware)
        logging.info("--mixed_precision=auto: %s on this %s", chosen, hardware.describe())
        return chosen
    if hardware.kind == "cpu" and not native_bfloat16(hardware):
        _warn_emulated_bfloat16(hardware)
    return mixed_precision


def check_mixed_precision(mixed_precision: str) -> None:
    """The one check of a `mixed_precision` argument given directly to `dtype_policy` or
    `optimization.create_optimizer`; a job's config checks its `--mixed_precision` field when it is made
    (`config_flags.CheckedConfig`)."""
    if mixed_precision not in MIXED_PRECISION:
        raise InputError(f"mixed_precision={mixed_precision!r}: must be one of {', '.join(MIXED_PRECISION)}")


def dtype_policy(mixed_precision: str = "float32") -> keras.DTypePolicy:
    """The Keras dtype policy of a `--mixed_precision` value (see `MIXED_PRECISION`; `auto` fits the hardware)."""
    import keras  # here: the rest of this module imports TensorFlow only where it needs it

    check_mixed_precision(mixed_precision)
    return keras.dtype_policies.get(MIXED_PRECISION[resolve_mixed_precision(mixed_precision)])
