"""SQuAD v1.1 / v2.0: reading the JSON file and turning questions into windowed BERT features.

The semantics are those of google-research/bert `run_squad.py`:

- contexts are split on whitespace into *words*; each character maps to its word (`char_to_word_offset`), and
  each word to its WordPiece tokens, so that a predicted token span maps back to words of the original text;
- a training answer is moved to the shortest run of tokens that tokenizes exactly like the answer text
  ("improved answer span": "(1895-1943)." holds the answer "1895", whose tokens sit inside the word);
- a context longer than the window is cut into windows that start `doc_stride` tokens apart; a token in several
  windows is marked as having its *maximum context* in the one where it has the most words on its shorter side,
  because a token near a window's edge is predicted with little context;
- an unanswerable question, or an answer outside a training window, points at `[CLS]` (position 0).

Unlike the original, the whole file is read and checked before any feature is built. A structural error (bad
JSON, a missing field, a wrong type) raises `InputError` naming the question id or article and paragraph. Data
problems are counted and listed with the question id in `ReadReport`, never dropped in silence: a training
answer whose text is not in the words its `answer_start` covers (left out of training by the original's rule, see
`_answer_words`), an empty context, and questions longer than `max_query_length` (truncated when features are
built).

Example:

    examples, report = read_squad_examples("dev-v1.1.json", is_training=False)
    tokenizer = FullTokenizer("vocab.txt", do_lower_case=True)
    features, stats = convert_examples_to_features(examples, tokenizer, max_seq_length=384, doc_stride=128,
                                                   max_query_length=64, is_training=False)
"""

from __future__ import annotations

import collections
import dataclasses
import json
from collections.abc import Iterable, Sequence

import tensorflow as tf
from absl import logging

from official.nlp.common import text_files
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.tokenizers.tokenization import whitespace_tokenize


@dataclasses.dataclass
class SquadExample:
    """One question on one context.

    `start_position` / `end_position` are *word* indexes into `doc_tokens` (training only; -1 when unanswerable).
    `answers` holds every reference answer text (empty for an unanswerable question or a file without answers).
    """

    qas_id: str
    question_text: str
    doc_tokens: list[str]
    context_text: str
    orig_answer_text: str | None = None
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False
    answers: list[str] = dataclasses.field(default_factory=list)


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
class ReadReport:
    """Problems found while reading, each `(question id, detail)`; `answer_mismatch` examples left training."""

    num_questions: int = 0
    answer_mismatch: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    empty_context: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    _WHAT = {
        "answer_mismatch": "left out of training because the answer text is not in the words answer_start "
        "points at (the original run_squad.py's rule)",
        "empty_context": "with an empty context",
    }

    def log(self, path: str) -> None:
        logging.info("%s: %d questions", path, self.num_questions)
        for name, what in self._WHAT.items():
            items = getattr(self, name)
            if items:
                logging.warning(
                    "%s: %d of %d question(s) %s: %s", path, len(items), self.num_questions, what, self.examples(name)
                )

    def examples(self, name: str, limit: int = 10) -> str:
        """The first `limit` problems of kind `name`, as `id: detail; ...`."""
        items = getattr(self, name)
        shown = "; ".join(f"{qid}: {detail}" for qid, detail in items[:limit])
        return shown + (" ..." if len(items) > limit else "")

    def why_none_left(self, path: str) -> str:
        """Why reading `path` for training left no question: the counts, each with its first cases."""
        reasons = [
            f"{len(getattr(self, name))} {what} (e.g. {self.examples(name, 3)})"
            for name, what in self._WHAT.items()
            if getattr(self, name)
        ]
        return f"{path}: none of its {self.num_questions} question(s) can train: " + "; ".join(reasons)


@dataclasses.dataclass
class FeatureStats:
    """Counts from feature building: truncated questions (ids listed), windows, answers outside their window."""

    num_features: int = 0
    truncated_questions: list[str] = dataclasses.field(default_factory=list)
    out_of_window: int = 0


UNIQUE_ID_START = 1000000000


def _is_whitespace(c: str) -> bool:
    # U+202F (narrow no-break space) separates words in SQuAD but is not `str.isspace` in the original's sense.
    return c in " \t\r\n" or ord(c) == 0x202F


def split_context(context: str) -> tuple[list[str], list[int]]:
    """Whitespace words of `context` and, for every character, the index of its word (spaces: the word before)."""
    doc_tokens: list[str] = []
    char_to_word_offset: list[int] = []
    prev_is_whitespace = True
    for c in context:
        if _is_whitespace(c):
            prev_is_whitespace = True
        else:
            if prev_is_whitespace:
                doc_tokens.append(c)
            else:
                doc_tokens[-1] += c
            prev_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def _answer_words(
    text: str, start: int, doc_tokens: Sequence[str], char_to_word_offset: Sequence[int]
) -> tuple[int, int] | None:
    """`(first word, last word)` of a training answer, or None where the original leaves the question out.

    The original's rule: take the words that the characters `start` and `start + len(text) - 1` fall in, join
    them with single spaces, and keep the answer if its own whitespace words, joined the same way, occur in that
    text. So an `answer_start` one character off still finds the answer, and so does `New York` in a context
    that has `New\nYork`; an answer whose no-break space sits inside one context word (the original splits
    contexts on plain whitespace but answers on all of `str.split`'s) does not. An empty answer, or one whose
    characters fall outside the context, is left out too (the original would keep the first and fail on the
    second).
    """
    cleaned = " ".join(whitespace_tokenize(text))
    last = start + len(text) - 1
    if not cleaned or start < 0 or last >= len(char_to_word_offset):
        return None
    first_word, last_word = char_to_word_offset[start], char_to_word_offset[last]
    if first_word < 0 or last_word < first_word:
        return None
    if " ".join(doc_tokens[first_word : last_word + 1]).find(cleaned) == -1:
        return None
    return first_word, last_word


def _field(record: dict, name: str, kind: type, where: str):
    if not isinstance(record, dict) or name not in record:
        raise InputError(f"{where}: missing field '{name}'; every SQuAD record needs it")
    value = record[name]
    if not isinstance(value, kind):
        expected = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise InputError(f"{where}: field '{name}' should be a {expected}, got {type(value).__name__}")
    return value


def read_squad_examples(
    input_file: str, *, is_training: bool, version_2_with_negative: bool = False
) -> tuple[list[SquadExample], ReadReport]:
    """Reads and checks a whole SQuAD JSON file before anything is built from it.

    Raises `InputError` for a file that is not SQuAD JSON, a missing or mistyped field (naming the question id),
    a training question without an answer (v1.1), and `is_impossible` in a file read without
    `version_2_with_negative`.
    """
    try:
        data = json.loads(text_files.read_text(input_file))
    except json.JSONDecodeError as e:
        raise InputError(
            f"{input_file}: not valid JSON ({e}); pass a SQuAD file to --train_file/--predict_file"
        ) from None
    except (tf.errors.NotFoundError, MissingInputError):
        raise InputError(f"{input_file}: file not found") from None
    articles = _field(data, "data", list, input_file)
    examples: list[SquadExample] = []
    report = ReadReport()
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(_field(article, "paragraphs", list, f"{input_file}: data[{a}]")):
            where = f"{input_file}: data[{a}].paragraphs[{p}]"
            context = _field(paragraph, "context", str, where)
            doc_tokens, char_to_word_offset = split_context(context)
            for q, qa in enumerate(_field(paragraph, "qas", list, where)):
                qas_id = str(_field(qa, "id", (str, int), f"{where}.qas[{q}]"))
                qwhere = f"{input_file}: question id {qas_id}"
                question = _field(qa, "question", str, qwhere)
                report.num_questions += 1
                is_impossible = bool(qa.get("is_impossible", False))
                if is_impossible and not version_2_with_negative:
                    raise InputError(
                        f"{qwhere}: is_impossible is set; this is a SQuAD v2.0 file, pass --version_2_with_negative"
                    )
                answers = qa.get("answers", [])
                if not isinstance(answers, list):
                    raise InputError(f"{qwhere}: field 'answers' should be a list")
                texts = [_field(ans, "text", str, qwhere) for ans in answers]
                for ans in answers:
                    _field(ans, "answer_start", int, qwhere)
                if not doc_tokens:
                    report.empty_context.append((qas_id, where))
                    if is_training:
                        continue
                example = SquadExample(
                    qas_id, question, doc_tokens, context, is_impossible=is_impossible, answers=texts
                )
                if is_training:
                    if is_impossible:
                        example.start_position = example.end_position = -1
                        example.orig_answer_text = ""
                    else:
                        if not answers:
                            raise InputError(
                                f"{qwhere}: a training question needs an answer (or is_impossible "
                                "with --version_2_with_negative)"
                            )
                        text, start = answers[0]["text"], answers[0]["answer_start"]
                        span = _answer_words(text, start, doc_tokens, char_to_word_offset)
                        if span is None:
                            found = context.find(text) if text.strip() else -1
                            report.answer_mismatch.append(
                                (
                                    qas_id,
                                    f"answer_start={start} does not point at {text!r}"
                                    + (f" (the text is at {found})" if found >= 0 else " (not in the context)"),
                                )
                            )
                            continue
                        example.orig_answer_text = text
                        example.start_position, example.end_position = span
                examples.append(example)
    if not report.num_questions:
        raise InputError(f"{input_file}: no questions found")
    report.log(input_file)
    return examples, report


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


def examples_from_strings(pairs: Iterable[tuple[str, str]]) -> list[SquadExample]:
    """Prediction examples from `(question, context)` strings; ids are their positions as strings."""
    examples = []
    for i, (question, context) in enumerate(pairs):
        doc_tokens, _ = split_context(context)
        examples.append(SquadExample(str(i), question, doc_tokens, context))
    return examples


def group_features(features: Sequence[SquadFeature]) -> dict[int, list[SquadFeature]]:
    """Features by example index, in window order."""
    grouped = collections.defaultdict(list)
    for feature in features:
        grouped[feature.example_index].append(feature)
    return grouped
