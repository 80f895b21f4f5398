"""Sentence(-pair) classification features: tokenized examples as records, and the input pipeline that reads them.

`convert_examples` turns `classifier_examples.InputExample`s into features with the exact WordPiece tokenizer, as the
original `convert_single_example` does: `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` (a B that tokenizes to nothing is
left out, with its `[SEP]`), zero-padded to `max_seq_length`. A text too long for the sequence is handled by
`long_text`:

- `truncate` (the original): one feature; a pair loses tokens from the end of its longer segment first.
- `sliding_window`: the longer segment is cut into windows `doc_stride` tokens apart by SQuAD's window rule
  (`squad.features.doc_windows`); the shorter one, cut to half the sequence if it is long too, is repeated in each.
  Every window is a feature carrying its example's index, and the model's logits are averaged over an example's windows
  (`average_by_example`).

Records use the original's feature names (`input_ids`, `input_mask`, `segment_ids`, `label_ids`) plus
`example_index`. `make_dataset` is the one input pipeline for training, evaluation and prediction: it yields
`({"input_word_ids", "input_mask", "input_type_ids"}, {"label", "example_index"})` batches. Given `buckets`
(`length_buckets.bucket_lengths`), batches are cut to a few lengths instead of `max_seq_length`: for training,
examples of similar length are batched together first (`length_buckets.group_by_length`); for evaluation each
batch is only cut, which leaves every logit as it is.

Example:

    features = convert_examples(examples, tokenizer, labels=("0", "1"), max_seq_length=128)
    feature_cache.cached_records("out/train.tf_record", key, lambda: features)
    dataset = make_dataset("out/train.tf_record", 128, 32, regression=False, is_training=True, seed=1)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.common.errors import InputError
from official.nlp.data import feature_cache, length_buckets
from official.nlp.data.classifier_examples import InputExample
from official.nlp.data.squad.features import doc_windows  # the one home of the document-window rule
from official.nlp.tokenizers.packing import removal_counts

LONG_TEXT = ("truncate", "sliding_window")


@dataclasses.dataclass
class ConversionStats:
    examples: int = 0
    features: int = 0
    truncated: int = 0  # examples that lost tokens (truncate) or were split into windows (sliding_window)


def _pack(tokens_a: Sequence[str], tokens_b: Sequence[str] | None, tokenizer, max_seq_length: int) -> dict:
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += [*tokens_b, "[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    ids = tokenizer.convert_tokens_to_ids(tokens)
    pad = max_seq_length - len(ids)
    return {
        "input_ids": ids + [0] * pad,
        "input_mask": [1] * len(ids) + [0] * pad,
        "segment_ids": segment_ids + [0] * pad,
    }


def _label_value(label, labels: Sequence[str] | None, multi_label: bool):
    if labels is None:
        return [float(label) if label is not None else 0.0]
    if multi_label:  # one 0/1 per label, in head order
        return [int(name in (label or ())) for name in labels]
    return [labels.index(label) if label is not None else 0]


def check_long_text_settings(max_seq_length: int, long_text: str, doc_stride: int | None) -> None:
    if max_seq_length < 5:
        raise InputError(f"--max_seq_length={max_seq_length}: must be at least 5 ([CLS] A [SEP] B [SEP])")
    if long_text not in LONG_TEXT:
        raise InputError(f"--long_text={long_text}: must be one of {LONG_TEXT}")
    if doc_stride is not None and doc_stride < 1:
        raise InputError(f"--doc_stride={doc_stride}: must be positive")
    if doc_stride is not None and doc_stride > max_seq_length - 2:
        # A window moves by at most its own length, so a longer stride would silently not be the one used.
        raise InputError(
            f"--doc_stride={doc_stride} is longer than the largest window ([CLS] text [SEP] in "
            f"--max_seq_length={max_seq_length}: {max_seq_length - 2} tokens); windows that far apart "
            f"would leave tokens in no window. Pass --doc_stride={max_seq_length - 2} or less"
        )


def convert_examples(
    examples: Sequence[InputExample],
    tokenizer,
    *,
    labels: Sequence[str] | None,
    max_seq_length: int,
    long_text: str = "truncate",
    doc_stride: int | None = None,
    stats: ConversionStats | None = None,
    multi_label: bool = False,
) -> Iterator[dict]:
    """Yields each example's feature(s) as dicts of lists (see the module docstring); `labels=None`: regression.

    `doc_stride` (sliding windows) defaults to half the window. `multi_label`: each example's label is a set of
    names, stored as `label_ids` with one 0/1 per label of `labels`.
    """
    check_long_text_settings(max_seq_length, long_text, doc_stride)
    stats = stats if stats is not None else ConversionStats()
    labels = list(labels) if labels is not None else None
    for index, example in enumerate(examples):
        stats.examples += 1
        tokens_a = tokenizer.tokenize(example.text_a)
        # A second text that tokenizes to nothing is no second segment (the original's `if tokens_b:`).
        tokens_b = (tokenizer.tokenize(example.text_b) if example.text_b is not None else None) or None
        label = {"label_ids": _label_value(example.label, labels, multi_label), "example_index": [index]}
        budget = max_seq_length - (3 if tokens_b is not None else 2)
        total = len(tokens_a) + (len(tokens_b) if tokens_b is not None else 0)
        if total <= budget:
            stats.features += 1
            yield {**_pack(tokens_a, tokens_b, tokenizer, max_seq_length), **label}
            continue
        stats.truncated += 1
        if long_text == "truncate":
            if tokens_b is None:
                tokens_a = tokens_a[:budget]
            else:
                cut_a, cut_b = removal_counts(len(tokens_a), len(tokens_b), budget)
                tokens_a, tokens_b = tokens_a[: len(tokens_a) - cut_a], tokens_b[: len(tokens_b) - cut_b]
            stats.features += 1
            yield {**_pack(tokens_a, tokens_b, tokenizer, max_seq_length), **label}
            continue
        # Sliding windows over the longer segment; the shorter one is kept (at most half the budget).
        if tokens_b is None:
            long, short = tokens_a, None
        else:
            b_is_longer = len(tokens_b) >= len(tokens_a)
            long, short = (tokens_b, tokens_a) if b_is_longer else (tokens_a, tokens_b)
            short = short[: budget // 2] if len(short) > budget // 2 else short
        window = budget - (len(short) if short is not None else 0)
        stride = doc_stride or max(1, window // 2)
        for start, length in doc_windows(len(long), window, stride):
            piece = long[start : start + length]
            if short is None:
                pair = (piece, None)
            else:
                pair = (short, piece) if b_is_longer else (piece, short)
            stats.features += 1
            yield {**_pack(*pair, tokenizer, max_seq_length), **label}
    if stats.truncated:
        logging.info(
            "%d of %d example(s) were longer than max_seq_length=%d (%s)",
            stats.truncated,
            stats.examples,
            max_seq_length,
            long_text,
        )


def record_spec(max_seq_length: int, regression: bool, num_multi_labels: int = 0) -> dict:
    """The `tf.io.parse_example` spec of the records (`num_multi_labels`: the label count of multi-label records)."""
    spec = {
        name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in ("input_ids", "input_mask", "segment_ids")
    }
    spec["label_ids"] = tf.io.FixedLenFeature([num_multi_labels or 1], tf.float32 if regression else tf.int64)
    spec["example_index"] = tf.io.FixedLenFeature([1], tf.int64)
    return spec


def make_dataset(
    input_file: str | Sequence[str],
    max_seq_length: int,
    batch_size: int,
    *,
    regression: bool,
    is_training: bool,
    seed: int | None = None,
    input_context: tf.distribute.InputContext | None = None,
    shuffle_buffer_size: int = feature_cache.SHUFFLE_BUFFER_SIZE,
    buckets: Sequence[int] | None = None,
    num_multi_labels: int = 0,
) -> tf.data.Dataset:
    """The input pipeline of classification records (see the module docstring).

    Training: this worker's shard (by `input_context`), shuffled with `seed`, repeated, batches of `batch_size`
    with the remainder dropped. Evaluation/prediction: every record once, in order, the last batch smaller.
    `buckets`: sequence lengths to cut batches to (None: all batches `max_seq_length` long). `num_multi_labels`:
    multi-label records with that many labels; `label` is then float32 `[batch, labels]` of 0/1.
    """
    spec = record_spec(max_seq_length, regression, num_multi_labels)

    def to_inputs(records):
        parsed = tf.io.parse_example(records, spec)
        x = {
            "input_word_ids": tf.cast(parsed["input_ids"], tf.int32),
            "input_mask": tf.cast(parsed["input_mask"], tf.int32),
            "input_type_ids": tf.cast(parsed["segment_ids"], tf.int32),
        }
        if num_multi_labels:
            label = tf.cast(parsed["label_ids"], tf.float32)
        else:
            label = parsed["label_ids"][:, 0]
            label = label if regression else tf.cast(label, tf.int32)
        y = {
            "label": label,
            "example_index": tf.cast(parsed["example_index"][:, 0], tf.int32),
        }
        return x, y

    if is_training:
        dataset = feature_cache.training_batches(
            input_file,
            batch_size,
            parse=to_inputs,
            seed=seed,
            input_context=input_context,
            shuffle_buffer_size=shuffle_buffer_size,
        )
        if not buckets:
            return dataset
        # Records are parsed a batch at a time (cheaper), then regrouped by length.
        dataset = length_buckets.group_by_length(dataset.unbatch(), buckets, batch_size, drop_remainder=True)
        return dataset.prefetch(tf.data.AUTOTUNE)
    dataset = tf.data.TFRecordDataset(input_file).batch(batch_size)
    dataset = dataset.map(to_inputs, num_parallel_calls=tf.data.AUTOTUNE)
    if buckets:
        dataset = length_buckets.trim_batches(dataset, buckets)
    return dataset.prefetch(tf.data.AUTOTUNE)


def average_by_example(outputs: np.ndarray, example_index: np.ndarray, num_examples: int) -> np.ndarray:
    """The mean of the features' outputs (logits or scores) per example: one row per example, in order."""
    outputs = np.asarray(outputs, np.float64)
    sums = np.zeros((num_examples,) + outputs.shape[1:])
    np.add.at(sums, example_index, outputs)
    counts = np.bincount(example_index, minlength=num_examples)
    if (counts == 0).any():
        raise ValueError(f"{int((counts == 0).sum())} example(s) have no feature")
    return sums / counts.reshape((-1,) + (1,) * (outputs.ndim - 1))
