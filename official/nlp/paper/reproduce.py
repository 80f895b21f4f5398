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

SITTINGS_FILE = "sittings.json"


@dataclasses.dataclass
class PaperResult:
    results_csv: str
    results_md: str
    plots: list[str]
    rows: list[Row]


def _rows(stage: grid.Stage, values, steps, machine: str) -> list[Row]:
    return [
        Row(
            variant=stage.variant or "",
            size=stage.size or "",
            task=task,
            head=stage.head or "",
            seed=stage.seed,
            metric=metric,
            value=float(value),
            steps=steps,
            seconds=0.0,
            stage=stage.id,
            machine=machine,
        )
        for task, metric, value in values
    ]


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
    lines = [f"- **Command**: `{commands[0]}`"]
    lines += [f"  - resumed with `{c}`" for c in commands[1:]]
    lines += [
        f"- **Corpus**: `{config.input_file}` ({config.input_format}): {count('corpus', 'input_documents')} documents "
        f"({count('corpus', 'input_words')} words) after prepare_corpus; "
        f"{count('corpus', 'train_documents')} documents ({count('corpus', 'train_words')} words) to pretrain on, "
        f"{count('corpus', 'heldout_documents')} held out "
        f"for the perplexity (share {budget.heldout_share:g}); vocabulary: "
        + (f"`{config.vocab_file}`" if config.vocab_file else f"learned on it, {count('vocab', 'tokens')} tokens"),
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
    for task in config.tasks:
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
    check_rerun_settings(config)
    space = Workspace(config.output_dir)
    machine = describe_machine()
    sittings = _record_sitting(config, machine)
    vocab_size = len(text_files.read_text(config.vocab_file).splitlines()) if config.vocab_file else budget.vocab_size
    grid_stages = [
        dataclasses.replace(s, cost=grid.estimate(s, budget, vocab_size))
        for s in grid.build_grid(budget, tuple(config.tasks), tuple(config.tables), config.masking_rates)
    ]

    def execute(stage: grid.Stage) -> tuple[list[Row], str]:
        if stage.kind in ("corpus", "vocab", "records", "task_data"):
            values, steps = data_jobs.run_data_stage(stage, config, budget, space), None
        else:
            result = training_jobs.run_training_stage(stage, config, budget, space)
            values, steps = result.values, result.steps
        words = ", ".join(f"{metric} {value:.4g}" for _, metric, value in values[:3])
        return _rows(stage, values, steps, machine), words

    rows = stages.run_stages(
        grid_stages, space, execute, after=lambda stage: training_jobs.clean_up(stage, space), echo=echo
    )
    csv_path = space.path("results.csv")
    write_csv(csv_path, rows)
    drawn = []
    if config.plots:
        plots.loss_curves(grid_stages, space.run_dir, space.path(plots.LOSS_PLOT))
        plots.task_bars(rows, grid_stages, space.path(plots.TASKS_PLOT))
        drawn = [plots.LOSS_PLOT, plots.TASKS_PLOT]
    md_path = space.path("results.md")
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
    echo(f"Wrote {csv_path}, {md_path}" + "".join(f", {space.path(p)}" for p in drawn))
    return PaperResult(csv_path, md_path, [space.path(p) for p in drawn], rows)
