"""The records stages pass each variant's settings on: the masking rates of the appendix's rows, and contiguous text
for the variants without NSP; read back from the records themselves."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from official.nlp.paper import data_jobs
from official.nlp.paper.budgets import BUDGETS
from official.nlp.paper.config import PaperConfig, Workspace
from official.nlp.paper.grid import NO_NSP_RECORDS, SHARED_RECORDS, Stage
from tests import pretraining_records


@pytest.fixture(scope="module")
def space(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("paper")
    space = Workspace(str(root))
    (root / "data" / "corpus").mkdir(parents=True)
    text = (shared_data / "pretraining_golden" / "squad_contexts.txt").read_text(encoding="utf-8")
    (root / "data" / "corpus" / "train.txt").write_text(text[:200_000], encoding="utf-8")
    (root / "data" / "vocab.txt").write_bytes((shared_data / "vocab" / "bert-base-uncased-vocab.txt").read_bytes())
    return space


def _records(space, name: str) -> dict[str, np.ndarray]:
    budget = dataclasses.replace(BUDGETS["smoke"], dupe_factor=1)
    config = PaperConfig(input_file="unused", output_dir=space.root)
    data_jobs.records_stage(Stage(f"data/{name}", "records", name, records=name), config, budget, space)
    seq, preds = budget.max_seq_length, budget.max_predictions_per_seq
    return pretraining_records.parse_records(space.records(name), seq=seq, preds=preds, nsp=name != NO_NSP_RECORDS)


def _shown(records: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """What each real prediction's position shows in input_ids, and the original token there."""
    rows, slots = np.nonzero(records["masked_lm_weights"] > 0)
    positions = records["masked_lm_positions"][rows, slots]
    return records["input_ids"][rows, positions], records["masked_lm_ids"][rows, slots]


def test_a_masking_row_writes_records_of_its_rates(space):
    mask_id = 103  # [MASK] in BERT's uncased vocabulary
    shown, original = _shown(_records(space, "records-mask100-0-0"))
    assert len(shown) > 500 and (shown == mask_id).all()  # 100% [MASK]
    shown, original = _shown(_records(space, "records-mask0-0-100"))
    assert not (shown == mask_id).any() and (shown != original).mean() > 0.95  # random tokens (rarely the same one)
    shown, original = _shown(_records(space, SHARED_RECORDS))
    assert 0.75 < (shown == mask_id).mean() < 0.85  # the original 80 / 10 / 10


def test_the_variants_without_nsp_read_contiguous_text(space):
    with_nsp = _records(space, SHARED_RECORDS)
    assert 0.3 < with_nsp["next_sentence_labels"].mean() < 0.8  # random next segments
    without = _records(space, NO_NSP_RECORDS)
    assert "next_sentence_labels" not in without and len(without["input_ids"]) > 100
