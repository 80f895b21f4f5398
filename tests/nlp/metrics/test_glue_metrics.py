"""GLUE metrics on real label files, against the textbook formulas computed here with numpy and against
scikit-learn and scipy called directly."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics

from official.nlp.data import glue
from official.nlp.metrics.glue import compute_metrics


def _labels(shared_data, task, folder):
    processor = glue.get_processor(task)
    examples = processor.read(str(shared_data / "glue" / folder / "dev.tsv")).examples
    if processor.is_regression:
        return np.array([e.label for e in examples])
    return np.array([processor.labels.index(e.label) for e in examples])


def _noisy(labels, rate, seed):
    """Predictions that get `rate` of the labels wrong (flipped), seeded."""
    rng = np.random.RandomState(seed)
    flip = rng.rand(len(labels)) < rate
    return np.where(flip, 1 - labels, labels)


def _confusion(labels, predictions):
    tp = int(np.sum((predictions == 1) & (labels == 1)))
    tn = int(np.sum((predictions == 0) & (labels == 0)))
    fp = int(np.sum((predictions == 1) & (labels == 0)))
    fn = int(np.sum((predictions == 0) & (labels == 1)))
    return tp, tn, fp, fn


def test_cola_matthews(shared_data):
    labels = _labels(shared_data, "cola", "CoLA")
    predictions = _noisy(labels, 0.25, seed=0)
    tp, tn, fp, fn = _confusion(labels, predictions)
    textbook = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    got = compute_metrics(glue.get_processor("cola").metrics, labels, predictions)
    assert got["matthews_corrcoef"] == pytest.approx(textbook, abs=1e-12)
    assert got["matthews_corrcoef"] == pytest.approx(sklearn.metrics.matthews_corrcoef(labels, predictions))
    assert got["accuracy"] == pytest.approx((tp + tn) / len(labels))


@pytest.mark.parametrize("task,folder", [("mrpc", "MRPC"), ("rte", "RTE"), ("wnli", "WNLI")])
def test_f1_and_accuracy(shared_data, task, folder):
    labels = _labels(shared_data, task, folder)
    predictions = _noisy(labels, 0.2, seed=1)
    tp, tn, fp, fn = _confusion(labels, predictions)
    got = compute_metrics(("f1", "accuracy"), labels, predictions)
    assert got["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn), abs=1e-12)
    assert got["f1"] == pytest.approx(sklearn.metrics.f1_score(labels, predictions))
    assert got["accuracy"] == pytest.approx(np.mean(labels == predictions), abs=1e-12)


def _ranks(values):
    """Average ranks of ties (1-based), written out: sort, then give each run of equal values its mean rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def test_stsb_pearson_spearman(shared_data):
    labels = _labels(shared_data, "sts-b", "STS-B")
    rng = np.random.RandomState(2)
    scores = np.clip(labels + rng.normal(0, 1.2, len(labels)), 0, 5).round(1)  # ties, as real predictions have
    got = compute_metrics(glue.get_processor("sts-b").metrics, labels, scores)
    centered_l, centered_s = labels - labels.mean(), scores - scores.mean()
    pearson = np.sum(centered_l * centered_s) / np.sqrt(np.sum(centered_l**2) * np.sum(centered_s**2))
    assert got["pearson"] == pytest.approx(pearson, abs=1e-12)
    rl, rs = _ranks(labels), _ranks(scores)
    assert got["spearman"] == pytest.approx(np.corrcoef(rl, rs)[0, 1], abs=1e-12)
    assert got["spearman"] == pytest.approx(scipy.stats.spearmanr(labels, scores)[0])
    assert 0.5 < got["spearman"] < got["pearson"] + 0.1


def test_constant_predictions_and_mismatched_lengths():
    assert math.isnan(compute_metrics(["pearson"], [1.0, 2.0, 3.0], [2.0, 2.0, 2.0])["pearson"])
    assert compute_metrics(["matthews_corrcoef"], [0, 1, 1], [1, 1, 1])["matthews_corrcoef"] == 0.0
    with pytest.raises(ValueError, match="3 labels but 2 predictions"):
        compute_metrics(["accuracy"], [0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="unknown metric"):
        compute_metrics(["bleu"], [0], [0])
