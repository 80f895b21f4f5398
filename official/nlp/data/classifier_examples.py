"""Classification examples read from files: the example, the reader of a task's files with its row checks, and the
reader of any TSV, CSV or JSON-lines file.

`DataProcessor` reads one task's files into `InputExample`s; it is the base of GLUE's processors (`glue`), of the
multi-label tasks (`multi_label`) and of `GenericProcessor`, which reads any TSV, CSV (with a header row) or
JSON-lines file given the names of its text and label columns.

A row that cannot be an example is reported with its file and line: too few columns, a label outside the task's
label set, an empty first text. It is an error (`BadRowError`), unless `skip_bad_rows` is set: then the row is
skipped and counted (`ReadResult.bad_rows`). An empty second text is an example without a second segment.

A label of a single-label file that is a set of labels (a JSON list, or comma-separated names the file also has on
their own: `admiration,gratitude`) is multi-label data read in the wrong mode, where each combination would become
a class of its own: it stops the job (`LabelSetError`, not skipped by `skip_bad_rows`), naming the file, the line
and `--multi_label`.

Example:

    processor = GenericProcessor(text_a_column="review", label_column="stars", file_format="csv")
    processor.infer_labels("/data/reviews/train.csv")
    train = processor.read("/data/reviews/train.csv", TRAIN)
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from collections.abc import Iterator, Sequence

from absl import logging

from official.nlp.common import input_files, text_files
from official.nlp.common.errors import InputError

TRAIN, DEV, TEST = "train", "dev", "test"


class BadRowError(InputError):
    """A row that cannot be an example; the message names the file and line."""


class LabelSetError(InputError):
    """A single-label task's label that is a set of labels: the file is multi-label data (`--multi_label`). Not a
    bad row to skip: skipping every multi-label row would train on what is left, silently."""


def label_set_parts(value, names) -> list[str] | None:
    """The labels of `value` when it is a set of labels rather than one: a list (JSON lines), or text that splits
    at commas into two or more of `names` (the labels the file or `--labels` has on their own); else None."""
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("[") and text.endswith("]"):  # a list written as text: ["a", "b"] or ['a', 'b']
        try:
            parsed = json.loads(text.replace("'", '"'))
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return [str(v) for v in parsed]
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > 1 and all(part in names for part in parts):
        return parts
    return None


def label_set_message(value, parts: list[str]) -> str:
    shown = json.dumps(value) if isinstance(value, list) else repr(str(value).strip())
    return (
        f"label {shown} is a set of labels ({', '.join(parts) or 'none'}), and this task reads one label per "
        "example: multi-label data trained this way makes each combination a class of its own. Add --multi_label "
        "(with --task_name=generic) to read label sets"
    )


@dataclasses.dataclass(frozen=True)
class InputExample:
    """One example: `guid` is the test set's index column where there is one (the submission needs it)."""

    guid: str
    text_a: str
    text_b: str | None = None
    label: str | float | tuple[str, ...] | None = None  # a tuple of names for multi-label data (`data.multi_label`)


@dataclasses.dataclass
class ReadResult:
    examples: list[InputExample]
    bad_rows: int = 0


@dataclasses.dataclass(frozen=True)
class EvalSet:
    """One file of a split: its name in metrics (`""` for the main dev set) and submission file name."""

    file: str
    suffix: str = ""
    submission: str | None = None


class DataProcessor:
    """Reads one task's files. Subclasses set the layout; `labels` is None for regression."""

    name: str = ""
    labels: tuple[str, ...] | None = ("0", "1")
    metrics: tuple[str, ...] = ("accuracy",)  # the first picks the best checkpoint
    multi_label: bool = False  # labels are sets of names (`data.multi_label`)
    detects_label_sets: bool = False  # refuse a label that is a set of labels (`LabelSetError`)
    min_columns: int = 2
    has_header: bool = True
    train_file: str | None = "train.tsv"
    dev_sets: tuple[EvalSet, ...] = (EvalSet("dev.tsv"),)
    test_sets: tuple[EvalSet, ...] = ()
    test_min_columns: int = 2

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    # ---- layout ----
    def row(self, columns: list[str], split: str, index: int) -> tuple[str, str, str | None, str | None]:
        """`(guid, text_a, text_b, label)` of one row of `split` (label None in the test split)."""
        raise NotImplementedError

    # ---- reading ----
    def files(self, data_dir: str) -> dict[str, list[EvalSet]]:
        """The files of each split in `data_dir` (test files only where they exist)."""
        found = {
            TRAIN: [EvalSet(os.path.join(data_dir, self.train_file))] if self.train_file else [],
            DEV: [dataclasses.replace(s, file=os.path.join(data_dir, s.file)) for s in self.dev_sets],
            TEST: [dataclasses.replace(s, file=os.path.join(data_dir, s.file)) for s in self.test_sets],
        }
        return found

    def _rows(self, path: str) -> Iterator[tuple[int, list[str]]]:
        if not input_files.isfile(path):
            raise InputError(
                f"{self.name}: {path} does not exist; --data_dir must hold the task's GLUE files "
                f"({', '.join(self._file_names())})"
            )
        # read_text drops the byte-order mark the MRPC files start with, which would become part of the first
        # column, and names the line and likely encoding of a file that is not UTF-8.
        with io.StringIO(text_files.read_text(path), newline="") as f:
            for number, line in enumerate(f, start=1):
                line = line.rstrip("\r\n")
                if number == 1 and self.header_in(path):
                    continue
                if not line.strip():
                    continue
                yield number, line.split("\t")

    def header_in(self, path: str) -> bool:
        return self.has_header

    def _file_names(self) -> list[str]:
        return [n for n in [self.train_file, *(s.file for s in self.dev_sets), *(s.file for s in self.test_sets)] if n]

    def read(self, path: str, split: str = DEV, *, skip_bad_rows: bool = False) -> ReadResult:
        """The examples of one file of `split`, checking every row (see the module docstring)."""
        examples, bad = [], 0
        needed = self.test_min_columns if split == TEST else self.min_columns
        for index, (number, columns) in enumerate(self._rows(path)):
            try:
                if len(columns) < needed:
                    raise BadRowError(f"{len(columns)} column(s), {self.name} needs at least {needed}")
                examples.append(self.example(*self.row(columns, split, index), split))
            except BadRowError as e:
                message = f"{path}:{number}: {e}"
                if not skip_bad_rows:
                    raise BadRowError(f"{message} (--skip_bad_rows skips and counts such rows)") from None
                logging.warning("Skipping %s", message)
                bad += 1
        if bad:
            logging.warning("%s: skipped %d bad row(s)", path, bad)
        return ReadResult(examples, bad)

    def example(self, guid: str, text_a: str, text_b: str | None, label: str | None, split: str) -> InputExample:
        """Checks one example's texts and label (raising `BadRowError`) and builds it."""
        check_texts(text_a, text_b)
        if split != TEST:
            label = self.check_label(label)
        else:
            label = None
        return InputExample(guid, text_a, text_b, label)

    def check_label(self, label) -> str | float:
        if self.is_regression:
            try:
                return float(label)
            except (TypeError, ValueError):
                raise BadRowError(f"label {label!r} is not a number") from None
        if self.detects_label_sets:
            parts = label_set_parts(label, self.labels) if str(label).strip() not in self.labels else None
            if parts is not None or isinstance(label, list):
                raise LabelSetError(label_set_message(label, parts or []))
        label = str(label).strip()
        if label not in self.labels:
            raise BadRowError(f"unknown label {label!r}; {self.name} has the labels {list(self.labels)}")
        return label


def check_texts(text_a: str, text_b: str | None) -> None:
    """An empty first text is a bad row. An empty second text is not: like one of zero-width characters, it
    tokenizes to nothing and is packed as no second segment (`[CLS] A [SEP]`), as the original packs it and as
    the exported model serves it; refusing it made `--do_predict` fail on a request the export answers."""
    if not text_a.strip():
        raise BadRowError("empty text (first sentence)")


# ---- any TSV, CSV or JSON-lines file --------------------------------------------------------------------------------


class GenericProcessor(DataProcessor):
    """Any TSV, CSV (header row) or JSON-lines file, given the column names of the text(s) and the label.

    `labels` is the label set in head order (default: the sorted labels of the training file); `regression=True`
    reads numeric labels. `data_dir` holds `train`, `dev` and `test` files with the extension of `file_format`.
    """

    name = "generic"

    def __init__(
        self,
        *,
        text_a_column: str,
        label_column: str,
        text_b_column: str | None = None,
        labels: Sequence[str] | None = None,
        regression: bool = False,
        file_format: str = "tsv",
        id_column: str | None = None,
    ):
        if file_format not in ("tsv", "csv", "jsonl"):
            raise InputError(f"--file_format={file_format}: must be tsv, csv or jsonl")
        self.text_a_column, self.text_b_column, self.label_column = text_a_column, text_b_column, label_column
        self.id_column = id_column
        self.file_format = file_format
        self.regression = regression
        self.detects_label_sets = not regression and not self.multi_label
        self.labels = None if regression else (tuple(labels) if labels else None)
        self.metrics = ("pearson", "spearman") if regression else ("accuracy",)
        self.train_file = f"train.{file_format}"
        self.dev_sets = (EvalSet(f"dev.{file_format}"),)
        self.test_sets = (EvalSet(f"test.{file_format}", submission=f"predictions.{file_format}"),)

    @property
    def is_regression(self) -> bool:
        return self.regression

    def infer_labels(self, train_path: str, *, skip_bad_rows: bool = False) -> None:
        """Sets `labels` to the sorted labels of the training file when they were not given."""
        if self.regression or self.labels:
            return
        found, lines = set(), {}
        for number, record in self._records(train_path):
            if isinstance(record, BadRowError):  # `read` skips and counts it (or stops) with the same message
                if skip_bad_rows:
                    continue
                raise BadRowError(f"{train_path}:{number}: {record} (--skip_bad_rows skips and counts such rows)")
            value = record.get(self.label_column)
            if self.detects_label_sets and isinstance(value, list):
                raise InputError(f"{train_path}:{number}: {label_set_message(value, [str(v) for v in value])}")
            if value is not None and str(value).strip():
                found.add(str(value).strip())
                lines.setdefault(str(value).strip(), number)
        if not found:
            raise InputError(f"{train_path}: no label in column {self.label_column!r}")
        if self.detects_label_sets:
            # A label set among the labels: each combination would become a class. The first one in the file.
            sets = [(lines[value], value) for value in found if label_set_parts(value, found - {value}) is not None]
            if sets:
                number, value = min(sets)
                parts = label_set_parts(value, found - {value})
                raise InputError(f"{train_path}:{number}: {label_set_message(value, parts)}")
        self.labels = tuple(sorted(found))
        logging.info("Labels from %s: %s", train_path, list(self.labels))

    def _records(self, path: str) -> Iterator[tuple[int, dict]]:
        if not input_files.isfile(path):
            raise InputError(f"{path} does not exist")
        text = text_files.read_text(path)
        with io.StringIO(text, newline="") as f:
            if self.file_format == "jsonl":
                for number, line in enumerate(f, start=1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as e:
                        yield number, BadRowError(f"not JSON ({e.msg})")
                        continue
                    yield number, record if isinstance(record, dict) else BadRowError("not a JSON object")
                return
            allow_fields_as_long_as(text)
            reader = csv.reader(
                f,
                delimiter="\t" if self.file_format == "tsv" else ",",
                quoting=csv.QUOTE_NONE if self.file_format == "tsv" else csv.QUOTE_MINIMAL,
            )
            try:
                header = next(reader, None) or []
                for row in reader:
                    if not any(cell.strip() for cell in row):
                        continue
                    if len(row) < len(header):
                        yield reader.line_num, BadRowError(f"{len(row)} column(s), the header has {len(header)}")
                        continue
                    yield reader.line_num, dict(zip(header, row))
            except csv.Error as e:  # not a row the reader can split (the field limit is the file's size)
                raise InputError(
                    f"{path}:{reader.line_num}: cannot be read as {self.file_format.upper()} ({e}); check the "
                    "quoting of that line"
                ) from None

    def read(self, path: str, split: str = DEV, *, skip_bad_rows: bool = False) -> ReadResult:
        if not self.regression and not self.labels:
            raise InputError("the label set is unknown: read the training file first (infer_labels) or pass --labels")
        examples, bad = [], 0
        for index, (number, record) in enumerate(self._records(path)):
            try:
                if isinstance(record, BadRowError):
                    raise record
                columns = (
                    [self.text_a_column]
                    + ([self.text_b_column] if self.text_b_column else [])
                    + ([self.label_column] if split != TEST else [])
                )
                missing = [c for c in columns if c not in record]
                if missing:
                    raise BadRowError(f"no column {missing[0]!r} (columns: {sorted(record)})")
                guid = str(record[self.id_column]) if self.id_column and self.id_column in record else str(index)
                text_b = _text(record, self.text_b_column) if self.text_b_column else None
                examples.append(
                    self.example(guid, _text(record, self.text_a_column), text_b, record.get(self.label_column), split)
                )
            except LabelSetError as e:
                raise InputError(f"{path}:{number}: {e}") from None
            except BadRowError as e:
                message = f"{path}:{number}: {e}"
                if not skip_bad_rows:
                    raise BadRowError(f"{message} (--skip_bad_rows skips and counts such rows)") from None
                logging.warning("Skipping %s", message)
                bad += 1
        return ReadResult(examples, bad)


def _text(record: dict, column: str) -> str:
    """The text of a column: JSON's null is no text (an empty second text is no second segment, an empty first
    text a bad row); a number is its digits; anything else (a list, an object, true/false) is a bad row, where
    `str()` would have made "None" or "['a', 'b']" into the example's text."""
    value = record[column]
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise BadRowError(f"column {column!r} holds {json.dumps(value)[:40]}, not text")


# Python's csv module refuses a field longer than 131,072 characters by default (`_csv.Error: field larger than
# field limit`). A long text is no mistake (it is truncated or windowed like any other), so the limit is raised to
# the size of the file being read: no field can be longer, and the limit stays a finite C long on every platform.
_MAX_FIELD_LIMIT = 2**31 - 1


def allow_fields_as_long_as(text: str) -> None:
    """Raises (never lowers) the csv module's field size limit to `len(text)`, bounded by `_MAX_FIELD_LIMIT`."""
    wanted = min(len(text) + 1, _MAX_FIELD_LIMIT)
    if csv.field_size_limit() < wanted:
        csv.field_size_limit(wanted)
