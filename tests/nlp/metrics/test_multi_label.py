"""Multi-label metrics on a slice of GoEmotions dev, against scikit-learn called directly on labels read from the file
here (not through the library's reader), and the tuned thresholds against an exhaustive search."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import sklearn.metrics

from official.nlp.data import classifier_examples
from official.nlp.data import multi_label as multi_label_data
from official.nlp.metrics import multi_label

ROWS = 600


@pytest.fixture(scope="module")
def dev(shared_data):
    """`(labels [ROWS, 28], probabilities, label names)`: the file's label ids, and noisy scores seeded from them."""
    folder = shared_data / "goemotions"
    names = (folder / "emotions.txt").read_text(encoding="utf-8").split()
    with open(folder / "dev.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[:ROWS]
    labels = np.zeros([len(rows), len(names)], int)
    for i, row in enumerate(rows):
        labels[i, [int(j) for j in row[1].split(",")]] = 1
    rng = np.random.RandomState(0)
    probabilities = np.clip(0.45 * labels + rng.rand(*labels.shape) * 0.6, 0, 1)
    return labels, probabilities, names


def test_the_reader_gives_the_files_label_sets(dev, shared_data, tmp_path):
    labels, _, names = dev
    assert tuple(names) == multi_label_data.GOEMOTIONS_LABELS
    lines = (shared_data / "goemotions" / "dev.tsv").read_text(encoding="utf-8").splitlines(keepends=True)[:ROWS]
    (tmp_path / "dev.tsv").write_text("".join(lines), encoding="utf-8")
    examples = multi_label_data.GoEmotionsProcessor().read(str(tmp_path / "dev.tsv"), classifier_examples.DEV).examples
    read = np.array([[int(name in e.label) for name in names] for e in examples])
    np.testing.assert_array_equal(read, labels)
    assert labels.sum(1).max() > 1  # the slice has examples with several labels


def test_metrics_equal_scikit_learn(dev):
    labels, probabilities, names = dev
    predicted = probabilities >= 0.5
    ours = multi_label.multi_label_metrics(labels, multi_label.predict_labels(probabilities, np.full(28, 0.5)), names)
    for average in ("macro", "micro"):
        expected = sklearn.metrics.f1_score(labels, predicted, average=average, zero_division=0)
        assert ours[f"{average}_f1"] == pytest.approx(expected, abs=1e-12)
    precision, recall, f1, support = sklearn.metrics.precision_recall_fscore_support(
        labels, predicted, average=None, zero_division=0
    )
    for j, name in enumerate(names):
        assert (ours[f"precision/{name}"], ours[f"recall/{name}"], ours[f"f1/{name}"]) == pytest.approx(
            (precision[j], recall[j], f1[j]), abs=1e-12
        )
        assert ours[f"support/{name}"] == support[j] == labels[:, j].sum()
    assert ours["exact_match"] == pytest.approx(np.mean((labels == predicted).all(1)))
    # Not vacuous: the labels differ in F1 and some were never predicted right.
    assert 0 < ours["macro_f1"] < ours["micro_f1"] < 1


def test_tuned_thresholds_maximize_each_labels_f1(dev):
    labels, probabilities, names = dev
    tuned = multi_label.tune_thresholds(labels, probabilities)
    for j in range(len(names)):
        column = probabilities[:, j]
        if not labels[:, j].any():
            assert tuned[j] == multi_label.DEFAULT_THRESHOLD
            continue
        # Every cut-off there is (one per distinct score), counted with numpy: F1 = 2 TP / (2 TP + FP + FN).
        predicted = column[None, :] >= np.unique(column)[:, None]
        true_positives = (predicted & (labels[:, j] == 1)).sum(1)
        best = np.max(2 * true_positives / (predicted.sum(1) + labels[:, j].sum()))
        assert sklearn.metrics.f1_score(labels[:, j], column >= tuned[j], zero_division=0) == pytest.approx(best)
        assert not np.any(column == tuned[j])  # between two dev scores, not on one
    fixed = multi_label.multi_label_metrics(labels, probabilities >= 0.5, names)["macro_f1"]
    assert multi_label.multi_label_metrics(labels, probabilities >= tuned, names)["macro_f1"] > fixed


def test_decision_thresholds():
    np.testing.assert_array_equal(multi_label.decision_thresholds(3), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(multi_label.decision_thresholds(2, threshold=0.3), [0.3, 0.3])
    np.testing.assert_array_equal(multi_label.decision_thresholds(2, thresholds=[0.2, 0.7], threshold=0.3), [0.2, 0.7])
    with pytest.raises(ValueError, match="3 thresholds for 2 labels"):
        multi_label.decision_thresholds(2, thresholds=[0.1, 0.2, 0.3])
