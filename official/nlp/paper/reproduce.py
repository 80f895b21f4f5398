"""`reproduce_paper(PaperConfig(...))`: from raw text to the paper's Tables 5, 6 and 7, in one call.

It is everything `run_scripts/reproduce_paper.py` does: checks the flags (and that matplotlib is there for the
plots) before any work, builds the grid of the budget (`grid`), runs every stage that has no done marker yet
(`stages`; each is one library call of `data_jobs` or `training_jobs`, which resume their own work), then writes
`results.csv` (one row per run and metric), the plots and `results.md` into `output_dir`. Run again with the same
flags, it skips what is done and continues a stopped pretraining run where it stopped; it refuses other settings
in the same `output_dir` (`config.check_rerun_settings`).

Example:

    result = reproduce_paper(PaperConfig(input_file="wiki/text/*/wiki_*", output_dir="paper", budget="smoke"))
    result.results_md    # "paper/results.md"
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from collections.abc import Callable

from official.nlp.common import input_files, output_files, output_folders, text_files
from official.nlp.common.errors import MissingInputError
from official.nlp.paper import budgets, data_jobs, grid, plots, report, splits, stages, training_jobs
from official.nlp.paper.config import (
    PAPER_SETTINGS_FILE,
    PaperConfig,
    Workspace,
    check_rerun_settings,
    command_line,
    resolved_budget,
    validate,
)
from official.nlp.paper.results import Row, describe_machine, select, write_csv
from official.nlp.paper.transfer import curve, pilot

SITTINGS_FILE = "sittings.json"


@dataclasses.dataclass
class PaperResult:
    results_csv: str
    results_md: str
    plots: list[str]
    rows: list[Row]


def _rows(stage: grid.Stage, values, steps, machine: str) -> list[Row]:
    """A row per `(task, metric, value)`; a value may carry its own steps and variant: `(..., steps, variant)`."""
    rows = []
    for task, metric, value, *extra in values:
        rows.append(
            Row(
                variant=extra[1] if len(extra) > 1 else stage.variant or "",
                size=stage.size or "",
                task=task,
                head=stage.head or "",
                seed=stage.seed,
                metric=metric,
                value=float(value),
                steps=extra[0] if extra else steps,
                seconds=0.0,
                stage=stage.id,
                machine=machine,
            )
        )
    return rows


def result_words(stage: grid.Stage, values) -> str:
    """The figures of a stage's progress line: its first three metrics, each at its last point (a pilot run measures
    at several: the line gives where it ended); for the pilot's choice, the chosen recipe and the winner's losses."""
    if stage.kind == "pilot_choice":
        return pilot.choice_words(values)
    last: dict[str, tuple] = {}
    for _task, metric, value, *extra in values:
        steps = extra[0] if extra else None
        if metric not in last or (steps or 0) >= (last[metric][0] or 0):
            last[metric] = (steps, value)
    return ", ".join(f"{metric} {value:.4g}" for metric, (_, value) in list(last.items())[:3])


def _record_sitting(config: PaperConfig, machine: str) -> list[dict]:
    path = os.path.join(config.output_dir, SITTINGS_FILE)
    sittings = json.loads(text_files.read_text(path)) if input_files.exists(path) else []
    sittings.append(
        {
            "command": command_line(config),
            "machine": machine,
            "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        }
    )
    output_files.write_text(path, json.dumps(sittings, indent=1) + "\n")
    return sittings


def _header(config: PaperConfig, budget: budgets.Budget, rows: list[Row], sittings: list[dict]) -> list[str]:
    def count(task: str, metric: str) -> str:
        found = select(rows, task=task, metric=metric)
        return f"{int(found[0].value):,}" if found else "?"

    commands = list(dict.fromkeys(s["command"] for s in sittings))
    machines = sorted({r.machine for r in rows} or {s["machine"] for s in sittings})
    seconds = sum({r.stage: r.seconds for r in rows}.values())
    corpus = ",".join(input_files.relative_path(part) for part in config.input_file.split(","))
    lines = [f"- **Command**: `{commands[0]}`"]
    lines += [f"  - resumed with `{c}`" for c in commands[1:]]
    lines += [
        f"- **Corpus**: `{corpus}` ({config.input_format}): {count('corpus', 'input_documents')} documents "
        f"({count('corpus', 'input_words')} words) after prepare_corpus; "
        f"{count('corpus', 'train_documents')} documents ({count('corpus', 'train_words')} words) to pretrain on, "
        f"{count('corpus', 'heldout_documents')} held out "
        f"for the perplexity (share {budget.heldout_share:g}); vocabulary: "
        + (
            f"`{input_files.relative_path(config.vocab_file)}`"
            if config.vocab_file
            else f"learned on it, {count('vocab', 'tokens')} tokens"
        ),
        f"- **Budget**: {budget.describe()}",
        f"- **Machine**: {'; '.join(machines)}",
        f"- **Time**: {stages.hms(seconds)} of stage time over {len(sittings)} "
        + ("sittings" if len(sittings) > 1 else "sitting"),
        "- **Fine-tuning data**: "
        + "; ".join(
            f"{task} {count(task, 'train_examples')} train / {count(task, 'eval_examples')} eval"
            for task in config.tasks
        )
        + " (QNLI: GLUE's dev set split by a hash of each row's index; SQuAD v1.1: the dev set split by article; "
        "see docs/paper.md)",
    ]
    return lines


def reproduce_paper(config: PaperConfig, *, echo: Callable[[str], None] = print) -> PaperResult:
    """Runs (or resumes) the whole grid and writes the report; see the module docstring."""
    validate(config)
    budget = resolved_budget(config)
    if config.plots:
        plots.pyplot()  # before hours of work, not after
    input_files.expand_input_files(config.input_file)
    if config.vocab_file and not input_files.isfile(config.vocab_file):
        raise MissingInputError(f"--vocab_file={config.vocab_file} does not exist or is not a file")
    for task in config.tasks if config.masking_rates or set(config.tables) - {grid.PILOT_TABLE} else ():
        splits.check_files(task, config.glue_dir, config.squad_file, config.conll_dir)
    related = {
        f"--{name}": getattr(config, name)
        for name in ("input_file", "vocab_file", "glue_dir", "squad_file", "conll_dir")
    }
    # A second rerun on the same folder is refused here, naming the first, instead of failing half-way.
    with output_folders.run_folder(
        config.output_dir, flag="--output_dir", job="reproduce_paper", markers=(PAPER_SETTINGS_FILE,), related=related
    ):
        return _reproduce(config, budget, echo)


def _reproduce(config: PaperConfig, budget: budgets.Budget, echo: Callable[[str], None]) -> PaperResult:
    space = Workspace(config.output_dir)
    if config.curve_state_dir:
        _restore_curve_state(config, space, echo)
    check_rerun_settings(config)
    machine = describe_machine()
    sittings = _record_sitting(config, machine)
    vocab_size = len(text_files.read_text(config.vocab_file).splitlines()) if config.vocab_file else budget.vocab_size
    grid_stages = [
        dataclasses.replace(s, cost=stages.estimate(s, budget, vocab_size))
        for s in grid.build_grid(budget, tuple(config.tasks), tuple(config.tables), config.masking_rates)
    ]

    by_id = {s.id: s for s in grid_stages}
    ran: set[str] = set()  # the stages of this sitting: only they change the curve's saved state

    def execute(stage: grid.Stage) -> tuple[list[Row], str]:
        ran.add(stage.id)
        if stage.kind in ("corpus", "vocab", "records", "task_data"):
            values, steps = data_jobs.run_data_stage(stage, config, budget, space), None
        elif stage.kind == "pilot_choice":
            found = [Row.from_dict(r) for d in stage.depends for r in stages.read_marker(space, by_id[d])["rows"]]
            values, steps = pilot.choose(stage, found, space), None
        elif stage.kind in ("pilot", "curve_pretrain"):
            run = pilot.run_pilot if stage.kind == "pilot" else curve.pretrain_segment
            try:
                result = run(stage, config, budget, space)
            finally:
                _clear_session()
            values, steps = result.values, result.steps
        else:
            if stage.kind == "finetune" and stage.step is not None:
                curve.ensure_export(stage, config, budget, space)
            result = training_jobs.run_training_stage(stage, config, budget, space)
            values, steps = result.values, result.steps
        return _rows(stage, values, steps, machine), result_words(stage, values)

    wants_curve = grid.CURVE_TABLE in config.tables

    def after(stage: grid.Stage) -> None:
        training_jobs.clean_up(stage, space)
        if config.curve_state_dir and wants_curve and stage.id in ran and _in_curve_state(stage):
            _save_curve_state(config, budget, space, grid_stages, sittings, stage)

    rows = stages.run_stages(
        grid_stages,
        space,
        execute,
        after=after,
        skip=lambda stage, done: curve.skip_reason(stage, done, budget, config.tasks) if wants_curve else None,
        echo=echo,
    )
    if config.curve_state_dir and wants_curve and not any(_in_curve_state(by_id[i]) for i in ran):
        # A sitting that ran no curve stage is kept there too (each one that did wrote the report after it).
        _save_state_report(config, budget, space, grid_stages, sittings)
    csv_path, md_path, drawn = _write_report(config, budget, rows, sittings, grid_stages, config.output_dir, space)
    echo(f"Wrote {csv_path}, {md_path}" + "".join(f", {space.path(p)}" for p in drawn))
    return PaperResult(csv_path, md_path, [space.path(p) for p in drawn], rows)


def _clear_session() -> None:
    import keras

    keras.backend.clear_session()  # a fresh graph for the next run


def _write_report(
    config: PaperConfig,
    budget: budgets.Budget,
    rows: list[Row],
    sittings: list[dict],
    grid_stages: list[grid.Stage],
    target: str,
    space: Workspace,
    *,
    loss_plot: bool = True,
) -> tuple[str, str, list[str]]:
    """results.csv, the plots and results.md into folder `target`; returns their paths and the plots' names."""
    csv_path = os.path.join(target, "results.csv")
    rows = pilot.complete_comparisons(rows)  # a choice made before the equal-CPU comparison gets it from its runs
    write_csv(csv_path, rows)
    drawn = []
    if config.plots:
        if loss_plot:
            plots.loss_curves(grid_stages, space.run_dir, os.path.join(target, plots.LOSS_PLOT))
            plots.task_bars(rows, grid_stages, os.path.join(target, plots.TASKS_PLOT))
            drawn = [plots.LOSS_PLOT, plots.TASKS_PLOT]
        if grid.CURVE_TABLE in config.tables:
            curve.plot(rows, budget, config.tasks, os.path.join(target, curve.PLOT))
            drawn.append(curve.PLOT)
    md_path = os.path.join(target, "results.md")
    output_files.write_text(
        md_path,
        report.render(
            rows,
            budget,
            tasks=config.tasks,
            table_names=config.tables,
            masking=config.masking_rates,
            header=_header(config, budget, rows, sittings),
            plots=drawn,
        ),
    )
    return csv_path, md_path, drawn


# ---- the transfer curve's state: what a sitting on a fresh machine resumes from --------------------------------
# `--curve_state_dir` holds results.csv, results.md and the curve's plot (the finished results so far), and resume/:
# the rerun's settings and sittings, the pilot's choice, the done markers of every stage but the data's (a fresh
# machine writes the data again, deterministically), and the curve's pretraining run (its last checkpoint with the
# optimizer, the step and the input position; its settings, config, vocabulary and summaries). Only stages whose
# outputs the curve needs are saved: the pilot, the curve's, and the random-init runs it is compared with.
_STATE_FILES = (PAPER_SETTINGS_FILE, SITTINGS_FILE, "pilot.json")
_STATE_MODEL = "curve_model"


def _in_curve_state(stage: grid.Stage) -> bool:
    return stage.kind in ("pilot", "pilot_choice", "curve_pretrain") or (
        stage.kind == "finetune" and (stage.step is not None or stage.variant == grid.RANDOM.name) and not stage.head
    )


def _save_curve_state(
    config: PaperConfig,
    budget: budgets.Budget,
    space: Workspace,
    grid_stages: list[grid.Stage],
    sittings: list[dict],
    stage: grid.Stage,
) -> None:
    resume = os.path.join(config.curve_state_dir, "resume")
    marker = space.marker(stage.id)
    target = os.path.join(resume, os.path.relpath(marker, config.output_dir))
    output_files.makedirs_for(target)
    output_files.copy(marker, target)
    if stage.kind == "curve_pretrain":
        model = os.path.join(resume, _STATE_MODEL)
        if input_files.exists(model):
            output_files.rmtree(model)
        for name in curve.kept_model_files(space):
            output_files.makedirs_for(os.path.join(model, name))
            output_files.copy(os.path.join(space.curve_model_dir, name), os.path.join(model, name))
    _save_state_report(config, budget, space, grid_stages, sittings)


def _save_state_report(
    config: PaperConfig, budget: budgets.Budget, space: Workspace, grid_stages: list[grid.Stage], sittings: list[dict]
) -> None:
    """The state folder's settings, sittings and report, from the saved stages' rows."""
    resume = os.path.join(config.curve_state_dir, "resume")
    for name in _STATE_FILES:
        if input_files.exists(space.path(name)):
            output_files.makedirs_for(os.path.join(resume, name))
            output_files.copy(space.path(name), os.path.join(resume, name))
    data = ("corpus", "vocab", "records", "task_data")  # their counts head the report; not saved (rewritten)
    saved = [
        s for s in grid_stages if (s.kind in data or _in_curve_state(s)) and input_files.exists(space.marker(s.id))
    ]
    rows = [Row.from_dict(r) for s in saved for r in stages.read_marker(space, s)["rows"]]
    state_config = dataclasses.replace(config, tables=[grid.CURVE_TABLE])
    _write_report(state_config, budget, rows, sittings, saved, config.curve_state_dir, space, loss_plot=False)


def _restore_curve_state(config: PaperConfig, space: Workspace, echo: Callable[[str], None]) -> None:
    """Copies a saved curve state into a new `output_dir` (one without the curve's run): the settings, sittings,
    the pilot's choice, the saved markers and the curve's run. Nothing that `output_dir` holds is replaced."""
    resume = os.path.join(config.curve_state_dir, "resume")
    if not input_files.isdir(resume) or input_files.exists(os.path.join(space.curve_model_dir, "checkpoint")):
        return
    copied = 0
    for name in output_files.files_under(resume):
        if name.startswith(_STATE_MODEL + "/"):
            target = os.path.join(space.curve_model_dir, name[len(_STATE_MODEL) + 1 :])
        else:
            target = space.path(name)
        if input_files.exists(target):
            continue
        output_files.makedirs_for(target)
        output_files.copy(os.path.join(resume, name), target)
        copied += 1
    echo(f"Resumed the transfer curve's saved state from {resume} ({copied} files)")
