"""`results.csv`: one row per run and metric, and the cells the report draws from it (median and range over seeds).

Columns: `variant`, `size`, `task`, `head`, `seed`, `metric`, `value`, `steps`, `seconds`, `stage`, `machine`.
Values are in the paper's units: accuracy and F1 in percent, perplexity as it is, examples per second. A data stage
writes its counts as rows too (task `corpus` or the task's name, metrics such as `train_examples`), so that every
number of the report is a row of this file or a median, minimum or maximum of rows.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import platform
import statistics
from collections.abc import Iterable, Sequence

from official.nlp.common import input_files, output_files, text_files

FIELDS = ("variant", "size", "task", "head", "seed", "metric", "value", "steps", "seconds", "stage", "machine")


@dataclasses.dataclass(frozen=True)
class Row:
    variant: str
    size: str
    task: str
    head: str
    seed: int | None
    metric: str
    value: float
    steps: int | None
    seconds: float
    stage: str
    machine: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> Row:
        def number(text, kind):
            return None if text in (None, "", "None") else kind(text)

        return cls(
            variant=values["variant"],
            size=values["size"],
            task=values["task"],
            head=values["head"],
            seed=number(values["seed"], int),
            metric=values["metric"],
            value=float(values["value"]),
            steps=number(values["steps"], int),
            seconds=float(values["seconds"]),
            stage=values["stage"],
            machine=values["machine"],
        )


def write_csv(path: str, rows: Sequence[Row]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        values = row.to_dict()
        values["value"] = repr(float(row.value))
        writer.writerow(values)
    output_files.write_text(path, buffer.getvalue())


def read_csv(path: str) -> list[Row]:
    return [Row.from_dict(r) for r in csv.DictReader(io.StringIO(text_files.read_text(path)))]


@dataclasses.dataclass(frozen=True)
class Cell:
    """The runs of one table cell: their values (one per seed), median, minimum and maximum."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def overlaps(self, other: Cell) -> bool:
        return self.low <= other.high and other.low <= self.high


def select(rows: Iterable[Row], **keys) -> list[Row]:
    """The rows whose fields equal `keys` (e.g. ``variant="mlm", task="mrpc", metric="accuracy"``)."""
    return [r for r in rows if all(getattr(r, k) == v for k, v in keys.items())]


def cell(rows: Iterable[Row], **keys) -> Cell | None:
    """The cell of the rows matching `keys`, None without any."""
    found = select(rows, **keys)
    return Cell(tuple(r.value for r in sorted(found, key=lambda r: r.seed or 0))) if found else None


def describe_machine() -> str:
    """The machine in words: CPU model and cores, accelerators, TensorFlow version (for every row and the report)."""
    import tensorflow as tf

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:  # the machine's own file, not a user path
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    accelerators = []
    for kind in ("GPU", "TPU"):
        for device in tf.config.list_physical_devices(kind):
            details = tf.config.experimental.get_device_details(device) if kind == "GPU" else {}
            accelerators.append(details.get("device_name", device.name))
    return (
        f"{cpu}, {os.cpu_count()} cores, {', '.join(accelerators) if accelerators else 'no accelerator'}, "
        f"TensorFlow {tf.__version__}"
    )


def read_scalars(summary_dir: str) -> dict[str, list[tuple[int, float]]]:
    """The TensorBoard scalars of a run's `summaries/` folder: `{tag: [(step, value), ...]}` by step. A run resumed
    after a stop wrote some steps twice (after its last checkpoint); the later event of a step counts."""
    import tensorflow as tf

    if not input_files.isdir(summary_dir):
        return {}
    latest: dict[str, dict[int, tuple[float, float]]] = {}
    for name in input_files.listdir(summary_dir):
        if not name.startswith("events.out.tfevents"):
            continue
        for event in tf.compat.v1.train.summary_iterator(os.path.join(summary_dir, name)):
            for value in event.summary.value:
                number = float(tf.make_ndarray(value.tensor)) if value.HasField("tensor") else value.simple_value
                seen = latest.setdefault(value.tag, {})
                if event.step not in seen or seen[event.step][0] <= event.wall_time:
                    seen[event.step] = (event.wall_time, number)
    return {tag: [(step, v) for step, (_, v) in sorted(points.items())] for tag, points in latest.items()}
