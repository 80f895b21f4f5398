"""SQuAD post-processing: from start/end logits of every window to one answer string per question.

`postprocess(examples, features, start_logits, end_logits, settings, do_lower_case)` is a pure function of its
arguments (no model, no files), so that another implementation (e.g. an in-graph decoder) can be tested against it.
It follows google-research/bert `write_predictions`:

1. For each window, the `n_best_size` highest start logits and end logits (over the whole window, padding
   included; ties go to the lower position) are paired. A pair is kept only if both ends are context tokens of
   the window, the start token has its *maximum context* in this window, `end >= start` and the span is at most
   `max_answer_length` tokens long. Its score is `start_logit + end_logit`.
2. v2.0: each window's null score is `start_logit[0] + end_logit[0]` (`[CLS]`); the lowest over the windows is the
   question's null score, and a null candidate with it joins the list.
3. Candidates from all windows are sorted by score; the best `n_best_size` distinct texts are kept. A span's text
   is the original words it covers, trimmed to the predicted sub-word tokens by `get_final_text`.
4. v1.1: the answer is the best text. v2.0: `score_diff = null_score - best_non_null_score` is written to
   `null_odds`; the answer is "" when `score_diff > null_score_diff_threshold`, else the best non-null text.

Two deliberate differences from the original: when every candidate of a v2.0 question is null, the original
crashes (it reads the logits of a missing best non-null entry); here the answer is "" and `null_odds` holds
`NO_SPAN_ODDS`, the largest float, so that the question abstains at any threshold. And a question with no valid
span at all (e.g. an empty context) gets the text "" where the original writes the word "empty".

Example:

    settings = AnswerSettings(n_best_size=20, max_answer_length=30)
    result = postprocess(examples, features, start_logits, end_logits, settings, do_lower_case=True)  # [features, seq]
    result.predictions["56be4db0acb8001400a502ec"]   # 'Denver Broncos'
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence

import numpy as np

from official.nlp.common.config_flags import CheckedConfig, field
from official.nlp.data.squad.examples import SquadExample
from official.nlp.data.squad.features import SquadFeature, group_features
from official.nlp.tokenizers.tokenization import BasicTokenizer

NO_SPAN_ODDS = sys.float_info.max


@dataclasses.dataclass(kw_only=True)
class AnswerSettings(CheckedConfig):
    """The original `run_squad.py` settings that cut a context into windows and pick the answers, with its defaults,
    defined once: `run_squad`'s flags (`SquadConfig` inherits them), `postprocess`, the in-graph decoder of a SQuAD
    export, `QuestionAnswerer`, and what a fine-tuned SQuAD model records for its exports. Ranges are checked when
    it is made."""

    doc_stride: int = field(128, minimum=1, help="Tokens between the starts of consecutive windows.")
    max_query_length: int = field(64, minimum=1, help="Longer questions are truncated (and counted).")
    n_best_size: int = field(20, minimum=1, help="Candidates kept per question (nbest_predictions).")
    max_answer_length: int = field(30, minimum=1, help="Longest answer, in tokens.")
    version_2_with_negative: bool = field(False, help="SQuAD 2.0: questions may have no answer.")
    null_score_diff_threshold: float = field(
        0.0, help='v2.0: answer "" when null score - best span score exceeds this.'
    )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The settings' names, in order (a job config that inherits them has more fields)."""
        return tuple(f.name for f in dataclasses.fields(AnswerSettings))

    def answer_settings(self) -> AnswerSettings:
        """These settings alone (of a job config that inherits them)."""
        return AnswerSettings(**self.to_dict())

    def to_dict(self) -> dict:
        """The settings by name, as JSON records them."""
        return {name: getattr(self, name) for name in self.names()}


@dataclasses.dataclass
class SquadPredictions:
    """`predictions` (id -> text), `nbest` (id -> list of dicts), `null_odds` (id -> score_diff, v2.0 only)."""

    predictions: dict[str, str]
    nbest: dict[str, list[dict]]
    null_odds: dict[str, float]


def _strip_spaces(text: str) -> tuple[str, dict[int, int]]:
    chars, index_map = [], {}
    for i, c in enumerate(text):
        if c == " ":
            continue
        index_map[len(chars)] = i
        chars.append(c)
    return "".join(chars), index_map


def get_final_text(pred_text: str, orig_text: str, do_lower_case: bool) -> str:
    """The part of `orig_text` (original words) that the normalized token text `pred_text` covers.

    The predicted tokens are lower-cased, accent-stripped and split at punctuation, so they cannot be shown
    directly; the original words can hold more than the span ("(1895-1943)." for "1895"). The original words are
    run through the basic tokenizer, `pred_text` is located in that, and the position is carried back character
    by character, ignoring spaces. When that fails (the tokenizer changed the length, or `pred_text` is not
    found) the whole `orig_text` is returned, as in the original.
    """
    tok_text = " ".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(orig_text))
    start = tok_text.find(pred_text)
    if start == -1:
        return orig_text
    end = start + len(pred_text) - 1

    orig_ns, orig_map = _strip_spaces(orig_text)
    tok_ns, tok_map = _strip_spaces(tok_text)
    if len(orig_ns) != len(tok_ns):
        return orig_text
    tok_to_ns = {tok_index: ns_index for ns_index, tok_index in tok_map.items()}
    ns_start, ns_end = tok_to_ns.get(start), tok_to_ns.get(end)
    if ns_start is None or ns_end is None:
        return orig_text
    return orig_text[orig_map[ns_start] : orig_map[ns_end] + 1]


def _best_indexes(logits: np.ndarray, n_best_size: int) -> list[int]:
    # Stable sort on the negated logits: ties keep the lower position first, as Python's sorted(reverse=True).
    return np.argsort(-logits, kind="stable")[:n_best_size].tolist()


def _softmax(scores: Sequence[float]) -> list[float]:
    if not scores:
        return []
    values = np.exp(np.asarray(scores, np.float64) - max(scores))
    return (values / values.sum()).tolist()


def _span_text(example: SquadExample, feature: SquadFeature, start: int, end: int, do_lower_case: bool) -> str:
    tok_text = " ".join(feature.tokens[start : end + 1]).replace(" ##", "").replace("##", "")
    tok_text = " ".join(tok_text.strip().split())
    orig_text = " ".join(example.doc_tokens[feature.token_to_orig_map[start] : feature.token_to_orig_map[end] + 1])
    return get_final_text(tok_text, orig_text, do_lower_case)


def postprocess(
    examples: Sequence[SquadExample],
    features: Sequence[SquadFeature],
    start_logits,
    end_logits,
    settings: AnswerSettings,
    do_lower_case: bool = True,
) -> SquadPredictions:
    """Answers for `examples` from the logits of `features` (row i of each logits array belongs to feature i).

    Args:
      examples: the examples the features were built from (`features[i].example_index` indexes this list).
      features: the windows, as built by `squad.features.convert_examples_to_features`.
      start_logits, end_logits: float arrays `[num_features, max_seq_length]`.
      settings: `AnswerSettings` (its window settings were the features').
      do_lower_case: the tokenizer's case (an answer's text is mapped back to the original words with it).
    """
    start_logits = np.asarray(start_logits, np.float32)
    end_logits = np.asarray(end_logits, np.float32)
    if start_logits.shape[0] != len(features) or end_logits.shape[0] != len(features):
        raise ValueError(f"{len(features)} features but logits for {start_logits.shape[0]} / {end_logits.shape[0]}")
    row_of = {id(feature): row for row, feature in enumerate(features)}
    by_example = group_features(features)
    n_best = settings.n_best_size
    result = SquadPredictions({}, {}, {})
    for example_index, example in enumerate(examples):
        # (feature, start, end, start_logit, end_logit); feature None is the null candidate.
        prelim = []
        null = None  # (score, feature, start_logit, end_logit) of the window with the lowest null score
        for feature in by_example.get(example_index, []):
            row = row_of[id(feature)]
            starts, ends = start_logits[row], end_logits[row]
            if settings.version_2_with_negative:
                # Summed as Python floats, as the original does with its lists of logits: a float32 sum moves
                # `null_odds` in its last digits, and `best_f1_thresh` with them.
                score = float(starts[0]) + float(ends[0])
                if null is None or score < null[0]:
                    null = (score, feature, float(starts[0]), float(ends[0]))
            num_tokens = len(feature.tokens)
            for s in _best_indexes(starts, n_best):
                if s >= num_tokens or s not in feature.token_to_orig_map or not feature.token_is_max_context[s]:
                    continue
                for e in _best_indexes(ends, n_best):
                    if e >= num_tokens or e not in feature.token_to_orig_map or e < s:
                        continue
                    if e - s + 1 > settings.max_answer_length:
                        continue
                    prelim.append((feature, s, e, float(starts[s]), float(ends[e])))
        if null is not None:
            prelim.append((None, 0, 0, null[2], null[3]))
        prelim.sort(key=lambda p: p[3] + p[4], reverse=True)

        nbest, seen = [], set()
        for feature, s, e, start_logit, end_logit in prelim:
            if len(nbest) >= n_best:
                break
            text = "" if feature is None else _span_text(example, feature, s, e, do_lower_case)
            if text in seen:
                continue
            seen.add(text)
            nbest.append((text, start_logit, end_logit))
        if null is not None and "" not in seen:
            nbest.append(("", null[2], null[3]))
        if not nbest:
            nbest.append(("", 0.0, 0.0))

        probs = _softmax([s + e for _, s, e in nbest])
        result.nbest[example.qas_id] = [
            {"text": text, "probability": p, "start_logit": s, "end_logit": e} for (text, s, e), p in zip(nbest, probs)
        ]
        best_non_null = next(((t, s, e) for t, s, e in nbest if t), None)
        if not settings.version_2_with_negative:
            result.predictions[example.qas_id] = nbest[0][0]
        elif best_non_null is None:
            result.predictions[example.qas_id] = ""
            result.null_odds[example.qas_id] = NO_SPAN_ODDS
        else:
            null_score = null[0] if null is not None else -NO_SPAN_ODDS
            diff = null_score - best_non_null[1] - best_non_null[2]
            result.null_odds[example.qas_id] = diff
            result.predictions[example.qas_id] = "" if diff > settings.null_score_diff_threshold else best_non_null[0]
    return result
