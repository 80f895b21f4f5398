"""The rerun of the paper end to end at `--budget=smoke`, on slices of ../shared/data: the report's structure, every
number of its tables traced to results.csv, and a second run of the same command that runs nothing.

One module fixture runs the grid once (tiny models, a few steps: about two minutes of CPU), with the pilot and the
transfer curve (its state saved to a folder of its own, from which a fresh output folder resumes); the tests read
what it wrote. The tasks are MRPC, SQuAD and CoNLL-2003, one of each kind of head (a classifier, a span head with and
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


def _config(shared_data, output_dir, **overrides) -> PaperConfig:
    settings = dict(
        input_file=str(shared_data / "wikipedia" / "wiki_00"),
        output_dir=str(output_dir),
        budget="smoke",
        glue_dir=str(shared_data / "glue"),
        squad_file=str(shared_data / "squad" / "dev-v1.1.json"),
        conll_dir=str(shared_data / "conll2003" / "iob2"),
        tasks=list(TASKS),
        tables=["5", "6", "7", "curve"],
        curve_state_dir=str(output_dir.parent / (output_dir.name + "-curve")),
    )
    return PaperConfig(**{**settings, **overrides})


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
    # A sitting on a fresh machine: only the curve's state survives; the data stages run again, nothing else.
    fresh_dir = tmp_path_factory.mktemp("fresh")
    fresh = []
    resumed = reproduce_paper(
        _config(shared_data, fresh_dir, tables=["curve"], curve_state_dir=config.curve_state_dir), echo=fresh.append
    )
    return dict(
        fresh_dir=fresh_dir,
        fresh=fresh,
        resumed=resumed,
        state_dir=output_dir.parent / (output_dir.name + "-curve"),
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
    skipped = [line for line in rerun["first"] if re.search(r": skipped \(the curve stopped at step \d+", line)]
    total = int(re.match(r"(\d+) stages", rerun["first"][0]).group(1))
    assert len(started) + len(skipped) == total and len(started) == len(rerun["markers"])
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
        (r["variant"], r["size"], r["task"], r["head"], r["seed"])
        for r in rows
        if r["stage"].startswith("finetune/") and not r["variant"].startswith("curve-")
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
    cells = _table_cells(markdown)
    row_names = {first.replace(",", "") for _, first, _ in cells}
    for header, first, text in cells:
        if "paper" in header or first == "paper" or text == first:
            continue  # the paper's numbers, and the rows' names
        if first == "crossover":  # a step of the curve: one of the table's rows
            for step in re.findall(r"\d[\d,]*", text):
                assert step.replace(",", "") in row_names, (header, text)
                checked += 1
            continue
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
    for heading in (
        "## Pilot",
        "## Pretraining runs",
        "## Table 5",
        "## Table 6",
        "## Table 7",
        "## Transfer curve",
        "## Plots",
    ):
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
    for name in ("pretraining_loss.png", "finetuning.png", "transfer_curve.png"):
        assert (rerun["dir"] / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_finished_fine_tuning_runs_keep_their_numbers_not_their_checkpoints(rerun):
    run = rerun["dir"] / "runs" / "finetune" / "mlm_nsp" / "L1-H32-A2" / "mrpc" / "seed1"
    assert (run / "eval_history.json").exists()
    assert not (run / "best_model").exists() and not list(run.glob("ckpt-*"))


def test_the_pilot_chooses_on_heldout_loss_and_every_pretraining_run_uses_its_choice(rerun):
    rows = _csv_rows(rerun["dir"] / "results.csv")
    final = {}
    for r in rows:
        if r["task"] == "pilot" and r["metric"] == "heldout_mlm_loss":
            step, loss = final.get(r["variant"], (-1, None))
            if int(r["steps"]) > step:
                final[r["variant"]] = (int(r["steps"]), float(r["value"]))
    assert len(final) == 2 and len({step for step, _ in final.values()}) == 1  # the same examples each
    winner = min(final, key=lambda v: final[v][1])
    rate = next(float(r["value"]) for r in rows if r["variant"] == winner and r["metric"] == "learning_rate")
    chosen = json.loads((rerun["dir"] / "pilot.json").read_text())
    assert chosen["run"] == winner and chosen["learning_rate"] == rate
    for variant in ("mlm_nsp", "mlm", "ltr"):
        settings = json.loads(
            (rerun["dir"] / "runs/pretrain" / variant / "L1-H32-A2/pretraining_settings.json").read_text()
        )
        assert settings["learning_rate"] == rate, variant
    curve_settings = json.loads((rerun["dir"] / "runs/curve/pretrain/pretraining_settings.json").read_text())
    assert curve_settings["learning_rate"] == rate and curve_settings["num_train_steps"] == 4
    assert curve_settings["dynamic_masking"] is True


def test_the_curve_fine_tunes_each_kept_checkpoint_until_it_stops(rerun):
    rows = _csv_rows(rerun["dir"] / "results.csv")
    steps = sorted({int(r["variant"][6:]) for r in rows if r["variant"].startswith("curve-") and r["task"] in TASKS})
    assert steps == [4]  # the smoke budget's one kept checkpoint
    # Its pretraining ran in two segments (a saved chunk at step 2, then the kept step); only the kept one is
    # exported and measured on the held-out documents.
    segments = {r["stage"] for r in rows if r["stage"].startswith("curve/pretrain/")}
    assert segments == {"curve/pretrain/step2", "curve/pretrain/step4"}
    measured = {r["stage"] for r in rows if r["task"] == "curve" and r["metric"] == "heldout_mlm_loss"}
    assert measured == {"curve/pretrain/step4"}
    metric = {"mrpc": "accuracy", "squad": "f1", "ner": "f1"}
    crossed = {}
    for task in TASKS:
        random_high = max(
            float(r["value"])
            for r in rows
            if r["variant"] == "random" and r["task"] == task and r["metric"] == metric[task]
        )
        for step in steps:
            values = [
                float(r["value"])
                for r in rows
                if r["variant"] == f"curve-{step}" and r["task"] == task and r["metric"] == metric[task]
            ]
            assert len(values) == 1  # the smoke budget's one seed
            if task not in crossed and min(values) > random_high:
                crossed[task] = step
    # The curve runs to its last kept checkpoint: there is no later stage for a crossover to skip (when it stops:
    # test_transfer.py).
    assert not [line for line in rerun["first"] if ": skipped" in line]
    markdown = (rerun["dir"] / "results.md").read_text()
    line = next(line for line in markdown.splitlines() if line.startswith("| crossover |"))
    assert (
        line
        == "| crossover | — | "
        + " | ".join(f"step {crossed[t]}" if t in crossed else f"none to {steps[-1]}" for t in ("mrpc", "squad", "ner"))
        + " |"
    )


def test_the_curve_state_resumes_on_a_fresh_output_dir(rerun):
    state = rerun["state_dir"]
    markdown = (state / "results.md").read_text()
    assert "## Transfer curve" in markdown and (state / "transfer_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert _traced_numbers(markdown, _csv_rows(state / "results.csv")) > 10
    model = state / "resume" / "curve_model"
    assert (model / "checkpoint").is_file() and (model / "input_state").is_dir()
    assert not list((state / "resume" / "stages").glob("data/*"))  # the data is written again, not saved
    # Every sitting is on record there, the two that ran no curve stage too (the rerun, the fresh one's data stages).
    assert len(json.loads((state / "resume" / "sittings.json").read_text())) == 3
    started = [line for line in rerun["fresh"] if line.endswith(" ...")]
    assert rerun["fresh"][0].startswith("Resumed the transfer curve's saved state")
    assert started and all(
        re.match(r"\[\d+/\d+\] (Preparing|The |Pretraining records|Held-out records)", line) for line in started
    ), started
    fresh_rows = _csv_rows(rerun["fresh_dir"] / "results.csv")
    first_rows = _csv_rows(rerun["dir"] / "results.csv")

    def curve_values(rows):
        return sorted(
            (r["stage"], r["metric"], r["value"]) for r in rows if r["variant"].startswith(("curve-", "pilot"))
        )

    assert curve_values(fresh_rows) == curve_values(first_rows)
