"""Multi-label metrics and decision thresholds: what papers report for GoEmotions, computed with scikit-learn.

A label is predicted for an example when its probability (the sigmoid of its logit) is at least the label's
threshold: 0.5 by default (`DEFAULT_THRESHOLD`), or one per label tuned on the dev set (`tune_thresholds`: the
cut-off that maximizes that label's F1 there). `multi_label_metrics` gives macro and micro F1 (the GoEmotions
paper's headline numbers), precision and recall, the exact-match ratio, and per label `precision/<name>`,
`recall/<name>`, `f1/<name>` and `support/<name>` (its positives in the labels).

Example:

>>> labels = [[1, 0, 1], [0, 1, 0], [1, 1, 0]]
>>> predicted = predict_labels([[0.9, 0.2, 0.4], [0.1, 0.7, 0.6], [0.8, 0.4, 0.1]], decision_thresholds(3))
>>> metrics = multi_label_metrics(labels, predicted, ["a", "b", "c"])
>>> round(metrics["micro_f1"], 4), round(metrics["macro_f1"], 4), metrics["f1/a"]
(0.6667, 0.5556, 1.0)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DEFAULT_THRESHOLD = 0.5


def decision_thresholds(
    num_labels: int, *, thresholds: Sequence[float] | None = None, threshold: float | None = None
) -> np.ndarray:
    """One threshold per label: `thresholds` (one per label, e.g. tuned ones a model recorded) when given, else
    `threshold` for every label, else `DEFAULT_THRESHOLD`."""
    if thresholds is not None and len(thresholds):
        if len(thresholds) != num_labels:
            raise ValueError(f"{len(thresholds)} thresholds for {num_labels} labels")
        return np.asarray(thresholds, np.float64)
    return np.full([num_labels], DEFAULT_THRESHOLD if threshold is None else float(threshold), np.float64)


def predict_labels(probabilities, thresholds) -> np.ndarray:
    """`[examples, labels]` booleans: each probability at least its label's threshold."""
    return np.asarray(probabilities, np.float64) >= np.asarray(thresholds, np.float64)[None, :]


def tune_thresholds(labels, probabilities, *, default: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """Per label, the threshold that maximizes its F1 on `labels` (`[examples, labels]` 0/1) given `probabilities`.

    The cut-off is put halfway between the lowest probability it predicts and the next lower one, so that it does
    not sit on a dev example's score. A label without positives in `labels` keeps `default` (its F1 is 0 at any
    threshold)."""
    from sklearn.metrics import precision_recall_curve

    labels = np.asarray(labels).astype(bool)
    probabilities = np.asarray(probabilities, np.float64)
    tuned = np.full([labels.shape[1]], float(default))
    for j in range(labels.shape[1]):
        if not labels[:, j].any():
            continue
        # thresholds ascend; precision[i], recall[i] are those of predicting `p >= thresholds[i]`.
        precision, recall, cutoffs = precision_recall_curve(labels[:, j], probabilities[:, j])
        precision, recall = precision[: len(cutoffs)], recall[: len(cutoffs)]
        with np.errstate(invalid="ignore", divide="ignore"):
            f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
        best = int(np.argmax(f1))
        below = cutoffs[best - 1] if best > 0 else 0.0
        tuned[j] = (cutoffs[best] + below) / 2
    return tuned


def multi_label_metrics(labels, predicted, label_names: Sequence[str]) -> dict[str, float]:
    """Macro/micro F1, precision and recall, exact match, and per-label precision, recall, F1 and support, for
    `labels` and `predicted` (`[examples, labels]`, 0/1 or booleans, columns in the order of `label_names`). A
    label never predicted (or never present) counts 0 where its precision (or recall) is undefined."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    labels = np.asarray(labels).astype(int)
    predicted = np.asarray(predicted).astype(int)
    if labels.shape != predicted.shape or labels.ndim != 2 or labels.shape[1] != len(label_names):
        raise ValueError(
            f"labels {labels.shape} and predictions {predicted.shape} must both be [examples, {len(label_names)}]"
        )
    metrics = {}
    for average in ("macro", "micro"):
        p, r, f, _ = precision_recall_fscore_support(labels, predicted, average=average, zero_division=0)
        metrics.update({f"{average}_f1": float(f), f"{average}_precision": float(p), f"{average}_recall": float(r)})
    metrics["exact_match"] = float(accuracy_score(labels, predicted))  # every label of the example right
    per_label = precision_recall_fscore_support(labels, predicted, average=None, zero_division=0)
    for name, p, r, f, support in zip(label_names, *per_label):
        metrics.update(
            {f"precision/{name}": float(p), f"recall/{name}": float(r), f"f1/{name}": float(f)},
        )
        metrics[f"support/{name}"] = float(support)
    return metrics
