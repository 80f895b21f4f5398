"""Running stages with done markers: a stage that stops leaves no marker, and the rerun runs it and what follows,
never what finished; the time left is rescaled by what finished stages took."""

from __future__ import annotations

import json

import pytest

from official.nlp.paper import stages
from official.nlp.paper.config import Workspace
from official.nlp.paper.grid import Stage
from official.nlp.paper.results import Row


def _grid() -> list[Stage]:
    return [
        Stage("data/a", "corpus", "A", cost=10.0),
        Stage("pretrain/x/tiny", "pretrain", "B", variant="x", size="tiny", depends=("data/a",), cost=100.0),
        Stage("finetune/x/tiny/mrpc/seed1", "finetune", "C", depends=("pretrain/x/tiny",), cost=20.0),
        Stage("finetune/x/tiny/mrpc/seed2", "finetune", "D", depends=("pretrain/x/tiny",), cost=20.0),
    ]


def _row(stage: Stage) -> Row:
    return Row("x", "tiny", "mrpc", "", None, "accuracy", 50.0, 3, 0.0, stage.id, "test machine")


class Interrupted(Exception):
    pass


def test_a_stopped_stage_reruns_and_finished_ones_do_not(tmp_path):
    space = Workspace(str(tmp_path))
    ran = []

    def stop_at_c(stage):
        ran.append(stage.id)
        if stage.title == "C":
            raise Interrupted
        return [_row(stage)], "ok"

    with pytest.raises(Interrupted):
        stages.run_stages(_grid(), space, stop_at_c, echo=lambda line: None)
    assert ran == ["data/a", "pretrain/x/tiny", "finetune/x/tiny/mrpc/seed1"]
    assert not (tmp_path / "stages" / "finetune" / "x" / "tiny" / "mrpc" / "seed1.json").exists()

    ran.clear()
    lines = []
    rows = stages.run_stages(_grid(), space, lambda s: (ran.append(s.id) or [_row(s)], "ok"), echo=lines.append)
    assert ran == ["finetune/x/tiny/mrpc/seed1", "finetune/x/tiny/mrpc/seed2"]
    assert lines[0].startswith("4 stages: data 1/1, pretraining 1/1, fine-tuning 0/2 done; 2 left")
    assert [r.stage for r in rows] == [s.id for s in _grid()]
    marker = json.loads((tmp_path / "stages" / "data" / "a.json").read_text())
    assert marker["rows"][0]["metric"] == "accuracy" and marker["seconds"] == rows[0].seconds


def test_after_runs_for_done_stages_too(tmp_path):
    space = Workspace(str(tmp_path))
    stages.run_stages(_grid(), space, lambda s: ([_row(s)], "ok"), echo=lambda line: None)
    tidied = []
    stages.run_stages(_grid(), space, lambda s: pytest.fail("ran"), after=lambda s: tidied.append(s.id), echo=print)
    assert tidied == [s.id for s in _grid()]


def test_the_estimate_of_a_kind_scales_with_what_its_finished_stages_took():
    progress = stages.Forecast(_grid())
    fine_tuning = _grid()[2:]
    assert progress.left(fine_tuning) == 40.0  # no fine-tuning finished: the estimates as they are
    progress.finished(fine_tuning[0], 60.0)  # took three times its estimate
    assert progress.left(fine_tuning[1:]) == pytest.approx(60.0)
    assert progress.estimate(_grid()[1]) == 100.0  # another kind keeps its own


def test_hms():
    assert stages.hms(3725.4) == "1:02:05" and stages.hms(-3) == "0:00:00"


def test_markers_splits_and_results_go_through_the_file_layer():
    """On ``ram://`` (TensorFlow's in-memory filesystem, behind the same `tf.io.gfile` layer as ``gs://``): the stage
    markers, a task's split, results.csv and a plot are written and read back there, nothing on local disk."""
    import tensorflow as tf

    from official.nlp.paper import plots, results, splits

    root = "ram://paper_file_layer"
    space = Workspace(root)
    rows = stages.run_stages(_grid(), space, lambda s: ([_row(s)], "ok"), echo=lambda line: None)
    assert tf.io.gfile.exists(f"{root}/stages/finetune/x/tiny/mrpc/seed2.json")
    assert stages.run_stages(_grid(), space, lambda s: pytest.fail("ran"), echo=lambda line: None) == rows
    results.write_csv(space.path("results.csv"), rows)
    assert results.read_csv(space.path("results.csv")) == rows
    source = f"{root}/glue/MRPC"
    tf.io.gfile.makedirs(source)
    for split in ("train", "dev"):
        with tf.io.gfile.GFile(f"{source}/{split}.tsv", "w") as f:
            f.write("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n" + "1\t1\t2\tA b.\tC d.\n" * 5)
    counts = splits.glue_task("mrpc", f"{root}/glue", space.task_dir("mrpc"), 3, None)
    assert counts == {"train_examples": 3, "eval_examples": 5}
    assert tf.io.gfile.GFile(space.task_dir("mrpc") + "/train.tsv").read().count("\n") == 4
    figure = plots.pyplot().figure()
    plots._save(figure, space.path("plot.png"))
    assert tf.io.gfile.GFile(space.path("plot.png"), "rb").read()[:4] == b"\x89PNG"
