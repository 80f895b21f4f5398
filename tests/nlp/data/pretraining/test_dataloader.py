"""The pretraining input pipeline: original records, sharding, dynamic masking, and errors that name the file."""

from __future__ import annotations

import gzip
import shutil

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.common.errors import InputError
from official.nlp.data.pretraining.dataloader import PretrainDataConfig, PretrainDataLoader
from official.nlp.data.pretraining.masking.config import MaskingConfig
from official.nlp.data.pretraining.record_files import PretrainDataError
from tests import pretraining_records


@pytest.fixture(scope="module")
def golden(shared_data):
    return str(shared_data / "pretraining_golden" / "sample_text.uncased.seq128.tfrecord.gz")


def _raw_records(path, count, compression="GZIP"):
    """The first records parsed with tf.train.Example (independent of the loader)."""
    out = []
    for record in tf.data.TFRecordDataset(path, compression_type=compression).take(count):
        example = tf.train.Example.FromString(record.numpy())
        out.append(
            {name: np.array(getattr(f, f.WhichOneof("kind")).value) for name, f in example.features.feature.items()}
        )
    return out


def _loader(patterns, **kwargs):
    defaults = dict(seq_length=32, max_predictions_per_seq=5, global_batch_size=8)
    defaults.update(kwargs)
    return PretrainDataLoader(PretrainDataConfig(input_patterns=patterns, **defaults))


def test_reads_records_of_the_original_script_unchanged(golden):
    loader = _loader(golden, seq_length=128, max_predictions_per_seq=20, global_batch_size=8, is_training=False)
    assert loader.compression == "GZIP"
    x, y = next(iter(loader.load()))
    raw = _raw_records(golden, 8)
    pairs = {
        "input_word_ids": "input_ids",
        "input_mask": "input_mask",
        "input_type_ids": "segment_ids",
        "masked_lm_positions": "masked_lm_positions",
    }
    for ours, original in pairs.items():
        assert x[ours].dtype == tf.int32 and x[ours].shape[0] == 8
        np.testing.assert_array_equal(x[ours].numpy(), np.stack([r[original] for r in raw]))
    np.testing.assert_array_equal(y["masked_lm_ids"].numpy(), np.stack([r["masked_lm_ids"] for r in raw]))
    np.testing.assert_array_equal(y["masked_lm_weights"].numpy(), np.stack([r["masked_lm_weights"] for r in raw]))
    np.testing.assert_array_equal(y["next_sentence_labels"].numpy(), [r["next_sentence_labels"][0] for r in raw])
    # One pass in file order without training: 60 records, the last batch partial.
    assert sum(int(b[0]["input_word_ids"].shape[0]) for b in loader.load()) == 60


def test_training_order_is_seeded_and_batches_are_static(tmp_path):
    files = pretraining_records.write_records(tmp_path, num_files=3, per_file=16)
    first = [b[0]["input_word_ids"].numpy() for b in _loader(files).load().take(8)]
    again = [b[0]["input_word_ids"].numpy() for b in _loader(files).load().take(8)]
    other = [b[0]["input_word_ids"].numpy() for b in _loader(files, seed=7).load().take(8)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))
    spec = _loader(files).load().element_spec
    assert spec[0]["input_word_ids"].shape == (8, 32) and spec[1]["masked_lm_ids"].shape == (8, 5)


def _ids_of_pass(loader, context):
    """The first token-id rows of one pass (no repeat) through this worker's shard, as a multiset of tuples."""
    dataset = loader.load(context)
    return sorted(tuple(row) for b in dataset for row in b[0]["input_word_ids"].numpy())


def test_per_worker_sharding(tmp_path):
    files = pretraining_records.write_records(tmp_path, num_files=4, per_file=8)
    everything = _ids_of_pass(_loader(files, is_training=False, global_batch_size=2), None)
    for policy in ("file", "data"):
        loader = _loader(files, is_training=False, global_batch_size=4, shard_policy=policy)
        shards = [_ids_of_pass(loader, tf.distribute.InputContext(2, i, 2)) for i in range(2)]
        assert sorted(shards[0] + shards[1]) == everything, policy  # disjoint and complete
        assert len(shards[0]) == len(shards[1]) == 16
    loader = _loader(files[:1], global_batch_size=4, shard_policy="file")
    with pytest.raises(PretrainDataError, match="at least one file per input worker: 1 file"):
        loader.load(tf.distribute.InputContext(2, 0, 2))


def test_dynamic_masking_unmasks_offline_records_and_draws_new_masks(golden, uncased_vocab):
    from official.nlp.tokenizers import tokenization

    vocab = tokenization.load_vocab(str(uncased_vocab))
    static = _loader(golden, seq_length=128, max_predictions_per_seq=20, is_training=False)
    config = MaskingConfig.from_vocab(vocab, max_predictions_per_seq=20)
    dynamic = _loader(
        golden,
        seq_length=128,
        max_predictions_per_seq=20,
        is_training=False,
        dynamic_masking=config,
        dynamic_masking_seed=3,
    )
    (xs, ys), (xd, yd) = next(iter(static.load())), next(iter(dynamic.load()))
    # Un-masking the offline record gives the original text back: the static labels sit at their positions.
    original = xs["input_word_ids"].numpy().copy()
    for row, (positions, ids, weights) in enumerate(
        zip(xs["masked_lm_positions"].numpy(), ys["masked_lm_ids"].numpy(), ys["masked_lm_weights"].numpy())
    ):
        for p, i, w in zip(positions, ids, weights):
            if w > 0:
                original[row, p] = i
    assert not (original == vocab["[MASK]"]).any()
    # Dynamic labels are the original tokens at the newly chosen positions; everything else is untouched.
    new_ids = xd["input_word_ids"].numpy()
    real = yd["masked_lm_weights"].numpy() > 0
    assert real.sum(axis=1).min() >= 1
    for row in range(original.shape[0]):
        positions = xd["masked_lm_positions"].numpy()[row][real[row]]
        np.testing.assert_array_equal(original[row, positions], yd["masked_lm_ids"].numpy()[row][real[row]])
        untouched = np.setdiff1d(np.arange(128), positions)
        np.testing.assert_array_equal(new_ids[row, untouched], original[row, untouched])
    assert not np.array_equal(xd["masked_lm_positions"].numpy(), xs["masked_lm_positions"].numpy())


def test_input_position_with_dynamic_masking_is_checkpointable(tmp_path, golden, uncased_vocab):
    from official.nlp.tokenizers import tokenization

    config = MaskingConfig.from_vocab(tokenization.load_vocab(str(uncased_vocab)), max_predictions_per_seq=20)
    loader = _loader(golden, seq_length=128, max_predictions_per_seq=20, dynamic_masking=config)
    iterator = iter(loader.load())
    next(iterator)
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    path = checkpoint.write(str(tmp_path / "input"))
    expected = next(iterator)
    resumed = iter(loader.load())
    tf.train.Checkpoint(iterator=resumed).read(path).assert_consumed()
    actual = next(resumed)
    for a, b in zip(tf.nest.flatten(expected), tf.nest.flatten(actual)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_errors_name_the_cause(tmp_path, golden):
    files = pretraining_records.write_records(tmp_path / "ok", num_files=2, per_file=8)
    with pytest.raises(
        PretrainDataError,
        match=r"input_ids of length 32 but max_seq_length=64; pass "
        r"--max_seq_length=32",
    ):
        _loader(files, seq_length=64)
    with pytest.raises(
        PretrainDataError,
        match=r"part-000.tfrecord have masked_lm_positions of length 5 but "
        r"max_predictions_per_seq=20",
    ):
        _loader(files, max_predictions_per_seq=20)
    with pytest.raises(InputError, match=r"--max_seq_length=32 exceeds the model's max_position_embeddings \(16\)"):
        _loader(files, max_position_embeddings=16)
    with pytest.raises(PretrainDataError, match=r"no file matches '.*missing-\*.tfrecord'"):
        _loader([files[0], str(tmp_path / "missing-*.tfrecord")])
    garbage = tmp_path / "garbage.tfrecord"
    garbage.write_bytes(b"this is not a tfrecord file at all" * 10)
    with pytest.raises(PretrainDataError, match=r"input file .*garbage.tfrecord is corrupt"):
        _loader([files[0], str(garbage)])
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    with pytest.raises(PretrainDataError, match=r"empty.tfrecord is empty"):
        _loader([str(empty)])
    with pytest.raises(PretrainDataError, match="mix gzip .* and uncompressed"):
        _loader([golden, files[0]], seq_length=128, max_predictions_per_seq=20)


def test_corruption_inside_a_file_is_traced_to_the_file(tmp_path, golden):
    # A gzip file cut in the middle: its first record reads fine, the damage shows up during training.
    data = gzip.open(golden).read()
    truncated = tmp_path / "truncated.tfrecord.gz"
    truncated.write_bytes(gzip.compress(data)[: len(gzip.compress(data)) // 2])
    intact = tmp_path / "intact.tfrecord.gz"
    shutil.copy(golden, intact)
    loader = _loader([str(intact), str(truncated)], seq_length=128, max_predictions_per_seq=20, is_training=False)
    with pytest.raises(tf.errors.OpError) as raised:
        for _ in loader.load():
            pass
    error = loader.diagnose(raised.value)
    assert isinstance(error, PretrainDataError) and "truncated.tfrecord.gz is corrupt" in str(error)


def test_records_that_lack_features_are_refused_or_read_as_asked(tmp_path):
    mlm_only = pretraining_records.write_records(
        tmp_path / "mlm", num_files=1, per_file=8, drop=("next_sentence_labels",)
    )
    with pytest.raises(
        PretrainDataError,
        match=r"part-000.tfrecord lack the feature\(s\) \['next_sentence_labels'\]; "
        r"pretraining records need \['input_ids', ",
    ):
        _loader(mlm_only)
    _, y = next(iter(_loader(mlm_only, use_next_sentence_label=False).load()))
    assert sorted(y) == ["masked_lm_ids", "masked_lm_weights"]

    unmasked = pretraining_records.write_records(
        tmp_path / "unmasked",
        num_files=1,
        per_file=8,
        drop=("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"),
    )
    with pytest.raises(
        PretrainDataError,
        match=r"lack the feature\(s\) \['masked_lm_positions', 'masked_lm_ids', "
        r"'masked_lm_weights'\]",
    ):
        _loader(unmasked)
    masking = MaskingConfig(
        vocab_size=1000,
        mask_token_id=pretraining_records.MASK,
        special_token_ids=(pretraining_records.CLS, pretraining_records.SEP),
        max_predictions_per_seq=5,
    )
    x, y = next(iter(_loader(unmasked, dynamic_masking=masking, is_training=False).load()))
    raw = _raw_records(unmasked[0], 8, compression="")
    assert x["masked_lm_positions"].dtype == tf.int32 and y["masked_lm_weights"].dtype == tf.float32
    for row, record in enumerate(raw):
        real = y["masked_lm_weights"].numpy()[row] > 0
        positions = x["masked_lm_positions"].numpy()[row][real]
        assert real.sum() >= 1
        np.testing.assert_array_equal(y["masked_lm_ids"].numpy()[row][real], record["input_ids"][positions])
    np.testing.assert_array_equal(y["next_sentence_labels"].numpy(), [r["next_sentence_labels"][0] for r in raw])


def test_a_glob_skips_and_counts_what_is_not_records(tmp_path):
    """`out/*` catches the generator's stats/ folder and stray files: they are left out, a named file is not."""
    pretraining_records.write_records(tmp_path, num_files=2, per_file=16)
    (tmp_path / "stats").mkdir()
    (tmp_path / "stats" / "part-000.tfrecord.json").write_text("{}")
    (tmp_path / "part-000.tfrecord.stats.json").write_text('{"instances": 16}')  # older generators' name
    (tmp_path / "README").write_text("notes about this data\n" * 3)
    loader = _loader(str(tmp_path / "*"))
    assert [p.rsplit("/", 1)[-1] for p in loader.files] == ["part-000.tfrecord", "part-001.tfrecord"]
    assert sorted(p.rsplit("/", 1)[-1] for p in loader.skipped_files) == [
        "README",
        "part-000.tfrecord.stats.json",
        "stats",
    ]
    next(iter(loader.load()))
    with pytest.raises(PretrainDataError, match=r"README is corrupt or not a TFRecord file"):
        _loader(str(tmp_path / "README"))  # named without a glob: it must be records
    with pytest.raises(PretrainDataError, match=r"matches no TFRecord file, only .*stats"):
        _loader(str(tmp_path / "st*"))


def _write(path, examples):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for example in examples:
            writer.write(pretraining_records.serialize(example))


def test_ids_past_vocab_size_are_refused_at_start_up_and_in_the_pipeline(tmp_path):
    good = pretraining_records.make_examples(200, vocab_size=500, seed=1)
    bad = pretraining_records.make_examples(1, vocab_size=1000, seed=2)[0]
    bad["input_ids"][1] = 700
    _write(tmp_path / "a.tfrecord", good)
    _write(tmp_path / "early.tfrecord", good[:3] + [bad])
    _write(tmp_path / "late.tfrecord", good + [bad])  # past the records checked at start-up

    assert _loader(str(tmp_path / "a.tfrecord"), vocab_size=500).files
    with pytest.raises(
        PretrainDataError,
        match=r"early.tfrecord hold input_ids 700 \(record 4\), but the model's "
        r"vocab_size is 500",
    ):
        _loader(str(tmp_path / "*.tfrecord"), vocab_size=500)

    loader = _loader(str(tmp_path / "late.tfrecord"), vocab_size=500, is_training=False, global_batch_size=64)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        for _ in loader.load():
            pass
    error = loader.diagnose(info.value)
    assert isinstance(error, PretrainDataError)
    assert "late.tfrecord hold input_ids 700 (record 201)" in str(error)


def test_segment_ids_past_type_vocab_size_are_refused_at_start_up_and_in_the_pipeline(tmp_path):
    """Issue 30: a bert_config.json with type_vocab_size=1 and next-sentence records (segment id 1) ended in a
    traceback from the embedding gather (`indices[14,7] = 1 is not in [0, 1)`)."""
    pairs = pretraining_records.make_examples(80, seed=3)
    single = [dict(e, segment_ids=np.zeros_like(e["segment_ids"])) for e in pairs]
    _write(tmp_path / "pairs.tfrecord", pairs)
    _write(tmp_path / "late.tfrecord", single + pairs[:1])  # past the records checked at start-up

    assert _loader(str(tmp_path / "pairs.tfrecord"), type_vocab_size=2).files
    with pytest.raises(
        PretrainDataError,
        match=r"pairs.tfrecord hold segment_ids 1 \(record 1\), but the model's type_vocab_size is 1: .* "
        r"Use a bert_config.json with type_vocab_size=2",
    ):
        _loader(str(tmp_path / "pairs.tfrecord"), type_vocab_size=1)

    loader = _loader(str(tmp_path / "late.tfrecord"), type_vocab_size=1, is_training=False, global_batch_size=81)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        for _ in loader.load():
            pass
    assert "late.tfrecord hold segment_ids 1 (record 81)" in str(loader.diagnose(info.value))
