"""The pilot: short MLM + NSP runs at the main size that pick the pretraining recipe on held-out loss alone.

Each pilot run (`run_pilot`) trains one `(learning rate, batch size)` of the budget's grid for the same number of
training examples, stopping at `pilot_evaluations` evenly spaced points to measure the held-out masked-LM loss (the
documents held out by hash, `training_jobs.heldout_mlm_loss`) and the wall and CPU time it has taken so far. A run
resumes from its last evaluation point (its checkpoints are taken there, and the points it measured are in
`pilot_progress.json`), so a stopped sitting loses at most one interval and never mixes its time.

The choice (`choose`) compares the runs three times (`comparisons`): at equal training examples (the last point of
each run), at equal CPU time and at equal wall time (each run's loss interpolated linearly in time to the shortest
run's total on that clock). CPU time holds on a shared machine; wall time also counts what other processes took
(the default budget's four pilot runs took 80-85 CPU s but 82-170 wall s to their first point). The winner is the
run with the lowest held-out loss at equal examples, written to `pilot.json`, which every pretraining run then reads
(`training_jobs.recipe`). Nothing here ever reads a fine-tuning result.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

from official.nlp.common import input_files, output_files, text_files
from official.nlp.paper import budgets, stages, training_jobs
from official.nlp.paper.budgets import Budget
from official.nlp.paper.config import PaperConfig, Workspace
from official.nlp.paper.grid import Stage
from official.nlp.paper.results import Row, select

PROGRESS_FILE = "pilot_progress.json"


def evaluation_points(budget: Budget, batch_size: int) -> list[int]:
    """The steps where a pilot run at `batch_size` measures its held-out loss (the last is its end)."""
    steps = budget.pilot_steps(batch_size)
    count = max(1, min(budget.pilot_evaluations, steps))
    return sorted({max(1, round(steps * i / count)) for i in range(1, count + 1)})


def run_pilot(stage: Stage, config: PaperConfig, budget: Budget, space: Workspace) -> training_jobs.StageResult:
    from official.nlp.tasks.pretraining import run_pretraining
    from official.nlp.tasks.pretraining_config import PretrainingConfig

    run_dir = space.run_dir(stage.id)
    steps = budget.pilot_steps(stage.batch_size)
    points = evaluation_points(budget, stage.batch_size)
    interval = points[0]
    pretraining = PretrainingConfig(
        input_file=space.records(stage.records),
        model_dir=run_dir,
        bert_config=budgets.parse_size(stage.size).bert_config(training_jobs.vocab_size(space)),
        vocab_file=space.vocab_file,
        do_lower_case=config.do_lower_case,
        max_seq_length=budget.max_seq_length,
        max_predictions_per_seq=budget.max_predictions_per_seq,
        train_batch_size=stage.batch_size,
        num_train_steps=steps,
        num_warmup_steps=int(steps * budget.warmup_share),
        learning_rate=stage.learning_rate,
        adam_bias_correction=True,  # as every pretraining run of the rerun (training_jobs.pretrain)
        steps_per_loop=max(1, min(interval, steps // 50 or 1)),
        save_checkpoints_steps=interval,  # a stop resumes from the last evaluation point, whose time is recorded
        keep_checkpoint_max=1,
        mixed_precision=config.mixed_precision,
        seed=training_jobs.PRETRAINING_SEED,
    )
    progress_path = os.path.join(run_dir, PROGRESS_FILE)
    done = json.loads(text_files.read_text(progress_path)) if input_files.exists(progress_path) else []
    for point in points[len(done) :]:
        wall, cpu = time.monotonic(), stages.cpu_seconds()
        result = run_pretraining(pretraining, stop_at_step=point)
        wall, cpu = time.monotonic() - wall, stages.cpu_seconds() - cpu
        before = done[-1] if done else {"wall_seconds": 0.0, "cpu_seconds": 0.0}
        loss = training_jobs.heldout_mlm_loss(result.export_dir, budget, space)
        done.append(
            {
                "step": point,
                "examples": point * stage.batch_size,
                "wall_seconds": before["wall_seconds"] + wall,
                "cpu_seconds": before["cpu_seconds"] + cpu,
                "heldout_mlm_loss": loss,
            }
        )
        output_files.write_text(progress_path, json.dumps(done, indent=1) + "\n")
    values = []
    for point in done:
        for metric in ("heldout_mlm_loss", "wall_seconds", "cpu_seconds", "examples"):
            values.append(("pilot", metric, float(point[metric]), point["step"]))
    values.append(("pilot", "learning_rate", stage.learning_rate, None))
    values.append(("pilot", "batch_size", float(stage.batch_size), None))
    return training_jobs.StageResult(values, done[-1]["step"])


# The clocks the runs are compared at beside equal examples: results.csv's metric of each run's time at a point, and
# the names of the comparison's rows (the shortest run's total, each run's loss there).
CLOCKS = {
    "wall_seconds": ("common_wall_seconds", "loss_at_equal_time"),
    "cpu_seconds": ("common_cpu_seconds", "loss_at_equal_cpu"),
}


def _curve(rows: list[Row], variant: str, clock: str = "wall_seconds") -> list[tuple[float, float]]:
    """`(seconds on `clock`, held-out loss)` of a pilot run at each of its evaluation points."""
    loss = {r.steps: r.value for r in select(rows, variant=variant, task="pilot", metric="heldout_mlm_loss")}
    time = {r.steps: r.value for r in select(rows, variant=variant, task="pilot", metric=clock)}
    return [(time[step], loss[step]) for step in sorted(loss) if step in time]


def at_time(curve: list[tuple[float, float]], seconds: float) -> float | None:
    """The loss interpolated linearly in time at `seconds` (None before the first point: not measured)."""
    for (t0, v0), (t1, v1) in zip(curve, curve[1:]):
        if t0 <= seconds <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (seconds - t0) / (t1 - t0)
    if curve and seconds == curve[-1][0]:
        return curve[-1][1]
    return None


def _runs(rows: list[Row]) -> list[str]:
    return sorted({r.variant for r in select(rows, task="pilot") if r.variant.startswith("pilot-")})


def comparisons(pilot_rows: list[Row]) -> list[tuple]:
    """The rows of the comparisons (`task` "pilot", `variant` each run's; the common times under "pilot"): each
    run's held-out loss at equal examples (its last point), and at each clock of `CLOCKS` its loss interpolated to
    the shortest run's total on that clock (missing when the run's first point is later: not measured)."""
    runs = _runs(pilot_rows)
    values = [("pilot", "loss_at_equal_examples", _curve(pilot_rows, v)[-1][1], None, v) for v in runs]
    for clock, (common_metric, loss_metric) in CLOCKS.items():
        curves = {v: _curve(pilot_rows, v, clock) for v in runs}
        if not all(curves.values()):  # a run recorded without this clock
            continue
        common = min(points[-1][0] for points in curves.values())
        values.append(("pilot", common_metric, common, None, "pilot"))
        for variant in runs:
            loss = at_time(curves[variant], common)
            if loss is not None:
                values.append(("pilot", loss_metric, loss, None, variant))
    return values


def choose(stage: Stage, pilot_rows: list[Row], space: Workspace) -> list[tuple]:
    """Picks the recipe (lowest held-out loss at equal examples), writes `pilot.json`, returns the rows of the
    comparisons (`comparisons`) and of the choice (`chosen_learning_rate`, `chosen_batch_size` under "pilot")."""
    runs = _runs(pilot_rows)
    final = {v: _curve(pilot_rows, v)[-1] for v in runs}
    winner = min(runs, key=lambda v: final[v][1])

    def setting(metric: str) -> float:
        return select(pilot_rows, variant=winner, metric=metric)[0].value

    chosen = {
        "learning_rate": setting("learning_rate"),
        "batch_size": int(setting("batch_size")),
        "run": winner,
        "heldout_mlm_loss": final[winner][1],
        "rule": "the lowest held-out masked-LM loss after the same number of training examples",
    }
    output_files.write_text(space.pilot_file, json.dumps(chosen, indent=1) + "\n")
    return comparisons(pilot_rows) + [
        ("pilot", "chosen_learning_rate", chosen["learning_rate"], None, "pilot"),
        ("pilot", "chosen_batch_size", float(chosen["batch_size"]), None, "pilot"),
    ]


def choice_words(values: list[tuple]) -> str:
    """The choice's progress line: the chosen recipe, and the winner's losses at equal examples and equal times."""
    by_metric: dict[str, dict[str, float]] = {}
    for _, metric, value, _, variant in values:
        by_metric.setdefault(metric, {})[variant] = value
    equal_examples = by_metric["loss_at_equal_examples"]
    winner = min(equal_examples, key=equal_examples.get)
    words = [
        f"learning rate {by_metric['chosen_learning_rate']['pilot']:.3g}, "
        f"batch {by_metric['chosen_batch_size']['pilot']:.0f} ({winner})",
        f"loss_at_equal_examples {equal_examples[winner]:.4g}",
    ]
    for common_metric, loss_metric in CLOCKS.values():
        if winner in by_metric.get(loss_metric, {}):
            common = by_metric[common_metric]["pilot"]
            words.append(f"{loss_metric} {by_metric[loss_metric][winner]:.4g} (at {common:.0f} s)")
    return ", ".join(words)


def complete_comparisons(rows: list[Row]) -> list[Row]:
    """`rows` with the comparison rows its pilot's choice lacks (a choice made by an earlier version, without the
    equal-CPU comparison), computed from its runs' rows as `choose` does, as rows of the choice stage."""
    choice = select(rows, variant="pilot", metric="chosen_learning_rate")
    if not choice:
        return rows
    have = {(r.variant, r.metric) for r in select(rows, task="pilot")}
    added = [
        dataclasses.replace(choice[0], task=task, metric=metric, value=float(value), steps=steps, variant=variant)
        for task, metric, value, steps, variant in comparisons(rows)
        if (variant, metric) not in have
    ]
    return rows + added


def pilot_table(rows: list[Row]) -> list[str]:
    """results.md's section: each pilot run at equal examples, at equal CPU time and at equal wall time, and the
    choice."""
    runs = _runs(rows)
    if not runs:
        return []
    chosen = select(rows, variant="pilot", metric="chosen_learning_rate")

    def common(metric: str) -> str:
        found = select(rows, variant="pilot", metric=metric)
        return f" ({found[0].value:.0f} s)" if found else ""

    lines = [
        "## Pilot: the pretraining recipe, chosen on held-out loss",
        "",
        "Short MLM + NSP runs at the main size, the same training examples each; held-out masked-LM loss on the "
        "held-out documents. The winner (lowest loss at equal examples) is the recipe of every pretraining run. "
        "At equal CPU time and at equal wall time: each run's loss interpolated linearly in time to the shortest "
        f"run's total CPU time{common('common_cpu_seconds')} and wall time{common('common_wall_seconds')}. CPU time "
        "is the comparison that holds on a shared machine: wall time also counts the time other processes took "
        "the cores, so it depends on the load while the run went.",
        "",
    ]
    header = [
        "run",
        "learning rate",
        "batch",
        "held-out loss, equal examples",
        "CPU s",
        "wall s",
        "held-out loss, equal CPU time",
        "held-out loss, equal wall time",
        "chosen",
    ]
    body = []
    for variant in runs:

        def value(metric: str, variant: str = variant) -> Row | None:
            found = sorted(select(rows, variant=variant, metric=metric), key=lambda r: r.steps or 0)
            return found[-1] if found else None

        def number(metric: str, form: str) -> str:
            found = value(metric)
            return "—" if found is None else format(found.value, form)

        rate, batch = value("learning_rate"), value("batch_size")
        won = bool(chosen) and rate is not None and chosen[0].value == rate.value and batch is not None
        won = won and select(rows, variant="pilot", metric="chosen_batch_size")[0].value == batch.value
        body.append(
            [
                variant,
                number("learning_rate", ".3g"),
                number("batch_size", ".0f"),
                number("loss_at_equal_examples", ".3f"),
                number("cpu_seconds", ".0f"),
                number("wall_seconds", ".0f"),
                number("loss_at_equal_cpu", ".3f"),
                number("loss_at_equal_time", ".3f"),
                "yes" if won else "",
            ]
        )
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return lines + [""]
