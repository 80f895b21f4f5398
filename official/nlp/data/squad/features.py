"""SQuAD questions as windowed BERT features (`convert_examples_to_features`), as google-research/bert
`run_squad.py` builds them:

- each context word maps to its WordPiece tokens, so that a predicted token span maps back to words;
- a training answer is moved to the shortest run of tokens that tokenizes exactly like the answer text
  ("improved answer span": "(1895-1943)." holds the answer "1895", whose tokens sit inside the word);
- a context longer than the window is cut into windows that start `doc_stride` tokens apart; a token in several
  windows is marked as having its *maximum context* in the one where it has the most words on its shorter side,
  because a token near a window's edge is predicted with little context;
- an unanswerable question, or an answer outside a training window, points at `[CLS]` (position 0).

Questions longer than `max_query_length` are truncated and counted (`FeatureStats`). The examples come from
`squad.examples`.

Example:

    tokenizer = FullTokenizer("vocab.txt", do_lower_case=True)
    features, stats = convert_examples_to_features(examples, tokenizer, max_seq_length=384, doc_stride=128,
                                                   max_query_length=64, is_training=False)
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence

from absl import logging

from official.nlp.common.errors import InputError
from official.nlp.data.squad.examples import SquadExample


@dataclasses.dataclass
class SquadFeature:
    """One window of one example. `token_to_orig_map` and `token_is_max_context` are keyed by window position."""

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list[str]
    token_to_orig_map: dict[int, int]
    token_is_max_context: dict[int, bool]
    input_ids: list[int]
    input_mask: list[int]
    segment_ids: list[int]
    start_position: int = 0
    end_position: int = 0
    is_impossible: bool = False


@dataclasses.dataclass
class FeatureStats:
    """Counts from feature building: truncated questions (ids listed), windows, answers outside their window."""

    num_features: int = 0
    truncated_questions: list[str] = dataclasses.field(default_factory=list)
    out_of_window: int = 0


UNIQUE_ID_START = 1000000000


def _improve_answer_span(doc_tokens: Sequence[str], start: int, end: int, tokenizer, answer_text: str):
    """The shortest token span inside [start, end] whose tokens equal the answer's own tokens."""
    tok_answer_text = " ".join(tokenizer.tokenize(answer_text))
    for new_start in range(start, end + 1):
        for new_end in range(end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start : new_end + 1]) == tok_answer_text:
                return new_start, new_end
    return start, end


def _max_context_window(spans: Sequence[tuple[int, int]], position: int) -> int:
    """Index of the window where `position` has the most context (ties: the longer, then the earlier, window)."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return best_index


def doc_windows(num_tokens: int, max_tokens_for_doc: int, doc_stride: int) -> list[tuple[int, int]]:
    """`(start, length)` of the sliding windows over `num_tokens` context tokens."""
    spans = []
    start = 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def check_window_settings(max_seq_length: int, doc_stride: int, max_query_length: int) -> None:
    """InputError naming the flag when the window sizes cannot work."""
    if doc_stride <= 0 or max_query_length <= 0:
        raise InputError(f"--doc_stride ({doc_stride}) and --max_query_length ({max_query_length}) must be positive")
    if max_seq_length - max_query_length - 3 <= 0:
        raise InputError(
            f"--max_seq_length={max_seq_length} leaves no room for the context after a question of "
            f"--max_query_length={max_query_length} and 3 special tokens; raise --max_seq_length"
        )
    max_tokens_for_doc = max_seq_length - max_query_length - 3
    if doc_stride > max_tokens_for_doc:
        # A window moves by at most its own length (the original's min(length, doc_stride)), so such a stride is
        # not what the windows use; refuse it rather than silently run another one.
        raise InputError(
            f"--doc_stride={doc_stride} is longer than the context a window holds with the longest question: "
            f"--max_seq_length={max_seq_length} - --max_query_length={max_query_length} - 3 special tokens = "
            f"{max_tokens_for_doc} tokens. Windows that far apart would leave tokens between them in no window; "
            f"pass --doc_stride={max_tokens_for_doc} or less (the largest that covers every token), or raise "
            f"--max_seq_length"
        )


def convert_examples_to_features(
    examples: Sequence[SquadExample],
    tokenizer,
    *,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    is_training: bool,
) -> tuple[list[SquadFeature], FeatureStats]:
    """Windowed features of `examples` (see the module docstring), with the counts of `FeatureStats`."""
    check_window_settings(max_seq_length, doc_stride, max_query_length)
    vocab = tokenizer.vocab
    features: list[SquadFeature] = []
    stats = FeatureStats()
    # Contexts are shared by several questions; tokenize each once.
    context_cache: dict[str, tuple[list[int], list[int], list[str]]] = {}
    unique_id = UNIQUE_ID_START
    for example_index, example in enumerate(examples):
        query_tokens = tokenizer.tokenize(example.question_text)
        if len(query_tokens) > max_query_length:
            stats.truncated_questions.append(example.qas_id)
            query_tokens = query_tokens[:max_query_length]
        cached = context_cache.get(example.context_text)
        if cached is None:
            tok_to_orig, orig_to_tok, all_doc_tokens = [], [], []
            for i, word in enumerate(example.doc_tokens):
                orig_to_tok.append(len(all_doc_tokens))
                for sub in tokenizer.tokenize(word):
                    tok_to_orig.append(i)
                    all_doc_tokens.append(sub)
            cached = context_cache[example.context_text] = (tok_to_orig, orig_to_tok, all_doc_tokens)
        tok_to_orig, orig_to_tok, all_doc_tokens = cached

        tok_start = tok_end = None
        if is_training and not example.is_impossible:
            tok_start = orig_to_tok[example.start_position]
            tok_end = (
                orig_to_tok[example.end_position + 1] - 1
                if example.end_position < len(example.doc_tokens) - 1
                else len(all_doc_tokens) - 1
            )
            tok_start, tok_end = _improve_answer_span(
                all_doc_tokens, tok_start, tok_end, tokenizer, example.orig_answer_text
            )

        spans = doc_windows(len(all_doc_tokens), max_seq_length - len(query_tokens) - 3, doc_stride)
        for span_index, (span_start, span_length) in enumerate(spans):
            tokens = ["[CLS]"] + query_tokens + ["[SEP]"]
            segment_ids = [0] * len(tokens)
            token_to_orig_map, token_is_max_context = {}, {}
            for i in range(span_start, span_start + span_length):
                token_to_orig_map[len(tokens)] = tok_to_orig[i]
                token_is_max_context[len(tokens)] = _max_context_window(spans, i) == span_index
                tokens.append(all_doc_tokens[i])
            tokens.append("[SEP]")
            segment_ids += [1] * (span_length + 1)
            input_ids = [vocab[t] for t in tokens]
            input_mask = [1] * len(input_ids)
            padding = max_seq_length - len(input_ids)
            input_ids += [0] * padding
            input_mask += [0] * padding
            segment_ids += [0] * padding

            start_position = end_position = 0
            if is_training and not example.is_impossible:
                if tok_start >= span_start and tok_end <= span_start + span_length - 1:
                    offset = len(query_tokens) + 2 - span_start
                    start_position, end_position = tok_start + offset, tok_end + offset
                else:
                    stats.out_of_window += 1
            features.append(
                SquadFeature(
                    unique_id,
                    example_index,
                    span_index,
                    tokens,
                    token_to_orig_map,
                    token_is_max_context,
                    input_ids,
                    input_mask,
                    segment_ids,
                    start_position,
                    end_position,
                    example.is_impossible,
                )
            )
            unique_id += 1
    stats.num_features = len(features)
    if stats.truncated_questions:
        logging.warning(
            "%d question(s) longer than max_query_length=%d tokens were truncated: %s%s",
            len(stats.truncated_questions),
            max_query_length,
            ", ".join(stats.truncated_questions[:10]),
            " ..." if len(stats.truncated_questions) > 10 else "",
        )
    return features, stats


def group_features(features: Sequence[SquadFeature]) -> dict[int, list[SquadFeature]]:
    """Features by example index, in window order."""
    grouped = collections.defaultdict(list)
    for feature in features:
        grouped[feature.example_index].append(feature)
    return grouped
