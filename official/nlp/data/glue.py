"""GLUE: processors that read the original file layouts of its tasks, and GLUE from tensorflow-datasets.

Every GLUE task of the original `run_classifier.py` and of the GLUE benchmark: CoLA, SST-2, MRPC, STS-B
(regression), QQP, MNLI (matched and mismatched dev and test), QNLI, RTE, WNLI and AX (the diagnostic set,
predicted with an MNLI model). Files are read as the original reads them (tab-separated, no quoting, so a `"` in a
sentence is just a character), with the byte-order mark that starts the MRPC files removed, and their rows are
checked as `classifier_examples.DataProcessor` checks every task's (`BadRowError`, `skip_bad_rows`).

`TfdsProcessor` reads GLUE from `tensorflow-datasets` when it is prepared on disk.

Example:

    processor = get_processor("mrpc")
    (train_file,) = processor.files("/data/glue/MRPC")["train"]
    train = processor.read(train_file.file, "train")
    train.examples[0].text_a, train.examples[0].label     # ('Amrozi accused his brother, whom he called ...', '1')
"""

from __future__ import annotations

import os

from official.nlp.common.errors import InputError
from official.nlp.data.classifier_examples import (
    DEV,
    TEST,
    TRAIN,
    BadRowError,
    DataProcessor,
    EvalSet,
    InputExample,
    ReadResult,
    check_texts,
)

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
