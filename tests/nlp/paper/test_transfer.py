"""The pilot's and the transfer curve's rules, on hand-made rows: the recipe grid, the evaluation points, equal-time
interpolation, the crossover (seed ranges apart), when the curve stops, and the grid's order (pretrain to the next
kept step, fine-tune it, continue; random init before the curve; the pilot before any pretraining)."""

from __future__ import annotations

import dataclasses

import pytest

from official.nlp.paper import grid
from official.nlp.paper.budgets import BUDGETS
from official.nlp.paper.results import Row
from official.nlp.paper.transfer import curve, pilot

SMOKE = BUDGETS["smoke"]
TASKS = ("mrpc", "squad", "ner")
# A curve kept at steps 2, 4 and 8, without chunks (the smoke budget keeps one step).
_CURVE_TO_8 = dict(curve_steps=(2, 4, 8), curve_max_steps=8, curve_chunk_steps=0)


def _row(variant: str, task: str, metric: str, value: float, seed: int | None = None, steps=None) -> Row:
    return Row(variant, SMOKE.main_size, task, "", seed, metric, value, steps, 0.0, "stage", "machine")


def test_the_pilot_grid_scales_the_rate_with_the_batch_and_keeps_the_examples():
    budget = dataclasses.replace(
        BUDGETS["default"], pilot_learning_rates=(1e-3, 2e-3), pilot_batch_sizes=(32, 128), pilot_examples=64000
    )
    assert budget.pilot_grid() == [(1e-3, 32), (2e-3, 32), (pytest.approx(2e-3), 128), (pytest.approx(4e-3), 128)]
    assert budget.pilot_steps(32) == 2000 and budget.pilot_steps(128) == 500
    assert pilot.evaluation_points(budget, 32) == [500, 1000, 1500, 2000]
    assert dataclasses.replace(budget, pilot_learning_rates=()).pilot_grid() == []  # the budget fixes the recipe


def test_the_curve_segments_are_the_kept_steps_and_the_chunks():
    assert SMOKE.curve_checkpoints() == (4,) and SMOKE.curve_segments() == (2, 4)  # a chunk, then the kept step
    unchunked = dataclasses.replace(SMOKE, curve_steps=(4, 8), curve_max_steps=8, curve_chunk_steps=0)
    assert unchunked.curve_checkpoints() == (4, 8) and unchunked.curve_segments() == (4, 8)
    chunked = dataclasses.replace(SMOKE, curve_steps=(2, 4, 16), curve_max_steps=12, curve_chunk_steps=3)
    assert chunked.curve_checkpoints() == (2, 4) and chunked.curve_segments() == (2, 3, 4)
    default = BUDGETS["default"]
    assert default.curve_checkpoints() == (1000, 2000, 4000, 8000, 16000, 32000, 64000)
    segments = default.curve_segments()
    assert segments[:4] == (1000, 2000, 4000, 6000) and segments[-1] == 64000 and len(segments) == 33
    assert default.curve_warmup == 200  # the budget's pretraining warmup, not 10% of 64k steps


def test_loss_at_equal_time_is_interpolated_linearly_in_time():
    points = [(10.0, 8.0), (20.0, 6.0), (30.0, 5.0)]
    assert pilot.at_time(points, 15.0) == pytest.approx(7.0)
    assert pilot.at_time(points, 30.0) == 5.0
    assert pilot.at_time(points, 25.0) == pytest.approx(5.5)
    assert pilot.at_time(points, 5.0) is None  # before the first measurement: not measured


def _pilot_rows(cpu: bool = True) -> list[Row]:
    """Run a: the best at equal examples. Run b: ahead at equal wall time only because run a's wall time was
    inflated by other processes (its CPU time says it was not slower)."""
    rows = []
    runs = (
        ("pilot-a", 1e-3, [(10, 10, 7.0), (40, 30, 5.0)]),  # (wall seconds, CPU seconds, held-out loss)
        ("pilot-b", 2e-3, [(10, 15, 6.0), (20, 35, 5.5)]),
    )
    for variant, rate, points in runs:
        rows += [_row(variant, "pilot", "learning_rate", rate), _row(variant, "pilot", "batch_size", 32)]
        for step, (wall, cpu_seconds, loss) in zip((1, 2), points):
            rows += [
                _row(variant, "pilot", "heldout_mlm_loss", loss, steps=step),
                _row(variant, "pilot", "wall_seconds", wall, steps=step),
            ]
            if cpu:
                rows.append(_row(variant, "pilot", "cpu_seconds", cpu_seconds, steps=step))
    return rows


def _choice_rows(values) -> list[Row]:
    return [_row(v[4], v[0], v[1], v[2], steps=v[3]) for v in values]


def test_the_pilot_chooses_the_lowest_loss_at_equal_examples(tmp_path):
    from official.nlp.paper.config import Workspace

    space = Workspace(str(tmp_path))
    values = pilot.choose(grid.Stage(grid.PILOT_CHOICE, "pilot_choice", "t"), _pilot_rows(), space)
    by = {(v[4], v[1]): v[2] for v in values}
    assert by[("pilot-a", "loss_at_equal_examples")] == 5.0 and by[("pilot-b", "loss_at_equal_examples")] == 5.5
    assert by[("pilot", "common_wall_seconds")] == 20
    assert by[("pilot-a", "loss_at_equal_time")] == pytest.approx(7.0 - 2.0 * 10 / 30)
    assert by[("pilot-b", "loss_at_equal_time")] == 5.5
    # At equal CPU time (the shortest total, 30 s) run a is ahead: 5.0 against 6.0 + (5.5 - 6.0) * 15 / 20.
    assert by[("pilot", "common_cpu_seconds")] == 30
    assert by[("pilot-a", "loss_at_equal_cpu")] == 5.0
    assert by[("pilot-b", "loss_at_equal_cpu")] == pytest.approx(5.625)
    assert by[("pilot", "chosen_learning_rate")] == 1e-3  # equal examples decide, not equal time
    assert '"learning_rate": 0.001' in (tmp_path / "pilot.json").read_text()
    # The report: a column per comparison, CPU time said to be the one that holds under load.
    table = "\n".join(pilot.pilot_table(_pilot_rows() + _choice_rows(values)))
    assert "equal CPU time" in table and "depends on the load" in table and "(30 s)" in table
    assert "| pilot-a | 0.001 | 32 | 5.000 | 30 | 40 | 5.000 | 6.333 | yes |" in table
    assert "| pilot-b | 0.002 | 32 | 5.500 | 35 | 20 | 5.625 | 5.500 |  |" in table


def test_a_choice_made_before_the_cpu_comparison_gets_it_from_its_runs(tmp_path):
    from official.nlp.paper.config import Workspace

    stage = grid.Stage(grid.PILOT_CHOICE, "pilot_choice", "t")
    values = pilot.choose(stage, _pilot_rows(), Workspace(str(tmp_path)))
    old = [v for v in values if v[1] not in ("common_cpu_seconds", "loss_at_equal_cpu")]  # as the first version wrote
    rows = _pilot_rows() + _choice_rows(old)
    completed = pilot.complete_comparisons(rows)
    added = {(r.variant, r.metric): r.value for r in completed[len(rows) :]}
    assert added == {
        ("pilot", "common_cpu_seconds"): 30,
        ("pilot-a", "loss_at_equal_cpu"): 5.0,
        ("pilot-b", "loss_at_equal_cpu"): pytest.approx(5.625),
    }
    assert completed[: len(rows)] == rows and pilot.complete_comparisons(completed) == completed
    assert pilot.complete_comparisons(_pilot_rows()) == _pilot_rows()  # no choice yet: nothing to complete
    # Runs recorded without CPU time: no CPU comparison, the others as before.
    no_cpu = pilot.comparisons(_pilot_rows(cpu=False))
    assert {v[1] for v in no_cpu} == {"loss_at_equal_examples", "common_wall_seconds", "loss_at_equal_time"}


def test_the_progress_lines_give_where_a_run_ended_and_what_the_pilot_chose(tmp_path):
    from official.nlp.paper.config import Workspace
    from official.nlp.paper.reproduce import result_words

    run = grid.Stage("pilot/pilot-a", "pilot", "t", learning_rate=1e-3, batch_size=32)
    values = [
        ("pilot", metric, value, step)
        for step, loss, wall, cpu_seconds in ((1, 7.0, 10.0, 10.0), (2, 5.0, 40.0, 30.0))
        for metric, value in (("heldout_mlm_loss", loss), ("wall_seconds", wall), ("cpu_seconds", cpu_seconds))
    ] + [("pilot", "learning_rate", 1e-3, None)]
    assert result_words(run, values) == "heldout_mlm_loss 5, wall_seconds 40, cpu_seconds 30"  # the last point
    stage = grid.Stage(grid.PILOT_CHOICE, "pilot_choice", "t")
    choice = pilot.choose(stage, _pilot_rows(), Workspace(str(tmp_path)))
    assert result_words(stage, choice) == (
        "learning rate 0.001, batch 32 (pilot-a), loss_at_equal_examples 5, loss_at_equal_time 6.333 (at 20 s), "
        "loss_at_equal_cpu 5 (at 30 s)"
    )  # the winner's figures (pilot-a's), not the first run's
    finetune = grid.Stage("finetune/x", "finetune", "t")
    assert result_words(finetune, [("mrpc", "accuracy", 72.06), ("mrpc", "f1", 80.07)]) == "accuracy 72.06, f1 80.07"


def _curve_rows(random: list[float], by_step: dict[int, list[float]], task: str = "mrpc") -> list[Row]:
    metric = "accuracy" if task in ("mrpc", "sst-2", "qnli") else "f1"
    rows = [_row("random", task, metric, v, seed) for seed, v in enumerate(random, 1)]
    for step, values in by_step.items():
        rows += [_row(grid.curve_variant(step), task, metric, v, seed) for seed, v in enumerate(values, 1)]
    return rows


def test_the_crossover_needs_the_seed_ranges_apart():
    budget = dataclasses.replace(
        SMOKE, tasks={t: dataclasses.replace(b, seeds=3) for t, b in SMOKE.tasks.items()}, **_CURVE_TO_8
    )
    # Step 2: median above random's maximum, but the ranges overlap; step 4: apart.
    rows = _curve_rows([60, 62, 64], {2: [63, 66, 70], 4: [65, 66, 67], 8: [70, 71, 72]})
    assert curve.crossover(rows, budget, "mrpc") == 4
    # A checkpoint with a seed missing (a sitting stopped mid-way) is not judged yet.
    partial = _curve_rows([60, 62, 64], {2: [65, 66]})
    assert curve.crossover(partial, budget, "mrpc") is None
    assert curve.crossover(_curve_rows([60, 62, 64], {2: [50, 51, 52]}), budget, "mrpc") is None


def test_the_crossover_cell_says_when_the_curve_is_over_for_a_task():
    budget = dataclasses.replace(SMOKE, curve_stop_tasks=3, **_CURVE_TO_8)
    text = curve.crossover_text
    # mrpc crossed at 4; squad never did and its last checkpoint (8) is judged; ner has not reached 8 yet.
    rows = _curve_rows([50], {2: [49], 4: [51], 8: [52]}, "mrpc") + _curve_rows([5], {2: [4], 4: [4], 8: [4]}, "squad")
    rows += _curve_rows([10], {2: [9], 4: [9]}, "ner")
    assert text(rows, budget, "mrpc", TASKS) == "step 4"
    assert text(rows, budget, "squad", TASKS) == "none to 8"
    assert text(rows, budget, "ner", TASKS) == "none yet"
    # Once the curve stopped (two tasks crossed at 4, the rule's two), a task not crossed is over at the stop.
    stopped = dataclasses.replace(budget, curve_stop_tasks=2)
    rows2 = _curve_rows([50], {2: [49], 4: [51]}, "mrpc") + _curve_rows([10], {2: [11]}, "ner")
    rows2 += _curve_rows([5], {2: [4], 4: [4]}, "squad")
    assert text(rows2, stopped, "squad", TASKS) == "none to 4"
    assert text(rows2, stopped, "ner", TASKS) == "step 2"
    # Random init not judged yet (no rows): the checkpoints cannot be either.
    assert text(_curve_rows([], {2: [4], 4: [4], 8: [4]}, "squad"), budget, "squad", TASKS) == "none yet"
    assert (
        text(
            _curve_rows([5], {64000: [6]}, "squad"),
            dataclasses.replace(budget, curve_steps=(64000,), curve_max_steps=64000),
            "squad",
            TASKS,
        )
        == "step 64,000"
    )


def test_the_curve_stops_once_enough_tasks_crossed():
    budget = dataclasses.replace(SMOKE, curve_stop_tasks=2, **_CURVE_TO_8)
    rows = _curve_rows([50], {2: [49], 4: [51]}, "mrpc") + _curve_rows([10], {2: [11]}, "ner")
    rows += _curve_rows([5], {2: [4], 4: [4], 8: [4]}, "squad")
    assert curve.stop_step(rows, budget, TASKS) == 4  # ner crossed at 2, mrpc at 4
    later = grid.Stage("curve/pretrain/step8", "curve_pretrain", "t", step=8)
    assert curve.skip_reason(later, rows, budget, TASKS).startswith("the curve stopped at step 4")
    assert curve.skip_reason(dataclasses.replace(later, step=4), rows, budget, TASKS) is None
    assert curve.stop_step(rows, dataclasses.replace(budget, curve_stop_tasks=3), TASKS) is None


def test_the_grid_runs_the_pilot_first_and_interleaves_the_curve():
    stages = grid.build_grid(dataclasses.replace(SMOKE, **_CURVE_TO_8), TASKS, ("5", "curve"), masking=False)
    ids = [s.id for s in stages]
    choice = ids.index(grid.PILOT_CHOICE)
    assert all(ids.index(s.id) > choice and grid.PILOT_CHOICE in s.depends for s in stages if s.kind == "pretrain")
    assert not any(s.kind == "finetune" for s in stages[:choice])
    curve_ids = [s.id for s in stages if s.step is not None]
    last_random = max(i for i, s in enumerate(stages) if s.variant == "random")
    assert ids.index(curve_ids[0]) > last_random
    assert curve_ids[:4] == [
        "curve/pretrain/step2",
        "finetune/curve-2/L1-H32-A2/mrpc/seed1",
        "finetune/curve-2/L1-H32-A2/squad/seed1",
        "finetune/curve-2/L1-H32-A2/ner/seed1",
    ]
    assert curve_ids[4] == "curve/pretrain/step4"
    without_curve = grid.build_grid(SMOKE, TASKS, ("5",), masking=False)
    assert not [s for s in without_curve if s.step is not None]
