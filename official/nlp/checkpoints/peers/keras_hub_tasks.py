"""The task of a keras-hub preset folder, both ways: a `BertTextClassifier`'s head (`task.json`, `task.weights.h5`).

keras-hub's `save_to_preset` on a task writes, beside the backbone's files (keras_hub_presets.py), `task.json` (the
task's constructor arguments: `num_classes`, `activation`, `dropout`, with its backbone's and preprocessor's
configs inside) and `task.weights.h5`, the weights outside the backbone in Keras' layout: for a
`BertTextClassifier`, `layers/dense/vars/0` (kernel `[hidden, num_classes]`) and `vars/1` (bias), over the pooled
output after a dropout, as our `BertClassifier`. `keras_hub.models.TextClassifier.from_preset(folder)` builds the
task from `task.json` and loads both weight files.

The classifier's `activation` says what its outputs are: `"linear"` (keras-hub's default) logits, as ours;
`"softmax"` the probabilities of those logits (one label per example); `"sigmoid"` one probability per label (a
multi-label classifier). keras-hub keeps no label names: the labels are the class indices, "0", "1", ..., unless
`metadata.json` holds this library's record (`RECORD_KEY`: task, label names, text pair, thresholds), which a preset we
write carries and keras-hub ignores.

Example:

    head = read_classifier("bert_tiny_en_uncased_sst2/")   # ClassifierHead(num_classes=2, activation="linear", ...)
"""

from __future__ import annotations

import dataclasses
import io
import json
import os

import h5py
import keras
import numpy as np

from official.nlp.checkpoints.peers import keras_hub_export, keras_hub_presets, tf1_checkpoints
from official.nlp.common import input_files, text_files
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier

TASK_CONFIG_FILE = "task.json"
TASK_WEIGHTS_FILE = "task.weights.h5"
CLASSIFIER_CLASS = "BertTextClassifier"
ACTIVATIONS = ("linear", "softmax", "sigmoid")
_KERNEL, _BIAS = "layers/dense/vars/0", "layers/dense/vars/1"
RECORD_KEY = "official_bert"  # in metadata.json: what keras-hub does not keep (label names, text pair, thresholds)


@dataclasses.dataclass(frozen=True)
class ClassifierHead:
    """A keras-hub `BertTextClassifier`'s head: its outputs, activation, dropout, the preprocessor's sequence
    length (None if it records none), and its weights (kernel `[hidden, num_classes]`, bias `[num_classes]`)."""

    num_classes: int
    activation: str
    dropout: float
    sequence_length: int | None
    kernel: np.ndarray | None = None
    bias: np.ndarray | None = None
    record: dict = dataclasses.field(default_factory=dict)  # metadata.json's RECORD_KEY, {} if none

    @property
    def multi_label(self) -> bool:
        return self.activation == "sigmoid"


def task_class(folder: str) -> str | None:
    """The class of the task a preset folder holds (`task.json`), None for a backbone-only preset."""
    path = os.path.join(folder, TASK_CONFIG_FILE)
    if not input_files.exists(path):
        return None
    return _read_task(path, folder).get("class_name")


def _read_task(path: str, folder: str) -> dict:
    try:
        value = json.loads(text_files.read_text(path))
    except json.JSONDecodeError as e:
        raise InputError(f"{path} is not valid JSON ({e}); is {folder} a whole keras-hub preset?") from None
    if not isinstance(value, dict):
        raise InputError(f"{path} is not a JSON object; is {folder} a keras-hub preset?")
    return value


def read_classifier(folder: str, *, weights: bool = True) -> ClassifierHead:
    """The `BertTextClassifier` head of preset `folder` (with its weights unless `weights` is False)."""
    path = os.path.join(folder, TASK_CONFIG_FILE)
    stored = _read_task(path, folder)
    if stored.get("class_name") != CLASSIFIER_CLASS:
        raise InputError(f"{path} describes a {stored.get('class_name')!r}, not a keras-hub {CLASSIFIER_CLASS}")
    args = stored.get("config") or {}
    activation = args.get("activation", "linear")
    activation = activation if isinstance(activation, str) else (activation or {}).get("config", {}).get("name")
    if activation not in ACTIVATIONS:
        raise InputError(
            f"{path}: a classifier with activation {activation!r}; this library reads {', '.join(ACTIVATIONS)}"
        )
    preprocessor = ((args.get("preprocessor") or {}).get("config")) or {}
    try:
        num_classes = int(args["num_classes"])
        length = preprocessor.get("sequence_length")
        head = ClassifierHead(
            num_classes, activation, float(args.get("dropout", 0.1)), int(length) if length is not None else None
        )
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: the {CLASSIFIER_CLASS} config lacks or mangles {e}; is the file complete?") from None
    metadata = os.path.join(folder, keras_hub_presets.METADATA_FILE)
    if input_files.exists(metadata):
        record = _read_task(metadata, folder).get(RECORD_KEY)
        head = dataclasses.replace(head, record=record if isinstance(record, dict) else {})
    if not weights:
        return head
    weights_path = os.path.join(folder, TASK_WEIGHTS_FILE)
    if not input_files.exists(weights_path):
        raise MissingInputError(
            f"{folder} has {TASK_CONFIG_FILE} but no {TASK_WEIGHTS_FILE}: the classifier's head is missing "
            "(a partial copy?)"
        )
    try:
        with h5py.File(io.BytesIO(input_files.read_bytes(weights_path)), "r") as handle:
            kernel, bias = (np.asarray(handle[key][()], np.float32) for key in (_KERNEL, _BIAS))
    except (OSError, KeyError, ValueError) as e:
        raise InputError(
            f"{weights_path} is not a keras-hub {CLASSIFIER_CLASS}'s weights file, or is damaged ({e}); save it again"
        ) from None
    if kernel.shape[-1] != num_classes or bias.shape != (num_classes,) or kernel.ndim != 2:
        raise InputError(
            f"{weights_path}: a head of shape {kernel.shape} + {bias.shape} for num_classes={num_classes} in "
            f"{TASK_CONFIG_FILE}; the two files are of different models"
        )
    return dataclasses.replace(head, kernel=kernel, bias=bias)


def build_classifier(folder: str, config: BertConfig) -> BertClassifier:
    """Our classifier with the weights of preset `folder`'s `BertTextClassifier`: it gives keras-hub's logits (for
    activation softmax or sigmoid, the logits of its probabilities)."""
    head = read_classifier(folder)
    encoder = BertEncoder.from_bert_config(config)
    tf1_checkpoints.assign_weights(keras_hub_presets.read_preset_weights(folder), encoder, source=folder)
    model = BertClassifier(encoder, head.num_classes, dropout_rate=head.dropout)
    model.classifier.kernel.assign(head.kernel)
    model.classifier.bias.assign(head.bias)
    return model


# ---------------------------------------------------------------------------------------------------------------
# Writing


def classifier_files_of(
    model: BertClassifier, *, do_lower_case: bool, sequence_length: int, multi_label: bool, record: dict
) -> dict[str, bytes]:
    """`classifier_files` of our classifier `model` (linear logits, or sigmoid for a multi-label one)."""
    dropout = next((layer.rate for layer in model.layers if isinstance(layer, keras.layers.Dropout)), 0.1)
    return classifier_files(
        model.encoder.config,
        np.asarray(model.classifier.kernel),
        np.asarray(model.classifier.bias),
        do_lower_case=do_lower_case,
        sequence_length=sequence_length,
        dropout=float(dropout),
        activation="sigmoid" if multi_label else "linear",
        record=record,
    )


def classifier_files(
    config: BertConfig,
    kernel: np.ndarray,
    bias: np.ndarray,
    *,
    do_lower_case: bool,
    sequence_length: int,
    dropout: float,
    activation: str = "linear",
    record: dict | None = None,
) -> dict[str, bytes]:
    """`task.json`, `task.weights.h5`, and `preprocessor.json` and `metadata.json` (with `record` under
    `RECORD_KEY`) of a `BertTextClassifier` with this head, in keras-hub's layout (the backbone's files are
    keras_hub_export's)."""
    json_files = keras_hub_export.preset_json_files(config, do_lower_case)
    metadata = json_files[keras_hub_presets.METADATA_FILE]
    if record:
        metadata[RECORD_KEY] = record
    preprocessor = json_files[keras_hub_presets.PREPROCESSOR_FILE]
    preprocessor["config"]["sequence_length"] = int(sequence_length)
    task = {
        "module": "keras_hub.src.models.bert.bert_text_classifier",
        "class_name": CLASSIFIER_CLASS,
        "config": {
            "backbone": json_files[keras_hub_presets.PRESET_CONFIG_FILE],
            "preprocessor": preprocessor,
            "name": "bert_text_classifier",
            "num_classes": int(kernel.shape[-1]),
            "activation": activation,
            "dropout": float(dropout),
        },
        "registered_name": f"keras_hub>{CLASSIFIER_CLASS}",
    }
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:
        # The groups keras-hub's own save_task_weights writes; Keras' loader walks the same tree.
        for group, name in (
            ("vars", "bert_text_classifier"),
            ("layers/dense/vars", "logits"),
            ("layers/dropout/vars", "classifier_dropout"),
            ("optimizer/vars", "adam"),
            ("preprocessor/tokenizer/vars", "bert_tokenizer"),
            ("preprocessor/vars", "bert_text_classifier_preprocessor"),
        ):
            handle.require_group(group).attrs["name"] = name
        handle.create_dataset(_KERNEL, data=np.asarray(kernel, np.float32))
        handle.create_dataset(_BIAS, data=np.asarray(bias, np.float32))
        handle.create_dataset("optimizer/vars/0", data=np.int64(0))
        handle.create_dataset("optimizer/vars/1", data=np.float32(5e-5))
    return {
        TASK_CONFIG_FILE: json.dumps(task, indent=4).encode("utf-8"),
        TASK_WEIGHTS_FILE: buffer.getvalue(),
        keras_hub_presets.PREPROCESSOR_FILE: json.dumps(preprocessor, indent=4).encode("utf-8"),
        keras_hub_presets.METADATA_FILE: json.dumps(metadata, indent=4).encode("utf-8"),
    }
