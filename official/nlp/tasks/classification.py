"""Sentence(-pair) classification and regression: GLUE and any TSV/CSV/JSON-lines data, on the fine-tuning base.

`run_classifier(ClassifierConfig(...))` is everything `run_scripts/run_classifier.py` does, callable from Python:
read the task's files (`data.glue`), build features once with the exact tokenizer and cache them in `output_dir`
(`data.feature_cache`, `data.classifier_features`), fine-tune `BertClassifier` on the shared loop with an
evaluation after each epoch (`tasks.finetuning`), and with `do_predict` write the GLUE submission files
(`MRPC.tsv`, `MNLI-m.tsv`, ... with label names) and the original's `test_results.tsv` (class probabilities).

Multi-label data (`multi_label=True` with `task_name="generic"`, or `task_name="goemotions"`): a label set per
example (`data.multi_label`), a sigmoid per label with binary cross entropy, decision thresholds, macro and micro F1
and per-label scores (`tasks.multi_label`).

Example:

    result = run_classifier(ClassifierConfig(
        task_name="mrpc", data_dir="glue/MRPC", init_checkpoint="models/minilm", output_dir="/tmp/mrpc",
        do_train=True, do_eval=True, max_seq_length=128, num_train_epochs=3))
    result.eval_history[-1]    # {"epoch": 3, "step": 343, "f1": ..., "accuracy": ..., "loss": ...}
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import fine_tuned, head_kinds
from official.nlp.common import input_files, output_files
from official.nlp.common.errors import InputError
from official.nlp.data import classifier_examples, classifier_features, feature_cache, length_buckets
from official.nlp.data import multi_label as multi_label_data
from official.nlp.metrics.glue import compute_metrics
from official.nlp.modeling.models import BertClassifier, check_label_names
from official.nlp.tasks import finetuning
from official.nlp.tasks import multi_label as multi_label_lib
from official.nlp.tasks.classifier_config import ClassifierConfig, make_processor
from official.nlp.training.objectives import (
    MeanSquaredErrorObjective,
    MultiLabelObjective,
    SparseCategoricalObjective,
)

FEATURES_VERSION = 2  # bump when the records' layout changes, so older caches are rebuilt


class ClassificationTask:
    """The `finetuning.FineTuningTask` of a processor: `BertClassifier`, cross entropy (or squared error, or a
    binary cross entropy per label for multi-label data)."""

    head = head_kinds.CLASSIFIER  # multi-label: its own kind, so that one head is never loaded as the other

    def __init__(self, config: ClassifierConfig, files, processor=None):
        self.config = config
        self.files = files
        self.processor = processor or make_processor(config)
        if not config.tfds_name and not config.data_dir:
            raise InputError("--data_dir is required (the folder with the task's files), or --tfds_name")
        classifier_features.check_long_text_settings(config.max_seq_length, config.long_text, config.doc_stride)
        self.splits = self.processor.files(config.data_dir)
        if isinstance(self.processor, classifier_examples.GenericProcessor) and self.splits[classifier_examples.TRAIN]:
            train = self.splits[classifier_examples.TRAIN][0].file
            if input_files.exists(train):
                self.processor.infer_labels(train, skip_bad_rows=config.skip_bad_rows)
        self.regression = self.processor.is_regression
        self.multi_label = self.processor.multi_label
        multi_label_lib.check_flags(config, self.multi_label)
        if self.multi_label:
            self.head = head_kinds.MULTI_LABEL_CLASSIFIER
        self.name = self.processor.name
        self.labels = list(self.processor.labels or [])
        self.metric_name = self.processor.metrics[0]
        self.thresholds: np.ndarray | None = None  # multi-label: those of the last evaluation
        self.bad_rows: dict[str, int] = {}
        self._examples: dict[tuple[str, str], list[classifier_examples.InputExample]] = {}
        self._tokenizer = None
        self._train_count = None

    # ---- data ----
    @property
    def tokenizer(self):
        if self._tokenizer is None:
            self._tokenizer = self.files.tokenizer()
        return self._tokenizer

    def _source(self, eval_set: classifier_examples.EvalSet) -> str:
        return eval_set.file

    def check_inputs(self) -> None:
        """Reads every dev and test file the jobs ask for, so that a bad row there (a label the training file does
        not have) stops the job before training rather than after its first epoch (`finetuning.run_task`)."""
        for job, split in (("do_eval", classifier_examples.DEV), ("do_predict", classifier_examples.TEST)):
            if getattr(self.config, job):
                for eval_set in self.splits[split]:
                    self.read(split, eval_set)

    def read(self, split: str, eval_set: classifier_examples.EvalSet) -> list[classifier_examples.InputExample]:
        """The examples of one file (read once: `check_inputs` reads them before training)."""
        key = (split, eval_set.file)
        if key not in self._examples:
            self._examples[key] = self._read(split, eval_set)
        return self._examples[key]

    def _read(self, split: str, eval_set: classifier_examples.EvalSet) -> list[classifier_examples.InputExample]:
        result = self.processor.read(eval_set.file, split, skip_bad_rows=self.config.skip_bad_rows)
        if result.bad_rows:
            self.bad_rows[f"{split}{eval_set.suffix}"] = result.bad_rows
        examples = result.examples
        if any(e.text_b and e.text_b.strip() for e in examples):
            self.files.check_text_pairs(f"the examples of {eval_set.file}")
        if split == classifier_examples.TRAIN and self.config.max_train_examples:
            examples = examples[: self.config.max_train_examples]
        if not examples:
            raise InputError(f"{eval_set.file}: no example to read")
        if split == classifier_examples.TRAIN and self.multi_label:
            multi_label_data.check_some_labelled(
                examples, eval_set.file, truncated=len(examples) < len(result.examples)
            )
        return examples

    def _input_digest(self, eval_set: classifier_examples.EvalSet) -> str:
        if self.config.tfds_name:
            return f"{self.config.tfds_name}:{eval_set.file}:{self.processor.builder.info.version}"
        return feature_cache.file_digest([eval_set.file])

    def cache_key(self, split: str, eval_set: classifier_examples.EvalSet) -> dict:
        """Everything the features of one file depend on."""
        return {
            "features_version": FEATURES_VERSION,
            "task": self.name,
            "labels": self.labels,
            "regression": self.regression,
            "split": split,
            "input": self._input_digest(eval_set),
            "vocab_sha256": feature_cache.file_digest([self.files.vocab_file]),
            "do_lower_case": self.files.do_lower_case,
            "max_seq_length": self.config.max_seq_length,
            "long_text": self.config.long_text,
            "doc_stride": self.config.doc_stride,
            "skip_bad_rows": self.config.skip_bad_rows,
            "max_train_examples": self.config.max_train_examples if split == classifier_examples.TRAIN else None,
            **({"multi_label": True, "allow_empty_labels": self.config.allow_empty_labels} if self.multi_label else {}),
        }

    def features(
        self, split: str, eval_set: classifier_examples.EvalSet
    ) -> tuple[str, list[classifier_examples.InputExample], int]:
        """`(record file, examples, number of features)` of one file, building the cached records if needed."""
        examples = self.read(split, eval_set)
        name = {
            classifier_examples.TRAIN: "train",
            classifier_examples.DEV: "eval",
            classifier_examples.TEST: "predict",
        }[split]
        path = os.path.join(self.config.output_dir, f"{name}{eval_set.suffix}.tf_record")
        count = feature_cache.cached_records(
            path,
            self.cache_key(split, eval_set),
            lambda: classifier_features.convert_examples(
                examples,
                self.tokenizer,
                labels=None if self.regression else self.labels,
                max_seq_length=self.config.max_seq_length,
                long_text=self.config.long_text,
                doc_stride=self.config.doc_stride,
                multi_label=self.multi_label,
            ),
        )
        return path, examples, count

    def _train_set(self) -> classifier_examples.EvalSet:
        if not self.splits[classifier_examples.TRAIN]:
            raise InputError(f"{self.name} has no training data (AX is predicted with an MNLI model)")
        return self.splits[classifier_examples.TRAIN][0]

    # ---- FineTuningTask ----
    def build_model(self, encoder) -> keras.Model:
        return BertClassifier(encoder, 1 if self.regression else len(self.labels))

    def objective(self):
        if self.multi_label:
            return MultiLabelObjective("label")
        return MeanSquaredErrorObjective("label") if self.regression else SparseCategoricalObjective("label")

    def num_train_examples(self) -> int:
        if self._train_count is None:
            self._train_path, _, self._train_count = self.features(classifier_examples.TRAIN, self._train_set())
        return self._train_count

    def train_dataset(self, input_context, batch_size: int, seed: int) -> tf.data.Dataset:
        self.num_train_examples()
        return classifier_features.make_dataset(
            self._train_path,
            self.config.max_seq_length,
            batch_size,
            regression=self.regression,
            is_training=True,
            seed=seed,
            input_context=input_context,
            buckets=self._buckets(),
            num_multi_labels=self._num_multi_labels(),
        )

    def _num_multi_labels(self) -> int:
        return len(self.labels) if self.multi_label else 0

    def _buckets(self) -> tuple[int, ...] | None:
        if not self.config.group_by_length:
            return None
        # TPUs recompile for every new shape: they keep max_seq_length.
        return length_buckets.bucket_lengths(
            self.config.max_seq_length, fixed=self.config.distribution_strategy == "tpu"
        )

    def settings(self) -> dict:
        train = self._train_set()
        return {
            "train_data": self._input_digest(train),
            "long_text": self.config.long_text,
            "doc_stride": self.config.doc_stride,
            "max_train_examples": self.config.max_train_examples,
            **(
                {
                    "multi_label": True,
                    "threshold": self.config.threshold,
                    "allow_empty_labels": self.config.allow_empty_labels,
                }
                if self.multi_label
                else {}
            ),
        }

    def serving_settings(self) -> dict:
        """What `best_model/` records besides the training settings: a multi-label model's thresholds."""
        return {"thresholds": [float(t) for t in self.thresholds]} if self.thresholds is not None else {}

    def predict_outputs(self, model: keras.Model, path: str, num_examples: int, batch_size: int) -> np.ndarray:
        """Per-example logits (scores for regression), averaged over an example's windows."""
        dataset = classifier_features.make_dataset(
            path,
            self.config.max_seq_length,
            batch_size,
            regression=self.regression,
            is_training=False,
            buckets=self._buckets(),
            num_multi_labels=self._num_multi_labels(),
        )
        step = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
        outputs, indexes = [], []
        for x, y in dataset:
            outputs.append(step(x).numpy())
            indexes.append(y["example_index"].numpy())
        return classifier_features.average_by_example(np.concatenate(outputs), np.concatenate(indexes), num_examples)

    def evaluate(self, model: keras.Model) -> dict[str, float]:
        metrics = {}
        for eval_set in self.splits[classifier_examples.DEV]:
            path, examples, _ = self.features(classifier_examples.DEV, eval_set)
            outputs = self.predict_outputs(model, path, len(examples), self.config.eval_batch_size)
            metrics.update({f"{k}{eval_set.suffix}": v for k, v in self.score(examples, outputs).items()})
        metrics.update({f"bad_rows_{k}": float(v) for k, v in self.bad_rows.items()})
        return metrics

    def score(self, examples: Sequence[classifier_examples.InputExample], outputs: np.ndarray) -> dict[str, float]:
        if self.multi_label:
            metrics, self.thresholds = multi_label_lib.evaluate_multi_label(self.config, self.labels, examples, outputs)
            return metrics
        if self.regression:
            labels = np.array([e.label for e in examples], np.float64)
            scores = outputs[:, 0]
            return {
                **compute_metrics(self.processor.metrics, labels, scores),
                "loss": float(np.mean((scores - labels) ** 2)),
            }
        labels = np.array([self.labels.index(e.label) for e in examples])
        log_probs = outputs - _logsumexp(outputs)
        return {
            **compute_metrics(self.processor.metrics, labels, outputs.argmax(-1)),
            "loss": float(-np.mean(log_probs[np.arange(len(labels)), labels])),
        }

    def predict(self, model: keras.Model) -> list[str]:
        """Writes the GLUE submission file and `test_results.tsv` of each test set; returns their paths."""
        written = []
        if not self.splits[classifier_examples.TEST]:
            raise InputError(f"{self.name} has no test set to predict")
        for eval_set in self.splits[classifier_examples.TEST]:
            path, examples, _ = self.features(classifier_examples.TEST, eval_set)
            outputs = self.predict_outputs(model, path, len(examples), self.config.predict_batch_size)
            written += self.write_predictions(examples, outputs, eval_set)
        return written

    def write_predictions(self, examples, outputs: np.ndarray, eval_set: classifier_examples.EvalSet) -> list[str]:
        out = self.config.output_dir
        output_files.makedirs(out, name="--output_dir")
        submission = os.path.join(out, eval_set.submission or f"{self.name}{eval_set.suffix}.tsv")
        results = os.path.join(out, f"test_results{eval_set.suffix}.tsv")
        if self.multi_label:
            thresholds = multi_label_lib.prediction_thresholds(self.config, len(self.labels), self.thresholds)
            return multi_label_lib.write_multi_label_predictions(
                examples, outputs, thresholds, self.labels, submission, results
            )
        if self.regression:
            predictions = [f"{s:.3f}" for s in outputs[:, 0]]
            rows = [repr(float(s)) for s in outputs[:, 0]]
        else:
            predictions = [self.labels[i] for i in outputs.argmax(-1)]
            probabilities = np.exp(outputs - _logsumexp(outputs))
            rows = ["\t".join(repr(float(p)) for p in row) for row in probabilities]  # full precision, as the original
        with output_files.write_atomically(submission) as f:
            f.write("index\tprediction\n")
            f.write("".join(f"{e.guid}\t{p}\n" for e, p in zip(examples, predictions)))
        with output_files.write_atomically(results) as f:
            f.write("".join(row + "\n" for row in rows))
        logging.info("Wrote %d predictions to %s and %s", len(examples), submission, results)
        return [submission, results]


def _logsumexp(logits: np.ndarray) -> np.ndarray:
    top = logits.max(-1, keepdims=True)
    return top + np.log(np.exp(logits - top).sum(-1, keepdims=True))


@dataclasses.dataclass
class ClassifierResult:
    """What `run_classifier` returns: the fine-tuning result, and from it the model of the run, the evaluations,
    `best_model/` (None without one) and the last training metrics; and the prediction files written (the
    submission file and test_results.tsv; empty without `do_predict`)."""

    finetuning: finetuning.FineTuningResult
    model: keras.Model
    eval_history: list[dict]
    best_model_dir: str | None
    predictions: list[str]
    train_metrics: dict


def save_classifier(
    model: keras.Model,
    directory: str,
    files,
    *,
    task_name: str,
    labels: Sequence[str] | None,
    multi_label: bool = False,
    thresholds: Sequence[float] | None = None,
) -> str:
    """Writes a `BertClassifier` fine-tuned elsewhere (e.g. with `model.fit`) as a model directory that
    `run_classifier --init_checkpoint` takes for evaluation or prediction (`labels` None for regression).
    `multi_label`: a sigmoid per label, predicted from `thresholds` (one per label; default 0.5) on.

    `directory` must be new or empty: a folder that holds anything (a fine-tuning run, an earlier model) is
    refused, and so are labels that do not name each of the model's classes once."""
    labels = list(labels or [])
    check_label_names(labels, model.num_classes)
    settings = head_kinds.classifier_settings(len(labels), thresholds) if multi_label else None
    if thresholds is not None and not multi_label:
        raise ValueError("thresholds are for a multi-label classifier (multi_label=True)")
    return fine_tuned.save_fine_tuned(
        model,
        directory,
        files,
        task_name=task_name,
        head=head_kinds.classifier_head(multi_label),
        labels=labels,
        settings=settings,
    )


def run_classifier(config: ClassifierConfig, *, strategy: tf.distribute.Strategy | None = None) -> ClassifierResult:
    """Trains, evaluates and predicts as `config.do_train/do_eval/do_predict` say (see the module docstring)."""
    run = finetuning.run_task(config, lambda files: ClassificationTask(config, files), strategy=strategy)
    return ClassifierResult(
        run.result,
        run.result.model,
        run.result.eval_history,
        run.result.best_model_dir,
        run.predictions or [],
        run.result.train_metrics,
    )
