"""CoNLL-2003 NER: the column format in, BERT token-classification features, predictions back out.

Reading (`read_conll`): one word per line, whitespace-separated columns with the tag last (`EU NNP I-NP I-ORG`),
a blank line between sentences, `-DOCSTART-` lines between documents. Tags are chunk tags in IOB1 (the original
release: `I-` opens an entity, `B-` only between two adjacent entities of one type), IOB2 (`B-` opens every
entity) or IOBES; they are kept as written, and the model learns whichever scheme the training file uses.

Features (`convert_sentences`): each word is tokenized on its own; its first sub-token carries the word's label and
the other sub-tokens get label -1 (out of the loss and the metric), as in the BERT paper. A sentence longer than
`max_seq_length - 2` sub-tokens is cut into overlapping *windows* at word boundaries (the next window starts
`window_stride` sub-tokens later); every word is labelled, and later predicted, in exactly one window: the one
where it has the most context on both sides (the maximum-context rule of the original `run_squad.py`).

Back to words (`word_predictions`) and out (`write_predictions`): one label per original word, written as the
input's columns plus the predicted tag, which the original `conlleval` script reads (`conlleval < predictions`).

Example:

    train = read_conll("eng.train")
    labels = label_list(train.sentences)
    features = convert_sentences(train.sentences, tokenizer, labels, max_seq_length=128)
    # ... logits = model.predict(features.model_inputs()) ...
    predicted = word_predictions(features, logits.argmax(-1), labels, train.sentences)
    write_predictions("predictions.txt", train.sentences, predicted)
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Iterable, Sequence

import numpy as np
from absl import logging

from official.nlp.common import text_files
from official.nlp.common.errors import InputError
from official.nlp.common.output_files import write_atomically

DOCSTART = "-DOCSTART-"
IGNORE = -1  # label id of positions outside the loss: [CLS], [SEP], padding, non-first sub-tokens, context words
_TAG = re.compile(r"^(O|[BIES]-\S+)$")
FEATURE_NAMES = ("input_word_ids", "input_mask", "input_type_ids", "label_ids", "sentence_index", "word_index")


@dataclasses.dataclass
class Sentence:
    """One sentence: its words, their tags, every input column of each word (tag included) and where it was read."""

    words: list[str]
    labels: list[str]
    columns: list[list[str]]
    path: str
    lines: list[int]  # 1-based line number of each word

    def where(self, i: int = 0) -> str:
        return f"{self.path}:{self.lines[i]}"


@dataclasses.dataclass
class ConllFile:
    """`sentences` read from `path`, `documents` (`-DOCSTART-` lines) and the bad lines skipped with their
    sentences (only with `skip_bad_rows`)."""

    path: str
    sentences: list[Sentence]
    documents: int
    bad_rows: int = 0


CHUNK_TAGS = "O, B-TYPE, I-TYPE, E-TYPE or S-TYPE"  # the tags whose chunks conlleval finds (IOB1, IOB2, IOBES)


def is_chunk_tag(tag: str) -> bool:
    """Whether `tag` is one of `CHUNK_TAGS`: a tag that is not (`PER`, `B_PER`) never yields an entity."""
    return bool(_TAG.match(tag))


def _check_tag(tag: str, where: str) -> str | None:
    if is_chunk_tag(tag):
        return None
    return f"{where}: tag {tag!r} is not a chunk tag ({CHUNK_TAGS}); the tag must be the last column of each line"


def read_conll(path: str, *, skip_bad_rows: bool = False) -> ConllFile:
    """Reads a CoNLL column file (IOB1, IOB2 or IOBES; `-DOCSTART-` lines mark documents).

    A line with fewer than two columns, with another column count than the file's first word line, or whose last
    column is not a chunk tag raises `InputError` naming the file and line; with `skip_bad_rows` the sentence that
    holds it is left out and counted in `bad_rows` instead.
    """
    sentences: list[Sentence] = []
    documents = bad_rows = 0
    width = None
    current: list[tuple[int, list[str]]] = []
    current_bad = False

    def finish():
        nonlocal current, current_bad
        if current and not current_bad:
            sentences.append(
                Sentence(
                    words=[c[0] for _, c in current],
                    labels=[c[-1] for _, c in current],
                    columns=[c for _, c in current],
                    path=path,
                    lines=[n for n, _ in current],
                )
            )
        current, current_bad = [], False

    try:
        handle = io.StringIO(text_files.read_text(path), newline=None)
    except OSError as e:
        raise InputError(f"cannot read CoNLL file {path!r}: {e.strerror or e}") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            columns = line.split()
            if not columns:
                finish()
                continue
            if columns[0] == DOCSTART:
                finish()
                documents += 1
                continue
            problem = None
            if len(columns) < 2:
                problem = (
                    f"{path}:{number}: malformed CoNLL line {line.rstrip()!r}: expected the word, optional "
                    "feature columns and the tag, separated by spaces"
                )
            elif width is not None and len(columns) != width:
                problem = (
                    f"{path}:{number}: malformed CoNLL line {line.rstrip()!r}: {len(columns)} columns where "
                    f"the file's first word line has {width}"
                )
            else:
                problem = _check_tag(columns[-1], f"{path}:{number}")
            if problem:
                if not skip_bad_rows:
                    raise InputError(problem + " (or pass --skip_bad_rows to leave such sentences out)")
                logging.warning("skipping the sentence: %s", problem)
                bad_rows += 1
                current_bad = True
                continue
            width = width or len(columns)
            current.append((number, columns))
    finish()
    if not sentences:
        raise InputError(
            f"{path}: no sentence found; expected CoNLL columns (word ... tag), a blank line between sentences"
        )
    return ConllFile(path=path, sentences=sentences, documents=documents, bad_rows=bad_rows)


def label_list(sentences: Iterable[Sentence]) -> list[str]:
    """The tags of `sentences`: "O" first, then the others sorted (a stable order for the classifier's outputs)."""
    tags = {tag for s in sentences for tag in s.labels}
    return ["O"] * ("O" in tags) + sorted(tags - {"O"})


def check_labels(
    sentences: Sequence[Sentence],
    labels: Sequence[str],
    *,
    skip_bad_rows: bool = False,
    source: str = "the training file",
) -> tuple[list[Sentence], int]:
    """The sentences whose tags are all in `labels`, and how many were left out (only with `skip_bad_rows`;
    otherwise an unknown tag raises `InputError` with its file and line)."""
    known = set(labels)
    kept, bad = [], 0
    for sentence in sentences:
        unknown = [i for i, tag in enumerate(sentence.labels) if tag not in known]
        if not unknown:
            kept.append(sentence)
            continue
        i = unknown[0]
        message = (
            f"{sentence.where(i)}: unknown label {sentence.labels[i]!r}; the labels come from {source}: "
            f"{', '.join(labels)}"
        )
        if not skip_bad_rows:
            raise InputError(message + " (or pass --skip_bad_rows to leave such sentences out)")
        logging.warning("skipping the sentence: %s", message)
        bad += 1
    return kept, bad


def _windows(lengths: Sequence[int], budget: int, stride: int) -> list[tuple[int, int]]:
    """Word ranges `[start, end)` of at most `budget` sub-tokens (at least one word each), `stride` sub-tokens apart,
    covering every word."""
    windows, start, n = [], 0, len(lengths)
    while True:
        end, used = start, 0
        while end < n and (end == start or used + lengths[end] <= budget):
            used += lengths[end]
            end += 1
        windows.append((start, end))
        if end == n:
            return windows
        moved, nxt = 0, start
        while nxt < end and (nxt == start or moved < stride):
            moved += lengths[nxt]
            nxt += 1
        start = nxt


def _owner(windows: Sequence[tuple[int, int]], word: int) -> int:
    """The window where `word` has the most context on both sides (ties: the longer window, then the first)."""
    best, best_score = -1, None
    for w, (start, end) in enumerate(windows):
        if start <= word < end:
            score = min(word - start, end - 1 - word) + 0.01 * (end - start)
            if best_score is None or score > best_score:
                best, best_score = w, score
    return best


@dataclasses.dataclass
class TaggingFeatures:
    """Model inputs and labels, int32 arrays `[windows, max_seq_length]`: `input_word_ids`, `input_mask`,
    `input_type_ids`, `label_ids` (-1: outside the loss), `word_index` (the word whose first sub-token sits
    there, in the window that predicts it; else -1), and `sentence_index` `[windows]`."""

    arrays: dict[str, np.ndarray]
    num_sentences: int
    truncated_words: int = 0  # single words longer than a window, cut after their first sub-tokens

    def __len__(self) -> int:
        return len(self.arrays["input_word_ids"])

    def model_inputs(self) -> dict[str, np.ndarray]:
        return {k: self.arrays[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}


def convert_sentences(
    sentences: Sequence[Sentence],
    tokenizer,
    labels: Sequence[str] | None,
    max_seq_length: int,
    *,
    window_stride: int | None = None,
) -> TaggingFeatures:
    """Tokenizes every word and packs `[CLS] sub-tokens [SEP]` windows (see the module doc).

    Args:
      sentences: from `read_conll` (their tags checked with `check_labels`).
      tokenizer: a `FullTokenizer` (`tokenize`, `convert_tokens_to_ids`, `vocab`).
      labels: the tag list; a tag's id is its index. None for prediction: every `label_ids` is -1 (the words
        still get their `word_index`).
      max_seq_length: tokens per window, `[CLS]` and `[SEP]` included.
      window_stride: sub-tokens between the starts of two windows of one long sentence (default: half a window).
    """
    if max_seq_length < 3:
        raise InputError(f"--max_seq_length={max_seq_length} leaves no room for a word next to [CLS] and [SEP]")
    budget = max_seq_length - 2
    stride = window_stride or max(budget // 2, 1)
    if stride < 1 or stride > budget:
        raise InputError(f"window stride {stride} must be between 1 and max_seq_length - 2 = {budget}")
    label_id = {tag: i for i, tag in enumerate(labels or ())}
    cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    unk = tokenizer.convert_tokens_to_ids(["[UNK]"])[0]
    rows: dict[str, list] = {name: [] for name in FEATURE_NAMES}
    truncated = 0
    for s_index, sentence in enumerate(sentences):
        # A word that tokenizes to nothing (only control characters) still needs a position for its label.
        pieces = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(word)) or [unk] for word in sentence.words]
        lengths = [len(p) for p in pieces]
        windows = _windows(lengths, budget, stride)
        owner = [_owner(windows, i) for i in range(len(pieces))]
        for w, (start, end) in enumerate(windows):
            ids, label_ids, word_index = [cls_id], [IGNORE], [-1]
            for i in range(start, end):
                piece = pieces[i][: budget - (len(ids) - 1)]
                truncated += len(piece) < len(pieces[i])
                mine = owner[i] == w
                ids += piece
                tag = label_id[sentence.labels[i]] if mine and labels is not None else IGNORE
                label_ids += [tag] + [IGNORE] * (len(piece) - 1)
                word_index += [i if mine else -1] + [-1] * (len(piece) - 1)
            ids.append(sep_id)
            label_ids.append(IGNORE)
            word_index.append(-1)
            pad = max_seq_length - len(ids)
            rows["input_word_ids"].append(ids + [0] * pad)
            rows["input_mask"].append([1] * len(ids) + [0] * pad)
            rows["input_type_ids"].append([0] * max_seq_length)
            rows["label_ids"].append(label_ids + [IGNORE] * pad)
            rows["word_index"].append(word_index + [-1] * pad)
            rows["sentence_index"].append(s_index)
    arrays = {
        name: np.asarray(values, dtype=np.int32).reshape((-1, max_seq_length) if name != "sentence_index" else (-1,))
        for name, values in rows.items()
    }
    if truncated:
        logging.warning(
            "%d word(s) had more sub-tokens than fit in --max_seq_length=%d and were cut", truncated, max_seq_length
        )
    return TaggingFeatures(arrays=arrays, num_sentences=len(sentences), truncated_words=truncated)


def word_predictions(
    features: TaggingFeatures | dict, predicted_ids: np.ndarray, labels: Sequence[str], sentences: Sequence[Sentence]
) -> list[list[str]]:
    """One predicted tag per original word: the prediction at the word's first sub-token, in its own window.

    Args:
      features: the `TaggingFeatures` (or their arrays, e.g. read back from a cache) the predictions were made on.
      predicted_ids: int `[windows, max_seq_length]` (e.g. `logits.argmax(-1)`), in the order of `features`.
      labels: the tag list the model was trained with.
      sentences: the sentences `features` were made from.
    """
    arrays = features.arrays if isinstance(features, TaggingFeatures) else features
    predicted_ids = np.asarray(predicted_ids)
    if predicted_ids.shape != arrays["word_index"].shape:
        raise ValueError(
            f"predictions of shape {predicted_ids.shape} do not match the features' {arrays['word_index'].shape}"
        )
    result: list[list[str | None]] = [[None] * len(s.words) for s in sentences]
    rows, cols = np.nonzero(arrays["word_index"] >= 0)
    for r, c in zip(rows, cols):
        result[arrays["sentence_index"][r]][arrays["word_index"][r, c]] = labels[predicted_ids[r, c]]
    for sentence, tags in zip(sentences, result):
        if None in tags:
            raise ValueError(
                f"{sentence.where()}: the features do not cover every word; were they made from other sentences?"
            )
    return result


def write_predictions(path: str, sentences: Sequence[Sentence], predictions: Sequence[Sequence[str]]) -> None:
    """Writes each word's input columns plus its predicted tag, a blank line after each sentence: the input of
    the original `conlleval` (which takes the last two columns as gold and guess). `-DOCSTART-` lines are left
    out, so that conlleval's token accuracy counts words only."""
    if len(sentences) != len(predictions):
        raise ValueError(f"{len(sentences)} sentences but {len(predictions)} predictions")
    with write_atomically(path) as f:
        for sentence, tags in zip(sentences, predictions):
            if len(tags) != len(sentence.words):
                raise ValueError(f"{sentence.where()}: {len(sentence.words)} words but {len(tags)} predictions")
            for columns, tag in zip(sentence.columns, tags):
                f.write(" ".join([*columns, tag]) + "\n")
            f.write("\n")
