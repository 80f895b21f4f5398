import gzip

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import tfrecord_io
from official.nlp.data.pretraining import records as pretraining_records
from tests.pretraining_records import parse_records


def test_serialized_examples_equal_tf_train_example():
    rng = np.random.default_rng(1)
    edge = np.array([0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**28 - 1, 2**28, 2**34, 2**62 + 5])
    batch = {
        "input_ids": np.concatenate([np.tile(edge, (3, 1)), rng.integers(0, 2**31, (3, 12))]),
        "input_mask": rng.integers(0, 2, (6, 22)),
        "segment_ids": rng.integers(0, 2, (6, 22)),
        "masked_lm_positions": rng.integers(0, 300, (6, 5)),
        "masked_lm_ids": rng.integers(0, 30522, (6, 5)),
        "masked_lm_weights": rng.random((6, 5)).astype(np.float32),
        "next_sentence_labels": rng.integers(0, 2, (6, 1)),
    }
    stream, lengths = pretraining_records.serialize_examples(batch)
    assert len(stream) == lengths.sum()
    ends = np.cumsum(lengths)
    for i in range(6):
        raw = stream[ends[i] - lengths[i] : ends[i]].tobytes()
        ex = tf.train.Example.FromString(raw)
        ref = tf.train.Example()
        for k, v in batch.items():
            if k == "masked_lm_weights":
                ref.features.feature[k].float_list.value.extend(v[i].tolist())
            else:
                ref.features.feature[k].int64_list.value.extend(v[i].tolist())
        assert ex == ref
        assert len(raw) == len(ref.SerializeToString())  # Same encoding, whatever the map order.


def test_original_records_round_trip_byte_for_byte(shared_data, tmp_path):
    """The original's records parse with our spec; re-serialized, they give the original file's bytes."""
    path = shared_data / "pretraining_golden" / "squad_contexts.uncased.seq128.dupe5.tfrecord.gz"
    batch = parse_records(path, "GZIP")
    assert len(batch["input_ids"]) == 22936
    original = gzip.open(path).read()
    assert tfrecord_io.frame_records(*pretraining_records.serialize_examples(batch)) == original
    # The generator's path: serialized with room for the framing, framed in place.
    assert pretraining_records.serialize_framed(batch).tobytes() == original


@pytest.mark.parametrize("largest", [2**21 - 1, 2**35])  # Below 2**21 by table lookup, above by arithmetic.
def test_each_varint_width_is_encoded_as_protobuf_does(largest):
    """Rows of different widest values (1 to 3 bytes, and 6 with arithmetic) in one batch."""
    ids = np.array([[5, 0, 0], [127, 128, 3], [16384, 1, 2], [2**21 - 1, 2**14 - 1, 7], [300, largest, 0]])
    batch = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    stream, lengths = pretraining_records.serialize_examples(batch)
    ends = np.cumsum(lengths)
    for i in range(len(ids)):
        ref = tf.train.Example()
        for k, v in batch.items():
            ref.features.feature[k].int64_list.value.extend(v[i].tolist())
        assert tf.train.Example.FromString(stream[ends[i] - lengths[i] : ends[i]].tobytes()) == ref


def test_any_memory_layout_and_empty_features_give_tensorflows_bytes():
    ids = np.asfortranarray(np.array([[300, 70000, 5], [1, 2, 3]], np.int64))  # table path, not C-ordered
    batch = {
        "input_ids": ids,
        "input_mask": np.ones((2, 3), np.int64).T.copy().T,
        "masked_lm_positions": np.zeros((2, 0), np.int64),
        "masked_lm_weights": np.zeros((2, 0), np.float32),
    }
    stream, lengths = pretraining_records.serialize_examples(batch)
    ends = np.cumsum(lengths)
    for i in range(2):
        ref = tf.train.Example()
        for k, v in batch.items():
            feature = ref.features.feature[k]
            (feature.float_list if v.dtype == np.float32 else feature.int64_list).value.extend(v[i].tolist())
        assert tf.train.Example.FromString(stream[ends[i] - lengths[i] : ends[i]].tobytes()) == ref
        assert lengths[i] == len(ref.SerializeToString())  # an empty feature's packed field left out, as protobuf does


def test_bad_batches_are_refused():
    ids = np.ones((2, 3), np.int64)
    with pytest.raises(ValueError, match="unknown pretraining features"):
        pretraining_records.serialize_examples({"input_ids": ids, "next_sentence_label": ids[:, :1]})
    with pytest.raises(ValueError, match="expected"):
        pretraining_records.serialize_examples({"input_ids": ids, "masked_lm_weights": np.ones((4, 1), np.float32)})
    with pytest.raises(ValueError, match="outside"):
        pretraining_records.serialize_examples({"input_ids": np.array([[101, 2**63 + 5]], np.uint64)})
    stream, lengths = pretraining_records.serialize_examples(
        {"input_ids": np.zeros((0, 3), np.int64), "masked_lm_weights": np.zeros((0, 2), np.float32)}
    )
    assert len(stream) == 0 and len(lengths) == 0


def test_mlm_only_records_have_no_label(tmp_path):
    batch = {k: np.ones((2, 4), np.int64) for k in ("input_ids", "input_mask", "segment_ids")}
    batch.update(
        masked_lm_positions=np.ones((2, 2), np.int64),
        masked_lm_ids=np.ones((2, 2), np.int64),
        masked_lm_weights=np.ones((2, 2), np.float32),
    )
    path = tmp_path / "mlm.tfrecord"
    path.write_bytes(tfrecord_io.frame_records(*pretraining_records.serialize_examples(batch)))
    parsed = parse_records(path, seq=4, preds=2, nsp=False)
    assert "next_sentence_labels" not in parsed
    np.testing.assert_array_equal(parsed["input_ids"], batch["input_ids"])


def test_feature_spec_leaves_out_what_the_records_lack():
    full = pretraining_records.feature_spec(8, 3)
    assert list(full) == [
        "input_ids",
        "input_mask",
        "segment_ids",
        "masked_lm_positions",
        "masked_lm_ids",
        "masked_lm_weights",
        "next_sentence_labels",
    ]
    assert full["masked_lm_weights"].dtype == tf.float32 and full["masked_lm_ids"].shape == [3]
    assert full["input_ids"].shape == [8] and full["next_sentence_labels"].shape == [1]
    assert list(pretraining_records.feature_spec(8, None, False)) == ["input_ids", "input_mask", "segment_ids"]
