"""GLUE and generic sentence(-pair) classification data: processors that read the original file layouts.

Every GLUE task of the original `run_classifier.py` and of the GLUE benchmark: CoLA, SST-2, MRPC, STS-B
(regression), QQP, MNLI (matched and mismatched dev and test), QNLI, RTE, WNLI and AX (the diagnostic set,
predicted with an MNLI model). Files are read as the original reads them (tab-separated, no quoting, so a `"` in a
sentence is just a character), with the byte-order mark that starts the MRPC files removed.

A row that cannot be an example is reported with its file and line: too few columns, a label outside the task's
label set, an empty first text. It is an error (`BadRowError`), unless `skip_bad_rows` is set: then the row is
skipped and counted (`ReadResult.bad_rows`). An empty second text is an example without a second segment.

`GenericProcessor` reads any TSV, CSV (with a header row) or JSON-lines file given the names of its text and label
columns; `TfdsProcessor` reads GLUE from `tensorflow-datasets` when it is prepared on disk.

Example:

    processor = get_processor("mrpc")
    train = processor.read(processor.files("/data/glue/MRPC")["train"])
    train.examples[0].text_a, train.examples[0].label     # ('Amrozi accused his brother , ...', '1')
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


# ---- GLUE ---------------------------------------------------------------------------------------------------------


class ColaProcessor(DataProcessor):
    """CoLA: `source, label, original label, sentence` without a header; test: `index, sentence` with one."""

    name = "cola"
    metrics = ("matthews_corrcoef", "accuracy")
    min_columns = 4
    has_header = False
    test_sets = (EvalSet("test.tsv", submission="CoLA.tsv"),)

    def header_in(self, path):
        return os.path.basename(path) == "test.tsv"  # only the test file has a header row

    def row(self, c, split, index):
        if split == TEST:
            return c[0], c[1], None, None
        return f"{split}-{index}", c[3], None, c[1]


class Sst2Processor(DataProcessor):
    """SST-2: `sentence, label`; test: `index, sentence`."""

    name = "sst-2"
    test_sets = (EvalSet("test.tsv", submission="SST-2.tsv"),)

    def row(self, c, split, index):
        if split == TEST:
            return c[0], c[1], None, None
        return f"{split}-{index}", c[0], None, c[1]


class MrpcProcessor(DataProcessor):
    """MRPC: `Quality, #1 ID, #2 ID, #1 String, #2 String` (test: `index` first); starts with a byte-order mark."""

    name = "mrpc"
    metrics = ("f1", "accuracy")
    min_columns = test_min_columns = 5
    test_sets = (EvalSet("test.tsv", submission="MRPC.tsv"),)

    def row(self, c, split, index):
        return (c[0] if split == TEST else f"{split}-{index}"), c[3], c[4], (None if split == TEST else c[0])


class StsbProcessor(DataProcessor):
    """STS-B: sentence1 and sentence2 in columns 8 and 9, the score (0-5) last; a regression task."""

    name = "sts-b"
    labels = None
    metrics = ("pearson", "spearman")
    min_columns = 10
    test_min_columns = 9
    test_sets = (EvalSet("test.tsv", submission="STS-B.tsv"),)

    def row(self, c, split, index):
        return (c[0] if split == TEST else f"{split}-{index}"), c[7], c[8], (None if split == TEST else c[-1])


class QqpProcessor(DataProcessor):
    """QQP: `id, qid1, qid2, question1, question2, is_duplicate`; test: `id, question1, question2`."""

    name = "qqp"
    metrics = ("f1", "accuracy")
    min_columns = 6
    test_min_columns = 3
    test_sets = (EvalSet("test.tsv", submission="QQP.tsv"),)

    def row(self, c, split, index):
        if split == TEST:
            return c[0], c[1], c[2], None
        return f"{split}-{c[0]}", c[3], c[4], c[5]


class MnliProcessor(DataProcessor):
    """MNLI: sentence1 and sentence2 in columns 9 and 10, the gold label last; matched and mismatched sets."""

    name = "mnli"
    labels = ("contradiction", "entailment", "neutral")
    min_columns = 11
    test_min_columns = 10
    dev_sets = (EvalSet("dev_matched.tsv"), EvalSet("dev_mismatched.tsv", suffix="_mismatched"))
    test_sets = (
        EvalSet("test_matched.tsv", submission="MNLI-m.tsv"),
        EvalSet("test_mismatched.tsv", suffix="_mismatched", submission="MNLI-mm.tsv"),
    )

    def row(self, c, split, index):
        if split == TEST:
            return c[0], c[8], c[9], None
        return f"{split}-{c[0]}", c[8], c[9], c[-1]


class AxProcessor(MnliProcessor):
    """AX, GLUE's diagnostic set (`diagnostic.tsv`: `index, sentence1, sentence2`): predicted by an MNLI model."""

    name = "ax"
    train_file = None
    dev_sets = ()
    test_min_columns = 3
    test_sets = (EvalSet("diagnostic.tsv", submission="AX.tsv"),)

    def row(self, c, split, index):
        return c[0], c[1], c[2], None


class _IndexedPairProcessor(DataProcessor):
    """`index, sentence1, sentence2, label` (test: without the label): QNLI, RTE, WNLI."""

    min_columns = 4
    test_min_columns = 3

    def row(self, c, split, index):
        return (c[0] if split == TEST else f"{split}-{c[0]}"), c[1], c[2], (None if split == TEST else c[3])


class QnliProcessor(_IndexedPairProcessor):
    name = "qnli"
    labels = ("entailment", "not_entailment")
    test_sets = (EvalSet("test.tsv", submission="QNLI.tsv"),)


class RteProcessor(_IndexedPairProcessor):
    name = "rte"
    labels = ("entailment", "not_entailment")
    test_sets = (EvalSet("test.tsv", submission="RTE.tsv"),)


class WnliProcessor(_IndexedPairProcessor):
    name = "wnli"
    test_sets = (EvalSet("test.tsv", submission="WNLI.tsv"),)


PROCESSORS = {
    p.name: p
    for p in (
        ColaProcessor,
        Sst2Processor,
        MrpcProcessor,
        StsbProcessor,
        QqpProcessor,
        MnliProcessor,
        AxProcessor,
        QnliProcessor,
        RteProcessor,
        WnliProcessor,
    )
}
# The original script's and the GLUE folders' spellings.
ALIASES = {"sst2": "sst-2", "stsb": "sts-b", "sts": "sts-b", "diagnostic": "ax"}


def get_processor(task_name: str) -> DataProcessor:
    """The processor of a GLUE `--task_name` (case-insensitive; `sst2`/`sst-2`, `stsb`/`sts-b`)."""
    key = task_name.lower()
    key = ALIASES.get(key, key)
    if key not in PROCESSORS:
        raise InputError(
            f"--task_name={task_name}: unknown task; one of {sorted(PROCESSORS)}, or 'generic' with "
            "--text_a_column/--label_column"
        )
    return PROCESSORS[key]()


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
        found = set()
        for number, record in self._records(train_path):
            if isinstance(record, BadRowError):  # `read` skips and counts it (or stops) with the same message
                if skip_bad_rows:
                    continue
                raise BadRowError(f"{train_path}:{number}: {record} (--skip_bad_rows skips and counts such rows)")
            value = record.get(self.label_column)
            if value is not None and str(value).strip():
                found.add(str(value).strip())
        if not found:
            raise InputError(f"{train_path}: no label in column {self.label_column!r}")
        self.labels = tuple(sorted(found))
        logging.info("Labels from %s: %s", train_path, list(self.labels))

    def _records(self, path: str) -> Iterator[tuple[int, dict]]:
        if not input_files.isfile(path):
            raise InputError(f"{path} does not exist")
        with io.StringIO(text_files.read_text(path), newline="") as f:
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
            reader = csv.reader(
                f,
                delimiter="\t" if self.file_format == "tsv" else ",",
                quoting=csv.QUOTE_NONE if self.file_format == "tsv" else csv.QUOTE_MINIMAL,
            )
            header = next(reader, None) or []
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) < len(header):
                    yield reader.line_num, BadRowError(f"{len(row)} column(s), the header has {len(header)}")
                    continue
                yield reader.line_num, dict(zip(header, row))

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


# ---- tensorflow-datasets ---------------------------------------------------------------------------------------------

# TFDS feature names of the two texts, per GLUE config.
_TFDS_TEXTS = {
    "cola": ("sentence", None),
    "sst2": ("sentence", None),
    "mrpc": ("sentence1", "sentence2"),
    "stsb": ("sentence1", "sentence2"),
    "qqp": ("question1", "question2"),
    "mnli": ("premise", "hypothesis"),
    "qnli": ("question", "sentence"),
    "rte": ("sentence1", "sentence2"),
    "wnli": ("sentence1", "sentence2"),
    "ax": ("premise", "hypothesis"),
}
_TFDS_SPLITS = {
    "mnli": {
        TRAIN: ["train"],
        DEV: ["validation_matched", "validation_mismatched"],
        TEST: ["test_matched", "test_mismatched"],
    },
    "ax": {TRAIN: [], DEV: [], TEST: ["test"]},
}


class TfdsProcessor:
    """GLUE from `tensorflow-datasets` (`--tfds_name=glue/mrpc`, `--tfds_data_dir`), read from its prepared files
    (nothing is downloaded). Labels, metrics and submission names are those of the matching GLUE processor; the
    label names come from the dataset's `ClassLabel` in its order, which is the head's order."""

    multi_label = False

    def __init__(self, tfds_name: str, data_dir: str | None = None):
        import tensorflow_datasets as tfds

        family, _, config = tfds_name.partition("/")
        if family != "glue" or config not in _TFDS_TEXTS:
            raise InputError(f"--tfds_name={tfds_name}: expected glue/<task> with task one of {sorted(_TFDS_TEXTS)}")
        self.tfds_name, self.data_dir, self.config = tfds_name, data_dir, config
        self.glue = get_processor(config)
        try:
            self.builder = tfds.builder(tfds_name, data_dir=data_dir)
            info = self.builder.info
        except Exception as e:  # tfds raises several types for a dataset that is not prepared
            raise InputError(
                f"--tfds_name={tfds_name}: cannot open the prepared dataset in --tfds_data_dir="
                f"{data_dir} ({e}); prepare it with `tfds build {tfds_name}` where it can be "
                "downloaded"
            ) from e
        label = info.features["label"]
        self.labels = None if self.glue.is_regression else tuple(label.names)
        self.name, self.metrics = self.glue.name, self.glue.metrics
        self.splits = _TFDS_SPLITS.get(config, {TRAIN: ["train"], DEV: ["validation"], TEST: ["test"]})

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    def files(self, data_dir: str | None = None) -> dict[str, list[EvalSet]]:
        out = {}
        for split, names in self.splits.items():
            sets = self.glue.dev_sets if split == DEV else self.glue.test_sets if split == TEST else ()
            out[split] = [
                EvalSet(
                    name,
                    suffix=(sets[i].suffix if i < len(sets) else ""),
                    submission=(sets[i].submission if i < len(sets) else None),
                )
                for i, name in enumerate(names)
            ]
        return out

    def read(self, split_name: str, split: str = DEV, *, skip_bad_rows: bool = False) -> ReadResult:
        import tensorflow_datasets as tfds

        key_a, key_b = _TFDS_TEXTS[self.config]
        dataset = self.builder.as_dataset(split=split_name, shuffle_files=False)
        examples, bad = [], 0
        for number, record in enumerate(tfds.as_numpy(dataset)):
            text_a = record[key_a].decode("utf-8")
            text_b = record[key_b].decode("utf-8") if key_b else None
            raw = record["label"]
            guid = str(int(record["idx"])) if "idx" in record else str(number)
            try:
                check_texts(text_a, text_b)
                if split == TEST:
                    label = None
                elif self.is_regression:
                    label = float(raw)
                elif 0 <= int(raw) < len(self.labels):
                    label = self.labels[int(raw)]
                else:
                    raise BadRowError(f"label {int(raw)} is outside the {len(self.labels)} classes {list(self.labels)}")
                examples.append(InputExample(guid, text_a, text_b, label))
            except BadRowError as e:
                message = f"{self.tfds_name} {split_name} record {number}: {e}"
                if not skip_bad_rows:
                    raise BadRowError(f"{message} (--skip_bad_rows skips and counts such rows)") from None
                bad += 1
        return ReadResult(examples, bad)
