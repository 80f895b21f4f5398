"""The grid: which runs each table needs, each once, every stage after the stages it reads; and the budgets."""

from __future__ import annotations

import collections
import dataclasses

import pytest

from official.nlp.common.errors import InputError
from official.nlp.paper import budgets, grid
from official.nlp.paper.budgets import BUDGETS
from official.nlp.paper.stages import FEATURE_BASED_SHARE, estimate


def _ids(stages, kind):
    return [s.id for s in stages if s.kind == kind]


def test_the_default_grid_counted_by_hand():
    budget = BUDGETS["default"]
    stages = grid.build_grid(budget, budgets.FINE_TUNING_TASKS, ("5", "6", "7"), masking=False)
    assert len({s.id for s in stages}) == len(stages)
    assert _ids(stages, "pretrain") == [
        "pretrain/mlm_nsp/tiny",
        "pretrain/mlm/tiny",
        "pretrain/ltr/tiny",
        "pretrain/mlm_nsp/L4-H128-A2",
    ]
    assert _ids(stages, "perplexity") == [
        "perplexity/mlm_nsp/tiny",
        "perplexity/mlm/tiny",
        "perplexity/mlm_nsp/L4-H128-A2",
    ]
    seeds = {task: b.seeds for task, b in budget.tasks.items()}
    per_variant = sum(seeds.values())
    # Table 5: 4 variants at tiny + LTR's BiLSTM on SQuAD; Table 6 adds L4; Table 7: 6 choices on L4's NER.
    expected = 4 * per_variant + seeds["squad"] + per_variant + 6 * budget.feature_seeds
    assert len(_ids(stages, "finetune")) == expected
    reads = {s.variant: s.records for s in stages if s.kind == "pretrain"}
    assert reads == {"mlm_nsp": "records", "mlm": "records-nonsp", "ltr": "records-nonsp"}
    random = [s for s in stages if s.variant == "random"]
    assert random and all(s.kind == "finetune" and "data/vocab" in s.depends for s in random)


def test_every_stage_comes_after_what_it_reads():
    for masking in (False, True):
        stages = grid.build_grid(BUDGETS["smoke"], budgets.FINE_TUNING_TASKS, ("5", "6", "7"), masking=masking)
        seen = set()
        for stage in stages:
            assert set(stage.depends) <= seen, stage
            seen.add(stage.id)


def test_the_masking_group_pretrains_on_records_of_its_rates():
    budget = BUDGETS["smoke"]
    stages = grid.build_grid(budget, budgets.FINE_TUNING_TASKS, ("5",), masking=True)
    records = [s for s in stages if s.kind == "records"]
    assert {s.records for s in records} == {"records", "records-nonsp", "records-heldout"} | {
        f"records-{v.name}" for v in grid.MASKING_VARIANTS
    }
    assert [v.mask_rates for v in grid.MASKING_VARIANTS] == [(1.0, 0.0), (0.8, 0.2), (0.8, 0.0), (0.0, 0.8), (0.0, 1.0)]
    tasks = collections.Counter((s.task, s.head) for s in stages if s.variant == "mask80-0-20" and s.kind == "finetune")
    assert tasks == {("qnli", None): 1, ("ner", None): 1, ("ner", "features:concat_last_four"): 1}


def test_a_selection_only_adds_what_it_needs():
    stages = grid.build_grid(BUDGETS["default"], ("ner",), ("7",), masking=False)
    assert _ids(stages, "pretrain") == ["pretrain/mlm_nsp/L4-H128-A2"]
    assert not _ids(stages, "perplexity")
    assert {s.head for s in stages if s.kind == "finetune"} == {None} | {f"features:{c}" for c in grid.FEATURE_CHOICES}


def test_feature_layers_on_shallow_models():
    assert grid.layers_of_choice("concat_last_four", 4) == ("-1", "-2", "-3", "-4")
    assert grid.layers_of_choice("concat_last_four", 2) == ("-1", "-2")
    assert grid.layers_of_choice("second_to_last", 1) == ("-1",)
    assert grid.layers_of_choice("weighted_sum_all", 2) == ("all",)


def test_sizes_parse_as_presets_or_the_papers_notation():
    assert budgets.parse_size("mini") == budgets.Size("mini", 4, 256, 4)
    assert budgets.parse_size("L3-H768-A12").notation == "L3-H768-A12"
    config = budgets.parse_size("L2-H64-A4").bert_config(1000)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.intermediate_size) == (
        2,
        64,
        4,
        256,
    )
    for bad in ("huge", "L2-H65-A4", "L0-H64-A4", "2x64"):
        with pytest.raises(InputError, match="--sizes: .* is not a model size"):
            budgets.parse_size(bad)


def test_every_budgets_main_size_is_one_of_its_sizes():
    for budget in BUDGETS.values():
        assert budget.main_size in budget.sizes and set(budget.tasks) == set(budgets.FINE_TUNING_TASKS)
        assert all(budgets.parse_size(s) for s in budget.sizes)


def test_feature_based_runs_have_their_own_epochs_and_seeds():
    budget = BUDGETS["default"]
    features = budget.feature_based
    assert (features.epochs, features.seeds, features.learning_rate) == (8.0, 1, budget.feature_learning_rate)
    assert features.train_examples == budget.tasks["ner"].train_examples
    stages = grid.build_grid(budget, ("ner",), ("7",), masking=False)
    by_id = {s.id: s for s in stages}
    feature_runs = [s for s in stages if s.feature_choice]
    assert len(feature_runs) == len(grid.FEATURE_CHOICES) and {s.seed for s in feature_runs} == {1}
    tuned = by_id[grid.finetune_id("mlm_nsp", "L4-H128-A2", "ner", None, 1)]
    # 8 epochs against 2, at 0.6 of a fine-tuning epoch's cost: 2.4 times the run, overheads aside.
    ratio = (estimate(feature_runs[0], budget, 8192) - 8) / (estimate(tuned, budget, 8192) - 8)
    assert ratio == pytest.approx(8 / 2 * FEATURE_BASED_SHARE)
    # Without their own numbers they are the NER task's.
    plain = dataclasses.replace(budget, feature_epochs=None, feature_seeds=None)
    assert (plain.feature_based.epochs, plain.feature_based.seeds) == (2.0, budget.tasks["ner"].seeds)
