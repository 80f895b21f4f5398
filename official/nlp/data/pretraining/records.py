"""The pretraining record schema (the original google-research/bert one) and a batch serializer for it.

Every record is a `tf.train.Example` with the original feature names:

=====================  ==========================  =======
feature                length                      type
=====================  ==========================  =======
input_ids              max_seq_length              int64
input_mask             max_seq_length              int64
segment_ids            max_seq_length              int64
masked_lm_positions    max_predictions_per_seq     int64
masked_lm_ids          max_predictions_per_seq     int64
masked_lm_weights      max_predictions_per_seq     float
next_sentence_labels   1                           int64  (absent in MLM-only data)
=====================  ==========================  =======

so records written by the original `create_pretraining_data.py` parse with `feature_spec` and ours parse with the
original reader. `serialize_examples` writes the protobuf wire format for a whole batch with numpy (building a
`tf.train.Example` per record costs ~100 us, 30x the whole budget per instance here). Map entries are written in the
order the original's records have them, so identical content gives identical bytes.

Example:

  >>> import numpy as np
  >>> batch = {"input_ids": np.array([[101, 2023, 102, 0]]), "input_mask": np.array([[1, 1, 1, 0]]),
  ...          "segment_ids": np.zeros((1, 4), np.int64), "masked_lm_positions": np.array([[1, 0]]),
  ...          "masked_lm_ids": np.array([[2023, 0]]), "masked_lm_weights": np.array([[1.0, 0.0]]),
  ...          "next_sentence_labels": np.array([[0]])}
  >>> matrix, lengths = serialize_examples(batch)
  >>> int(lengths[0]) == len(matrix[0]) - int((matrix[0] != 0).argmax())  # right-aligned record bytes
  True
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")  # [max_seq_length] each
PREDICTION_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")  # [max_predictions_per_seq]
NSP_FEATURE = "next_sentence_labels"  # [1]
FLOAT_FEATURES = ("masked_lm_weights",)
# Map entry order: protobuf leaves it unspecified (the original's two golden files differ); this is the one its
# SQuAD-context records have, so identical content gives identical bytes there.
WIRE_ORDER = ("input_mask", "next_sentence_labels", "segment_ids", "masked_lm_weights", "input_ids",
              "masked_lm_positions", "masked_lm_ids")


def feature_spec(max_seq_length: int, max_predictions_per_seq: int | None,
                 use_next_sentence_label: bool = True) -> dict:
    """The `tf.io.parse_single_example` spec of pretraining records (the original reader's spec).

    ``max_predictions_per_seq=None`` leaves out the ``masked_lm_*`` features (unmasked records, for dynamic
    masking); ``use_next_sentence_label=False`` leaves out ``next_sentence_labels`` (MLM-only records).
    """
    import tensorflow as tf  # Local import: the writer side of this module must stay TensorFlow-free.

    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in SEQUENCE_FEATURES}
    if max_predictions_per_seq is not None:
        for name in PREDICTION_FEATURES:
            dtype = tf.float32 if name in FLOAT_FEATURES else tf.int64
            spec[name] = tf.io.FixedLenFeature([max_predictions_per_seq], dtype)
    if use_next_sentence_label:
        spec[NSP_FEATURE] = tf.io.FixedLenFeature([1], tf.int64)
    return spec


def _varint_len(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.int64)
    n = np.ones(v.shape, dtype=np.int64)
    for shift in (7, 14, 21, 28):
        n += v >= (1 << shift)
    return n


class _Builder:
    """Writes the pieces of N records, one piece at a time in record order, into a right-aligned matrix."""

    def __init__(self, totals: np.ndarray):
        self.n = len(totals)
        self.width = int(-(-max(int(totals.max(initial=0)), 1) // 4) * 4)
        self.matrix = np.zeros((self.n, self.width), dtype=np.uint8)
        self.flat = self.matrix.reshape(-1)
        # Absolute flat index of each record's next byte.
        self.cursor = np.arange(self.n, dtype=np.int64) * self.width + (self.width - totals)

    def const(self, data: bytes) -> None:
        self.flat[self.cursor[:, None] + np.arange(len(data))] = np.frombuffer(data, dtype=np.uint8)
        self.cursor += len(data)

    def varints(self, values: np.ndarray, lens: np.ndarray | None = None) -> None:
        """Writes, per record, the varints of one row of ``values`` ([N] or [N, K]) back to back."""
        values = np.asarray(values, dtype=np.int64).reshape(self.n, -1)
        k = values.shape[1]
        if values.size and int(values.max()) < 128:
            self.flat[self.cursor[:, None] + np.arange(k)] = values.astype(np.uint8)
            self.cursor += k
            return
        if lens is None:
            lens = _varint_len(values)
        lens = lens.reshape(self.n, -1)
        width = int(lens.max(initial=1))
        groups = np.empty(values.shape + (width,), dtype=np.uint8)
        rest = values
        for j in range(width):
            groups[..., j] = (rest & 0x7F) | ((lens > j + 1) << 7)
            rest = rest >> 7
        stream = groups[np.arange(width) < lens[..., None]]  # Each record's varints, back to back, in order.
        per_record = lens.sum(axis=1)
        self.flat[np.repeat(self.cursor - (np.cumsum(per_record) - per_record), per_record)
                  + np.arange(len(stream))] = stream
        self.cursor += per_record

    def floats(self, values: np.ndarray) -> None:
        raw = np.ascontiguousarray(values, dtype="<f4").view(np.uint8).reshape(self.n, -1)
        self.flat[self.cursor[:, None] + np.arange(raw.shape[1])] = raw
        self.cursor += raw.shape[1]


def serialize_examples(batch: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Serializes a batch of pretraining examples as `tf.train.Example` protobuf bytes.

    Args:
      batch: feature name -> array [N, length] (int features non-negative; `masked_lm_weights` float).
        `next_sentence_labels` may be left out (MLM-only data).

    Returns:
      (matrix, lengths): uint8 [N, W] with W a multiple of 4, record ``r`` right-aligned in row ``r``, and the
      record lengths, the input `tfrecord_io.frame_records` takes.
    """
    names = [name for name in WIRE_ORDER if name in batch]
    n = len(next(iter(batch.values())))
    payload = {}
    for name in names:
        values = np.asarray(batch[name])
        if values.ndim == 1:
            values = values[:, None]
        if name in FLOAT_FEATURES:
            payload[name] = (values, np.full(n, 4 * values.shape[1], dtype=np.int64), None)
        else:
            if values.size and int(values.min()) < 0:
                raise ValueError(f"feature {name} holds negative values; pretraining ids must be >= 0")
            lens = _varint_len(values)
            payload[name] = (values, lens.sum(axis=1), lens)
    entry_sizes = {}
    features_size = np.zeros(n, dtype=np.int64)
    for name in names:
        p = payload[name][1]
        list_size = 1 + _varint_len(p) + p  # Int64List/FloatList: field 1, packed.
        feat_size = 1 + _varint_len(list_size) + list_size  # Feature: int64_list = 3 / float_list = 2.
        entry = 1 + 1 + len(name) + 1 + _varint_len(feat_size) + feat_size  # map entry: key = 1, value = 2.
        entry_sizes[name] = (entry, feat_size, list_size)
        features_size += 1 + _varint_len(entry) + entry
    totals = 1 + _varint_len(features_size) + features_size
    b = _Builder(totals)
    b.const(b"\x0a")
    b.varints(features_size)
    for name in names:
        values, p, lens = payload[name]
        entry, feat_size, list_size = entry_sizes[name]
        b.const(b"\x0a")
        b.varints(entry)
        b.const(b"\x0a" + bytes([len(name)]) + name.encode() + b"\x12")
        b.varints(feat_size)
        b.const(b"\x12" if name in FLOAT_FEATURES else b"\x1a")
        b.varints(list_size)
        b.const(b"\x0a")
        b.varints(p)
        if name in FLOAT_FEATURES:
            b.floats(values)
        else:
            b.varints(values, lens)
    return b.matrix, totals
