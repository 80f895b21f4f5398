"""SQuAD v1.1 / v2.0 JSON: reading and checking a whole file into examples (`read_squad_examples`).

The semantics are those of google-research/bert `run_squad.py`: contexts are split on whitespace into *words*; each
character maps to its word (`char_to_word_offset`), so that an answer's characters, and later a predicted token
span, map back to words of the original text. Windowed features are built from the examples by
`squad.features`.

Unlike the original, the whole file is read and checked before any feature is built. A structural error (bad
JSON, a missing field, a wrong type) raises `InputError` naming the question id or article and paragraph. Data
problems are counted and listed with the question id in `ReadReport`, never dropped in silence: a training
answer whose text is not in the words its `answer_start` covers (left out of training by the original's rule, see
`_answer_words`), and an empty context. Questions longer than `max_query_length` are counted when features are
built (`squad.features.FeatureStats`).

Example:

    examples, report = read_squad_examples("dev-v1.1.json", is_training=False)
"""

from __future__ import annotations

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


def examples_from_strings(pairs: Iterable[tuple[str, str]]) -> list[SquadExample]:
    """Prediction examples from `(question, context)` strings; ids are their positions as strings."""
    examples = []
    for i, (question, context) in enumerate(pairs):
        doc_tokens, _ = split_context(context)
        examples.append(SquadExample(str(i), question, doc_tokens, context))
    return examples
