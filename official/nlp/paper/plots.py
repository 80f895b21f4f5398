"""The report's plots (PNG, matplotlib): the pretraining loss curves of the variants, and per-task bars with the
range over seeds.

matplotlib is the `paper` extra (`pip install 'bert-tf[paper]'`): only the plots need it, so the library and the
rest of the rerun do not. The curves are read from each pretraining run's TensorBoard summaries (`model_dir/
summaries`), so a run resumed across sittings draws as one curve.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence

from official.nlp.common import output_files
from official.nlp.common.errors import InputError
from official.nlp.paper import budgets, grid
from official.nlp.paper.results import Row, cell, read_scalars

LOSS_PLOT = "pretraining_loss.png"
TASKS_PLOT = "finetuning.png"
_METRICS = {"mrpc": "accuracy", "sst-2": "accuracy", "qnli": "accuracy", "squad": "f1", "ner": "f1"}


def pyplot():
    """matplotlib's pyplot on the file-only backend, or one clean line saying how to get it."""
    try:
        import matplotlib
    except ImportError:
        raise InputError(
            "the plots need matplotlib: pip install 'bert-tf[paper]' (or pip install matplotlib), or pass --noplots"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(figure, path: str) -> None:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    output_files.write_bytes(path, buffer.getvalue())


def loss_curves(stages: Sequence[grid.Stage], run_dir, path: str) -> None:
    """The training loss of each pretraining run against its step; `run_dir(stage_id)` is its model_dir."""
    plt = pyplot()
    runs = [s for s in stages if s.kind == "pretrain"]
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for stage in runs:
        curves = read_scalars(os.path.join(run_dir(stage.id), "summaries"))
        label = f"{stage.variant} {budgets.parse_size(stage.size).notation}"
        for ax, tags in zip(axes, (("loss",), ("mlm_loss", "ltr_loss"))):
            for tag in tags:
                if curves.get(tag):
                    steps, values = zip(*curves[tag])
                    ax.plot(steps, values, label=f"{label} ({tag})" if ax is axes[1] else label)
    axes[0].set_title("pretraining loss (MLM + NSP, MLM, or LTR)")
    axes[1].set_title("masked-LM or next-token loss")
    for ax in axes:
        ax.set_xlabel("step")
        ax.set_ylabel("cross entropy")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    _save(figure, path)
    plt.close(figure)


def task_bars(rows: Sequence[Row], stages: Sequence[grid.Stage], path: str) -> None:
    """One panel per task: a bar per (variant, size, head) at the median over seeds, its whisker the range."""
    plt = pyplot()
    tasks = [t for t in budgets.FINE_TUNING_TASKS if any(s.task == t for s in stages)]
    figure, axes = plt.subplots(1, max(1, len(tasks)), figsize=(4 * max(1, len(tasks)), 4.5), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        runs = sorted({(s.variant, s.size, s.head or "") for s in stages if s.kind == "finetune" and s.task == task})
        labels, medians, lows, highs = [], [], [], []
        for variant, size, head in runs:
            c = cell(rows, variant=variant, size=size, task=task, head=head, metric=_METRICS[task])
            if c is None:
                continue
            suffix = f" {head.replace('features:', 'feat:')}" if head else ""
            labels.append(f"{variant} {budgets.parse_size(size).notation}{suffix}")
            medians.append(c.median)
            lows.append(c.median - c.low)
            highs.append(c.high - c.median)
        ax.bar(range(len(labels)), medians, yerr=[lows, highs], capsize=3, color="tab:blue", alpha=0.8)
        ax.set_xticks(range(len(labels)), labels, rotation=75, ha="right", fontsize=7)
        ax.set_title(f"{task} ({_METRICS[task]}, %)")
        ax.grid(axis="y", alpha=0.3)
    _save(figure, path)
    plt.close(figure)
