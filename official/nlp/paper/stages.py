"""Running the grid's stages with resume, one progress line per stage with the time left.

A stage counts as done once its marker (`<output_dir>/stages/<id>.json`: its rows for results.csv, its time and its
estimate) is written, and the marker is written last, atomically: a rerun skips a stage with a marker and runs the
others, whose library calls resume what they had started (a pretraining run continues from its last checkpoint,
a fine-tuning run from its own, the record writer keeps its finished shards).

What a stage costs is estimated from its work and rates measured on the project's machine (`estimate`); the time
left is the sum of the left stages' estimates, each kind scaled by how long its finished stages took against their
estimates on this machine (a kind with none yet keeps its estimate).
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Callable, Sequence

from absl import logging

from official.nlp.common import input_files, output_files, text_files
from official.nlp.paper import budgets, grid
from official.nlp.paper.budgets import Budget
from official.nlp.paper.config import Workspace
from official.nlp.paper.grid import Stage
from official.nlp.paper.results import Row

# ---- the cost model (CPU seconds on the project's 2-core machine, measured: see docs/paper.md) --------------------
# A run's CPU time is at most its wall time on a quiet 2-core machine (TensorFlow uses both cores for part of it).
# Pretraining: multiply-adds of the step (forward and backward) at the measured rate. Fine-tuning: a fixed cost
# (building the model, tracing the step and the evaluation, writing checkpoints) plus a per-task cost of one example
# for one epoch at the `tiny` size (its evaluation included), scaled by the encoder's size. The ETA rescales every
# kind by what its finished stages took.
TRAIN_MACS_PER_SECOND = 3.0e10
RUN_OVERHEAD_SECONDS = {"pretrain": 15.0, "finetune": 8.0, "perplexity": 5.0, "pilot": 15.0, "curve_pretrain": 15.0}
DATA_SECONDS = {"corpus": 15.0, "vocab": 140.0, "records": 20.0, "task_data": 1.0, "pilot_choice": 1.0}
TINY_EXAMPLE_EPOCH_SECONDS = {"mrpc": 4.1e-3, "sst-2": 1.4e-3, "qnli": 3.9e-3, "squad": 1.8e-2, "ner": 7.0e-3}
FEATURE_BASED_SHARE = 0.6  # a feature-based run: the frozen encoder's forward pass and a small BiLSTM


def _step_macs(size: budgets.Size, tokens: int, vocab_size: int, predictions: int) -> float:
    """Forward + backward multiply-adds of one example: the encoder on `tokens` and an output layer over the
    vocabulary for `predictions` positions."""
    return 3.0 * (tokens * size.encoder_flops_per_token() + predictions * size.hidden * vocab_size)


def estimate(stage: Stage, budget: Budget, vocab_size: int) -> float:
    """The stage's cost in CPU seconds on the project's 2-core machine, from its work and the measured rates."""
    if stage.kind in DATA_SECONDS:
        return DATA_SECONDS[stage.kind]
    size = budgets.parse_size(stage.size)
    overhead = RUN_OVERHEAD_SECONDS[stage.kind]
    if stage.kind in ("pretrain", "pilot", "curve_pretrain"):
        predictions = budget.max_seq_length if stage.variant == grid.LTR.name else budget.max_predictions_per_seq
        example = _step_macs(size, budget.max_seq_length, vocab_size, predictions)
        if stage.kind == "pilot":
            steps, batch = budget.pilot_steps(stage.batch_size), stage.batch_size
            evaluations = budget.pilot_evaluations * (RUN_OVERHEAD_SECONDS["perplexity"] + overhead)
            return evaluations + steps * batch * example / TRAIN_MACS_PER_SECOND
        if stage.kind == "curve_pretrain":
            segments = budget.curve_segments()
            index = segments.index(stage.step)
            steps = stage.step - (segments[index - 1] if index else 0)
            return 2 * overhead + steps * budget.pretrain_batch_size * example / TRAIN_MACS_PER_SECOND
        return overhead + budget.pretrain_steps * example * budget.pretrain_batch_size / TRAIN_MACS_PER_SECOND
    if stage.kind == "perplexity":
        return overhead + 3000 * _step_macs(size, budget.max_seq_length, vocab_size, 20) / 3 / TRAIN_MACS_PER_SECOND
    task = budget.feature_based if stage.feature_choice else budget.tasks[stage.task]
    tiny = budgets.parse_size("tiny").encoder_flops_per_token()
    scale = 0.2 + 0.8 * size.encoder_flops_per_token() / tiny
    if stage.feature_choice:
        scale *= FEATURE_BASED_SHARE
    examples = (
        task.train_examples or {"mrpc": 3668, "sst-2": 67349, "qnli": 4349, "squad": 9236, "ner": 14041}[stage.task]
    )
    return overhead + scale * examples * task.epochs * TINY_EXAMPLE_EPOCH_SECONDS[stage.task]


KIND_NAMES = {
    "corpus": "data",
    "vocab": "data",
    "records": "data",
    "task_data": "data",
    "pilot": "pilot",
    "pilot_choice": "pilot",
    "pretrain": "pretraining",
    "curve_pretrain": "curve pretraining",
    "perplexity": "perplexity",
    "finetune": "fine-tuning",
}


def hms(seconds: float) -> str:
    seconds = int(round(max(seconds, 0)))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the record writer's workers), user and system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def read_marker(space: Workspace, stage: Stage) -> dict | None:
    path = space.marker(stage.id)
    return json.loads(text_files.read_text(path)) if input_files.exists(path) else None


class Forecast:
    """The estimates of the stages, rescaled per kind by what the finished ones took."""

    def __init__(self, stages: Sequence[Stage]):
        self.stages = list(stages)
        self.taken: dict[str, float] = {}
        self.estimated: dict[str, float] = {}

    def finished(self, stage: Stage, seconds: float) -> None:
        self.taken[stage.kind] = self.taken.get(stage.kind, 0.0) + seconds
        self.estimated[stage.kind] = self.estimated.get(stage.kind, 0.0) + stage.cost

    def estimate(self, stage: Stage) -> float:
        scale = self.taken[stage.kind] / self.estimated[stage.kind] if self.estimated.get(stage.kind) else 1.0
        return stage.cost * scale

    def left(self, stages: Sequence[Stage]) -> float:
        return sum(self.estimate(s) for s in stages)


def summary_line(stages: Sequence[Stage], done: set[str]) -> str:
    """``data 8/8, pretraining 2/7, perplexity 0/5, fine-tuning 10/140 done``."""
    counts: dict[str, list[int]] = {}
    for stage in stages:
        count = counts.setdefault(KIND_NAMES[stage.kind], [0, 0])
        count[0] += stage.id in done
        count[1] += 1
    return ", ".join(f"{kind} {d}/{n}" for kind, (d, n) in counts.items()) + " done"


def run_stages(
    stages: Sequence[Stage],
    space: Workspace,
    execute: Callable[[Stage], tuple[list[Row], str]],
    *,
    after: Callable[[Stage], None] = lambda stage: None,
    skip: Callable[[Stage, list[Row]], str | None] = lambda stage, rows: None,
    echo: Callable[[str], None] = print,
) -> list[Row]:
    """Runs every stage without a marker, in order; returns the rows of all stages (done before or now).

    `execute(stage)` runs the stage and returns its rows and a few words on its result (for the progress line);
    `after(stage)` tidies up once the marker is written (also for a stage found done, in case a stop came between).
    `skip(stage, rows)` says why a stage is not needed given the rows of the finished ones (the transfer curve past
    its stop), or None; a skipped stage gets no marker and does not count as left.
    """
    progress = Forecast(stages)
    markers = {stage.id: read_marker(space, stage) for stage in stages}
    for stage in stages:
        if markers[stage.id]:
            progress.finished(stage, markers[stage.id]["seconds"])

    def rows_so_far() -> list[Row]:
        return [Row.from_dict(r) for stage in stages if markers[stage.id] for r in markers[stage.id]["rows"]]

    finished_rows = rows_so_far()
    left = [s for s in stages if not markers[s.id] and not skip(s, finished_rows)]
    done = {s.id for s in stages if markers[s.id]}
    echo(f"{len(stages)} stages: {summary_line(stages, done)}; {len(left)} left, about {hms(progress.left(left))}")
    started = time.monotonic()
    for number, stage in enumerate(stages, 1):
        if markers[stage.id]:
            after(stage)
            continue
        reason = skip(stage, rows_so_far())
        if reason:
            if stage in left:
                left.remove(stage)
            echo(f"[{number}/{len(stages)}] {stage.title}: skipped ({reason})")
            continue
        missing = [d for d in stage.depends if d not in done]
        if missing:  # the grid's order puts every stage after its inputs: this is a bug
            raise RuntimeError(f"stage {stage.id} runs before {missing}")
        if stage in left:
            left.remove(stage)
        echo(f"[{number}/{len(stages)}] {stage.title} ...")
        stage_start, cpu_start = time.monotonic(), cpu_seconds()
        try:
            rows, result = execute(stage)
        except BaseException:
            logging.error("Stage %s stopped after %.0f s; a rerun resumes it", stage.id, time.monotonic() - stage_start)
            raise
        seconds = time.monotonic() - stage_start
        rows = [_with_seconds(row, seconds) for row in rows]
        marker = {
            "stage": stage.id,
            "seconds": seconds,
            "cpu_seconds": cpu_seconds() - cpu_start,
            "estimate": stage.cost,
            "rows": [r.to_dict() for r in rows],
        }
        output_files.makedirs_for(space.marker(stage.id))
        output_files.write_text(space.marker(stage.id), json.dumps(marker, indent=1) + "\n")
        markers[stage.id] = marker
        done.add(stage.id)
        progress.finished(stage, seconds)
        after(stage)
        echo(
            f"[{number}/{len(stages)}] {stage.title}: {result} ({seconds:.0f} s); {len(left)} left, about "
            f"{hms(progress.left(left))}"
        )
    if left:
        raise RuntimeError(f"stages left: {[s.id for s in left]}")
    echo(
        f"All {len(stages)} stages done ({summary_line(stages, done)}); this sitting: {hms(time.monotonic() - started)}"
    )
    return rows_so_far()


def _with_seconds(row: Row, seconds: float) -> Row:
    values = row.to_dict()
    values["seconds"] = seconds
    return Row.from_dict(values)
