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
`tf.train.Example` per record would cost more than all the rest of the generator's work). Map entries are written in the
order the original's records have them, so identical content gives identical bytes.

Example:

  >>> import numpy as np
  >>> batch = {"input_ids": np.array([[101, 2023, 102, 0]]), "input_mask": np.array([[1, 1, 1, 0]]),
  ...          "segment_ids": np.zeros((1, 4), np.int64), "masked_lm_positions": np.array([[1, 0]]),
  ...          "masked_lm_ids": np.array([[2023, 0]]), "masked_lm_weights": np.array([[1.0, 0.0]]),
  ...          "next_sentence_labels": np.array([[0]])}
  >>> stream, lengths = serialize_examples(batch)  # the records back to back, and their lengths
  >>> (len(stream), lengths.tolist())
  (199, [199])
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from official.nlp.data import tfrecord_io

SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")  # [max_seq_length] each
PREDICTION_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")  # [max_predictions_per_seq]
NSP_FEATURE = "next_sentence_labels"  # [1]
FLOAT_FEATURES = ("masked_lm_weights",)
# Map entry order: protobuf leaves it unspecified (the original's two golden files differ); this is the one its
# SQuAD-context records have, so identical content gives identical bytes there.
WIRE_ORDER = (
    "input_mask",
    "next_sentence_labels",
    "segment_ids",
    "masked_lm_weights",
    "input_ids",
    "masked_lm_positions",
    "masked_lm_ids",
)


def feature_spec(
    max_seq_length: int, max_predictions_per_seq: int | None, use_next_sentence_label: bool = True
) -> dict:
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


_TABLE_BITS = 21  # Values below 2**21 (every token id and position) are encoded by table lookup.


def _varint_len(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.int64)
    n = np.ones(v.shape, dtype=np.int64)
    for shift in range(7, 63, 7):  # a non-negative int64 has at most 9 varint bytes
        n += v >= (1 << shift)
    return n


def _varint_groups(values: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The varint bytes of ``values``: uint8 ``values.shape + (max len,)``, zero past each value's length."""
    width = int(lens.max(initial=1))
    groups = np.zeros(values.shape + (width,), dtype=np.uint8)
    rest = values
    for j in range(width):
        groups[..., j] = np.where(lens > j, (rest & 0x7F) | ((lens > j + 1) << 7), 0)
        rest = rest >> 7
    return groups


@functools.cache
def _varint_table(bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For 0 .. 2**bits - 1: the varint bytes packed little-endian in a uint32 each, their lengths (uint8), and
    which of the four bytes are used (a uint32 whose bytes are 1 or 0, viewed as bools by the caller)."""
    values = np.arange(1 << bits, dtype=np.int64)
    lens = _varint_len(values)
    packed = np.zeros(len(values), dtype="<u4")
    packed.view(np.uint8).reshape(-1, 4)[:, :3] = _varint_groups(values, lens)[:, :3]
    used = np.zeros(len(values), dtype="<u4")
    used.view(np.uint8).reshape(-1, 4)[:] = np.arange(4) < lens[:, None]
    return packed, lens.astype(np.uint8), used


def _varints(values: np.ndarray, top: int | None = None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Varint-encodes each row of ``values`` [N, K] (non-negative) into fixed slots of ``w`` bytes each: one byte
    below 128, four (a table entry, unused bytes masked) below 2**21, else the widest value's length.

    Returns (slots uint8 [N, K * w], which slots hold a byte ([N, K * w] bool, or None when all do), the encoded
    size of each row [N]). ``top``: the largest value, when the caller knows it already."""
    values = np.ascontiguousarray(values)  # the table's uint32 rows are viewed as bytes below
    n, k = values.shape
    if top is None:
        top = int(values.max(initial=0))
    if top < 128:  # The common case of masks, segment ids and short lengths: one byte each, no table.
        return values.astype(np.uint8, copy=False), None, np.full(n, k, dtype=np.int64)
    if top < 1 << _TABLE_BITS:
        # Sized to the values (2**16 covers a BERT vocabulary): building the 2**21 table adds ~70 MB of peak RSS.
        packed, table_lens, used = _varint_table(max(16, top.bit_length()))
        # Whole 4-byte slots, each a view of one table entry: trimming them to the widest value's length and
        # comparing lengths to build the mask would cost more than compacting the unused fourth bytes away.
        return (
            packed[values].view(np.uint8).reshape(n, k * 4),
            used[values].view(np.bool_).reshape(n, k * 4),
            table_lens[values].sum(axis=1, dtype=np.int64),
        )
    else:
        lens = _varint_len(values)
        groups = _varint_groups(values, lens)
        width = groups.shape[-1]
    valid = None if int(lens.min()) == width else np.arange(width, dtype=np.uint8) < lens[..., None]
    return (
        groups.reshape(n, k * width),
        None if valid is None else valid.reshape(n, k * width),
        lens.sum(axis=1, dtype=np.int64),
    )


class _Layout:
    """The bytes of N records as fixed-width slot blocks, some slots unused (varints shorter than their slot);
    compacting the used slots row by row gives the records back to back."""

    def __init__(self, n: int):
        self.n = n
        self.blocks: list[np.ndarray] = []
        self.valid: list[np.ndarray] = []
        self.pending = b""

    def const(self, data: bytes) -> None:
        self.pending += data  # adjacent constants become one block

    def add(self, block: np.ndarray, valid: np.ndarray | None = None) -> None:
        self._flush()
        self.blocks.append(block)
        self.valid.append(np.broadcast_to(True, block.shape) if valid is None else valid)

    def _flush(self) -> None:
        if self.pending:
            data, self.pending = self.pending, b""
            self.add(np.broadcast_to(np.frombuffer(data, dtype=np.uint8), (self.n, len(data))))

    def varint(self, per_record: np.ndarray) -> None:
        per_record = np.asarray(per_record, dtype=np.int64)
        if len(per_record) and per_record.min() == per_record.max():  # the sizes of fixed-length features
            slots, valid, size = _varints(per_record[:1].reshape(1, 1))
            self.const(slots.reshape(-1)[: int(size[0])].tobytes())
        else:
            self.add(*_varints(per_record.reshape(self.n, 1))[:2])

    def stream(self) -> np.ndarray:
        self._flush()
        wide = np.concatenate(self.blocks, axis=1)
        valid = np.concatenate(self.valid, axis=1)
        # A take by the flat indices costs 0.8 of boolean indexing's time on these mostly-True masks.
        return wide.reshape(-1).take(np.flatnonzero(valid))


def serialize_examples(batch: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Serializes a batch of pretraining examples as `tf.train.Example` protobuf bytes.

    Args:
      batch: feature name -> array [N, length] (int features non-negative; `masked_lm_weights` float).
        `next_sentence_labels` may be left out (MLM-only data).

    Returns:
      (stream, lengths): the N records back to back (uint8), and their lengths: the input
      `tfrecord_io.frame_records` takes.
    """
    return _serialize(batch, head=0, tail=0)


def serialize_framed(batch: Mapping[str, np.ndarray]) -> np.ndarray:
    """`serialize_examples` and `tfrecord_io.frame_records` in one: the records are laid out with room for their
    TFRecord framing, which is then filled in place (framing afterwards moves every byte a second time). Returns
    the framed records as uint8, ready for a file's ``write``."""
    stream, lengths = _serialize(batch, head=tfrecord_io.HEAD_BYTES, tail=tfrecord_io.TAIL_BYTES)
    return tfrecord_io.fill_frames(stream, lengths)


def _serialize(batch: Mapping[str, np.ndarray], head: int, tail: int) -> tuple[np.ndarray, np.ndarray]:
    """The records with ``head`` and ``tail`` bytes of room around each (left zero), and their lengths."""
    unknown = sorted(set(batch) - set(WIRE_ORDER))
    if unknown:
        raise ValueError(f"unknown pretraining features {unknown}; the schema has {sorted(WIRE_ORDER)}")
    names = [name for name in WIRE_ORDER if name in batch]
    n = len(next(iter(batch.values())))
    payload = {}
    for name in names:
        values = np.asarray(batch[name])
        if values.ndim == 1:
            values = values[:, None]
        if values.ndim != 2 or len(values) != n:
            raise ValueError(f"feature {name} has shape {values.shape}; expected [{n}, length]")
        if name in FLOAT_FEATURES:
            raw = np.ascontiguousarray(values, dtype="<f4").view(np.uint8).reshape(n, 4 * values.shape[1])
            payload[name] = (raw, None, np.full(n, raw.shape[1], dtype=np.int64))
        else:
            if values.dtype.kind not in "iu" or values.dtype == np.uint64:
                values = values.astype(np.int64)
            top = int(values.max(initial=0))
            if values.size and values.dtype.kind == "i" and int(values.min()) < 0:
                raise ValueError(f"feature {name} holds values outside [0, 2**63); pretraining ids must be >= 0")
            payload[name] = _varints(values, top)  # int32 ids stay int32: the encoding indexes by them
    sizes = {}
    features_size = np.zeros(n, dtype=np.int64)
    for name in names:
        p = payload[name][2]
        # Int64List/FloatList: field 1, packed; protobuf leaves out an empty packed field.
        list_size = np.where(p > 0, 1 + _varint_len(p) + p, 0)
        feat_size = 1 + _varint_len(list_size) + list_size  # Feature: int64_list = 3 / float_list = 2.
        entry = 1 + 1 + len(name) + 1 + _varint_len(feat_size) + feat_size  # map entry: key = 1, value = 2.
        sizes[name] = (entry, feat_size, list_size)
        features_size += 1 + _varint_len(entry) + entry
    layout = _Layout(n)
    if head:
        layout.const(bytes(head))
    layout.const(b"\x0a")
    layout.varint(features_size)
    for name in names:
        slots, valid, p = payload[name]
        entry, feat_size, list_size = sizes[name]
        layout.const(b"\x0a")
        layout.varint(entry)
        layout.const(b"\x0a" + bytes([len(name)]) + name.encode() + b"\x12")
        layout.varint(feat_size)
        layout.const(b"\x12" if name in FLOAT_FEATURES else b"\x1a")
        layout.varint(list_size)
        if slots.shape[1]:
            layout.const(b"\x0a")
            layout.varint(p)
            layout.add(slots, valid)
    if tail:
        layout.const(bytes(tail))
    return layout.stream(), 1 + _varint_len(features_size) + features_size
