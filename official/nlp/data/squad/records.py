"""SQuAD training features as TFRecords (the original `train.tf_record` layout) and their `tf.data` pipelines.

Records hold the original feature names: `unique_ids`, `input_ids`, `input_mask`, `segment_ids`,
`start_positions`, `end_positions` (and `is_impossible`). The pipelines yield Keras-ready `(x, y)` pairs: `x` has
the model input names (`input_word_ids`, `input_mask`, `input_type_ids`) and `y` the span labeler's output names
(`start_logits`, `end_logits`: the gold positions), so that the same dataset feeds `model.fit` and the training
loop.

Example:

    feature_cache.cached_records("/tmp/squad/train.tf_record", key, lambda: records(features))
    ds = training_dataset("/tmp/squad/train.tf_record", max_seq_length=384, batch_size=32, seed=1)
    span_labeler.fit(ds, steps_per_epoch=100)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import tensorflow as tf

from official.nlp.data import feature_cache
from official.nlp.data.squad.features import SquadFeature

_INT_COLUMNS = ("input_ids", "input_mask", "segment_ids")


def records(features: Sequence[SquadFeature]) -> Iterator[dict]:
    """The record of each feature, for `feature_cache.cached_records` (original names and layout)."""
    for f in features:
        yield {
            "unique_ids": [f.unique_id],
            "input_ids": f.input_ids,
            "input_mask": f.input_mask,
            "segment_ids": f.segment_ids,
            "start_positions": [f.start_position],
            "end_positions": [f.end_position],
            "is_impossible": [int(f.is_impossible)],
        }


def _to_model_inputs(record):
    x = {
        "input_word_ids": record["input_ids"],
        "input_mask": record["input_mask"],
        "input_type_ids": record["segment_ids"],
    }
    y = {"start_logits": record["start_positions"], "end_logits": record["end_positions"]}
    return x, y


def training_dataset(
    path: str,
    *,
    max_seq_length: int,
    batch_size: int,
    seed: int | None = None,
    shuffle_buffer_size: int = feature_cache.SHUFFLE_BUFFER_SIZE,
    repeat: bool = True,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """Shuffled (seeded), repeated, fixed-size batches of `(x, y)` read from `path` (`feature_cache.training_batches`,
    the pipeline of every task)."""
    shapes = {name: [max_seq_length] for name in _INT_COLUMNS}
    parse = feature_cache.int_parser({**shapes, "start_positions": [], "end_positions": []})
    return feature_cache.training_batches(
        path,
        batch_size,
        parse=lambda records: _to_model_inputs(parse(records)),
        seed=seed,
        input_context=input_context,
        shuffle_buffer_size=shuffle_buffer_size,
        repeat=repeat,
    )


def prediction_dataset(features: Sequence[SquadFeature], batch_size: int) -> tf.data.Dataset:
    """Model inputs of `features`, in order, in batches (the last one may be smaller)."""
    columns = {name: np.asarray([getattr(f, name) for f in features], np.int32) for name in _INT_COLUMNS}
    x, _ = _to_model_inputs({**columns, "start_positions": None, "end_positions": None})
    return tf.data.Dataset.from_tensor_slices(x).batch(batch_size)
