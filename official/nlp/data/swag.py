"""SWAG (Situations With Adversarial Generations): reading and multiple-choice features `[examples, 4, seq]`.

Two layouts are read, chosen by the file name:

- the original CSV of rowanz/swagaf (`train.csv`, `val.csv`, `test.csv`): a header with `video-id`, `fold-ind`,
  `startphrase`, `sent1`, `sent2`, `gold-source`, `ending0`..`ending3` and `label` (absent in `test.csv`), often
  after an unnamed index column;
- JSON lines (`.jsonl`/`.json`), one object per line with `sent1`, `sent2`, `ending0`..`ending3` and `label`, the
  layout of Hugging Face's SWAG sample.

Each choice is the pair `[CLS] sent1 [SEP] sent2 + " " + ending_i [SEP]`, as in the BERT paper (the context, then
the start of the second sentence completed by the candidate ending), truncated as the original truncates pairs.

Example:

    examples = read_swag("val.csv").examples
    features = convert_swag_examples(examples, tokenizer, max_seq_length=128)
    features.arrays["input_word_ids"].shape    # (len(examples), 4, 128)
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from collections.abc import Iterator, Sequence

import numpy as np
from absl import logging

from official.nlp.common import text_files
from official.nlp.common.errors import InputError
from official.nlp.modeling.encoder import INPUT_NAMES
from official.nlp.tokenizers.packing import removal_counts

NUM_CHOICES = 4
ENDINGS = tuple(f"ending{i}" for i in range(NUM_CHOICES))


@dataclasses.dataclass
class SwagExample:
    """One question: `context` (sent1), `start` (sent2, the beginning of the sentence to complete), the four
    `endings`, the gold `label` (None in the test set) and where it was read (`path:line`)."""

    context: str
    start: str
    endings: list[str]
    label: int | None
    where: str


@dataclasses.dataclass
class SwagFile:
    """`examples` read from `path`; `bad_rows` were skipped (only with `skip_bad_rows`)."""

    path: str
    examples: list[SwagExample]
    bad_rows: int = 0


def _csv_rows(path: str, handle) -> Iterator[tuple[int, dict | None, str | None]]:
    reader = csv.reader(handle)
    header = next(reader, None)
    if header is None:
        return
    missing = [name for name in ("sent1", "sent2", *ENDINGS) if name not in header]
    if missing:
        raise InputError(
            f"{path}:1: the SWAG CSV header lacks {', '.join(missing)}; expected video-id, fold-ind, "
            "startphrase, sent1, sent2, gold-source, ending0..ending3, label"
        )
    for row in reader:
        line = reader.line_num
        if len(row) != len(header):
            yield line, None, f"{len(row)} columns where the header has {len(header)}"
            continue
        yield line, dict(zip(header, row)), None


def _json_rows(path: str, handle) -> Iterator[tuple[int, dict | None, str | None]]:
    for line, text in enumerate(handle, start=1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            yield line, None, f"not a JSON object ({e.msg})"
            continue
        if not isinstance(row, dict):
            yield line, None, "not a JSON object"
            continue
        yield line, row, None


def _example(row: dict, where: str, labelled: bool) -> tuple[SwagExample | None, str | None]:
    for name in ("sent1", *ENDINGS):
        value = row.get(name)
        if value is None or not str(value).strip():
            what = "missing ending" if name.startswith("ending") else "empty text"
            return None, f"{what}: {name!r} is empty or absent"
    label = row.get("label")
    if labelled:
        if label is None or str(label).strip() == "":
            return None, "missing label"
        try:
            label = int(str(label).strip())
        except ValueError:
            label = None
        if label not in range(NUM_CHOICES):
            return None, f"unknown label {row.get('label')!r}; expected 0, 1, 2 or 3"
    else:
        label = None
    return SwagExample(
        context=str(row["sent1"]).strip(),
        start=str(row.get("sent2") or "").strip(),
        endings=[str(row[name]).strip() for name in ENDINGS],
        label=label,
        where=where,
    ), None


def read_swag(path: str, *, skip_bad_rows: bool = False, labelled: bool | None = None) -> SwagFile:
    """Reads a SWAG CSV or JSON-lines file (see the module doc).

    Args:
      path: the file; `.jsonl`/`.json` is JSON lines, anything else the original CSV.
      skip_bad_rows: skip and count rows with too few columns, a missing ending, an empty context or an unknown
        label, instead of raising `InputError` with the file and line.
      labelled: whether rows must carry a label in 0..3 (default: the CSV has a `label` column, or it is JSON);
        False reads no label (prediction: a row's label, if any, is not looked at).
    """
    is_json = os.path.splitext(path)[1].lower() in (".jsonl", ".json")
    try:
        handle = io.StringIO(text_files.read_text(path), newline="" if not is_json else None)
    except OSError as e:
        raise InputError(f"cannot read SWAG file {path!r}: {e.strerror or e}") from None
    examples, bad = [], 0
    with handle:
        rows = _json_rows(path, handle) if is_json else _csv_rows(path, handle)
        for line, row, problem in rows:
            if row is not None:
                if labelled is None:
                    labelled = is_json or "label" in row
                example, problem = _example(row, f"{path}:{line}", labelled)
            if problem:
                message = f"{path}:{line}: {problem}"
                if not skip_bad_rows:
                    raise InputError(message + " (or pass --skip_bad_rows to skip such rows)")
                logging.warning("skipping: %s", message)
                bad += 1
                continue
            examples.append(example)
    if not examples:
        raise InputError(f"{path}: no SWAG example found")
    return SwagFile(path=path, examples=examples, bad_rows=bad)


@dataclasses.dataclass
class MultipleChoiceFeatures:
    """int32 `input_word_ids`, `input_mask`, `input_type_ids` `[examples, 4, seq]` and `label` `[examples]` (-1
    when unlabelled)."""

    arrays: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.arrays["label"])

    def model_inputs(self) -> dict[str, np.ndarray]:
        return {k: self.arrays[k] for k in INPUT_NAMES}


def _pack(tokens_a: list[int], tokens_b: list[int], seq: int, cls_id: int, sep_id: int) -> tuple[list, list]:
    if not tokens_b:  # as the original (`if tokens_b:`) and the in-graph packer the export uses: no second segment
        a = tokens_a[: seq - 2]
        return [cls_id, *a, sep_id], [0] * (len(a) + 2)
    cut_a, cut_b = removal_counts(len(tokens_a), len(tokens_b), seq - 3)
    a, b = tokens_a[: len(tokens_a) - cut_a], tokens_b[: len(tokens_b) - cut_b]
    ids = [cls_id, *a, sep_id, *b, sep_id]
    types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return ids, types


def convert_swag_examples(examples: Sequence[SwagExample], tokenizer, max_seq_length: int) -> MultipleChoiceFeatures:
    """`[CLS] context [SEP] start ending_i [SEP]` for each of the four endings, padded to `max_seq_length`."""
    if max_seq_length < 4:
        raise InputError(f"--max_seq_length={max_seq_length} is too short for [CLS] A [SEP] B [SEP]")
    cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    n = len(examples)
    arrays = {name: np.zeros((n, NUM_CHOICES, max_seq_length), np.int32) for name in INPUT_NAMES}
    arrays["label"] = np.full((n,), -1, np.int32)
    truncated = 0
    for e, example in enumerate(examples):
        context = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(example.context))
        for c, ending in enumerate(example.endings):
            choice = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(f"{example.start} {ending}".strip()))
            truncated += len(context) + len(choice) > max_seq_length - (3 if choice else 2)
            ids, types = _pack(context, choice, max_seq_length, cls_id, sep_id)
            arrays["input_word_ids"][e, c, : len(ids)] = ids
            arrays["input_mask"][e, c, : len(ids)] = 1
            arrays["input_type_ids"][e, c, : len(ids)] = types
        if example.label is not None:
            arrays["label"][e] = example.label
    if truncated:
        logging.info(
            "%d of %d choices were truncated to --max_seq_length=%d", truncated, n * NUM_CHOICES, max_seq_length
        )
    return MultipleChoiceFeatures(arrays)
