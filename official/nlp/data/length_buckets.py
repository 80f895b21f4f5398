"""Dynamic padding with a bounded set of static shapes: cut padded batches down to a few bucket lengths.

Real fine-tuning text is short (most SST-2 sentences are under 32 word pieces), yet records are padded to
`max_seq_length`, so a model step spends most of its matmuls on padding. Two tools, both on `tf.data`:

- `trim_batches`: cuts each batch to the smallest bucket length that holds its longest example. The outputs for
  the real tokens do not change (padded keys get exactly zero attention weight; see `modeling/transformer.py`),
  so evaluation and prediction give the same numbers, and training the same steps.
- `group_by_length`: batches examples of similar length together first (within a window of the shuffled
  stream), then trims. Each batch has less padding still, at the price of batches that are no longer uniform
  samples of lengths; use it for training.

Bucket lengths grow by about 1.5x (16, 24, 32, 48, 64, 96, 128, ...), so at most a third of a batch is padding
while a model sees only a handful of shapes: `tf.function` traces each once, and XLA compiles each once. On TPUs,
keep fixed shapes (`bucket_lengths(n, fixed=True)` gives just `(n,)`), as every new shape is a recompilation there.

Example:

>>> import tensorflow as tf
>>> x = {"input_word_ids": tf.constant([[2, 5, 3, 0, 0, 0, 0, 0]] * 2), "input_mask": tf.constant(
...     [[1, 1, 1, 0, 0, 0, 0, 0]] * 2), "input_type_ids": tf.zeros((2, 8), tf.int32)}
>>> ds = trim_batches(tf.data.Dataset.from_tensors((x, tf.constant([0, 1]))), bucket_lengths(8, smallest=4))
>>> next(iter(ds))[0]["input_word_ids"].shape
TensorShape([2, 4])
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from official.nlp.modeling.encoder import INPUT_NAMES


def bucket_lengths(max_seq_length: int, smallest: int = 16, fixed: bool = False) -> tuple[int, ...]:
    """Bucket lengths `smallest, 1.5x, 2x, ...` below `max_seq_length`, then `max_seq_length` itself.

    Lengths alternate between powers of two and 1.5x powers of two (16, 24, 32, 48, ...), multiples of 8 that
    suit matmul kernels. `fixed=True` (TPUs) gives only `(max_seq_length,)`.
    """
    if max_seq_length < 1:
        raise ValueError(f"max_seq_length must be positive, got {max_seq_length}")
    if fixed:
        return (max_seq_length,)
    lengths, power = [], smallest
    while power < max_seq_length:
        lengths += [n for n in (power, power * 3 // 2) if n < max_seq_length]
        power *= 2
    return tuple(lengths) + (max_seq_length,)


def _bucket_index(length: tf.Tensor, buckets: Sequence[int]) -> tf.Tensor:
    """Index of the smallest bucket >= `length` (the last bucket for anything longer)."""
    index = tf.searchsorted(tf.constant(buckets[:-1], length.dtype), tf.reshape(length, [1]), side="left")[0]
    return tf.cast(index, tf.int64)


def _lengths(x: dict) -> tf.Tensor:
    """Real tokens per example: the position after the last 1 of `input_mask` (padding is at the end)."""
    mask = tf.cast(x["input_mask"], tf.int32)
    positions = tf.range(1, tf.shape(mask)[-1] + 1)
    return tf.reduce_max(mask * positions, axis=-1)


def _cut(x: dict, length: tf.Tensor) -> dict:
    out = dict(x)
    for key in INPUT_NAMES:  # `[batch, seq]`, cut; anything else in the element passes through unchanged
        if key in out:
            out[key] = out[key][..., :length]
    return out


def trim_batch(x: dict, buckets: Sequence[int]) -> dict:
    """Cuts the `[batch, seq]` features of one batch to the smallest bucket that holds its longest example."""
    buckets = tuple(buckets)
    length = tf.gather(tf.constant(buckets, tf.int32), _bucket_index(tf.reduce_max(_lengths(x)), buckets))
    length = tf.minimum(length, tf.shape(x["input_mask"])[-1])
    return _cut(x, length)


def _map_inputs(dataset: tf.data.Dataset, fn) -> tf.data.Dataset:
    """Applies `fn` to the input dict of `x` or `(x, y, ...)` elements."""
    if isinstance(dataset.element_spec, tuple):
        return dataset.map(lambda x, *rest: (fn(x), *rest), num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.map(fn, num_parallel_calls=tf.data.AUTOTUNE)


def trim_batches(dataset: tf.data.Dataset, buckets: Sequence[int]) -> tf.data.Dataset:
    """`trim_batch` on every batch of a dataset of `x` or `(x, y, ...)` elements, with `x` the input dict."""
    if len(buckets) == 1:
        return dataset
    return _map_inputs(dataset, lambda x: trim_batch(x, buckets))


def group_by_length(
    dataset: tf.data.Dataset, buckets: Sequence[int], batch_size: int, drop_remainder: bool = True
) -> tf.data.Dataset:
    """Batches unbatched, padded examples (`x` or `(x, y, ...)`) by bucket, each batch cut to its bucket length.

    Each bucket fills its own batch of `batch_size` (`tf.data.Dataset.group_by_window`), so batches come out in
    the order they fill, and a shuffled input stays shuffled across batches. With `drop_remainder=False` the last,
    partial batch of each bucket is kept (evaluation: every example once).
    """
    buckets = tuple(buckets)
    if len(buckets) == 1:
        return dataset.batch(batch_size, drop_remainder=drop_remainder)

    def key(x, *rest):
        return _bucket_index(_lengths({"input_mask": x["input_mask"][tf.newaxis]})[0], buckets)

    def reduce(bucket, window):
        return window.batch(batch_size, drop_remainder=drop_remainder)

    grouped = dataset.group_by_window(key, reduce, window_size=batch_size)
    return trim_batches(grouped, buckets)
