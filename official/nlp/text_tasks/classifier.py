"""`TextClassifier`: sentence (pair) classification, regression and multi-label classification on raw text, the
tokenizer inside.

Example (a tiny random model; `from_model_dir` starts from a checkpoint):

>>> import keras
>>> from official.nlp.modeling.configs import BertConfig
>>> from official.nlp.modeling.encoder import BertEncoder
>>> from official.nlp.modeling.models import BertClassifier
>>> from official.nlp.tokenizers.text_layers import BertTokenizer
>>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"]
>>> keras.utils.set_random_seed(0)
>>> encoder = BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=len(vocab)))
>>> classifier = TextClassifier(BertClassifier(encoder, 2), BertTokenizer(vocab), seq_length=8,
...                             label_names=["negative", "positive"])
>>> history = classifier.fit(["good film", "bad film"], ["positive", "negative"], epochs=1, verbose=0)
>>> predictions = classifier.predict(["good film"])
>>> sorted(predictions)
['label_index', 'label_name', 'logits', 'probabilities']
>>> predictions["probabilities"].shape
(1, 2)

Multi-label (`multi_label=True`): a set of label names per text, one sigmoid per label, and the names at or above
their thresholds out:

>>> tagger = TextClassifier(BertClassifier(encoder, 3), BertTokenizer(vocab), seq_length=8,
...                         label_names=["joy", "love", "anger"], multi_label=True)
>>> history = tagger.fit(["good film", "bad film"], [["joy", "love"], []], epochs=1, verbose=0)
>>> tagger.thresholds = [0.5, 0.4, 0.6]
>>> predictions = tagger.predict(["good film"])
>>> sorted(predictions)
['above_threshold', 'logits', 'predicted_count', 'predicted_labels', 'predicted_scores', 'probabilities']
>>> len(predictions["predicted_labels"][0]) == int(predictions["predicted_count"][0])
True
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf

from official.nlp.checkpoints import fine_tuned, head_kinds
from official.nlp.common.errors import InputError
from official.nlp.metrics import multi_label as multi_label_metrics
from official.nlp.modeling.configs import DEFAULT_SEQ_LENGTH
from official.nlp.modeling.models import BertClassifier
from official.nlp.serving import exporter
from official.nlp.text_tasks import label_sets
from official.nlp.text_tasks.base import (
    TextTask,
    checked_label_names,
    checked_seq_length,
    input_check,
    model_files,
    string_column,
)
from official.nlp.tokenizers.text_layers import BertTokenizer


def _check_fine_tuned_kind(path: str, model: BertClassifier, trained_multi_label: bool, multi_label, thresholds):
    """Refuses a `from_model_dir` argument that contradicts how `path`'s head was trained: a sigmoid head read as a
    softmax one (or back) would still answer, with wrong probabilities and without its thresholds."""
    new_head = "or pass num_classes (or label_names) for a new head on its encoder"
    if trained_multi_label and multi_label is False:
        raise InputError(
            f"{path} holds a multi-label classifier (a sigmoid per label, with its thresholds), but multi_label=False; "
            f"leave multi_label out to load it as it was trained, {new_head}"
        )
    if not trained_multi_label and (multi_label or thresholds is not None):
        given = "multi_label=True" if multi_label else "thresholds were given"
        kind = "a regression head" if model.num_classes == 1 else "a single-label classifier (a softmax)"
        raise InputError(
            f"{path} holds {kind}, but {given}; leave multi_label and thresholds out to load it as it was trained, "
            f"{new_head} (with multi_label=True: a multi-label one)"
        )


@keras.saving.register_keras_serializable(package="bert")
class TextClassifier(TextTask):
    """`BertClassifier` on raw text: one text, or a pair (`text_pair=True`); `num_classes=1` is regression.

    - `fit(x, y)` / `evaluate(x, y)`: `x` a list of strings (a pair: a tuple of two lists, or a dict with `text_a`
      and `text_b`), `y` label names (of `label_names`) or indices, or numbers for regression; or a dataset of
      `(texts, labels)` elements.
    - `predict(x)`: a dict of arrays, one row per text: `label_name`, `label_index`, `probabilities`, `logits`; for
      regression `score`. These are the outputs of the exported model's `serving_default`.

    Multi-label (`multi_label=True`, as `run_classifier --multi_label`): `y` holds a label set per text (a list of
    names or indices, maybe empty), or is a multi-hot `[texts, labels]` array of 0/1 (a dataset's labels: 0/1 per
    label; `label_sets` has every form), the loss is a binary cross-entropy per label, and a label is predicted
    when its probability reaches its threshold (`thresholds`, one per label or one for all: 0.5 each unless set, or
    tuned on dev data with `tune_thresholds`). `predict` gives `predicted_labels` and `predicted_scores` (per text a
    list of the names at or above their thresholds, most probable first, and their probabilities), `predicted_count`,
    `above_threshold`, `probabilities` and `logits`: the exported `MultiLabelClassifierExport`'s outputs. The
    thresholds travel with `.keras`, `save_model_dir` (where `run_classifier --do_predict`, `export_model.py` and
    the Hugging Face export read them) and `export`.

    A text longer than `seq_length` tokens is truncated as the original does, or with
    `long_text="sliding_window"` cut into windows `doc_stride` tokens apart whose logits are averaged (training
    sees each window with its text's label), as `run_classifier --long_text` does.

    Args:
      model: a `BertClassifier`.
      tokenizer: the `BertTokenizer` of the model's vocabulary and case.
      seq_length: tokens per packed sequence.
      label_names: the class names in output order (default "0", "1", ...).
      text_pair: the model reads two texts.
      long_text, doc_stride: see above.
      multi_label, thresholds: see above.
      compile: compile with `compile()`'s defaults (Adam 5e-5, cross-entropy or squared error, accuracy).
    """

    serving_task = "classifier"

    def __init__(
        self,
        model: BertClassifier,
        tokenizer: BertTokenizer,
        *,
        seq_length: int = DEFAULT_SEQ_LENGTH,
        label_names: Sequence[str] = (),
        text_pair: bool = False,
        long_text: str = "truncate",
        doc_stride: int | None = None,
        multi_label: bool = False,
        thresholds: Sequence[float] | None = None,
        **kwargs,
    ):
        label_names = checked_label_names(label_names)
        if multi_label and model.num_classes < 2:
            raise InputError(f"multi_label needs a head with one output per label (2 or more); got {model.num_classes}")
        if thresholds is not None and not multi_label:
            raise InputError("thresholds are for a multi-label classifier (multi_label=True)")
        regression = model.num_classes == 1
        if not regression and not label_names:
            label_names = [str(i) for i in range(model.num_classes)]
        self.multi_label = bool(multi_label)  # before Model.__init__: compile() reads it for the loss
        self._thresholds = None
        if multi_label:
            self._thresholds = label_sets.checked_thresholds(thresholds, model.num_classes)
        super().__init__(model, tokenizer, seq_length=seq_length, **kwargs)
        self.label_names = [] if regression else label_names
        self.text_pair = bool(text_pair)
        self.long_text = long_text
        self.doc_stride = doc_stride
        if tokenizer.has_vocabulary:
            self.serving_module()  # refuses label names, lengths or strides that do not fit, now

    @classmethod
    def from_model_dir(
        cls,
        path: str,
        *,
        num_classes: int | None = None,
        label_names: Sequence[str] | None = None,
        seq_length: int | None = None,
        text_pair: bool | None = None,
        long_text: str | None = None,
        doc_stride: int | None = None,
        multi_label: bool | None = None,
        thresholds: Sequence[float] | None = None,
        dropout_rate: float = 0.1,
        **kwargs,
    ) -> TextClassifier:
        """A classifier on the encoder of `path` (a model directory, a converted or original checkpoint, a Hugging
        Face folder, a fine-tuning `--output_dir`), with its vocabulary and case.

        With `num_classes` or `label_names` the head is new. Without them `path` must hold a fine-tuned classifier
        (`run_classifier.py`'s `--output_dir` or `best_model/`): its head, labels, text pair and sequence length
        come along, and the other arguments override what it recorded. `seq_length` defaults to 128. A fine-tuned
        head loads as it was trained, which its directory records: a multi-label one (`run_classifier
        --multi_label`, or `save_model_dir` of `multi_label=True`) as multi-label with its thresholds (unless
        `thresholds` are given), any other as it was; `multi_label` may be left out, and one that contradicts the
        directory is refused. For a new head, `multi_label=True` makes it multi-label. A Hugging Face
        `BertForSequenceClassification` folder (`convert_checkpoint --output_format=hf` writes them) loads as the
        classifier its `config.json` says: `id2label`, `problem_type` and a multi-label one's thresholds; it records
        no text pair or sequence length (pass them).
        """
        if label_names is not None:  # before any model is built
            label_names = checked_label_names(label_names)
        files = model_files(path)
        if seq_length is not None:  # before any model is built
            checked_seq_length(seq_length, files.config.max_position_embeddings)
        tokenizer = BertTokenizer(files.vocab_file, files.do_lower_case, vocab_size=files.config.vocab_size)
        if num_classes is None and label_names is None:
            described, model = fine_tuned.load_fine_tuned(
                path,
                serving_task=cls.serving_task,
                files=files,
                what="classifier",
                hint="pass num_classes (or label_names) for a new head on its encoder",
            )
            recorded = exporter.recorded_settings(cls.serving_task, described)
            label_names = recorded["label_names"] or None
            text_pair = recorded["text_pair"] if text_pair is None else text_pair
            seq_length = recorded["max_seq_length"] if seq_length is None else seq_length
            long_text = long_text or recorded["long_text"]
            doc_stride = doc_stride or recorded["doc_stride"]
            trained_multi_label = described.multi_label or recorded["thresholds"] is not None
            _check_fine_tuned_kind(path, model, trained_multi_label, multi_label, thresholds)
            multi_label = trained_multi_label
            if multi_label and thresholds is None:
                thresholds = recorded["thresholds"]
        else:
            if label_names is not None and num_classes not in (None, len(label_names)):
                raise InputError(f"num_classes={num_classes} but {len(label_names)} label_names; pass one of them")
            num_classes = len(label_names) if label_names is not None else num_classes
            model = BertClassifier(files.build_encoder(), num_classes, dropout_rate=dropout_rate)
        return cls(
            model,
            tokenizer,
            seq_length=DEFAULT_SEQ_LENGTH if seq_length is None else seq_length,
            label_names=label_names or (),
            text_pair=bool(text_pair),
            long_text=long_text or "truncate",
            doc_stride=doc_stride,
            multi_label=bool(multi_label),
            thresholds=thresholds,
            **kwargs,
        )

    @property
    def regression(self) -> bool:
        return self.model.num_classes == 1

    @property
    def thresholds(self) -> list[float] | None:
        """A multi-label classifier's decision thresholds, one per label (None for the other kinds)."""
        return None if self._thresholds is None else list(self._thresholds)

    @thresholds.setter
    def thresholds(self, values: Sequence[float]) -> None:
        if not self.multi_label:
            raise InputError("thresholds are for a multi-label classifier (multi_label=True)")
        values = label_sets.checked_thresholds(values, len(self.label_names))
        self._thresholds = values
        if self._serving.module is not None:  # the traced serving function reads the variable
            self._serving.module.thresholds.assign(values)
            self._serving.module.threshold_list = list(values)

    def tune_thresholds(self, x, y, batch_size: int | None = None) -> list[float]:
        """Sets each label's threshold to the one that maximizes its F1 on `x`, `y` (dev data, as `fit` takes it;
        the tuner of `run_classifier --tune_thresholds`) and returns them. Scores on the same data are then
        optimistic: report another split."""
        if not self.multi_label:
            raise InputError("tune_thresholds is for a multi-label classifier (multi_label=True)")
        texts = self.python_texts(x)
        if not len(texts["text_a"]):
            raise InputError("tune_thresholds: x is empty: no texts; pass dev texts and their label sets")
        labels = self.python_labels(y, texts)
        probabilities = self.predict(x, batch_size=batch_size)["probabilities"]
        self.thresholds = multi_label_metrics.tune_thresholds(labels, probabilities).tolist()
        return self.thresholds

    # -- TextTask ---------------------------------------------------------------------------------------------------

    def task_settings(self) -> dict:
        return {
            "label_names": list(self.label_names),
            "text_pair": self.text_pair,
            "long_text": self.long_text,
            "doc_stride": self.doc_stride,
            "multi_label": self.multi_label,
            "thresholds": self.thresholds,
        }

    def model_dir_record(self) -> dict:
        settings = {"text_pair": self.text_pair, "long_text": self.long_text, "doc_stride": self.doc_stride}
        if self.multi_label:  # what run_classifier's best_model/ records (tasks.multi_label)
            settings.update(head_kinds.classifier_settings(len(self.label_names), self._thresholds))
        return {
            "task": head_kinds.GENERIC_TASK,
            "head": head_kinds.classifier_head(self.multi_label),
            "labels": list(self.label_names),
            "settings": settings,
        }

    def serving_settings(self) -> dict:
        return {
            "label_names": self.label_names,
            "text_pair": self.text_pair,
            "long_text": self.long_text,
            "doc_stride": self.doc_stride,
            "thresholds": self._thresholds,
        }

    def _text_names(self) -> tuple[str, ...]:
        return ("text_a", "text_b") if self.text_pair else ("text_a",)

    def python_texts(self, x) -> dict[str, np.ndarray]:
        names = self._text_names()
        if isinstance(x, dict):
            if sorted(x) != sorted(names):
                raise InputError(f"texts: expected the keys {', '.join(names)}, got {', '.join(sorted(x))}")
            parts = [x[name] for name in names]
        elif self.text_pair:
            if not (isinstance(x, (tuple, list)) and len(x) == 2 and not isinstance(x[0], (str, bytes))):
                raise InputError("a pair classifier takes texts as (texts_a, texts_b): a tuple of two lists")
            parts = list(x)
        else:
            parts = [x]
        columns = {name: string_column(part, name) for name, part in zip(names, parts)}
        if len({len(column) for column in columns.values()}) > 1:
            raise InputError(f"text_a and text_b differ in length: {[len(c) for c in columns.values()]}")
        return columns

    def tensor_texts(self, x) -> dict[str, tf.Tensor]:
        names = self._text_names()
        if isinstance(x, dict):
            return {name: x[name] for name in names}
        parts = list(x) if self.text_pair else [x]
        if len(parts) != len(names):
            raise InputError(f"the dataset's texts must be {' and '.join(names)}; got {len(parts)} parts")
        return dict(zip(names, parts))

    def python_labels(self, y, texts: dict) -> np.ndarray:
        count = len(texts["text_a"])
        if self.multi_label:
            return label_sets.python_label_matrix(y, self.label_names, count)
        values = np.asarray(y)
        if values.shape != (count,):
            raise InputError(f"y: expected {count} labels (one per text), got an array of shape {values.shape}")
        if self.regression:
            return values.astype("float32")
        if values.dtype.kind in "USO":
            index = {name: i for i, name in enumerate(self.label_names)}
            unknown = sorted({str(v) for v in values} - set(index))
            if unknown:
                raise InputError(f"y: unknown labels {unknown[:5]}; the labels are {', '.join(self.label_names)}")
            return np.array([index[str(v)] for v in values], "int32")
        if values.dtype.kind not in "iu" or values.min(initial=0) < 0 or values.max(initial=0) >= len(self.label_names):
            raise InputError(f"y: expected label indices 0..{len(self.label_names) - 1} or label names")
        return values.astype("int32")

    def training_data(self, x, y=None, batch_size=None, *, shuffle=False):
        if (
            not self.regression and not self.multi_label and not hasattr(self._serving, "label_ids")
        ):  # made eagerly, used in the pipeline
            keys = tf.constant(self.label_names)
            self._serving.label_ids = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(keys, tf.range(len(self.label_names), dtype=tf.int32)), -1
            )
        return super().training_data(x, y, batch_size, shuffle=shuffle)

    def tensor_labels(self, y):
        if self.multi_label:
            return label_sets.tensor_label_matrix(y, self.label_names)
        if self.regression:
            return tf.cast(y, tf.float32)
        if y.dtype == tf.string:
            ids = self._serving.label_ids.lookup(y)
            unknown = f"the dataset's labels: a label is not one of {', '.join(self.label_names)}"
            with tf.control_dependencies([input_check(tf.reduce_all(ids >= 0), unknown)]):
                return tf.identity(ids)
        return tf.cast(y, tf.int32)

    def training_batch(self, texts, labels):
        features, windows = self.serving_module().pack(texts)
        if windows is not None:  # each window of a long text trains on the text's label
            labels = tf.gather(labels, windows["example"])
        return features, (labels[:, None] if self.regression else labels)

    def collect(self, batches: list[dict[str, np.ndarray]]) -> dict:
        if not self.multi_label:
            return super().collect(batches)
        # predicted_labels/_scores are [batch, k] with k the batch's most labels: per text a list instead.
        ranked = {"predicted_labels", "predicted_scores"}
        result = super().collect([{k: v for k, v in b.items() if k not in ranked} for b in batches])
        for batch in batches:
            kept = batch["predicted_labels"] != b""
            for row, keep in enumerate(kept):
                result.setdefault("predicted_labels", []).append(
                    [name.decode("utf-8") for name in batch["predicted_labels"][row][keep]]
                )
                result.setdefault("predicted_scores", []).append(batch["predicted_scores"][row][keep].tolist())
        return result

    def default_loss(self):
        if self.multi_label:
            return keras.losses.BinaryCrossentropy(from_logits=True)
        if self.regression:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self) -> list:
        return [] if self.regression or self.multi_label else [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
