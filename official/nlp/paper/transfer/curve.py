"""The transfer curve: one long MLM + NSP pretraining run at the main size, its checkpoints at doubling steps each
fine-tuned on every task with the budget's seeds, beside the model that is not pretrained (random init).

The run's schedule is defined for the whole length (`curve_max_steps`: warmup, then linear decay to zero there), and
it is trained in segments (`pretrain_segment`: one stage per kept checkpoint and per `curve_chunk_steps`), each
`run_pretraining(..., stop_at_step=...)` on the same `model_dir`, so the run is one run however many sittings it
takes; a kept checkpoint is exported to a model directory of its own (`Workspace.curve_export`) and its held-out
masked-LM loss measured. It reads the shared NSP records with dynamic masking (fresh masks each time a record is
read; `curve_dynamic_masking`), since 64k steps of 32 read the records many times over.

The crossover of a task is the first kept checkpoint whose runs all score above every random-init run (the seed
ranges apart, min of pretrained > max of random init, which puts its median above too). The curve stops once
`curve_stop_tasks` tasks (or all selected, if fewer) crossed: later stages are skipped (`skip_reason`).
"""

from __future__ import annotations

import io
import math

from official.nlp.common import input_files, output_files
from official.nlp.paper import budgets, grid, training_jobs
from official.nlp.paper.budgets import Budget
from official.nlp.paper.config import PaperConfig, Workspace
from official.nlp.paper.grid import Stage
from official.nlp.paper.results import Cell, Row, cell, select
from official.nlp.paper.tables import TASK_COLUMNS

PLOT = "transfer_curve.png"


def _pretraining_config(config: PaperConfig, budget: Budget, space: Workspace, export_dir: str | None):
    from official.nlp.tasks.pretraining_config import PretrainingConfig

    chosen = training_jobs.recipe(budget, space)
    first = budget.curve_segments()[0]
    return PretrainingConfig(
        input_file=space.records(grid.SHARED_RECORDS),
        model_dir=space.curve_model_dir,
        export_dir=export_dir,
        bert_config=budgets.parse_size(budget.main_size).bert_config(training_jobs.vocab_size(space)),
        vocab_file=space.vocab_file,
        do_lower_case=config.do_lower_case,
        max_seq_length=budget.max_seq_length,
        max_predictions_per_seq=budget.max_predictions_per_seq,
        train_batch_size=chosen.batch_size,
        num_train_steps=budget.curve_max_steps,
        num_warmup_steps=budget.curve_warmup,
        learning_rate=chosen.learning_rate,
        adam_bias_correction=True,  # as every pretraining run of the rerun (training_jobs.pretrain)
        dynamic_masking=budget.curve_dynamic_masking,
        steps_per_loop=max(1, min(100, first // 10)),
        save_checkpoints_steps=max(1, min(500, first)),
        keep_checkpoint_max=1,
        mixed_precision=config.mixed_precision,
        seed=training_jobs.PRETRAINING_SEED,
    )


def pretrain_segment(stage: Stage, config: PaperConfig, budget: Budget, space: Workspace) -> training_jobs.StageResult:
    """Pretrains the curve's run to `stage.step`; a kept checkpoint is exported and its held-out loss measured."""
    from official.nlp.tasks.pretraining import run_pretraining

    kept = stage.step in budget.curve_checkpoints()
    export_dir = space.curve_export(stage.step) if kept else None
    result = run_pretraining(_pretraining_config(config, budget, space, export_dir), stop_at_step=stage.step)
    values = [("curve", "step", float(stage.step))]  # the crossover cells of the report name it
    if result.metrics:
        for tag in ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy"):
            if tag in result.metrics:
                values.append(("curve", f"final_{tag}", float(result.metrics[tag])))
    if kept:
        loss = training_jobs.heldout_mlm_loss(export_dir, budget, space)
        values += [("curve", "heldout_mlm_loss", loss), ("curve", "heldout_perplexity", math.exp(loss))]
    return training_jobs.StageResult(values, result.step)


def ensure_export(stage: Stage, config: PaperConfig, budget: Budget, space: Workspace) -> None:
    """Exports the checkpoint of `stage.step` when its model directory is missing (a sitting that resumed from a
    saved state has the run's checkpoint, not the exports); the run is then at that step, and trains nothing."""
    from official.nlp.checkpoints import model_dir as model_dir_lib
    from official.nlp.tasks.pretraining import run_pretraining

    export_dir = space.curve_export(stage.step)
    if model_dir_lib.export_is_current(export_dir, stage.step):
        return
    run_pretraining(_pretraining_config(config, budget, space, export_dir), stop_at_step=stage.step)
    if not model_dir_lib.export_is_current(export_dir, stage.step):
        raise RuntimeError(f"{space.curve_model_dir} is past step {stage.step}: its checkpoint is lost")


def _metric(task: str) -> str:
    return TASK_COLUMNS[task].metric


def curve_cells(rows: list[Row], budget: Budget, task: str) -> dict[int, Cell]:
    """The finished checkpoints' cells of `task` (every seed run), by step."""
    seeds = budget.tasks[task].seeds
    found = {}
    for step in budget.curve_checkpoints():
        c = cell(
            rows, variant=grid.curve_variant(step), size=budget.main_size, task=task, head="", metric=_metric(task)
        )
        if c is not None and len(c.values) == seeds:
            found[step] = c
    return found


def random_cell(rows: list[Row], budget: Budget, task: str) -> Cell | None:
    return cell(rows, variant=grid.RANDOM.name, size=budget.main_size, task=task, head="", metric=_metric(task))


def crossover(rows: list[Row], budget: Budget, task: str) -> int | None:
    """The first kept checkpoint whose seed range lies above random init's (None: none yet)."""
    reference = random_cell(rows, budget, task)
    if reference is None or len(reference.values) < budget.tasks[task].seeds:
        return None
    for step, c in sorted(curve_cells(rows, budget, task).items()):
        if c.low > reference.high:
            return step
    return None


def crossover_text(rows: list[Row], budget: Budget, task: str, tasks) -> str:
    """The crossover row's cell: "step N"; "none to N" once the curve is over for the task (its last checkpoint, or
    the stop, fine-tuned on every seed); else "none yet" (a later checkpoint may still cross)."""
    step = crossover(rows, budget, task)
    if step is not None:
        return f"step {step:,}"
    stop = stop_step(rows, budget, tasks)
    end = stop if stop is not None else budget.curve_checkpoints()[-1]
    judged = curve_cells(rows, budget, task)
    reference = random_cell(rows, budget, task)
    if end in judged and reference is not None and len(reference.values) >= budget.tasks[task].seeds:
        return f"none to {end:,}"
    return "none yet"


def stop_step(rows: list[Row], budget: Budget, tasks) -> int | None:
    """The kept checkpoint at which enough tasks have crossed for the curve to stop (None: go on)."""
    steps = sorted(s for s in (crossover(rows, budget, t) for t in tasks) if s is not None)
    needed = min(budget.curve_stop_tasks, len(tasks))
    return steps[needed - 1] if needed and len(steps) >= needed else None


def skip_reason(stage: Stage, rows: list[Row], budget: Budget, tasks) -> str | None:
    """Why a stage of the curve is not run (it is past the stop), or None."""
    if stage.step is None or stage.kind not in ("curve_pretrain", "finetune"):
        return None
    stop = stop_step(rows, budget, tasks)
    if stop is None or stage.step <= stop:
        return None
    return f"the curve stopped at step {stop:,}, where {min(budget.curve_stop_tasks, len(tasks))} tasks crossed"


def _fmt(c: Cell | None, decimals: int = 1) -> str:
    if c is None:
        return "—"
    if len(c.values) == 1:
        return f"{c.median:.{decimals}f}"
    return f"{c.median:.{decimals}f} [{c.low:.{decimals}f}, {c.high:.{decimals}f}]"


def curve_table(rows: list[Row], budget: Budget, tasks) -> list[str]:
    """results.md's section: a row per kept checkpoint, the random-init row, and each task's crossover."""
    tasks = [t for t in budgets.FINE_TUNING_TASKS if t in tasks]
    main = budgets.parse_size(budget.main_size).notation
    chosen = select(rows, variant="pilot", metric="chosen_learning_rate")
    lines = [
        f"## Transfer curve (MLM + NSP, {main})",
        "",
        f"One pretraining run, its schedule defined for {budget.curve_max_steps:,} steps ("
        f"{budget.curve_warmup:,} warmup, then linear decay), "
        + ("dynamic masking" if budget.curve_dynamic_masking else "the records' static masks")
        + (", the pilot's recipe" if chosen else ", the budget's recipe")
        + "; each kept checkpoint fine-tuned with the budget's seeds. A cell is median [min, max] over seeds. "
        "Crossover: the first checkpoint whose seed range lies above random init's; the curve stops once "
        f"{min(budget.curve_stop_tasks, len(tasks))} of the tasks crossed.",
        "",
    ]
    header = ["pretraining steps", "held-out MLM loss"] + [TASK_COLUMNS[t].title for t in tasks]
    body = []
    for step in budget.curve_checkpoints():
        variant = grid.curve_variant(step)
        loss = cell(rows, variant=variant, task="curve", metric="heldout_mlm_loss")
        if loss is None:
            continue
        row = [f"{step:,}", _fmt(loss, 3)]
        for task in tasks:
            c = cell(rows, variant=variant, size=budget.main_size, task=task, head="", metric=_metric(task))
            row.append(_fmt(c))
        body.append(row)
    body.append(["random init", "—"] + [_fmt(random_cell(rows, budget, t)) for t in tasks])
    body.append(["crossover", "—"] + [crossover_text(rows, budget, t, tasks) for t in tasks])
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return lines + [""]


def plot(rows: list[Row], budget: Budget, tasks, path: str) -> None:
    """Score against pretraining steps (log axis), one panel per task; random init as a band of its range."""
    from official.nlp.paper.plots import pyplot

    plt = pyplot()
    tasks = [t for t in budgets.FINE_TUNING_TASKS if t in tasks]
    figure, axes = plt.subplots(1, max(1, len(tasks)), figsize=(3.6 * max(1, len(tasks)), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        cells = curve_cells(rows, budget, task)
        if cells:
            steps = sorted(cells)
            medians = [cells[s].median for s in steps]
            errors = [[cells[s].median - cells[s].low for s in steps], [cells[s].high - cells[s].median for s in steps]]
            ax.errorbar(steps, medians, yerr=errors, marker="o", capsize=3, label="pretrained (median, range)")
        reference = random_cell(rows, budget, task)
        if reference is not None:
            ax.axhspan(reference.low, reference.high, color="tab:orange", alpha=0.3, label="random init (range)")
        ax.set_xscale("log")
        ax.set_xlabel("pretraining steps")
        ax.set_title(f"{task} ({_metric(task)}, %)")
        ax.grid(alpha=0.3)
    if axes[0][0].get_legend_handles_labels()[0]:
        axes[0][0].legend(fontsize=7)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    output_files.write_bytes(path, buffer.getvalue())
    plt.close(figure)


def kept_model_files(space: Workspace) -> list[str]:
    """The files of the curve's run a later sitting resumes from (relative paths): checkpoint, input position,
    settings, config, vocabulary, summaries; not the exports."""
    if not input_files.isdir(space.curve_model_dir):
        return []
    return [f for f in output_files.files_under(space.curve_model_dir) if not f.split("/")[0].startswith("export")]
