"""The masking rates of the paper's Table 8 (`--mask_token_prob`, `--random_token_prob`), read back from real records.

The observed split of the masked positions ([MASK], the token kept, another token) is counted in the records
themselves, not in the generator's statistics, for the static generator and for run_pretraining's dynamic masking.
The default rates keep the original's records byte for byte: test_output_bytes.py pins them.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.common.errors import InputError
from official.nlp.data.pretraining import generator as pretraining_data
from official.nlp.data.pretraining.masking import config as masking_config
from official.nlp.modeling.configs import BertConfig
from official.nlp.tasks import pretraining, pretraining_config
from official.nlp.training import run_settings
from tests.pretraining_records import parse_records

MASK_ID = 103  # [MASK] in bert-base-uncased's vocab.txt
# Table 8 of the paper lists MASK, SAME, RND in this order: (mask_token_prob, random_token_prob) = (MASK, RND).
TABLE_8 = {
    "80/10/10": (0.8, 0.1),
    "100/0/0": (1.0, 0.0),
    "80/0/20": (0.8, 0.2),
    "80/20/0": (0.8, 0.0),
    "0/20/80": (0.0, 0.8),
    "0/0/100": (0.0, 1.0),
}


TABLE_8_FLAGS = ("mask_token_prob", "random_token_prob")


def observed_split(input_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights) -> tuple[np.ndarray, int]:
    """Shares of [MASK], kept and replaced tokens among the real predictions, and their number."""
    real = masked_lm_weights > 0
    rows = np.broadcast_to(np.arange(len(input_ids))[:, None], masked_lm_positions.shape)
    shown = input_ids[rows[real], masked_lm_positions[real]]
    original = masked_lm_ids[real]
    is_mask = shown == MASK_ID
    kept = ~is_mask & (shown == original)
    counts = np.array([is_mask.sum(), kept.sum(), (~is_mask & ~kept).sum()])
    return counts / real.sum(), int(real.sum())


def expected_split(rates) -> np.ndarray:
    mask, rnd = rates
    return np.array([mask, 1 - mask - rnd, rnd])


@pytest.fixture(scope="module")
def corpus(shared_data, tmp_path_factory) -> str:
    """The first 200 kB of the SQuAD v1.1 dev contexts (one pass: ~500 instances, ~9k predictions)."""
    text = (shared_data / "pretraining_golden" / "squad_contexts.txt").read_bytes()
    path = tmp_path_factory.mktemp("corpus") / "contexts.txt"
    path.write_bytes(text[: text.index(b"\n\n", 200_000) + 1])
    return str(path)


def _config(shared_data, tmp_path, name, **kw):
    base = dict(
        input_file=str(shared_data / "pretraining_golden" / "squad_contexts.txt"),
        output_file=str(tmp_path / f"{name}.tfrecord"),
        vocab_file=str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"),
        max_seq_length=128,
        max_predictions_per_seq=20,
        dupe_factor=1,
        num_workers=1,
    )
    return pretraining_data.PretrainingDataConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def static_records(shared_data, corpus, tmp_path_factory):
    """The records of each row of Table 8."""
    tmp = tmp_path_factory.mktemp("rates")
    out = {}
    for name, (mask, rnd) in TABLE_8.items():
        cfg = _config(
            shared_data, tmp, name.replace("/", "-"), input_file=corpus, mask_token_prob=mask, random_token_prob=rnd
        )
        stats = pretraining_data.create_pretraining_data(cfg)
        out[name] = (parse_records(cfg.output_file), stats)
    return out


@pytest.mark.parametrize("row", sorted(TABLE_8))
def test_static_records_follow_each_row_of_table_8(static_records, row):
    records, stats = static_records[row]
    split, count = observed_split(
        records["input_ids"], records["masked_lm_positions"], records["masked_lm_ids"], records["masked_lm_weights"]
    )
    assert count > 8_000
    np.testing.assert_allclose(split, expected_split(TABLE_8[row]), atol=0.02)
    # The statistics count the same split (there a random id that is [MASK] or the token itself counts as random).
    np.testing.assert_allclose(stats.to_dict()["rates"]["action_split"]["mask"], split[0], atol=1e-3)


def test_the_rates_change_only_what_the_taken_tokens_become(static_records):
    """Same draws whatever the rates: the same positions are taken, and every other token is the same."""
    default, _ = static_records["80/10/10"]
    for row in TABLE_8:
        records, _ = static_records[row]
        for name in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights", "segment_ids", "input_mask"):
            np.testing.assert_array_equal(records[name], default[name])
        untouched = np.ones(default["input_ids"].shape, bool)
        rows = np.arange(len(untouched))[:, None].repeat(default["masked_lm_positions"].shape[1], 1)
        real = default["masked_lm_weights"] > 0
        untouched[rows[real], default["masked_lm_positions"][real]] = False
        np.testing.assert_array_equal(records["input_ids"][untouched], default["input_ids"][untouched])


@pytest.mark.parametrize("row, expected", [("100/0/0", [1, 0, 0]), ("0/0/100", [0, 0, 1])])
def test_reference_order_takes_the_rates_too(shared_data, tmp_path, row, expected):
    mask, rnd = TABLE_8[row]
    cfg = _config(
        shared_data,
        tmp_path,
        "reference",
        input_file=str(shared_data / "bert_sample_text.txt"),
        reference_order=True,
        mask_token_prob=mask,
        random_token_prob=rnd,
    )
    pretraining_data.create_pretraining_data(cfg)
    records = parse_records(cfg.output_file)
    split, _ = observed_split(
        records["input_ids"], records["masked_lm_positions"], records["masked_lm_ids"], records["masked_lm_weights"]
    )
    np.testing.assert_allclose(split, expected, atol=0.02)  # a random id may equal its token (1 in 30522)


@pytest.fixture(scope="module")
def unmasked_records(shared_data, corpus, tmp_path_factory):
    cfg = _config(shared_data, tmp_path_factory.mktemp("unmasked"), "unmasked", input_file=corpus, static_masking=False)
    pretraining_data.create_pretraining_data(cfg)
    return cfg.output_file


@pytest.mark.parametrize("row", sorted(TABLE_8))
def test_dynamic_masking_follows_each_row_of_table_8(shared_data, unmasked_records, tmp_path, row):
    mask, rnd = TABLE_8[row]
    config = pretraining_config.PretrainingConfig(
        input_file=unmasked_records,
        model_dir=str(tmp_path),
        vocab_file=str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"),
        train_batch_size=512,
        dynamic_masking=True,
        mask_token_prob=mask,
        random_token_prob=rnd,
    )
    pretraining_config.check_masking_rates(config)
    loader = pretraining.make_data_loader(config, BertConfig(vocab_size=30522, max_position_embeddings=128))
    batches = [(x, y) for x, y in loader.load().take(2)]
    split, count = observed_split(
        np.concatenate([x["input_word_ids"].numpy() for x, _ in batches]),
        np.concatenate([x["masked_lm_positions"].numpy() for x, _ in batches]),
        np.concatenate([y["masked_lm_ids"].numpy() for _, y in batches]),
        np.concatenate([y["masked_lm_weights"].numpy() for _, y in batches]),
    )
    assert count > 15_000
    np.testing.assert_allclose(split, expected_split((mask, rnd)), atol=0.02)


def test_default_rates_draw_the_original_thresholds():
    """0.1 / (1 - 0.8) is 0.49999999999999983 in floats; the original compares with 0.5."""
    assert masking_config.keep_share(0.8, 0.1) == 0.5
    assert masking_config.keep_share(1.0, 0.0) == 0.0 and masking_config.keep_share(0.0, 1.0) == 0.0
    assert masking_config.keep_share(0.8, 0.0) == 1.0


@pytest.mark.parametrize(
    "mask, rnd, message",
    [
        (-0.1, 0.1, r"^--mask_token_prob=-0.1: must be in \[0, 1\]$"),
        (0.8, float("nan"), r"^--random_token_prob=nan: must be a finite number$"),
        (1.5, 0.0, r"^--mask_token_prob=1.5: must be in \[0, 1\]$"),
        (0.8, 0.3, r"^--mask_token_prob=0.8 and --random_token_prob=0.3 add up to more than 1 .*lower one of them$"),
    ],
)
def test_bad_rates_are_refused_naming_the_flag(shared_data, tmp_path, mask, rnd, message):
    out = tmp_path / "out"
    with pytest.raises(InputError, match=message):
        pretraining_data.create_pretraining_data(
            _config(shared_data, out, "x", mask_token_prob=mask, random_token_prob=rnd)
        )
    assert not out.exists()
    with pytest.raises(InputError, match=message):  # a rate out of range is refused when the config is made
        config = pretraining_config.PretrainingConfig(
            input_file="x", model_dir=str(out), dynamic_masking=True, mask_token_prob=mask, random_token_prob=rnd
        )
        pretraining_config.check_masking_rates(config)


def test_rates_that_would_not_be_used_are_refused(shared_data, tmp_path):
    with pytest.raises(InputError, match=r"^--mask_token_prob=0.9: applies to --dynamic_masking only"):
        config = pretraining_config.PretrainingConfig(input_file="x", model_dir="m", mask_token_prob=0.9)
        pretraining_config.check_masking_rates(config)
    with pytest.raises(InputError, match=r"^--random_token_prob=0.0: --static_masking=false writes records without"):
        config = _config(shared_data, tmp_path, "x", static_masking=False, random_token_prob=0.0)
        pretraining_data.validate_config(config)
    # Accepted: 1 exactly, in decimals (0.7 + 0.3 is 0.9999999999999999 in floats, 0.8 + 0.2 is 1.0).
    for mask, rnd in [(0.7, 0.3), (0.8, 0.2), (0.0, 0.0)]:
        assert masking_config.action_rate_problems(mask, rnd) == []


def test_outputs_of_a_version_without_the_rates_still_count_as_written_with_the_defaults(shared_data, tmp_path):
    """Shards and model directories recorded before the flags existed were made with 80/10/10."""
    cfg = _config(shared_data, tmp_path, "x", input_file=str(shared_data / "bert_sample_text.txt"))
    pretraining_data.create_pretraining_data(cfg)
    record_path = tmp_path / "stats" / "x.tfrecord.json"
    record = json.loads(record_path.read_text())
    for name in TABLE_8_FLAGS:
        del record["settings"][name]
    record_path.write_text(json.dumps(record))
    written = pathlib.Path(cfg.output_file).read_bytes()
    pretraining_data.create_pretraining_data(cfg)  # complete: kept as it is
    assert pathlib.Path(cfg.output_file).read_bytes() == written
    with pytest.raises(InputError, match=r"other settings than this run's \(--mask_token_prob: 0.8 there, 1.0 now"):
        pretraining_data.create_pretraining_data(
            _config(shared_data, tmp_path, "x", input_file=cfg.input_file, mask_token_prob=1.0, random_token_prob=0)
        )

    model_dir = tmp_path / "model"
    model_dir.mkdir()
    config = pretraining_config.PretrainingConfig(input_file="x", model_dir=str(model_dir), dynamic_masking=True)
    run_settings.record_settings(
        config.model_dir,
        pretraining_config.PRETRAINING_SETTINGS_FILE,
        run_settings.training_settings(config),
        flag="--model_dir",
    )
    tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), str(model_dir), 1).save()
    settings = json.loads((model_dir / pretraining_config.PRETRAINING_SETTINGS_FILE).read_text())
    for name in TABLE_8_FLAGS:
        del settings[name]
    (model_dir / pretraining_config.PRETRAINING_SETTINGS_FILE).write_text(json.dumps(settings))
    assert pretraining_config.check_pretraining_resume(config) is True
    with pytest.raises(InputError, match=r"--random_token_prob: 0.1 there, 0.2 now"):
        pretraining_config.check_pretraining_resume(dataclasses.replace(config, random_token_prob=0.2))
