"""Multiple choice (SWAG) on the fine-tuning base: `data.swag` features `[examples, 4, seq]`, `BertMultipleChoice`
(one score per choice from the pooled `[CLS]`, softmax over the four), accuracy.

`run_swag` is everything `run_scripts/run_swag.py` does, callable from Python:

    result = run_swag(MultipleChoiceConfig(
        output_dir="/tmp/swag", init_checkpoint="models/minilm", num_train_epochs=3, train_file="train.csv",
        eval_file="val.csv", do_train=True, do_eval=True))
    result.eval_history[-1]["accuracy"]

With `fit` instead: `model = BertMultipleChoice(encoder)`, `model.compile(optimizer,
keras.losses.SparseCategoricalCrossentropy(from_logits=True))`, `model.fit(features.model_inputs(),
features.arrays["label"])` on `swag.convert_swag_examples(...)`.
"""

from __future__ import annotations

import csv
import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import head_kinds
from official.nlp.common import output_files
from official.nlp.common.config_flags import field
from official.nlp.common.errors import InputError
from official.nlp.data import feature_cache, swag
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.losses import cross_entropy
from official.nlp.modeling.models import BertMultipleChoice
from official.nlp.tasks import finetuning, finetuning_config
from official.nlp.training.objectives import SparseCategoricalObjective

RESULTS_FILE = "test_results.csv"
_RECORD_NAMES = {"input_word_ids": "input_ids", "input_mask": "input_mask", "input_type_ids": "segment_ids"}


@dataclasses.dataclass
class MultipleChoiceConfig(finetuning_config.FineTuningConfig):
    """`FineTuningConfig` plus the SWAG settings (field names are the script's flags): the CSV or JSON-lines files
    (see `data.swag`), whether bad rows are skipped and counted instead of stopping, and the head's dropout."""

    train_file: str | None = field(None, path="path", help="SWAG training file (train.csv or JSON lines).")
    eval_file: str | None = field(None, path="path", help="SWAG file for --do_eval (val.csv).")
    predict_file: str | None = field(
        None, path="path", help="SWAG file for --do_predict (test.csv; labels not needed)."
    )
    do_train: bool = field(False, help="Fine-tune (or resume).")
    do_eval: bool = field(False, help="Accuracy on --eval_file after each epoch (or once, without --do_train).")
    do_predict: bool = field(False, help="Predict --predict_file into --output_dir/test_results.csv.")
    skip_bad_rows: bool = field(
        False, help="Skip and count rows with too few columns, a missing ending, an empty context or an unknown label."
    )
    dropout_rate: float = field(0.1, minimum=0, exclusive_maximum=1, help="Dropout before the choice scorer.")


class MultipleChoiceTask:
    """SWAG as a `finetuning.FineTuningTask` (see the module doc)."""

    name = "swag"
    head = head_kinds.MULTIPLE_CHOICE
    metric_name = "accuracy"
    labels = [str(i) for i in range(swag.NUM_CHOICES)]

    def __init__(self, config: MultipleChoiceConfig, files):
        """`files`: the `ModelFiles` of `config.init_checkpoint` (the tokenizer; its vocabulary and case go in the
        training features' cache key)."""
        files.check_text_pairs("SWAG inputs (context, ending)")
        self.config = config
        self.files = files
        self.tokenizer = files.tokenizer()
        self.bad_rows: dict[str, int] = {}
        self._loaded: dict[str, swag.MultipleChoiceFeatures] = {}
        self._num_train: int | None = None
        self._predict_examples: list | None = None

    def _read(self, path: str | None, split: str, flag: str, labelled: bool | None = True):
        if not path:
            raise InputError(f"{flag} is required for this job")
        read = swag.read_swag(path, skip_bad_rows=self.config.skip_bad_rows, labelled=labelled)
        self.bad_rows[split] = read.bad_rows
        logging.info(
            "%s: %d examples%s",
            path,
            len(read.examples),
            f", {read.bad_rows} bad row(s) skipped" if read.bad_rows else "",
        )
        return read.examples

    def check_inputs(self) -> None:
        """Reads the evaluation and prediction files the jobs ask for, so that a bad row there stops the job before
        training rather than after its first epoch (`finetuning.run_task`)."""
        if self.config.do_eval and self.config.eval_file:
            self._features("eval", self.config.eval_file, "--eval_file")
        if self.config.do_predict and self.config.predict_file:
            self._predict_examples = self._read(self.config.predict_file, "predict", "--predict_file", labelled=False)

    def _features(self, split: str, path: str | None, flag: str, labelled: bool | None = True):
        if split not in self._loaded:
            examples = self._read(path, split, flag, labelled)
            self._loaded[split] = swag.convert_swag_examples(examples, self.tokenizer, self.config.max_seq_length)
        return self._loaded[split]

    # ---- training ---------------------------------------------------------------------------------------------

    def _cache_key(self) -> dict:
        return {
            "task": self.name,
            "train_sha256": feature_cache.file_digest([self.config.train_file]),
            "vocab_sha256": feature_cache.file_digest([self.files.vocab_file]) if self.files.vocab_file else None,
            "do_lower_case": self.files.do_lower_case,
            "max_seq_length": self.config.max_seq_length,
            "skip_bad_rows": self.config.skip_bad_rows,
        }

    def _train_records(self):
        arrays = self._features("train", self.config.train_file, "--train_file").arrays
        for i in range(len(arrays["label"])):
            record = {record: arrays[name][i] for name, record in _RECORD_NAMES.items()}
            record["label_ids"] = [arrays["label"][i]]
            yield record

    def num_train_examples(self) -> int:
        if not self.config.train_file:
            raise InputError("--do_train needs --train_file")
        if self._num_train is None:
            self._num_train = feature_cache.cached_records(
                os.path.join(self.config.output_dir, feature_cache.TRAIN_RECORDS),
                self._cache_key(),
                self._train_records,
            )
        return self._num_train

    def train_dataset(self, input_context: tf.distribute.InputContext, batch_size: int, seed: int) -> tf.data.Dataset:
        self.num_train_examples()
        shapes = {record: [swag.NUM_CHOICES, self.config.max_seq_length] for record in _RECORD_NAMES.values()}
        parse = feature_cache.int_parser({**shapes, "label_ids": [1]})

        def to_xy(records):
            record = parse(records)
            return ({name: record[r] for name, r in _RECORD_NAMES.items()}, {"label": record["label_ids"][:, 0]})

        return feature_cache.training_batches(
            os.path.join(self.config.output_dir, feature_cache.TRAIN_RECORDS),
            batch_size,
            parse=to_xy,
            seed=seed,
            input_context=input_context,
        )

    def build_model(self, encoder: BertEncoder) -> keras.Model:
        return BertMultipleChoice(encoder, dropout_rate=self.config.dropout_rate)

    def objective(self) -> SparseCategoricalObjective:
        return SparseCategoricalObjective(label_key="label")

    def settings(self) -> dict:
        return {**{k: v for k, v in self._cache_key().items() if k != "task"}, "dropout_rate": self.config.dropout_rate}

    # ---- evaluation and prediction ----------------------------------------------------------------------------

    def _logits(self, model: keras.Model, features: swag.MultipleChoiceFeatures, batch_size: int) -> np.ndarray:
        return model.predict(features.model_inputs(), batch_size=batch_size, verbose=0)

    def evaluate(self, model: keras.Model) -> dict[str, float]:
        """`accuracy` (the metric of the SWAG paper and BERT's) and the mean cross entropy `loss` on `eval_file`."""
        features = self._features("eval", self.config.eval_file, "--eval_file")
        logits = self._logits(model, features, self.config.eval_batch_size)
        labels = features.arrays["label"]
        return {
            "accuracy": float(np.mean(np.argmax(logits, -1) == labels)),
            "loss": float(np.mean(np.asarray(cross_entropy(labels, logits)))),
            "examples": float(len(labels)),
        }

    def predict(self, model: keras.Model, output_file: str | None = None) -> str:
        """Writes `test_results.csv`: per example its source line, the predicted ending and the four probabilities."""
        if not self.config.predict_file:
            raise InputError("--do_predict needs --predict_file")
        # Prediction needs no label: a test split without them (CSV or JSON lines) is read as it is.
        examples = self._predict_examples or self._read(
            self.config.predict_file, "predict", "--predict_file", labelled=False
        )
        features = swag.convert_swag_examples(examples, self.tokenizer, self.config.max_seq_length)
        logits = self._logits(model, features, self.config.predict_batch_size or self.config.eval_batch_size)
        probabilities = np.asarray(keras.ops.softmax(logits, axis=-1))
        output_file = output_file or os.path.join(self.config.output_dir, RESULTS_FILE)
        output_files.makedirs_for(output_file)
        with output_files.write_atomically(output_file) as f:
            writer = csv.writer(f)
            writer.writerow(["source", "prediction", *(f"probability{i}" for i in range(swag.NUM_CHOICES))])
            for example, probs in zip(examples, probabilities):
                writer.writerow([example.where, int(np.argmax(probs)), *(repr(float(p)) for p in probs)])
        return output_file


@dataclasses.dataclass
class SwagResult:
    """What `run_swag` returns: the fine-tuning result, the evaluations, the prediction file and the bad rows
    skipped per split."""

    finetuning: finetuning.FineTuningResult
    eval_history: list[dict]
    predictions_file: str | None
    bad_rows: dict[str, int]


def make_swag_task(config: MultipleChoiceConfig, files=None) -> MultipleChoiceTask:
    """The task of `config` with the tokenizer of `config.init_checkpoint`."""
    return MultipleChoiceTask(config, files or finetuning_config.init_checkpoint_files(config))


def run_swag(config: MultipleChoiceConfig) -> SwagResult:
    """Trains (or resumes), evaluates after each epoch and predicts, as `config.do_train/do_eval/do_predict` say;
    see the module docstring."""
    run = finetuning.run_task(config, lambda files: make_swag_task(config, files))
    return SwagResult(run.result, run.result.eval_history, run.predictions, dict(run.task.bad_rows))
