"""Entity-level precision, recall and F1 as the CoNLL shared task's `conlleval` script computes them.

A chunk (entity) starts and ends by conlleval's rules over the tag prefixes, so IOB1 and IOB2 both work: `I-PER`
after `O` opens a chunk, `B-PER` always does, a change of type closes one. `E-`/`S-` (IOBES) follow seqeval's
extension of those rules. A predicted chunk is correct when a
gold chunk has the same type, start and end. Precision = correct / predicted chunks, recall = correct / gold
chunks, F1 their harmonic mean (0 when both are 0), overall and per type; token accuracy counts every word.

Hand-written rather than calling seqeval (whose default mode follows the same rules and is the reference in the
tests): seqeval ships only as an sdist, so the library would gain a build-time dependency for a few lines of chunk
rules.

Example:

>>> result = evaluate([["B-PER", "I-PER", "O", "I-LOC"]], [["B-PER", "I-PER", "O", "I-ORG"]])
>>> round(result.f1, 3), result.per_type["PER"].f1, result.per_type["LOC"].recall
(0.5, 1.0, 0.0)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence


def _split(tag: str) -> tuple[str, str]:
    prefix, dash, kind = tag.partition("-")
    return (prefix, kind) if dash else (tag, "")


def _ends(prev_tag: str, tag: str, prev_type: str, kind: str) -> bool:
    """conlleval's endOfChunk: does a chunk end between the previous word and this one?"""
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != kind


def _starts(prev_tag: str, tag: str, prev_type: str, kind: str) -> bool:
    """conlleval's startOfChunk: does a chunk start at this word?"""
    if tag in ("B", "S"):
        return True
    if tag in ("E", "I") and prev_tag in ("E", "S", "O"):
        return True
    return tag not in ("O", ".") and prev_type != kind


def chunks(tags: Sequence[str]) -> set[tuple[str, int, int]]:
    """The chunks of one sentence as `(type, first word, last word)`."""
    found = set()
    prev_tag, prev_type, start = "O", "", None
    for i, tag in enumerate([*tags, "O"]):  # the trailing O closes a chunk that runs to the end
        prefix, kind = _split(tag)
        if start is not None and _ends(prev_tag, prefix, prev_type, kind):
            found.add((prev_type, start, i - 1))
            start = None
        if _starts(prev_tag, prefix, prev_type, kind):
            start = i
        prev_tag, prev_type = prefix, kind
    return found


@dataclasses.dataclass
class Score:
    """Counts and scores of one entity type (or all together); scores are fractions, not percentages."""

    correct: int = 0
    predicted: int = 0
    gold: int = 0

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclasses.dataclass
class ConllevalResult:
    """`overall` and `per_type` scores, token `accuracy` and the token count."""

    overall: Score
    per_type: dict[str, Score]
    accuracy: float
    tokens: int

    @property
    def precision(self) -> float:
        return self.overall.precision

    @property
    def recall(self) -> float:
        return self.overall.recall

    @property
    def f1(self) -> float:
        return self.overall.f1

    def as_dict(self) -> dict[str, float]:
        """Flat scalars (for eval_results.txt and TensorBoard): `f1`, `precision`, `recall`, `accuracy` and
        `f1_TYPE` for each type."""
        out = {"f1": self.f1, "precision": self.precision, "recall": self.recall, "accuracy": self.accuracy}
        out.update({f"f1_{kind}": score.f1 for kind, score in sorted(self.per_type.items())})
        return out

    def report(self) -> str:
        """The summary in conlleval's own layout (percentages, two decimals)."""
        o = self.overall
        lines = [
            f"processed {self.tokens} tokens with {o.gold} phrases; found: {o.predicted} phrases; "
            f"correct: {o.correct}.",
            f"accuracy: {100 * self.accuracy:6.2f}%; precision: {100 * o.precision:6.2f}%; "
            f"recall: {100 * o.recall:6.2f}%; FB1: {100 * o.f1:6.2f}",
        ]
        for kind, s in sorted(self.per_type.items()):
            lines.append(
                f"{kind:>17}: precision: {100 * s.precision:6.2f}%; recall: {100 * s.recall:6.2f}%; "
                f"FB1: {100 * s.f1:6.2f}  {s.predicted}"
            )
        return "\n".join(lines)


def evaluate(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> ConllevalResult:
    """conlleval over sentences: `gold[i]` and `predicted[i]` are the tags of sentence i, word by word."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    overall, per_type = Score(), {}
    tokens = right = 0
    for i, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted")
        tokens += len(g)
        right += sum(a == b for a, b in zip(g, p))
        gold_chunks, predicted_chunks = chunks(g), chunks(p)
        for kind, *_ in gold_chunks:
            per_type.setdefault(kind, Score()).gold += 1
        for kind, *_ in predicted_chunks:
            per_type.setdefault(kind, Score()).predicted += 1
        for kind, *_ in gold_chunks & predicted_chunks:
            per_type[kind].correct += 1
    for score in per_type.values():
        overall.correct += score.correct
        overall.predicted += score.predicted
        overall.gold += score.gold
    return ConllevalResult(
        overall=overall, per_type=per_type, accuracy=right / tokens if tokens else 0.0, tokens=tokens
    )
