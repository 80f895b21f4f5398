"""`ClassifierConfig`: the settings of a classification job (the flags of `run_scripts/run_classifier.py`), and the
data processor its `task_name` names (`make_processor`): a GLUE task, GoEmotions, generic TSV/CSV/JSON lines
(single- or multi-label), or GLUE from tensorflow-datasets. `tasks.classification` runs it.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from official.nlp.common.config_flags import field
from official.nlp.common.errors import InputError
from official.nlp.data import classifier_examples, glue
from official.nlp.data import multi_label as multi_label_data
from official.nlp.tasks import finetuning_config


@dataclasses.dataclass
class ClassifierConfig(finetuning_config.FineTuningConfig):
    """`FineTuningConfig` plus the classification flags (names of the original `run_classifier.py` first)."""

    task_name: str = field(
        "",
        help="cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli, ax, goemotions (multi-label), or generic "
        "(with the column flags).",
    )
    data_dir: str | None = field(
        None, path="path", help="The folder with the task's files (GLUE layout: train.tsv, dev.tsv, test.tsv, ...)."
    )
    do_train: bool = field(False, help="Fine-tune (resuming a run in --output_dir).")
    do_eval: bool = field(
        False, help="Evaluate on the dev set(s) after each epoch (eval_results.txt, TensorBoard, best_model/)."
    )
    do_predict: bool = field(False, help="Write the GLUE submission file(s) and test_results.tsv for the test set(s).")
    # ---
    long_text: str = field(
        "truncate", help="truncate (the original) or sliding_window (windows over the longer text, logits averaged)."
    )
    doc_stride: int | None = field(
        None,
        minimum=1,
        help="Tokens between the starts of two windows (--long_text=sliding_window; default: half a window).",
    )
    group_by_length: bool = field(
        True,
        help="Batch training examples of similar length together, each batch cut to "
        "its length bucket (faster). False: the original's batches, uniformly "
        "shuffled and padded to --max_seq_length.",
    )
    skip_bad_rows: bool = field(
        False, help="Skip (and count) rows with too few columns, an unknown label or an empty first text."
    )
    max_train_examples: int | None = field(
        None, minimum=1, help="Use only the first N training examples (default: all of them)."
    )
    tfds_name: str | None = field(
        None, help="Read GLUE from tensorflow-datasets instead of --data_dir, e.g. glue/mrpc (must be prepared)."
    )
    tfds_data_dir: str | None = field(None, path="path", help="tensorflow-datasets data folder.")
    # task_name=generic:
    text_a_column: str | None = field(None, help="generic: column (or JSON key) of the first text.")
    text_b_column: str | None = field(None, help="generic: column of the second text, for pairs.")
    label_column: str = field("label", help="generic: column of the label.")
    id_column: str | None = field(None, help="generic: column of the example id, written with the predictions.")
    labels: str | None = field(
        None, help="generic: comma-separated label set in head order (default: sorted labels of the training file)."
    )
    regression: bool = field(False, help="generic: numeric labels, one output (Pearson/Spearman).")
    file_format: str = field(
        "tsv", help="generic: tsv, csv or jsonl (files train.<fmt>, dev.<fmt>, test.<fmt> in --data_dir)."
    )
    # multi-label (--task_name=goemotions, or generic with --multi_label):
    multi_label: bool = field(
        False,
        help="generic: the label column holds a set of labels (comma-separated names or ids); a sigmoid per "
        "label, binary cross entropy, macro/micro F1.",
    )
    threshold: float | None = field(
        None,
        exclusive_minimum=0,
        exclusive_maximum=1,
        help="multi-label: a label is predicted from this probability on (default: the thresholds recorded with "
        "the model; 0.5 for a model trained without).",
    )
    tune_thresholds: bool = field(
        False, help="multi-label: tune one threshold per label on the dev set at each evaluation (needs --do_eval)."
    )
    allow_empty_labels: bool = field(
        False, help="multi-label: an example may have no label (else an empty labels field is a bad row)."
    )

    # The data files are recorded by their content (`ClassificationTask.settings`), not by their folder.
    NOT_TRAINING_SETTINGS: ClassVar[tuple[str, ...]] = finetuning_config.FineTuningConfig.NOT_TRAINING_SETTINGS + (
        "do_train",
        "do_eval",
        "do_predict",
        "data_dir",
        "tfds_data_dir",
        "skip_bad_rows",
        # Recorded by the task for multi-label data only (`ClassificationTask.settings`); tuning changes no weight.
        "multi_label",
        "threshold",
        "tune_thresholds",
        "allow_empty_labels",
    )

    def job_inputs(self) -> list[tuple[str, str, str | None]]:
        """The files in `--data_dir` of each split the jobs read (none from tensorflow-datasets)."""
        if self.tfds_name or not self.data_dir:
            return []  # the task says what is missing
        splits = make_processor(self).files(self.data_dir)
        jobs = (
            ("do_train", classifier_examples.TRAIN),
            ("do_eval", classifier_examples.DEV),
            ("do_predict", classifier_examples.TEST),
        )
        return [
            (job, "--data_dir", eval_set.file)
            for job, split in jobs
            if getattr(self, job)
            for eval_set in splits[split]
        ]

    def finetuning_config(self) -> ClassifierConfig:
        """All of it: the classification fields are recorded with the shared ones (but `NOT_TRAINING_SETTINGS`)."""
        return self


def make_processor(config: ClassifierConfig):
    """The processor of `--task_name` (`generic` with column names) or of `--tfds_name`."""
    if config.tfds_name:
        return glue.TfdsProcessor(config.tfds_name, config.tfds_data_dir)
    if not config.task_name:
        raise InputError("--task_name is required (a GLUE task, goemotions or 'generic'), or --tfds_name")
    name = config.task_name.lower()
    if name == "generic":
        if not config.text_a_column:
            raise InputError("--task_name=generic needs --text_a_column (and --text_b_column for pairs)")
        columns = dict(
            text_a_column=config.text_a_column,
            text_b_column=config.text_b_column,
            label_column=config.label_column,
            labels=[label.strip() for label in config.labels.split(",")] if config.labels else None,
            regression=config.regression,
            file_format=config.file_format,
            id_column=config.id_column,
        )
        if config.multi_label:
            return multi_label_data.MultiLabelGenericProcessor(allow_empty=config.allow_empty_labels, **columns)
        return classifier_examples.GenericProcessor(**columns)
    if name == multi_label_data.GoEmotionsProcessor.name:
        processor = multi_label_data.GoEmotionsProcessor()
        processor.allow_empty = config.allow_empty_labels
        return processor
    if config.multi_label:
        raise InputError(
            f"--multi_label: --task_name={config.task_name} has one label per example; multi-label data is read "
            "with --task_name=generic (or goemotions)"
        )
    return glue.get_processor(config.task_name)
