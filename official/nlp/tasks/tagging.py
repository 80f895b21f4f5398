"""Token classification (CoNLL-2003 NER) on the fine-tuning base, fine-tuned or feature-based.

`TaggingTask` pairs `data.conll` (column files, first-sub-token labels, windows for long sentences) with
`BertTokenClassifier` and the conlleval entity F1 (`metrics.conlleval`); `FeatureBasedTaggingTask` swaps in the
paper's feature-based model (`modeling.feature_tagger.BertFeatureTagger`: frozen encoder, chosen layers, two-layer
BiLSTM; only that trains). `run_ner` is everything `run_scripts/run_ner.py` does, callable from Python:

    result = run_ner(TaggingConfig(
        output_dir="/tmp/ner", init_checkpoint="models/minilm", num_train_epochs=3, train_file="eng.train",
        eval_file="eng.testa", predict_file="eng.testb", do_train=True, do_eval=True, do_predict=True))
    result.eval_history[-1]["f1"]     # dev entity F1 after the last epoch
    result.predictions_file           # /tmp/ner/test_predictions.txt, in CoNLL columns for conlleval

From Python with `fit` instead of the loop: build the features with `data.conll.convert_sentences`, train
`BertTokenClassifier` on `(features.model_inputs(), features.arrays["label_ids"])` with
`masked_token_loss` as the loss, and map the predictions back with `conll.word_predictions`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging
from keras import ops

from official.nlp.checkpoints import head_kinds, model_dir
from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.common import input_files, output_files
from official.nlp.common.config_flags import field
from official.nlp.common.errors import InputError
from official.nlp.data import conll, feature_cache
from official.nlp.metrics import conlleval
from official.nlp.modeling.encoder import INPUT_NAMES, BertEncoder
from official.nlp.modeling.feature_tagger import COMBINE, BertFeatureTagger, feature_layers
from official.nlp.modeling.losses import cross_entropy, weighted_accuracy
from official.nlp.modeling.models import BertTokenClassifier
from official.nlp.tasks import finetuning, finetuning_config

PREDICTIONS_FILE = "test_predictions.txt"
EVAL_PREDICTIONS_FILE = "eval_predictions.txt"
# Record names follow the original run_classifier.py / BERT-NER records.
_RECORD_NAMES = {
    "input_word_ids": "input_ids",
    "input_mask": "input_mask",
    "input_type_ids": "segment_ids",
    "label_ids": "label_ids",
}


@dataclasses.dataclass
class TaggingConfig(finetuning_config.FineTuningConfig):
    """`FineTuningConfig` plus the NER settings (field names are the script's flags); the CoNLL files are IOB1 or
    IOB2 columns (see `data.conll`)."""

    train_file: str | None = field(None, path="path", help="CoNLL training file (e.g. eng.train or train.txt).")
    eval_file: str | None = field(None, path="path", help="CoNLL file for --do_eval (e.g. eng.testa).")
    predict_file: str | None = field(None, path="path", help="CoNLL file for --do_predict (e.g. eng.testb).")
    do_train: bool = field(False, help="Fine-tune (or resume).")
    do_eval: bool = field(False, help="Entity F1 on --eval_file after each epoch (or once, without --do_train).")
    do_predict: bool = field(False, help="Tag --predict_file into --output_dir/test_predictions.txt.")
    labels: Sequence[str] | None = field(
        None, help="The tag set in the head's order (default: the training file's tags, O first, then sorted)."
    )
    skip_bad_rows: bool = field(False, help="Leave out and count sentences with a malformed line or an unknown tag.")
    window_stride: int | None = field(
        None, minimum=1, help="Sub-tokens between windows of a long sentence (default: half a window)."
    )
    feature_based: bool = field(False, help="Freeze BERT and train a BiLSTM on its layers (the paper's Table 7).")
    feature_layers: Sequence[int | str] = field(
        ("-1", "-2", "-3", "-4"),
        help="--feature_based: the layers to use: Transformer layer indexes (-1 is the last), 'embeddings' (the "
        "embedding layer's output), 'all' (every Transformer layer). Table 7's rows: docs/ner.md.",
    )
    feature_combine: str = field("concat", enum=COMBINE, help="--feature_based: how the layers are combined.")
    lstm_units: int = field(768, minimum=1, help="--feature_based: units per direction of each BiLSTM layer.")
    num_lstm_layers: int = field(2, minimum=1, help="--feature_based: BiLSTM layers.")
    dropout_rate: float = field(
        0.1, minimum=0, exclusive_maximum=1, help="Dropout before the classifier (and in the BiLSTM stack)."
    )


def masked_token_loss(y_true, y_pred):
    """Keras loss for `fit`: mean cross entropy over the positions whose label is not -1 (`conll.IGNORE`)."""
    weights = ops.cast(ops.greater_equal(y_true, 0), "float32")
    losses = cross_entropy(ops.maximum(y_true, 0), y_pred)
    return ops.sum(losses * weights) / ops.maximum(ops.sum(weights), 1.0)


class TokenClassificationObjective:
    """Cross entropy and accuracy over the labelled positions (each word's first sub-token, label >= 0), averaged
    over the global batch's labelled positions."""

    def loss_weights(self, labels):
        return {"loss": tf.cast(labels["label_ids"] >= 0, tf.float32)}

    def losses(self, labels, outputs):
        return {"loss": cross_entropy(tf.maximum(labels["label_ids"], 0), outputs)}

    def metrics(self, labels, outputs):
        return {
            "accuracy": weighted_accuracy(
                tf.maximum(labels["label_ids"], 0), outputs, self.loss_weights(labels)["loss"]
            )
        }


def _recorded_labels(output_dir: str, init_checkpoint: str | None) -> list[str] | None:
    """The labels of an earlier run in `output_dir`, or of a fine-tuned `init_checkpoint`."""
    for found in (
        model_dir.read_settings_file(output_dir) if input_files.isdir(output_dir) else None,
        init_checkpoint_lib.fine_tuned_head(init_checkpoint),
    ):
        if found and found.get("labels"):
            return list(found["labels"])
    return None


class TaggingTask:
    """CoNLL NER by fine-tuning `BertTokenClassifier` (a `finetuning.FineTuningTask`).

    Args:
      config: `TaggingConfig` (its `max_seq_length` is the window; the training features are cached in its
        `output_dir`; `init_checkpoint` is read for the labels when there is no training file).
      files: the `ModelFiles` of `config.init_checkpoint` (the tokenizer; its vocabulary and case go in the cache
        key).
    """

    name = head_kinds.NER_TASK
    head = head_kinds.TOKEN_CLASSIFIER
    metric_name = "f1"

    def __init__(self, config: TaggingConfig, files):
        self.config = config
        self.files = files
        self.tokenizer = files.tokenizer()
        self.bad_rows: dict[str, int] = {}
        self._train = self._read(config.train_file, "train") if config.train_file else None
        if config.labels:
            self.labels = list(config.labels)
        elif self._train is not None:
            self.labels = conll.label_list(self._train)
        else:
            self.labels = _recorded_labels(config.output_dir, config.init_checkpoint)
            if not self.labels:
                raise InputError(
                    "No label set: give --train_file, --labels, or an --output_dir / --init_checkpoint "
                    "fine-tuned for NER"
                )
        if self._train is not None:
            self._train = self._checked(self._train, "train", config.train_file)
        self._eval_sentences: list[conll.Sentence] | None = None
        self._predict_sentences: list[conll.Sentence] | None = None
        self._num_train: int | None = None

    # ---- data -----------------------------------------------------------------------------------------------

    def check_inputs(self) -> None:
        """Reads the evaluation and prediction files the jobs ask for, so that a malformed line or an unknown tag
        there stops the job before training rather than after its first epoch (`finetuning.run_task`)."""
        if self.config.do_eval and self.config.eval_file:
            self._eval_sentences = self._checked_eval_sentences()
        if self.config.do_predict and self.config.predict_file:
            self._predict_sentences = self._read(self.config.predict_file, "predict")

    def _checked_eval_sentences(self) -> list[conll.Sentence]:
        if self._eval_sentences is None:
            self._eval_sentences = self._checked(
                self._read(self.config.eval_file, "eval"), "eval", self.config.eval_file
            )
        return self._eval_sentences

    def _read(self, path: str, split: str) -> list[conll.Sentence]:
        read = conll.read_conll(path, skip_bad_rows=self.config.skip_bad_rows)
        self.bad_rows[split] = read.bad_rows
        logging.info(
            "%s: %d sentences in %d documents%s",
            path,
            len(read.sentences),
            read.documents,
            f", {read.bad_rows} bad line(s) skipped" if read.bad_rows else "",
        )
        return read.sentences

    def _checked(self, sentences, split: str, path: str) -> list[conll.Sentence]:
        source = (
            "--labels"
            if self.config.labels
            else (f"the training file {self.config.train_file}" if self.config.train_file else "the fine-tuned model")
        )
        kept, bad = conll.check_labels(sentences, self.labels, skip_bad_rows=self.config.skip_bad_rows, source=source)
        self.bad_rows[split] = self.bad_rows.get(split, 0) + bad
        if not kept:
            raise InputError(f"{path}: no sentence left with the labels {self.labels}")
        return kept

    def _features(self, sentences, labels) -> conll.TaggingFeatures:
        return conll.convert_sentences(
            sentences, self.tokenizer, labels, self.config.max_seq_length, window_stride=self.config.window_stride
        )

    def _cache_key(self) -> dict:
        return {
            "task": self.name,
            "train_sha256": feature_cache.file_digest([self.config.train_file]),
            "vocab_sha256": feature_cache.file_digest([self.files.vocab_file]) if self.files.vocab_file else None,
            "do_lower_case": self.files.do_lower_case,
            "max_seq_length": self.config.max_seq_length,
            "window_stride": self.config.window_stride,
            "labels": list(self.labels),
            "skip_bad_rows": self.config.skip_bad_rows,
        }

    def _train_records(self):
        features = self._features(self._train, self.labels).arrays
        for i in range(len(features["input_word_ids"])):
            yield {record: features[name][i] for name, record in _RECORD_NAMES.items()}

    def num_train_examples(self) -> int:
        """Training windows per epoch (a sentence longer than a window counts once per window)."""
        if self._train is None:
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
        parse = feature_cache.int_parser({record: [self.config.max_seq_length] for record in _RECORD_NAMES.values()})

        def to_xy(records):
            record = parse(records)
            x = {name: record[_RECORD_NAMES[name]] for name in INPUT_NAMES}
            return x, {"label_ids": record["label_ids"]}

        return feature_cache.training_batches(
            os.path.join(self.config.output_dir, feature_cache.TRAIN_RECORDS),
            batch_size,
            parse=to_xy,
            seed=seed,
            input_context=input_context,
        )

    # ---- model ----------------------------------------------------------------------------------------------

    def build_model(self, encoder: BertEncoder) -> keras.Model:
        return BertTokenClassifier(encoder, len(self.labels), dropout_rate=self.config.dropout_rate)

    def objective(self) -> TokenClassificationObjective:
        return TokenClassificationObjective()

    def settings(self) -> dict:
        settings = {key: value for key, value in self._cache_key().items() if key not in ("task", "labels")}
        settings["head"] = self.head
        return settings

    # ---- evaluation and prediction --------------------------------------------------------------------------

    def predict_tags(
        self, model: keras.Model, sentences: Sequence[conll.Sentence], batch_size: int | None = None
    ) -> list[list[str]]:
        """The model's tag for every word of `sentences` (`batch_size`: default eval's)."""
        features = self._features(sentences, None)
        logits = model.predict(features.model_inputs(), batch_size=batch_size or self.config.eval_batch_size, verbose=0)
        return conll.word_predictions(features, np.argmax(logits, axis=-1), self.labels, sentences)

    def evaluate(self, model: keras.Model) -> dict[str, float]:
        """conlleval scores on `eval_file` (`f1`, `precision`, `recall`, token `accuracy`, `f1_TYPE`); the
        predictions go to `eval_predictions.txt`."""
        if not self.config.eval_file:
            raise InputError("--do_eval needs --eval_file")
        sentences = self._checked_eval_sentences()
        predicted = self.predict_tags(model, sentences)
        output_files.makedirs(self.config.output_dir, name="--output_dir")
        conll.write_predictions(os.path.join(self.config.output_dir, EVAL_PREDICTIONS_FILE), sentences, predicted)
        result = conlleval.evaluate([s.labels for s in sentences], predicted)
        logging.info("conlleval on %s:\n%s", self.config.eval_file, result.report())
        return result.as_dict()

    def predict(self, model: keras.Model, output_file: str | None = None) -> tuple[str, conlleval.ConllevalResult]:
        """Tags `predict_file` and writes it in CoNLL columns (input columns + predicted tag); returns the file and
        conlleval's scores against the file's own tags (meaningful when they are gold tags)."""
        if not self.config.predict_file:
            raise InputError("--do_predict needs --predict_file")
        sentences = self._predict_sentences or self._read(self.config.predict_file, "predict")
        predicted = self.predict_tags(model, sentences, self.config.predict_batch_size or self.config.eval_batch_size)
        output_file = output_file or os.path.join(self.config.output_dir, PREDICTIONS_FILE)
        output_files.makedirs_for(output_file)
        conll.write_predictions(output_file, sentences, predicted)
        return output_file, conlleval.evaluate([s.labels for s in sentences], predicted)


class FeatureBasedTaggingTask(TaggingTask):
    """The paper's feature-based NER: `BertFeatureTagger` on the frozen encoder; only the BiLSTM and the
    classifier train (a learning rate around 1e-3 suits them better than fine-tuning's 5e-5)."""

    name = "conll_ner_feature_based"
    head = head_kinds.FEATURE_TAGGER

    def build_model(self, encoder: BertEncoder) -> keras.Model:
        c = self.config
        return BertFeatureTagger(
            encoder,
            len(self.labels),
            layers=c.feature_layers,
            combine=c.feature_combine,
            lstm_units=c.lstm_units,
            num_lstm_layers=c.num_lstm_layers,
            dropout_rate=c.dropout_rate,
        )

    def settings(self) -> dict:
        c = self.config
        return {
            **super().settings(),
            "feature_layers": list(c.feature_layers),
            "feature_combine": c.feature_combine,
            "lstm_units": c.lstm_units,
            "num_lstm_layers": c.num_lstm_layers,
            "dropout_rate": c.dropout_rate,
        }


@dataclasses.dataclass
class NerResult:
    """What `run_ner` returns: the fine-tuning result (None without training or evaluation), the prediction file
    and its scores, and the bad rows skipped per split."""

    finetuning: finetuning.FineTuningResult | None
    eval_history: list[dict]
    predictions_file: str | None
    predict_scores: conlleval.ConllevalResult | None
    bad_rows: dict[str, int]


FEATURE_FLAGS = ("feature_layers", "feature_combine", "lstm_units", "num_lstm_layers")


def check_feature_flags(config: TaggingConfig) -> None:
    """Refuses the feature-based model's settings without `feature_based`: a fine-tuned tagger has no BiLSTM, and
    they would be ignored without a word."""
    if config.feature_based:
        return
    defaults = {f.name: f.default for f in dataclasses.fields(TaggingConfig)}
    given = []
    for name in FEATURE_FLAGS:
        value = getattr(config, name)
        if isinstance(value, (list, tuple)):
            value, default = tuple(str(v) for v in value), tuple(str(v) for v in defaults[name])
        else:
            default = defaults[name]
        if value != default:
            given.append(f"--{name}={','.join(value) if isinstance(value, tuple) else value}")
    if given:
        raise InputError(
            f"{', '.join(given)}: {'these set' if len(given) > 1 else 'this sets'} the feature-based BiLSTM, which "
            "fine-tuning does not have; add --feature_based to train it on the frozen model, or leave "
            f"{'them' if len(given) > 1 else 'it'} out to fine-tune"
        )


def make_ner_task(config: TaggingConfig, files=None) -> TaggingTask:
    """The task of `config` (fine-tuned or feature-based) with the tokenizer of `config.init_checkpoint`."""
    check_feature_flags(config)
    files = files or finetuning_config.init_checkpoint_files(config)
    if config.feature_based:
        try:
            # Recorded as spelled out ("all" as its indexes), so that equal choices are equal settings.
            layers = feature_layers(config.feature_layers, files.config.num_hidden_layers)
        except ValueError as e:
            raise InputError(f"--feature_layers={','.join(map(str, config.feature_layers))}: {e}") from None
        config = dataclasses.replace(config, feature_layers=tuple(layers))
    cls = FeatureBasedTaggingTask if config.feature_based else TaggingTask
    return cls(config, files)


def run_ner(config: TaggingConfig) -> NerResult:
    """Trains (or resumes), evaluates after each epoch and tags `predict_file`, as `config.do_train/do_eval/
    do_predict` say; see the module docstring."""
    check_feature_flags(config)  # before any file is read
    run = finetuning.run_task(config, lambda files: make_ner_task(config, files))
    predictions_file, scores = run.predictions or (None, None)
    if predictions_file:
        logging.info("Wrote %s; conlleval against its tags:\n%s", predictions_file, scores.report())
    return NerResult(run.result, run.result.eval_history, predictions_file, scores, dict(run.task.bad_rows))
