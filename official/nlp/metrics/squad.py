"""SQuAD v1.1 and v2.0 evaluation, computed as the official `evaluate-v1.1.py` and `evaluate-v2.0.py` compute it.

Both normalize an answer by lower-casing, removing ASCII punctuation (`string.punctuation`), removing the
articles a/an/the as whole words and collapsing whitespace. Exact match compares normalized strings; F1 is the
bag-of-tokens overlap of the normalized strings. A question's score is the maximum over its reference answers.

The two versions differ in small ways, kept here:

- v1.1 scores F1 0 when prediction and reference share no token, even when both normalize to nothing; v2.0 scores
  1 when both are empty (so "" is a correct answer to an unanswerable question, whose only reference is "").
- v2.0 drops references that normalize to nothing, and gives an unanswerable question the single reference "".
- v2.0 reports HasAns/NoAns splits, applies a null-odds threshold (`na_prob_thresh`) and searches the threshold
  that maximizes EM and F1 (`best_exact`, `best_exact_thresh`, `best_f1`, `best_f1_thresh`).

Example:

    dataset = json.load(open("dev-v1.1.json"))["data"]
    evaluate_v1(dataset, {"56be4db0acb8001400a502ec": "Denver Broncos", ...})   # {'exact_match': ..., 'f1': ...}
"""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Mapping, Sequence

from absl import logging

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower case, drop punctuation, drop articles, collapse whitespace (in that order, as the official scripts)."""
    s = "".join(c for c in s.lower() if c not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


def _tokens(s: str) -> list[str]:
    return normalize_answer(s).split() if s else []


def compute_exact(a_gold: str, a_pred: str) -> int:
    """1 when the normalized strings are equal."""
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold: str, a_pred: str) -> float:
    """v2.0 token F1; 1.0 when both normalize to no tokens, 0.0 when only one does."""
    gold, pred = _tokens(a_gold), _tokens(a_pred)
    if not gold or not pred:
        return float(gold == pred)
    return _overlap_f1(gold, pred)


def _overlap_f1(gold: Sequence[str], pred: Sequence[str]) -> float:
    num_same = sum((collections.Counter(gold) & collections.Counter(pred)).values())
    if num_same == 0:
        return 0.0
    precision, recall = num_same / len(pred), num_same / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_score_v1(prediction: str, ground_truth: str) -> float:
    """v1.1 token F1: 0.0 whenever no token is shared, also when both are empty."""
    return _overlap_f1(normalize_answer(ground_truth).split(), normalize_answer(prediction).split())


def _questions(dataset: Sequence[Mapping]):
    for article in dataset:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def evaluate_v1(dataset: Sequence[Mapping], predictions: Mapping[str, str]) -> dict[str, float]:
    """`{"exact_match", "f1"}` in percent over every question of `dataset` (the file's `data` list).

    A question without a prediction scores 0 (and is logged), as in the official script.
    """
    exact = f1 = total = 0.0
    missing = []
    for qa in _questions(dataset):
        total += 1
        if qa["id"] not in predictions:
            missing.append(qa["id"])
            continue
        truths = [a["text"] for a in qa["answers"]]
        pred = predictions[qa["id"]]
        exact += max(float(normalize_answer(pred) == normalize_answer(t)) for t in truths)
        f1 += max(f1_score_v1(pred, t) for t in truths)
    if missing:
        logging.warning("%d question(s) have no prediction and score 0, e.g. %s", len(missing), missing[:5])
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def _raw_scores_v2(dataset, predictions):
    exact, f1 = {}, {}
    for qa in _questions(dataset):
        qid = qa["id"]
        if qid not in predictions:
            continue
        golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
        pred = predictions[qid]
        exact[qid] = max(compute_exact(g, pred) for g in golds)
        f1[qid] = max(compute_f1(g, pred) for g in golds)
    return exact, f1


def _thresholded(scores, na_probs, has_ans, thresh):
    return {qid: (float(not has_ans[qid]) if na_probs[qid] > thresh else s) for qid, s in scores.items()}


def _summary(exact, f1, qids=None) -> dict[str, float]:
    qids = list(exact) if qids is None else qids
    n = len(qids)
    return {"exact": 100.0 * sum(exact[q] for q in qids) / n, "f1": 100.0 * sum(f1[q] for q in qids) / n, "total": n}


def _best_threshold(predictions, scores, na_probs, has_ans):
    """Sweeps the threshold up through the sorted null odds; every question below it answers, above abstains."""
    current = best = sum(1 for qid in scores if not has_ans[qid])
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_ans[qid]:
            current += scores[qid]
        else:
            current += -1 if predictions[qid] else 0
        if current > best:
            best, best_thresh = current, na_probs[qid]
    return 100.0 * best / len(scores), best_thresh


def evaluate_v2(
    dataset: Sequence[Mapping],
    predictions: Mapping[str, str],
    na_probs: Mapping[str, float] | None = None,
    na_prob_thresh: float = 1.0,
) -> dict[str, float]:
    """The official v2.0 result dict: exact, f1, total, HasAns_*/NoAns_* and the best-threshold search.

    `na_probs` are the null odds (`null_odds.json`); without them every question gets 0, as in the official
    script. Only questions with a prediction are scored (the official script warns about the rest).
    """
    has_ans = {qa["id"]: bool(qa["answers"]) for qa in _questions(dataset)}
    missing = [qid for qid in has_ans if qid not in predictions]
    if missing:
        logging.warning("%d question(s) have no prediction and are not scored, e.g. %s", len(missing), missing[:5])
    na_probs = {k: 0.0 for k in predictions} if na_probs is None else na_probs
    exact_raw, f1_raw = _raw_scores_v2(dataset, predictions)
    exact = _thresholded(exact_raw, na_probs, has_ans, na_prob_thresh)
    f1 = _thresholded(f1_raw, na_probs, has_ans, na_prob_thresh)
    result = _summary(exact, f1)
    for name, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [q for q in exact if has_ans[q] == wanted]
        if qids:
            result.update({f"{name}_{k}": v for k, v in _summary(exact, f1, qids).items()})
    result["best_exact"], result["best_exact_thresh"] = _best_threshold(predictions, exact_raw, na_probs, has_ans)
    result["best_f1"], result["best_f1_thresh"] = _best_threshold(predictions, f1_raw, na_probs, has_ans)
    return result


def evaluate_squad(
    dataset: Sequence[Mapping],
    predictions: Mapping[str, str],
    na_probs: Mapping[str, float] | None = None,
    *,
    version_2_with_negative: bool = False,
) -> dict[str, float]:
    """`evaluate_v2` for SQuAD 2.0, else `evaluate_v1`."""
    if version_2_with_negative:
        return evaluate_v2(dataset, predictions, na_probs)
    return evaluate_v1(dataset, predictions)
