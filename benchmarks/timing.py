"""Shared timing: interleaved rounds (so that load from other jobs hits every variant alike), and the matmul limit.

On a shared machine one timing is noise; a ratio of medians over interleaved rounds in one process is not.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from collections.abc import Callable


@dataclasses.dataclass
class Rate:
    """Items per second of one variant: the median over rounds, with the spread (min..max) for honesty.

    `per_round` is wall-clock; `per_cpu_round` is items per CPU-second of this process, which moves less than
    wall time when other jobs compete for the cores (it counts TF's spinning threads too, so it is no
    substitute for a quiet machine, but a ratio of CPU rates is a fair check on a ratio of wall rates).
    """

    name: str
    per_round: list[float]
    per_cpu_round: list[float] = dataclasses.field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.per_round)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.per_cpu_round)

    def spread(self) -> str:
        return f"{min(self.per_round):.4g}..{max(self.per_round):.4g}"


def interleaved(variants: dict[str, Callable[[], float]], rounds: int) -> dict[str, Rate]:
    """Runs each variant's `fn() -> items` once per round, in turn, and times it (wall clock).

    Each `fn` must already be warmed up (traced). Returns items/s per round per variant.
    """
    rates = {name: Rate(name, []) for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            items = fn()
            rates[name].per_round.append(items / (time.perf_counter() - start))
            rates[name].per_cpu_round.append(items / (time.process_time() - cpu_start))
    return rates


def command_line() -> str:
    return "python " + " ".join(sys.argv)


def print_table(title: str, rates: dict[str, Rate], reference: str, unit: str, extra: dict[str, str] | None = None):
    """One block per measurement: the command, then each variant's median, spread and ratio to `reference`."""
    print(f"\n## {title}\n$ {command_line()}")
    ref, ref_cpu = rates[reference].median, rates[reference].cpu_median
    width = max(28, *(len(name) for name in rates))
    for name, rate in rates.items():
        note = (extra or {}).get(name, "")
        print(
            f"  {name:<{width}} {rate.median:9.4g} {unit} (rounds {rate.spread()}) "
            f"{rate.median / ref:5.2f}x {reference} | per CPU-s {rate.cpu_median:8.4g}, "
            f"{rate.cpu_median / ref_cpu:5.2f}x | {note}"
        )


def matmul_shapes(batch: int, seq: int, hidden: int, intermediate: int, heads: int, train: bool):
    """The matmuls of one Transformer layer as `(m, k, n, count, transpose_a, transpose_b)` tuples.

    Forward: four `[B*S, H] x [H, H]` projections, `[B*S, H] x [H, I]`, `[B*S, I] x [I, H]`, and the two
    attention matmuls per head. Training adds, per forward `x @ W`, `dy @ W^T` and `x^T @ dy` with the
    transposes the gradient uses.
    """
    tokens = batch * seq
    head = hidden // heads
    dense = [(tokens, hidden, hidden, 4), (tokens, hidden, intermediate, 1), (tokens, intermediate, hidden, 1)]
    shapes = [(m, k, n, c, False, False) for m, k, n, c in dense]
    attention = [(seq, head, seq, batch * heads), (seq, seq, head, batch * heads)]  # QK^T, PV
    shapes += [(m, k, n, c, False, False) for m, k, n, c in attention]
    if train:
        shapes += [(m, n, k, c, False, True) for m, k, n, c in dense]  # dx = dy @ W^T
        shapes += [(k, m, n, c, True, False) for m, k, n, c in dense]  # dW = x^T @ dy
        shapes += [(m, n, k, c, False, True) for m, k, n, c in attention] * 2
    return shapes


def layer_flops(shapes) -> float:
    return float(sum(2 * m * k * n * c for m, k, n, c, _, _ in shapes))


def matmul_limit(shapes, dtype: str, seconds: float = 1.0) -> float:
    """FLOP/s of TensorFlow's own matmul on exactly `shapes` at `dtype`: the ceiling a model step can reach here.

    Batched shapes (attention) run as one batched matmul; all shapes run in one `tf.function` so the
    per-call overhead is amortized like in a model step.
    """
    import tensorflow as tf

    operands = []
    for m, k, n, count, ta, tb in shapes:
        a_shape = (k, m) if ta else (m, k)
        b_shape = (n, k) if tb else (k, n)
        # Small shapes repeated per head run as one batched matmul, as attention does; large ones get their own
        # operands per repeat (identical ops would be merged by Grappler).
        batch = (count,) if count > 1 and m * k * n < 2**22 else ()
        for _ in range(1 if batch else count):
            a = tf.random.normal(batch + a_shape, dtype=tf.float32)
            b = tf.random.normal(batch + b_shape, dtype=tf.float32)
            operands.append((tf.cast(a, dtype), tf.cast(b, dtype), ta, tb))

    @tf.function
    def run():
        total = tf.constant(0.0, tf.float32)
        for a, b, ta, tb in operands:
            c = tf.linalg.matmul(a, b, transpose_a=ta, transpose_b=tb)
            total += tf.cast(tf.reshape(c, [-1])[0], tf.float32)  # keeps every matmul alive
        return total

    run().numpy()
    flops = layer_flops(shapes)
    best = 0.0
    deadline = time.perf_counter() + seconds
    while True:
        start = time.perf_counter()
        run().numpy()
        best = max(best, flops / (time.perf_counter() - start))
        if time.perf_counter() > deadline:
            return best
