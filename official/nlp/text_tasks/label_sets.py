"""The labels of a multi-label `TextClassifier` (`multi_label=True`): each form `fit`, `evaluate` and
`tune_thresholds` take, as the `[texts, labels]` 0/1 matrix that the binary cross-entropy trains on, and the
classifier's decision thresholds.

From Python values, `y` is one of
- a label set per text: a list of label names or indices (0-based), maybe empty (`[["joy", "love"], []]`,
  `[[17, 18], []]`), or a string in the data files' form (`"joy,love"`, `"17,18"`);
- a multi-hot matrix, one row per text and one 0/1 per label: a NumPy array, or a list of equal rows (a list of
  lists, or of NumPy rows). A list whose rows all have one 0 or 1 per label is read as this matrix, as
  scikit-learn reads it. With 3 or more labels no label set looks like that, as a label set that lists a label
  twice is refused (so a multi-hot row of the wrong length is not read as the indices 0 and 1).

A `tf.data.Dataset`'s labels are multi-hot: 0/1 per label, `[labels]` per element (or `[batch, labels]` in a
batched dataset), of any integer, float or bool dtype. Label names and indices go in as Python values.

>>> labels = ["joy", "love", "anger"]
>>> python_label_matrix([["joy", "love"], [], [2]], labels, 3)
array([[1., 1., 0.],
       [0., 0., 0.],
       [0., 0., 1.]], dtype=float32)
>>> python_label_matrix([[1, 1, 0], [0, 0, 1]], labels, 2)  # rows of 0/1, one per label: multi-hot
array([[1., 1., 0.],
       [0., 0., 1.]], dtype=float32)
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from official.nlp.common.errors import InputError
from official.nlp.data import multi_label as multi_label_data
from official.nlp.metrics import multi_label as multi_label_metrics
from official.nlp.text_tasks.base import input_check


def checked_thresholds(thresholds: Sequence[float] | float | None, num_labels: int) -> tuple[float, ...]:
    """One probability in (0, 1) per label; one number: that one for each; None: `metrics.multi_label.
    DEFAULT_THRESHOLD` for each."""
    if isinstance(thresholds, numbers.Real) and not isinstance(thresholds, bool):
        thresholds = [float(thresholds)] * num_labels
    elif thresholds is not None and (
        isinstance(thresholds, (bool, str, bytes)) or not isinstance(thresholds, (Sequence, np.ndarray))
    ):
        raise InputError(
            f"thresholds={thresholds!r}: give one probability for every label, or a list of one per label "
            f"({num_labels})"
        )
    try:
        values = multi_label_metrics.decision_thresholds(num_labels, thresholds=thresholds)
    except ValueError as e:
        raise InputError(f"thresholds: {e}") from None
    if not ((values > 0) & (values < 1)).all():
        raise InputError(f"thresholds: each must be a probability in (0, 1); got {values.tolist()}")
    return tuple(float(t) for t in values)


def _multi_hot(y, num_labels: int) -> np.ndarray | None:
    """`y` as a multi-hot matrix where it is given as one (see the module docstring), else None (label sets)."""
    if isinstance(y, np.ndarray):
        return y if y.ndim == 2 and y.dtype.kind in "biuf" else None
    try:
        array = np.asarray(y)
    except (ValueError, TypeError):  # rows of different lengths: label sets
        return None
    if array.ndim == 2 and array.dtype.kind in "biuf" and array.shape[1] == num_labels and np.isin(array, (0, 1)).all():
        return array
    return None


def _label_set(value, labels: Sequence[str]) -> tuple[str, ...]:
    """One text's label names, from a list of names or indices (NumPy's too) or a labels field of the files."""
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        if not isinstance(value, (Sequence, set, frozenset, np.ndarray)):
            raise InputError(f"expected a label set (a list of label names or indices), got {type(value).__name__}")
        value = [v.item() if isinstance(v, np.generic) else v for v in value]
        if len({str(v) for v in value}) < len(value):  # e.g. a multi-hot row of the wrong length, read as indices
            shown = ", ".join(str(v) for v in value[:8]) + (", ..." if len(value) > 8 else "")
            raise InputError(
                f"[{shown}] lists a label twice; a label set lists each label once, and a multi-hot row has one 0 "
                f"or 1 for each of the {len(labels)} labels"
            )
    return multi_label_data.parse_label_set(value, labels, allow_empty=True)


def python_label_matrix(y, labels: Sequence[str], count: int) -> np.ndarray:
    """Python `y` for `count` texts (see the module docstring) as `[count, len(labels)]` float32 0/1."""
    matrix = None if isinstance(y, (str, bytes)) else _multi_hot(y, len(labels))
    if matrix is not None:
        if matrix.shape != (count, len(labels)) or not np.isin(matrix, (0, 1)).all():
            raise InputError(
                f"y: a multi-hot array must be [{count}, {len(labels)}] (texts, labels) of 0/1; got shape "
                f"{matrix.shape}" + ("" if np.isin(matrix, (0, 1)).all() else " with values other than 0 and 1")
            )
        return matrix.astype("float32")
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__") or len(y) != count:
        raise InputError(
            f"y: expected {count} label sets (one list of label names or indices per text) or a [{count}, "
            f"{len(labels)}] array of 0/1"
        )
    rows = np.zeros([count, len(labels)], "float32")
    index = {name: j for j, name in enumerate(labels)}
    for i, value in enumerate(y):
        try:
            names = _label_set(value, labels)
        except InputError as e:
            raise InputError(f"y[{i}]: {e}") from None
        rows[i, [index[name] for name in names]] = 1
    return rows


def tensor_label_matrix(y, labels: Sequence[str]) -> tf.Tensor:
    """A batch of a dataset's labels as `[batch, len(labels)]` float32; what is not 0/1 per label is refused (the
    values, when the batch is read: `base.input_check`)."""
    expected = (
        f"a multi-label classifier trains on 0/1 per label in a dataset: [{len(labels)}] per element, or "
        f"[batch, {len(labels)}] when batched"
    )
    if isinstance(y, tf.RaggedTensor) or not (y.dtype.is_integer or y.dtype.is_floating or y.dtype.is_bool):
        raise InputError(
            f"the dataset's labels: {expected}; got {'ragged ' if isinstance(y, tf.RaggedTensor) else ''}"
            f"{y.dtype.name} labels (label names or indices go in as Python values: fit(texts, label_sets))"
        )
    if y.shape.rank != 2 or y.shape[-1] not in (None, len(labels)):
        per_text = "a scalar" if y.shape.rank == 1 else f"shape {y.shape[1:].as_list()}"
        raise InputError(f"the dataset's labels: {expected}; got {per_text} per text")
    y = tf.cast(y, tf.float32)
    valid = tf.logical_and(tf.shape(y)[-1] == len(labels), tf.reduce_all((y == 0) | (y == 1)))
    bad_values = f"the dataset's labels: {expected}; got a value other than 0 and 1, or rows of another length"
    with tf.control_dependencies([input_check(valid, bad_values)]):
        return tf.identity(y)
