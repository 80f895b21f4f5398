"""SQuAD EM/F1 against hand-worked cases of the official v1.1/v2.0 definitions."""

import pytest

from official.nlp.metrics import squad as m


@pytest.mark.parametrize(
    "text, normalized",
    [
        ("The Denver Broncos", "denver broncos"),  # article and case
        ("  a  cat,  an apple; the end. ", "cat apple end"),  # articles, punctuation, runs of whitespace
        ("Theory of the atom", "theory of atom"),  # "the" inside "Theory" is not a word
        ("U.S.-based", "usbased"),  # punctuation removed without a space
        ("café—“quoted”", "café—“quoted”"),  # only ASCII punctuation is removed
        ("\tThe\n", ""),
    ],
)
def test_normalize_answer(text, normalized):
    assert m.normalize_answer(text) == normalized


def test_exact_and_f1_hand_worked():
    assert m.compute_exact("The Broncos!", "broncos") == 1
    assert m.compute_exact("Denver Broncos", "Broncos") == 0
    # gold {denver, broncos}, pred {broncos}: P = 1, R = 1/2, F1 = 2/3.
    assert m.compute_f1("Denver Broncos", "the Broncos") == pytest.approx(2 / 3)
    # gold {1, 2, 2}, pred {2, 2, 2, 3}: 2 shared (counts clip), P = 2/4, R = 2/3, F1 = 4/7.
    assert m.compute_f1("1 2 2", "2 2 2 3") == pytest.approx(4 / 7)
    assert m.compute_f1("broncos", "panthers") == 0.0
    # v2.0: both empty is a match, one empty is not.
    assert m.compute_f1("", "") == 1.0 and m.compute_exact("", "") == 1
    assert m.compute_f1("", "the") == 1.0  # "the" normalizes to nothing
    assert m.compute_f1("Broncos", "") == 0.0
    # v1.1: no shared token scores 0 even when both are empty.
    assert m.f1_score_v1("the", "a") == 0.0
    assert m.f1_score_v1("the Broncos", "Broncos") == 1.0


def _dataset(qas):
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]


def test_evaluate_v1_max_over_references_and_missing():
    data = _dataset(
        [
            {"id": "1", "question": "?", "answers": [{"text": "Denver Broncos"}, {"text": "Broncos"}]},
            {"id": "2", "question": "?", "answers": [{"text": "Santa Clara, California"}, {"text": "Levi's Stadium"}]},
            {"id": "3", "question": "?", "answers": [{"text": "x"}]},
        ]
    )
    preds = {"1": "broncos", "2": "Santa Clara"}  # "3" missing: scores 0
    result = m.evaluate_v1(data, preds)
    # q1: EM 1 (second reference). q2: EM 0, F1 vs "santa clara california" = 2*(1*2/3)/(1+2/3) = 0.8.
    assert result["exact_match"] == pytest.approx(100 / 3)
    assert result["f1"] == pytest.approx(100 * 1.8 / 3)


def test_evaluate_v2_no_answer_splits_and_threshold():
    data = _dataset(
        [
            {"id": "a", "question": "?", "answers": [{"text": "Broncos"}]},
            {"id": "b", "question": "?", "answers": [{"text": "Panthers"}]},
            {"id": "n", "question": "?", "answers": [], "is_impossible": True},
            {"id": "m", "question": "?", "answers": [], "is_impossible": True},
        ]
    )
    preds = {"a": "Broncos", "b": "Denver", "n": "", "m": "Broncos"}
    result = m.evaluate_v2(data, preds)
    # "" on a no-answer question counts as correct; "Broncos" on one does not.
    assert result["exact"] == 50.0 and result["total"] == 4
    assert result["HasAns_exact"] == 50.0 and result["NoAns_exact"] == 50.0
    assert result["HasAns_total"] == 2 and result["NoAns_total"] == 2
    # Null odds: abstaining on "b" (wrong) and "m" (wrong) helps; the best threshold lets only "a" answer.
    na = {"a": -3.0, "b": 1.0, "n": 0.5, "m": 2.0}
    result = m.evaluate_v2(data, preds, na)
    # Sorted odds: a(-3) +1 -> 3; n(0.5) 0 -> 3; b(1) +0 -> 3; m(2) -1 -> 2. Start: 2 no-answer questions.
    assert result["best_exact"] == 75.0 and result["best_exact_thresh"] == -3.0
    assert result["best_f1"] == 75.0 and result["best_f1_thresh"] == -3.0
    # na_prob_thresh=1.0: "m" (2.0) abstains -> correct; "b" (1.0) does not exceed it.
    assert result["exact"] == 75.0
