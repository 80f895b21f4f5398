"""The rerun of the paper end to end at `--budget=smoke`, on slices of ../shared/data: the report's structure, every
number of its tables traced to results.csv, and a second run of the same command that runs nothing.

One module fixture runs the grid once (tiny models, a few steps: about a minute of CPU); the tests read what it
wrote. The tasks are MRPC, SQuAD and CoNLL-2003, one of each kind of head (a classifier, a span head with and
without the BiLSTM, a tagger fine-tuned and feature-based), so that every table and every kind of stage runs.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from collections import defaultdict

import pytest

from official.nlp.paper import grid, report
from official.nlp.paper.config import PaperConfig
from official.nlp.paper.reproduce import reproduce_paper
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

TASKS = ("mrpc", "squad", "ner")
# A local absolute path in a report (`--output_dir=/work/run/out`, `/home/me/data`): it names the machine's folders.
_ABSOLUTE_PATH = re.compile(r"(?:^|[\s=`(,\"])/[\w.-]+/", re.M)


def _config(shared_data, output_dir) -> PaperConfig:
    return PaperConfig(
        input_file=str(shared_data / "wikipedia" / "wiki_00"),
        output_dir=str(output_dir),
        budget="smoke",
        glue_dir=str(shared_data / "glue"),
        squad_file=str(shared_data / "squad" / "dev-v1.1.json"),
        conll_dir=str(shared_data / "conll2003" / "iob2"),
        tasks=list(TASKS),
    )


@pytest.fixture(scope="module")
def rerun(shared_data, tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("paper")
    config = _config(shared_data, output_dir)
    first = []
    result = reproduce_paper(config, echo=first.append)
    snapshot = {p: p.read_bytes() for p in sorted((output_dir / "stages").rglob("*.json"))}
    csv_before = (output_dir / "results.csv").read_bytes()
    second = []
    reproduce_paper(config, echo=second.append)
    return dict(
        dir=output_dir,
        result=result,
        first=first,
        second=second,
        markers=snapshot,
        csv_before=csv_before,
    )


def _csv_rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_every_stage_ran_once_and_the_rerun_skips_all(rerun):
    started = [line for line in rerun["first"] if line.endswith(" ...")]
    total = int(re.match(r"(\d+) stages", rerun["first"][0]).group(1))
    assert len(started) == total and total == len(rerun["markers"])
    assert re.search(rf"{total} stages: .*; 0 left", rerun["second"][0]), rerun["second"][0]
    assert not [line for line in rerun["second"] if line.endswith(" ...")]
    assert (rerun["dir"] / "results.csv").read_bytes() == rerun["csv_before"]
    assert {p: p.read_bytes() for p in rerun["markers"]} == rerun["markers"]  # no marker rewritten
    sittings = json.loads((rerun["dir"] / "sittings.json").read_text())
    assert len(sittings) == 2 and sittings[0]["command"] == sittings[1]["command"]


def test_results_csv_has_a_row_per_run_and_metric(rerun):
    rows = _csv_rows(rerun["dir"] / "results.csv")
    assert list(rows[0]) == [
        "variant",
        "size",
        "task",
        "head",
        "seed",
        "metric",
        "value",
        "steps",
        "seconds",
        "stage",
        "machine",
    ]
    runs = {
        (r["variant"], r["size"], r["task"], r["head"], r["seed"]) for r in rows if r["stage"].startswith("finetune/")
    }
    # Table 5: four variants on three tasks, plus LTR's BiLSTM on SQuAD; Table 6: the larger size on three tasks;
    # Table 7: six feature choices on the larger size (one seed each in the smoke budget).
    assert len(runs) == 4 * 3 + 1 + 3 + 6
    # The feature-based runs train for the budget's feature_epochs (2), fine-tuning for NER's epochs (1).
    ner_steps = {r["head"]: int(r["steps"]) for r in rows if r["task"] == "ner" and r["size"] == "L2-H32-A2"}
    assert len(ner_steps) == 7 and ner_steps[""] > 0
    assert {head: steps for head, steps in ner_steps.items() if head} == {
        f"features:{choice}": 2 * ner_steps[""] for choice in grid.FEATURE_CHOICES
    }
    for r in rows:
        assert r["machine"] and float(r["seconds"]) >= 0
    pretrained = {(r["variant"], r["size"]) for r in rows if r["metric"] == "examples_per_second"}
    assert pretrained == {
        ("mlm_nsp", "L1-H32-A2"),
        ("mlm", "L1-H32-A2"),
        ("ltr", "L1-H32-A2"),
        ("mlm_nsp", "L2-H32-A2"),
    }
    ppl = {(r["variant"], r["size"]): float(r["value"]) for r in rows if r["metric"] == "perplexity"}
    mlm_loss = {
        (r["variant"], r["size"]): float(r["value"])
        for r in rows
        if r["task"] == "heldout" and r["metric"] == "mlm_loss"
    }
    assert set(ppl) == {("mlm_nsp", "L1-H32-A2"), ("mlm", "L1-H32-A2"), ("mlm_nsp", "L2-H32-A2")}
    for key, value in ppl.items():
        assert value == pytest.approx(2.718281828459045 ** mlm_loss[key])


def _table_cells(markdown: str) -> list[tuple[str, str, list[str]]]:
    """`(header cell, first cell of the row, cell)` of every table cell below the results marker."""
    cells, header = [], None
    for line in markdown.split(report.RESULTS_MARKER, 1)[1].splitlines():
        if not line.startswith("|"):
            header = None
            continue
        values = [v.strip() for v in line.strip("|").split("|")]
        if header is None:
            header = values
        elif not set(line) <= set("|-"):
            cells += [(h, values[0], v) for h, v in zip(header, values)]
    return cells


def _candidates(rows: list[dict]) -> list[float]:
    """Every value of results.csv, and the median, minimum and maximum of the values of each group of runs."""
    groups = defaultdict(list)
    values = []
    for r in rows:
        value = float(r["value"])
        values.append(value)
        groups[(r["variant"], r["size"], r["task"], r["head"], r["metric"])].append(value)
    for group in groups.values():
        values += [statistics.median(group), min(group), max(group)]
    return values


def _traced_numbers(markdown: str, rows: list[dict]) -> int:
    """Asserts that every number of the report's tables is a value of results.csv or a median, minimum or maximum of
    a group of its runs; returns how many were checked."""
    candidates = _candidates(rows)
    checked = 0
    for header, first, text in _table_cells(markdown):
        if "paper" in header or first == "paper" or text == first:
            continue  # the paper's numbers, and the rows' names
        text = re.sub(r"\bL\d+-H\d+-A\d+\b|SST-2|SQuAD v1\.1|CoNLL-2003", "", text)  # names of sizes and tasks
        for number in re.findall(r"-?\d+(?:\.\d+)?", text):
            decimals = len(number.split(".")[1]) if "." in number else 0
            tolerance = 0.5 * 10**-decimals + 1e-9
            assert any(abs(float(number) - c) <= tolerance for c in candidates), (header, first, text)
            checked += 1
    return checked


def test_every_number_of_the_tables_traces_to_results_csv(rerun):
    markdown = (rerun["dir"] / "results.md").read_text()
    assert _traced_numbers(markdown, _csv_rows(rerun["dir"] / "results.csv")) > 40


@pytest.mark.parametrize("folder", sorted(p.name for p in (REPO_ROOT / "docs").glob("paper_*")))
def test_the_shipped_reports_trace_to_their_results_csv(folder):
    """docs/paper.md quotes the reports of real runs (docs/paper_*/): each is the rerun's own output, untouched."""
    report_dir = REPO_ROOT / "docs" / folder
    markdown = (report_dir / "results.md").read_text()
    assert _traced_numbers(markdown, _csv_rows(report_dir / "results.csv")) >= 8
    for name in ("results.md", "results.csv"):  # paths relative to the folder the run started in, as a user types
        text = (report_dir / name).read_text()
        assert not _ABSOLUTE_PATH.findall(text), (name, _ABSOLUTE_PATH.findall(text))
    for plot in re.findall(r"\]\(([^)]+\.png)\)", markdown):
        assert (report_dir / plot).is_file(), plot


def test_the_report_lays_out_the_papers_tables(rerun):
    markdown = (rerun["dir"] / "results.md").read_text()
    for heading in ("## Pretraining runs", "## Table 5", "## Table 6", "## Table 7", "## Plots"):
        assert heading in markdown
    header = markdown.split(report.RESULTS_MARKER)[0]
    for part in (
        "**Command**: `python run_scripts/reproduce_paper.py",
        "**Corpus**",
        "**Budget**: smoke",
        "**Machine**",
    ):
        assert part in header
    assert not _ABSOLUTE_PATH.findall(header), header  # the data and output folders, relative to the current one
    cells = _table_cells(markdown)
    # The paper's numbers, typed here from the paper a second time: BERT-Base's SQuAD F1 and MRPC accuracy
    # (Table 5), the 3-layer model's perplexity (Table 6), feature-based Concat Last Four's dev F1 (Table 7).
    paper = {(h, first, v) for h, first, v in cells if "paper" in h or first == "paper"}
    assert ("SQuAD v1.1 (F1) paper", "MLM + NSP (BERT)", "88.5") in paper
    assert ("MRPC (acc) paper", "MLM + NSP (BERT)", "86.7") in paper
    assert ("LM (ppl)", "paper", "5.84") in paper
    assert ("dev F1 paper", "Feature-based: Concat Last Four Hidden", "96.1") in paper
    directions = [v for h, _, v in cells if h.startswith("direction")]
    assert directions and all(
        v in ("(reference)", report.NOT_RUN) or re.match(r"^(agrees on|differs on) ", v) for v in directions
    ), directions
    for name in ("pretraining_loss.png", "finetuning.png"):
        assert (rerun["dir"] / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_finished_fine_tuning_runs_keep_their_numbers_not_their_checkpoints(rerun):
    run = rerun["dir"] / "runs" / "finetune" / "mlm_nsp" / "L1-H32-A2" / "mrpc" / "seed1"
    assert (run / "eval_history.json").exists()
    assert not (run / "best_model").exists() and not list(run.glob("ckpt-*"))
