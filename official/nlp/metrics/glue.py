"""GLUE metrics: each task's official metric, computed with scikit-learn and scipy.

Matthews correlation for CoLA, Pearson and Spearman correlation for STS-B, F1 (of the positive class `1`) and
accuracy for MRPC and QQP, accuracy elsewhere. scikit-learn and scipy are the references everyone compares against;
using them at run time costs about 50 MB of wheels next to TensorFlow's 600 MB, so the library computes nothing
of its own here.

Example:

>>> compute_metrics(("f1", "accuracy"), [1, 0, 1, 1], [1, 0, 0, 1])
{'f1': 0.8, 'accuracy': 0.75}
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

METRICS = ("accuracy", "f1", "matthews_corrcoef", "pearson", "spearman")


def accuracy(labels, predictions) -> float:
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(labels, predictions))


def f1(labels, predictions) -> float:
    """F1 of the positive class (label id 1), as GLUE scores MRPC and QQP."""
    from sklearn.metrics import f1_score

    return float(f1_score(labels, predictions, pos_label=1, average="binary", zero_division=0.0))


def matthews_corrcoef(labels, predictions) -> float:
    from sklearn.metrics import matthews_corrcoef as mcc

    return float(mcc(labels, predictions))


def pearson(labels, predictions) -> float:
    from scipy.stats import pearsonr

    return _correlation(pearsonr, labels, predictions)


def spearman(labels, predictions) -> float:
    from scipy.stats import spearmanr

    return _correlation(spearmanr, labels, predictions)


def _correlation(fn, labels, predictions) -> float:
    labels, predictions = np.asarray(labels, np.float64), np.asarray(predictions, np.float64)
    if len(labels) < 2 or np.ptp(labels) == 0 or np.ptp(predictions) == 0:
        return float("nan")  # undefined for a constant input (scipy warns and returns nan too)
    return float(fn(labels, predictions)[0])


_FUNCTIONS = {
    "accuracy": accuracy,
    "f1": f1,
    "matthews_corrcoef": matthews_corrcoef,
    "pearson": pearson,
    "spearman": spearman,
}


def compute_metrics(names: Sequence[str], labels, predictions) -> dict[str, float]:
    """`{name: value}` for each metric name (see `METRICS`): label ids and predicted ids, or scores (STS-B)."""
    unknown = [n for n in names if n not in _FUNCTIONS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {list(METRICS)}")
    if len(labels) != len(predictions):
        raise ValueError(f"{len(labels)} labels but {len(predictions)} predictions")
    return {name: _FUNCTIONS[name](labels, predictions) for name in names}
