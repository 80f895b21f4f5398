"""Multi-label classification data: each example has a set of labels (none, one or several).

A labels field is a comma-separated list of label names or ids (0-based indexes into the label set), as in
GoEmotions' `4,27`; in JSON lines also a list (`["joy", "love"]` or `[4, 27]`), and in any file a list written as
text (`["joy", "love"]`, `['joy', 'love']`). An entry that is a label name is that label; else a whole number is an
id, unless a label name itself looks like a whole number (star ratings, `--labels=1,2,3,4,5`): then an entry must
be a name, since `0` could be a rating of its own or the id of the rating `1`. An unknown name, an id out of range,
an empty entry (`4,,27`) and, unless allowed, an empty field are bad rows (`classifier_examples.BadRowError`: the
reader names the file and line). A training set in which no example has a label is refused
(`check_some_labelled`): a classifier learns nothing from it.

- `GoEmotionsProcessor`: GoEmotions (Demszky et al., 2020) as google-research releases it: `train.tsv`, `dev.tsv`,
  `test.tsv` without a header, columns text, label ids, comment id; its 28 labels (27 emotions and neutral) in
  the order of its `emotions.txt`.
- `MultiLabelGenericProcessor`: any TSV, CSV or JSON-lines file with the column names of
  `classifier_examples.GenericProcessor`.

Example:

>>> parse_label_set("4,27", GOEMOTIONS_LABELS)
('approval', 'neutral')
>>> parse_label_set("joy, love", GOEMOTIONS_LABELS)
('joy', 'love')
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence

from absl import logging

from official.nlp.common import input_files, text_files
from official.nlp.common.errors import InputError
from official.nlp.data.classifier_examples import TEST, BadRowError, DataProcessor, EvalSet, GenericProcessor

# The metrics of a multi-label task (`metrics.multi_label`); the first picks the best checkpoint.
MULTI_LABEL_METRICS = ("macro_f1", "micro_f1")

GOEMOTIONS_LABELS = (
    "admiration",
    "amusement",
    "anger",
    "annoyance",
    "approval",
    "caring",
    "confusion",
    "curiosity",
    "desire",
    "disappointment",
    "disapproval",
    "disgust",
    "embarrassment",
    "excitement",
    "fear",
    "gratitude",
    "grief",
    "joy",
    "love",
    "nervousness",
    "optimism",
    "pride",
    "realization",
    "relief",
    "remorse",
    "sadness",
    "surprise",
    "neutral",
)


def _entries(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
            raise BadRowError(f"labels {value!r}: a list of label names or ids is expected")
        entries = [str(v).strip() for v in value]
    else:
        text = str(value).strip()
        listed = _list_in_text(text)
        if listed is not None:
            return _entries(listed)
        entries = [e.strip() for e in text.split(",")] if text else []
    if any(not e for e in entries):
        raise BadRowError(f"empty label in {value!r}")
    return entries


def _list_in_text(text: str) -> list | None:
    """The list a text field holds when it is one written as JSON or as Python prints it (`['joy', 'love']`)."""
    if not (text.startswith("[") and text.endswith("]")):
        return None
    for candidate in (text, text.replace("'", '"')):
        try:
            parsed = json.loads(candidate)
        except ValueError:
            continue
        return parsed if isinstance(parsed, list) else None
    return None


def _looks_like_a_number(name: str) -> bool:
    return re.fullmatch(r"[+-]?[0-9]+", name.strip()) is not None


def parse_label_set(value, labels: Sequence[str], *, allow_empty: bool = False) -> tuple[str, ...]:
    """The label names of one labels field (see the module docstring), in the order of `labels`; raises
    `BadRowError` for what cannot be read."""
    found = set()
    names_only = any(_looks_like_a_number(name) for name in labels)
    for entry in _entries(value):
        if entry in labels:
            found.add(entry)
        elif names_only:
            shown = ", ".join(labels[:30]) + (", ..." if len(labels) > 30 else "")
            raise BadRowError(
                f"unknown label {entry!r}; the labels are {shown}, and since they look like numbers a value is read "
                "as a label name, never as an id"
            )
        elif entry.isascii() and entry.isdigit():
            if int(entry) >= len(labels):
                raise BadRowError(
                    f"label id {entry} is out of range: there are {len(labels)} labels (ids 0 to {len(labels) - 1})"
                )
            found.add(labels[int(entry)])
        else:
            shown = ", ".join(labels[:30]) + (", ..." if len(labels) > 30 else "")
            raise BadRowError(f"unknown label {entry!r}; the labels are {shown} (or their ids 0 to {len(labels) - 1})")
    if not found and not allow_empty:
        raise BadRowError("no label (an empty labels field); --allow_empty_labels accepts examples without labels")
    return tuple(label for label in labels if label in found)


def check_some_labelled(examples, path: str, *, truncated: bool = False) -> None:
    """Refuses a training set (`examples` read from `path`) in which no example has a label: with
    `--allow_empty_labels` every field may be empty, and a classifier trained on it only learns to predict nothing.
    `truncated`: the examples are the first N of the file (`--max_train_examples`)."""
    if examples and not any(example.label for example in examples):
        which = (
            f"the first {len(examples)} examples (--max_train_examples)"
            if truncated
            else f"its {len(examples)} examples"
        )
        raise InputError(
            f"{path}: none of {which} has a label (every labels field is empty), so there is nothing to learn; "
            "check --label_column and the file, or add labelled examples"
        )


class GoEmotionsProcessor(DataProcessor):
    """GoEmotions: `text, label ids, comment id` without a header (see the module docstring). Checks the label
    names against `emotions.txt` where `--data_dir` has one."""

    name = "goemotions"
    labels = GOEMOTIONS_LABELS
    metrics = MULTI_LABEL_METRICS
    multi_label = True
    has_header = False
    min_columns = 2
    test_min_columns = 1
    test_sets = (EvalSet("test.tsv", submission="goemotions.tsv"),)
    allow_empty = False

    def files(self, data_dir: str) -> dict[str, list[EvalSet]]:
        names_file = os.path.join(data_dir, "emotions.txt")
        if input_files.isfile(names_file):
            names = tuple(text_files.read_text(names_file).split())
            if names != self.labels:
                raise InputError(
                    f"{names_file} lists other labels than GoEmotions' 28 ({', '.join(names[:5])}, ...); "
                    "use --task_name=generic --multi_label with --labels for another label set"
                )
        return super().files(data_dir)

    def row(self, c, split, index):
        guid = c[2] if len(c) > 2 else f"{split}-{index}"
        return guid, c[0], None, (None if split == TEST else c[1])

    def check_label(self, label) -> tuple[str, ...]:
        return parse_label_set(label, self.labels, allow_empty=self.allow_empty)


class MultiLabelGenericProcessor(GenericProcessor):
    """`classifier_examples.GenericProcessor` whose label column holds label sets; `labels` default to the sorted names
    found in the training file (numbers in numeric order). `allow_empty`: an example may have no label."""

    multi_label = True

    def __init__(self, *, allow_empty: bool = False, **kwargs):
        if kwargs.get("regression"):
            raise InputError("--multi_label and --regression exclude each other")
        super().__init__(**kwargs)
        self.allow_empty = allow_empty
        self.metrics = MULTI_LABEL_METRICS

    def infer_labels(self, train_path: str, *, skip_bad_rows: bool = False) -> None:
        if self.labels:
            return
        found = set()
        for _, record in self._records(train_path):
            if isinstance(record, BadRowError):
                continue  # reading the file reports it
            try:
                found.update(_entries(record.get(self.label_column)))
            except BadRowError:
                continue
        if not found:
            raise InputError(f"{train_path}: no label in column {self.label_column!r}")
        numbers = sorted((name for name in found if name.isdigit()), key=int)
        self.labels = tuple(numbers + sorted(name for name in found if not name.isdigit()))
        logging.info("Labels from %s: %s", train_path, list(self.labels))

    def check_label(self, label) -> tuple[str, ...]:
        return parse_label_set(label, self.labels, allow_empty=self.allow_empty)
