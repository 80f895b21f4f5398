"""conlleval entity scores: a hand-worked example, and seqeval (conlleval-compatible default mode) on real CoNLL-2003
label files in IOB1 and IOB2."""

import random

import pytest
from seqeval import metrics as seqeval_metrics

from official.nlp.data import conll
from official.nlp.metrics import conlleval


def test_chunks_iob1_and_iob2():
    # IOB1: I- opens a chunk after O or another type; B- only separates two adjacent chunks of one type.
    assert conlleval.chunks(["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"]) == {
        ("PER", 0, 1),
        ("PER", 2, 2),
        ("LOC", 4, 4),
        ("ORG", 5, 5),
    }
    assert conlleval.chunks(["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG"]) == {
        ("PER", 0, 1),
        ("PER", 2, 2),
        ("LOC", 4, 4),
        ("ORG", 5, 6),
    }
    # An I- of another type opens a new chunk; a dangling I- after O opens one too (conlleval's leniency).
    assert conlleval.chunks(["B-MISC", "I-PER", "O", "I-MISC"]) == {("MISC", 0, 0), ("PER", 1, 1), ("MISC", 3, 3)}
    assert conlleval.chunks(["O", "O"]) == set()


def test_hand_worked_scores():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "I-ORG", "O", "B-MISC"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "I-ORG", "O", "O", "B-MISC"]]
    # Gold chunks: PER(0-1) LOC(3) | ORG(0-2) MISC(4) = 4. Predicted: PER(0-1) ORG(3) | ORG(0-1) MISC(4) = 4.
    # Correct: PER and MISC = 2. P = R = 2/4, F1 = 0.5. Tokens right: 3 + 4 of 9.
    result = conlleval.evaluate(gold, pred)
    assert (result.overall.correct, result.overall.predicted, result.overall.gold) == (2, 4, 4)
    assert result.precision == result.recall == result.f1 == 0.5
    assert result.accuracy == pytest.approx(7 / 9)
    assert result.per_type["ORG"].predicted == 2 and result.per_type["ORG"].correct == 0
    assert result.per_type["ORG"].f1 == 0.0 and result.per_type["LOC"].recall == 0.0
    assert result.per_type["PER"].f1 == 1.0
    report = result.report()
    assert "found: 4 phrases; correct: 2." in report and "FB1:  50.00" in report
    assert result.as_dict()["f1_PER"] == 1.0


def _corrupt(sentences, labels, seed):
    rng = random.Random(seed)
    return [[rng.choice(labels) if rng.random() < 0.15 else tag for tag in s] for s in sentences]


@pytest.mark.parametrize("relative", ["conll2003/original_iob1/eng.testa", "conll2003/iob2/valid.txt"])
def test_matches_seqeval_on_real_labels(shared_data, relative):
    sentences = conll.read_conll(str(shared_data / relative)).sentences
    gold = [s.labels for s in sentences]
    pred = _corrupt(gold, conll.label_list(sentences), seed=7)
    ours = conlleval.evaluate(gold, pred)
    assert ours.overall.gold > 5000 and 0.5 < ours.f1 < 0.95  # the corruption leaves a real but imperfect score

    report = seqeval_metrics.classification_report(gold, pred, output_dict=True, zero_division=0)
    assert ours.precision == pytest.approx(seqeval_metrics.precision_score(gold, pred), abs=1e-12)
    assert ours.recall == pytest.approx(seqeval_metrics.recall_score(gold, pred), abs=1e-12)
    assert ours.f1 == pytest.approx(seqeval_metrics.f1_score(gold, pred), abs=1e-12)
    assert ours.accuracy == pytest.approx(seqeval_metrics.accuracy_score(gold, pred), abs=1e-12)
    types = {k for k in report if k not in ("micro avg", "macro avg", "weighted avg")}
    assert types == set(ours.per_type) == {"PER", "LOC", "ORG", "MISC"}
    for kind in types:
        score = ours.per_type[kind]
        assert score.gold == report[kind]["support"]
        assert score.precision == pytest.approx(report[kind]["precision"], abs=1e-12)
        assert score.recall == pytest.approx(report[kind]["recall"], abs=1e-12)
        assert score.f1 == pytest.approx(report[kind]["f1-score"], abs=1e-12)


def test_perfect_predictions_score_one(shared_data):
    sentences = conll.read_conll(str(shared_data / "conll2003/original_iob1/eng.testb")).sentences
    gold = [s.labels for s in sentences]
    result = conlleval.evaluate(gold, gold)
    assert result.f1 == 1.0 and result.overall.gold == 5648  # the standard count of test entities
