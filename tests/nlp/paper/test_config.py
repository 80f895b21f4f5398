"""PaperConfig: bad flags refused by name before any work, a rerun with other settings refused, the command line."""

from __future__ import annotations

import dataclasses
import json

import pytest

from official.nlp.common.errors import InputError
from official.nlp.paper import budgets
from official.nlp.paper import config as config_lib
from official.nlp.paper.config import PaperConfig


def _config(tmp_path, **changes) -> PaperConfig:
    return PaperConfig(input_file="wiki/*", output_dir=str(tmp_path / "paper"), **changes)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(tasks=["mrpc", "mnli"]), "--tasks=mrpc,mnli: choose from mrpc, sst-2, qnli, squad, ner"),
        (dict(tables=["5", "8"]), "--tables=5,8: choose from 5, 6, 7"),
        (dict(sizes=["tiny", "gigantic"]), "--sizes: 'gigantic' is not a model size"),
        (dict(sizes=["tiny", "mini"], main_size="small"), "--main_size=small is not one of the sizes"),
        (dict(curve_state_dir="docs/paper_curve"), "--curve_state_dir=docs/paper_curve: applies to the transfer curve"),
    ],
)
def test_bad_flags_are_named(tmp_path, changes, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        config_lib.validate(_config(tmp_path, **changes))
    assert not (tmp_path / "paper").exists()


@pytest.mark.parametrize("name", ["pretrain_steps", "pretrain_batch_size", "seeds"])
def test_counts_must_be_positive(tmp_path, name):
    with pytest.raises(InputError, match=f"--{name}=0"):
        _config(tmp_path, **{name: 0})


def test_overrides_replace_the_budgets_numbers(tmp_path):
    budget = config_lib.resolved_budget(
        _config(tmp_path, budget="smoke", sizes=["L1-H16-A2", "L3-H16-A2"], pretrain_steps=7, seeds=2)
    )
    assert budget.sizes == ("L1-H16-A2", "L3-H16-A2") and budget.main_size == "L3-H16-A2"
    assert budget.pretrain_steps == 7 and {b.seeds for b in budget.tasks.values()} == {2}
    assert budget.feature_based.seeds == 2
    assert config_lib.resolved_budget(_config(tmp_path, seeds=2)).feature_based.seeds == 2
    pilot = config_lib.resolved_budget(_config(tmp_path, pilot_learning_rates=[1e-3], pilot_batch_sizes=[32, 64]))
    assert pilot.pilot_grid() == [(1e-3, 32), (pytest.approx(1e-3 * 2**0.5), 64)]


def test_a_rerun_with_other_settings_is_refused_but_a_selection_may_change(tmp_path):
    config_lib.check_rerun_settings(_config(tmp_path, budget="smoke"))
    config_lib.check_rerun_settings(_config(tmp_path, budget="smoke", tasks=["mrpc"], tables=["5"], plots=False))
    with pytest.raises(InputError, match=r"holds a rerun of --budget=smoke with other numbers than this one's \("):
        config_lib.check_rerun_settings(_config(tmp_path))
    with pytest.raises(InputError, match=r"holds a rerun with other settings \(--do_lower_case: True there, False now"):
        config_lib.check_rerun_settings(_config(tmp_path, budget="smoke", do_lower_case=False))


def test_the_command_line_names_the_flags_that_differ(tmp_path, monkeypatch):
    config = _config(tmp_path, budget="smoke", tasks=["mrpc", "ner"], plots=False)
    # Local paths are named relative to the current folder (a shipped report names no folder of its machine).
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    config.input_file = f"{tmp_path / 'data' / 'wiki_*'},gs://bucket/wiki_*"
    config.vocab_file = str(tmp_path / "work" / "vocab.txt")
    assert config_lib.command_line(config) == (
        "python run_scripts/reproduce_paper.py --input_file=../data/wiki_*,gs://bucket/wiki_* "
        "--output_dir=../paper --budget=smoke --vocab_file=vocab.txt --tasks=mrpc,ner --noplots"
    )


def test_a_rerun_whose_budget_changed_with_the_library_is_refused(tmp_path, monkeypatch):
    config = _config(tmp_path, budget="smoke")
    config_lib.check_rerun_settings(config)
    smoke = budgets.BUDGETS["smoke"]
    changed = dataclasses.replace(smoke, feature_epochs=3.0)
    monkeypatch.setitem(budgets.BUDGETS, "smoke", changed)
    with pytest.raises(InputError, match=r"other numbers than this one's \(feature_epochs: 2.0 there, 3.0 now\)"):
        config_lib.check_rerun_settings(config)
    # New words for the same numbers are the same budget.
    monkeypatch.setitem(budgets.BUDGETS, "smoke", dataclasses.replace(smoke, description="reworded"))
    config_lib.check_rerun_settings(config)
    monkeypatch.undo()
    config_lib.check_rerun_settings(config)
    # A rerun started by a version that did not record the budget's numbers cannot be checked: refused too.
    settings_file = tmp_path / "paper" / config_lib.PAPER_SETTINGS_FILE
    recorded = json.loads(settings_file.read_text())
    del recorded[config_lib.BUDGET_VALUES_KEY]
    settings_file.write_text(json.dumps(recorded))
    with pytest.raises(InputError, match="whose numbers are not recorded there"):
        config_lib.check_rerun_settings(config)


def test_a_rerun_resumes_across_harmless_changes_of_the_library_and_of_the_command(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    config = dataclasses.replace(_config(tmp_path), input_file="../data/wiki_*", glue_dir="../data/glue")
    config_lib.check_rerun_settings(config)
    settings_file = tmp_path / "paper" / config_lib.PAPER_SETTINGS_FILE
    recorded = json.loads(settings_file.read_text())
    # The same files by another spelling (absolute, through a symbolic link) are the same setting.
    (tmp_path / "link").symlink_to(data)
    same = dict(input_file=str(data / "wiki_*"), glue_dir=str(tmp_path / "link" / "glue"))
    config_lib.check_rerun_settings(dataclasses.replace(config, **same))
    with pytest.raises(InputError, match=r"--glue_dir: '.*/data/glue' there, '.*/other/glue' now"):
        config_lib.check_rerun_settings(dataclasses.replace(config, glue_dir=str(tmp_path / "other" / "glue")))
    # A record written before a flag or a budget field existed: they count as their defaults. A flag or field the
    # library no longer has is not compared.
    older = dict(recorded, a_removed_flag=1)
    del older["pilot_examples"], older["mixed_precision"]
    older[config_lib.BUDGET_VALUES_KEY] = dict(recorded[config_lib.BUDGET_VALUES_KEY], a_removed_field=2)
    del older[config_lib.BUDGET_VALUES_KEY]["curve_chunk_steps"]  # as if added since: its default, 0, is not 2000
    del older[config_lib.BUDGET_VALUES_KEY]["curve_dynamic_masking"]  # its default, True, is the budget's
    settings_file.write_text(json.dumps(older))
    with pytest.raises(InputError, match=r"curve_chunk_steps: 0 there, 2000 now"):
        config_lib.check_rerun_settings(config)
    del older[config_lib.BUDGET_VALUES_KEY]["a_removed_field"]
    older[config_lib.BUDGET_VALUES_KEY]["curve_chunk_steps"] = 2000
    settings_file.write_text(json.dumps(older))
    config_lib.check_rerun_settings(config)
    # The library's budget changed since (a new default): the flag that sets the recorded number back resumes it,
    # since the numbers the runs used are what is compared, not how they were given.
    default = budgets.BUDGETS["default"]
    monkeypatch.setitem(budgets.BUDGETS, "default", dataclasses.replace(default, pretrain_batch_size=64))
    with pytest.raises(InputError, match=r"pretrain_batch_size: 32 there, 64 now\).*--pretrain_batch_size"):
        config_lib.check_rerun_settings(config)
    config_lib.check_rerun_settings(dataclasses.replace(config, pretrain_batch_size=32))
    # The same numbers under the flag that gave them first, now the budget's own: the same rerun.
    monkeypatch.setitem(budgets.BUDGETS, "default", default)
    settings_file.write_text(json.dumps(recorded))
    flagged = dataclasses.replace(config, output_dir=str(tmp_path / "flagged"), pretrain_steps=4000)
    config_lib.check_rerun_settings(flagged)
    monkeypatch.setitem(budgets.BUDGETS, "default", dataclasses.replace(default, pretrain_steps=4000))
    config_lib.check_rerun_settings(dataclasses.replace(flagged, pretrain_steps=None))
