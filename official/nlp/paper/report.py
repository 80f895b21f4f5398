"""results.md: the paper's Tables 5, 6 and 7 (and 8) laid out as in the paper, ours beside the paper's numbers.

Every number below the header comes from results.csv (a value, or the median, minimum or maximum over seeds), except
the cells in a column titled "paper" and the rows whose first cell is "paper", which are `tables`' quotes. A cell of
ours is "median [minimum, maximum]" over the seeds (one value with one seed). The header names what every number
was made with: the command, the corpus, the budget and the machine.
"""

from __future__ import annotations

from collections.abc import Sequence

from official.nlp.paper import budgets, grid, tables
from official.nlp.paper.budgets import Budget
from official.nlp.paper.results import Cell, Row, cell, select
from official.nlp.paper.tables import Column
from official.nlp.paper.transfer import curve, pilot

RESULTS_MARKER = "<!-- results: every number below is from results.csv, except the paper's columns and rows -->"
NOT_RUN = "—"
_DECIMALS = {"perplexity": 2, "mlm_loss": 3}


def _decimals(metric: str) -> int:
    return 2 if metric.startswith("final_") else _DECIMALS.get(metric, 1)


def fmt(c: Cell | None, metric: str) -> str:
    if c is None:
        return NOT_RUN
    d = _decimals(metric)
    if len(c.values) == 1:
        return f"{c.median:.{d}f}"
    return f"{c.median:.{d}f} [{c.low:.{d}f}, {c.high:.{d}f}]"


def paper_value(value: float | None, metric: str = "accuracy") -> str:
    return NOT_RUN if value is None else f"{value:.{_decimals(metric)}f}"


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return lines + [""]


def _compare(ours: Cell | None, reference: Cell | None, expected: str | None, column: Column) -> tuple[str, str] | None:
    """`(column title, verdict)` of one effect: whether our direction (row against reference) is the paper's."""
    if ours is None or reference is None or expected is None:
        return None
    found = tables.direction(ours.median - reference.median)
    if found == expected:
        return column.title.split(" (")[0], "agrees"
    note = "; seed ranges overlap" if ours.overlaps(reference) else ""
    return column.title.split(" (")[0], f"differs: {found}{note}"


def _verdicts(pairs: list[tuple[str, str] | None]) -> str:
    pairs = [p for p in pairs if p]
    if not pairs:
        return NOT_RUN
    agree = [name for name, verdict in pairs if verdict == "agrees"]
    differ = [f"{name} ({verdict[len('differs: ') :]})" for name, verdict in pairs if verdict != "agrees"]
    parts = []
    if agree:
        parts.append("agrees on " + ", ".join(agree))
    if differ:
        parts.append("differs on " + ", ".join(differ))
    return "; ".join(parts)


def table5(rows: list[Row], budget: Budget, tasks: Sequence[str]) -> list[str]:
    size = budget.main_size
    columns = [tables.TASK_COLUMNS[t] for t in ("qnli", "mrpc", "sst-2", "squad", "ner") if t in tasks]
    lines = [
        f"## Table 5: pretraining tasks ({budgets.parse_size(size).notation})",
        "",
        "The paper's rows are BERT-Base (L12-H768-A12) after 1M steps; MNLI is not at hand here. A row's direction is "
        "its difference from MLM + NSP (the LTR + BiLSTM row: from LTR), ours against the paper's; for the model "
        "without pretraining, which the paper leaves implicit, the expected direction is lower.",
        "",
    ]
    header = ["pretraining"] + [h for c in columns for h in (f"{c.title} ours", f"{c.title} paper")]
    header.append("direction of the effect")
    body = []
    reference = {
        c.task: cell(rows, variant="mlm_nsp", size=size, task=c.task, head="", metric=c.metric) for c in columns
    }
    ltr = {c.task: cell(rows, variant="ltr", size=size, task=c.task, head="", metric=c.metric) for c in columns}
    entries = [("mlm_nsp", ""), ("mlm", ""), ("ltr", ""), ("ltr", "bilstm"), ("random", "")]
    labels = {"mlm_nsp": grid.MLM_NSP.label, "mlm": grid.MLM.label, "ltr": grid.LTR.label, "random": grid.RANDOM.label}
    for variant, head in entries:
        paper = tables.TABLE5.get("ltr+bilstm" if head else variant, {})
        row = ["+ BiLSTM (SQuAD span head)" if head else labels[variant]]
        verdicts = []
        for c in columns:
            ours = cell(rows, variant=variant, size=size, task=c.task, head=head, metric=c.metric)
            row += [fmt(ours, c.metric), paper_value(paper.get(c.paper_key) if c.paper_key else None)]
            if variant == "mlm_nsp":
                continue
            if variant == "random":
                verdicts.append(_compare(ours, reference[c.task], "lower", c))
                continue
            base = tables.TABLE5["ltr" if head else "mlm_nsp"]
            if c.paper_key and c.paper_key in paper and c.paper_key in base:
                expected = tables.direction(paper[c.paper_key] - base[c.paper_key])
                verdicts.append(_compare(ours, (ltr if head else reference)[c.task], expected, c))
        if head and all(v == NOT_RUN for v in row[1::2]):
            continue
        row.append("(reference)" if variant == "mlm_nsp" else _verdicts(verdicts))
        body.append(row)
    return lines + _table(header, body)


def table6(rows: list[Row], budget: Budget, tasks: Sequence[str]) -> list[str]:
    columns = [tables.PERPLEXITY] + [
        tables.TASK_COLUMNS[t] for t in ("qnli", "mrpc", "sst-2", "squad", "ner") if t in tasks
    ]
    lines = [
        "## Table 6: model size (MLM + NSP)",
        "",
        'Rows "ours" are this rerun\'s sizes, rows "paper" the paper\'s (BERT-Base\'s pretraining, 1M steps). The '
        "paper's MNLI-m column stands beside our QNLI (MNLI is not at hand). LM (ppl) is the masked-LM perplexity of "
        "held-out documents. A row's direction is its difference from the next smaller size; the paper's is: the "
        "larger, the better, on every column.",
        "",
    ]
    header = ["source", "size"] + [c.title.replace("QNLI (acc)", "QNLI (acc; paper: MNLI-m)") for c in columns]
    header.append("direction against the next smaller size")
    body, previous = [], None
    for size in budget.sizes:
        cells = {
            c.task: cell(rows, variant="mlm_nsp", size=size, task=c.task, head="", metric=c.metric) for c in columns
        }
        row = ["ours", budgets.parse_size(size).notation] + [fmt(cells[c.task], c.metric) for c in columns]
        if previous is None:
            row.append(NOT_RUN)
        else:
            row.append(
                _verdicts(
                    [
                        _compare(cells[c.task], previous[c.task], "higher" if c.higher_is_better else "lower", c)
                        for c in columns
                    ]
                )
            )
        body.append(row)
        previous = cells
    for (layers, hidden, heads), paper in tables.TABLE6.items():
        row = ["paper", f"L{layers}-H{hidden}-A{heads}"]
        for c in columns:
            key = "mnli" if c.task == "qnli" else c.paper_key
            row.append(paper_value(paper.get(key), c.metric))
        body.append(row + [NOT_RUN])
    return lines + _table(header, body)


def table7(rows: list[Row], budget: Budget) -> list[str]:
    size = budget.sizes[-1]
    notation = budgets.parse_size(size).notation
    layers = budgets.parse_size(size).layers
    tuned, features = budget.tasks["ner"], budget.feature_based
    lines = [
        f"## Table 7: CoNLL-2003 NER, fine-tuned and feature-based (MLM + NSP, {notation})",
        "",
        "Dev F1 on CoNLL-2003's valid.txt (the budget's slice). Feature-based: the encoder frozen, a "
        f"{budget.feature_lstm_layers}-layer BiLSTM ({budget.feature_lstm_units} units per direction) and a classifier "
        f"trained on the named layers for {features.epochs:g} epochs at {features.learning_rate:g} (fine-tuning: "
        f"{tuned.epochs:g} epochs at {tuned.learning_rate:g}). The paper's rows are BERT-Base. A row's direction is "
        "its difference from fine-tuning.",
        "",
    ]
    clipped = [
        tables_name
        for choice, (tables_name, wanted, _) in grid.FEATURE_CHOICES.items()
        if grid.layers_of_choice(choice, layers) != wanted
    ]
    if clipped:
        lines += [
            f"The model has {layers} layers: {', '.join(clipped)} use the layers it has (the last {min(4, layers)}, "
            "or its first for a layer it lacks).",
            "",
        ]
    column = tables.TASK_COLUMNS["ner"]
    reference = cell(rows, variant="mlm_nsp", size=size, task="ner", head="", metric="f1")
    body = [["Fine-tuning", fmt(reference, "f1"), paper_value(tables.TABLE7_FINE_TUNING), "(reference)"]]
    for choice, (name, _, _) in grid.FEATURE_CHOICES.items():
        ours = cell(rows, variant="mlm_nsp", size=size, task="ner", head=f"features:{choice}", metric="f1")
        paper = tables.TABLE7_FEATURES[choice]
        expected = tables.direction(paper - tables.TABLE7_FINE_TUNING)
        body.append(
            [
                f"Feature-based: {name}",
                fmt(ours, "f1"),
                paper_value(paper),
                _verdicts([_compare(ours, reference, expected, column)]),
            ]
        )
    return lines + _table(["approach", "dev F1 ours", "dev F1 paper", "direction of the effect"], body)


def table8(rows: list[Row], budget: Budget) -> list[str]:
    size = budget.main_size
    lines = [
        f"## Table 8 (appendix): masking rates (MLM + NSP, {budgets.parse_size(size).notation})",
        "",
        "MASK / SAME / RND: the share of the chosen tokens shown as [MASK], kept, or replaced by a random token. Our "
        "QNLI stands beside the paper's MNLI. A row's direction is its difference from 80 / 10 / 10.",
        "",
    ]
    columns = [
        ("QNLI (acc; paper: MNLI)", dict(task="qnli", head="", metric="accuracy"), "mnli"),
        ("NER fine-tuned (F1)", dict(task="ner", head="", metric="f1"), "ner"),
        (
            "NER feature-based (F1)",
            dict(task="ner", head=f"features:{grid.MASKING_FEATURES}", metric="f1"),
            "ner_features",
        ),
    ]
    header = ["MASK / SAME / RND"] + [h for title, _, _ in columns for h in (f"{title} ours", f"{title} paper")]
    header.append("direction of the effect")
    body = []
    for variant in (grid.MLM_NSP, *grid.MASKING_VARIANTS):
        rates = "80 / 10 / 10" if variant is grid.MLM_NSP else " / ".join(variant.name[4:].split("-"))
        row, verdicts = [rates], []
        for title, keys, paper_key in columns:
            ours = cell(rows, variant=variant.name, size=size, **keys)
            paper = tables.TABLE8[variant.name][paper_key]
            row += [fmt(ours, keys["metric"]), paper_value(paper)]
            if variant is not grid.MLM_NSP:
                reference = cell(rows, variant="mlm_nsp", size=size, **keys)
                expected = tables.direction(paper - tables.TABLE8["mlm_nsp"][paper_key])
                verdicts.append(_compare(ours, reference, expected, Column(title, keys["task"], keys["metric"], None)))
        row.append("(reference)" if variant is grid.MLM_NSP else _verdicts(verdicts))
        body.append(row)
    return lines + _table(header, body)


def pretraining_table(rows: list[Row]) -> list[str]:
    order = list(grid.VARIANTS)
    runs = sorted(
        {(r.variant, r.size) for r in select(rows, task="pretraining")},
        key=lambda p: (budgets.parse_size(p[1]).encoder_flops_per_token(), order.index(p[0])),
    )
    lines = [
        "## Pretraining runs",
        "",
        "Loss at the last step, and training examples per second (median over the run's loops).",
        "",
    ]
    header = ["pretraining", "size", "final loss", "final MLM / LTR loss", "held-out MLM perplexity", "examples/s"]
    body = []
    for variant, size in runs:
        keys = dict(variant=variant, size=size)
        lm = cell(rows, task="pretraining", metric="final_mlm_loss", **keys) or cell(
            rows, task="pretraining", metric="final_ltr_loss", **keys
        )
        body.append(
            [
                grid.VARIANTS[variant].label,
                budgets.parse_size(size).notation,
                fmt(cell(rows, task="pretraining", metric="final_loss", **keys), "final_loss"),
                fmt(lm, "final_loss"),
                fmt(cell(rows, task="heldout", metric="perplexity", **keys), "perplexity"),
                fmt(cell(rows, task="pretraining", metric="examples_per_second", **keys), "examples_per_second"),
            ]
        )
    return lines + _table(header, body)


def render(
    rows: list[Row],
    budget: Budget,
    *,
    tasks: Sequence[str],
    table_names: Sequence[str],
    masking: bool,
    header: Sequence[str],
    plots: Sequence[str],
) -> str:
    """The whole results.md: `header` (command, corpus, budget, machine), then the tables, then the plots."""
    lines = ["# The BERT paper, rerun: Tables 5, 6 and 7", "", *header, "", RESULTS_MARKER, ""]
    lines += pilot.pilot_table(rows)
    if select(rows, task="pretraining"):
        lines += pretraining_table(rows)
    if "5" in table_names:
        lines += table5(rows, budget, tasks)
    if "6" in table_names:
        lines += table6(rows, budget, tasks)
    if "7" in table_names and "ner" in tasks:
        lines += table7(rows, budget)
    if masking:
        lines += table8(rows, budget)
    if grid.CURVE_TABLE in table_names:
        lines += curve.curve_table(rows, budget, tasks)
    if plots:
        lines += ["## Plots", ""] + [f"![{name}]({name})" for name in plots] + [""]
    lines += [f"The paper's numbers: {tables.CITATION}.", ""]
    return "\n".join(lines)
