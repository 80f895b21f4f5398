"""The registry of fine-tuned head kinds (`HEADS`): each kind's name as `finetuning.json` records it, the model it
builds, the `export_model` task that serves it, whether it is multi-label, and the Hugging Face and keras-hub
classes it is written as (None: not written); with the names every export and conversion of a head needs (Hugging
Face's classifier problem types, where a multi-label classifier's thresholds go) and the thresholds per label.

Adding a head kind is one entry here and the task that trains it. What a fine-tuned model directory holds, and how
it is read, loaded and written, is `checkpoints.fine_tuned`'s.

Example:

    head_kind("multi_label_classifier").serving_task, head_kind("multi_label_classifier").multi_label
    # ("classifier", True)
    thresholds_per_label(3, threshold=0.3)   # [0.3, 0.3, 0.3]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import keras

from official.nlp.checkpoints.peers import keras_hub_tasks
from official.nlp.common.errors import InputError
from official.nlp.modeling.models import BertClassifier, BertMultipleChoice, BertSpanLabeler, BertTokenClassifier

# The head kinds, as `finetuning.json` records them.
CLASSIFIER = "classifier"
MULTI_LABEL_CLASSIFIER = "multi_label_classifier"
TOKEN_CLASSIFIER = "token_classifier"
FEATURE_TAGGER = "feature_tagger"
MULTIPLE_CHOICE = "multiple_choice"
# "SquadTask" is what fine-tuned SQuAD directories have recorded for the dense span head since before there was a
# choice; existing directories keep loading.
SPAN_LABELER = "SquadTask"
SPAN_BILSTM = "span_bilstm"

# Hugging Face's `problem_type` of a BertForSequenceClassification.
SINGLE_LABEL_PROBLEM = "single_label_classification"
MULTI_LABEL_PROBLEM = "multi_label_classification"
REGRESSION_PROBLEM = "regression"
HF_THRESHOLDS_KEY = "multi_label_thresholds"  # ours, in config.json: transformers keeps it without using it
HF_CLASSIFIER = "BertForSequenceClassification"
GENERIC_TASK = "generic"  # the task of a classifier trained outside run_classifier's named tasks (any TSV/CSV/JSON)
NER_TASK = "conll_ner"  # the task a token classifier records (run_ner's)
_DEFAULT_THRESHOLD = 0.5  # `metrics.multi_label.DEFAULT_THRESHOLD`, which this floor cannot import
_SPAN_LSTM_KERNEL = ("model", "span_bilstm", "forward_layer", "cell", "kernel")


def _dense_outputs(shape_of: Callable) -> dict | None:
    shape = shape_of(("model", "classifier", "_kernel"))
    return None if shape is None else {"num_outputs": shape[-1]}


def _span_options(shape_of: Callable) -> dict | None:
    if shape_of(("model", "span_logits", "_kernel")) is None:
        return None
    # The checkpoint says which span head it holds (run_squad --span_head): a BiLSTM's kernel is [H, 4 * units].
    lstm = shape_of(_SPAN_LSTM_KERNEL)
    return {"span_head": "bilstm", "lstm_units": lstm[-1] // 4} if lstm else {}


@dataclasses.dataclass(frozen=True)
class HeadKind:
    """One kind of fine-tuned head.

    - `name`: as `finetuning.json` records it;
    - `serving_task`: the `export_model` task that serves it (None: it cannot be exported);
    - `options`: from a function giving a checkpoint variable's shape (None when absent), the builder's keyword
      arguments, or None when the checkpoint holds no such head;
    - `build`: `(encoder, **options)` -> the Keras model (None: only its own task builds it);
    - `multi_label`: a sigmoid per label, predicted at the thresholds recorded with the model;
    - `hugging_face`: the transformers class `hf_export` writes it as (None: refused), and which `load_fine_tuned`
      reads back; `keras_hub`: likewise, the keras-hub task class of a preset folder (`keras_hub_task_files`);
    - `instead`: for a kind only its task builds, what to do instead (the refusal of `load_fine_tuned`, and so of
      every export and text task, says it).
    """

    name: str
    serving_task: str | None
    options: Callable[[Callable], dict | None]
    build: Callable[..., keras.Model] | None
    multi_label: bool = False
    hugging_face: str | None = None
    keras_hub: str | None = None
    instead: str | None = None


def _classifier(encoder, num_outputs):
    return BertClassifier(encoder, num_outputs)


HEADS: dict[str, HeadKind] = {
    kind.name: kind
    for kind in (
        HeadKind(
            CLASSIFIER,
            "classifier",
            _dense_outputs,
            _classifier,
            hugging_face=HF_CLASSIFIER,
            keras_hub=keras_hub_tasks.CLASSIFIER_CLASS,
        ),
        HeadKind(
            MULTI_LABEL_CLASSIFIER,
            "classifier",
            _dense_outputs,
            _classifier,
            multi_label=True,
            hugging_face=HF_CLASSIFIER,
            keras_hub=keras_hub_tasks.CLASSIFIER_CLASS,
        ),
        HeadKind(
            TOKEN_CLASSIFIER,
            "ner",
            _dense_outputs,
            lambda encoder, num_outputs: BertTokenClassifier(encoder, num_outputs),
        ),
        # The feature-based tagger (run_ner --feature_based) loads through its task only: its BiLSTM's settings
        # are the job's flags.
        HeadKind(
            FEATURE_TAGGER,
            None,
            _dense_outputs,
            None,
            instead="it is a feature-based NER model (run_ner --feature_based: BiLSTMs on the frozen encoder's "
            "layers): tag files with run_ner --do_predict and that --output_dir, or fine-tune without "
            "--feature_based to get a model that exports",
        ),
        HeadKind(MULTIPLE_CHOICE, "swag", _dense_outputs, lambda encoder, num_outputs: BertMultipleChoice(encoder)),
        HeadKind(SPAN_LABELER, "squad", _span_options, BertSpanLabeler),
        HeadKind(SPAN_BILSTM, "squad", _span_options, BertSpanLabeler),
    )
}


def head_kind(name: str) -> HeadKind:
    """The head kind `name` (as `finetuning.json` records it). A kind not registered (a `FineTuningTask` of the
    user's own records its class name) is one that only its own task builds, exports nothing and is not written as
    a Hugging Face folder."""
    return HEADS.get(name) or HeadKind(name, None, _dense_outputs, None)


def classifier_head(multi_label: bool) -> str:
    """The head kind a sequence classifier records."""
    return MULTI_LABEL_CLASSIFIER if multi_label else CLASSIFIER


def thresholds_per_label(num_labels: int, thresholds: Sequence[float] | None = None, threshold=None) -> list[float]:
    """One threshold per label: `thresholds` when given, else `threshold` for every label, else 0.5."""
    if thresholds is not None and len(thresholds):
        if len(thresholds) != num_labels:
            raise InputError(f"{len(thresholds)} thresholds for {num_labels} labels")
        return [float(t) for t in thresholds]
    return [float(_DEFAULT_THRESHOLD if threshold is None else threshold)] * num_labels


def classifier_settings(num_labels: int, thresholds: Sequence[float] | None) -> dict:
    """What a multi-label classifier's directory records for serving (`finetuning_settings.json`)."""
    return {"multi_label": True, "thresholds": thresholds_per_label(num_labels, thresholds)}
