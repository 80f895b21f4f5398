"""Fine-tuned models, in one place: which head a directory holds, its labels, whether it is multi-label, its
thresholds, how to build it, and how each export and conversion treats it.

A fine-tuned model directory is a model directory (checkpoint, `bert_config.json`, `vocab.txt`, `do_lower_case`)
plus two records, read here and nowhere else:

    finetuning.json            {"task", "head", "labels", "metric", "evaluation"}: what the head is
    finetuning_settings.json   the job's settings (`max_seq_length`, ...), and for a multi-label classifier
                               `multi_label` and `thresholds` (one per label): how to serve it

A fine-tuning job's `--output_dir` stands for its `best_model/` (or, before there is one, its latest checkpoint
with the settings the job recorded: see `init_checkpoint`). A Hugging Face `BertForSequenceClassification` folder
(`config.json` with `id2label` and `problem_type`; a multi-label one's thresholds in `multi_label_thresholds`, as
`hf_export` writes them) is read as the classifier it is, and so is a keras-hub preset folder of a
`BertTextClassifier` (`task.json`, `task.weights.h5`: keras_hub_tasks.py).

A Model Garden checkpoint of a `BertClassifier` (its sentence-prediction task's) is read as the classifier it is,
with the labels `0`, `1`, ... (the Model Garden keeps label ids, not names; none for one output, a regression).

The kinds of head are `checkpoints.head_kinds`' registry (`HEADS`): each kind's name as the records say it, the
model it builds, the `export_model` task that serves it, and the Hugging Face and keras-hub classes it is written as
(None: not written).

Example:

    fine_tuned, model = load_fine_tuned("/tmp/goemotions/best_model")
    fine_tuned.head.name, fine_tuned.labels[:2], fine_tuned.thresholds[:2]   # "multi_label_classifier", ...
    load_fine_tuned("/tmp/goemotions_hf")                                     # the same, from transformers' folder
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence

import keras
import numpy as np

from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.checkpoints import model_loading, our_checkpoints
from official.nlp.checkpoints.head_kinds import (
    CLASSIFIER,
    GENERIC_TASK,
    HEADS,
    HF_CLASSIFIER,
    HF_THRESHOLDS_KEY,
    MULTI_LABEL_PROBLEM,
    REGRESSION_PROBLEM,
    SINGLE_LABEL_PROBLEM,
    HeadKind,
    classifier_head,
    classifier_settings,
    head_kind,
    thresholds_per_label,
)
from official.nlp.checkpoints.peers import hf_weights, hub_names, keras_hub_tasks, model_garden, tf1_checkpoints
from official.nlp.common import input_files, text_files
from official.nlp.common.errors import InputError
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier


@dataclasses.dataclass
class FineTuned:
    """What a fine-tuned model is: its files, its head kind (None: a pretrained model), the task it was trained on,
    its labels (empty for regression and heads without labels), a multi-label classifier's thresholds, and
    everything its directory recorded (`record`: `finetuning_settings.json` + `finetuning.json`, or what a Hugging
    Face folder says in those keys)."""

    source: str
    files: model_dir_lib.ModelFiles
    head: HeadKind | None
    task: str | None = None
    labels: list[str] = dataclasses.field(default_factory=list)
    thresholds: list[float] | None = None
    record: dict = dataclasses.field(default_factory=dict)

    @property
    def multi_label(self) -> bool:
        return self.head is not None and self.head.multi_label

    def settings(self) -> dict:
        """The `finetuning_settings.json` a model directory of this model records."""
        settings = {k: v for k, v in self.record.items() if k not in ("task", "head", "labels", "metric", "evaluation")}
        if self.multi_label:
            settings.update(classifier_settings(len(self.labels), self.thresholds))
        return json.loads(json.dumps(settings))


def _checkpoint_shapes(files: model_dir_lib.ModelFiles) -> Callable:
    if files.checkpoint_format != "ours":
        return lambda path: None
    return lambda path: our_checkpoints.saved_variable_shape(files.checkpoint, path)


# ---- Hugging Face classifier folders --------------------------------------------------------------------------


def read_hf_config(path: str) -> dict | None:
    """The `config.json` of a Hugging Face folder (or of the folder of a `.safetensors` file), else None."""
    folder = os.path.dirname(path) if path.endswith(".safetensors") else path
    file = os.path.join(folder, "config.json")
    if not (model_loading.is_hugging_face(path) and input_files.exists(file)):
        return None
    try:
        return json.loads(text_files.read_text(file))
    except ValueError as e:
        raise InputError(f"{file} is not JSON ({e})") from None


def _describe_hf(path: str, config: dict, files: model_dir_lib.ModelFiles) -> FineTuned:
    if HF_CLASSIFIER not in (config.get("architectures") or []):
        return FineTuned(path, files, None)
    names = config.get("id2label") or {}
    try:
        labels = [str(names[key]) for key in sorted(names, key=int)]
    except (ValueError, TypeError):
        raise InputError(f"{path}/config.json: id2label's keys must be 0, 1, ...; got {sorted(names)}") from None
    problem = config.get("problem_type") or (REGRESSION_PROBLEM if len(labels) == 1 else SINGLE_LABEL_PROBLEM)
    if problem not in (SINGLE_LABEL_PROBLEM, MULTI_LABEL_PROBLEM, REGRESSION_PROBLEM):
        raise InputError(f"{path}/config.json: problem_type {problem!r} is not one this library reads")
    multi_label = problem == MULTI_LABEL_PROBLEM
    thresholds = None
    if multi_label:
        recorded = config.get(HF_THRESHOLDS_KEY) or {}
        unknown = sorted(set(recorded) - set(labels))
        if unknown:
            raise InputError(f"{path}/config.json: {HF_THRESHOLDS_KEY} names labels not in id2label: {unknown[:5]}")
        defaults = thresholds_per_label(len(labels))
        thresholds = [float(recorded.get(name, default)) for name, default in zip(labels, defaults)]
    labels = [] if problem == REGRESSION_PROBLEM else labels
    record = {"task": GENERIC_TASK, "head": classifier_head(multi_label), "labels": labels}
    if multi_label:
        record.update(classifier_settings(len(labels), thresholds))
    return FineTuned(path, files, HEADS[classifier_head(multi_label)], GENERIC_TASK, labels, thresholds, record)


def _hf_classifier(fine_tuned: FineTuned) -> BertClassifier:
    source = fine_tuned.source
    weights = hf_weights.read_hf_weights(source)  # TF1 names; the head keeps transformers' names
    missing = [name for name in ("classifier.weight", "classifier.bias") if name not in weights]
    if missing:
        raise InputError(f"{source}: config.json says {HF_CLASSIFIER}, but the weights have no {missing[0]}")
    kernel, bias = weights.pop("classifier.weight"), weights.pop("classifier.bias")  # PyTorch's Linear: [out, in]
    encoder = BertEncoder.from_bert_config(fine_tuned.files.config)
    tf1_checkpoints.assign_weights(weights, encoder, source=source, display_name=hf_weights.tf1_name_to_hf)
    model = BertClassifier(encoder, kernel.shape[0])
    if kernel.shape[0] != max(len(fine_tuned.labels), 1):
        raise InputError(
            f"{fine_tuned.source}: {len(fine_tuned.labels)} labels in config.json for a classifier with "
            f"{kernel.shape[0]} outputs"
        )
    model.classifier.kernel.assign(np.asarray(kernel, np.float32).T)
    model.classifier.bias.assign(np.asarray(bias, np.float32))
    return model


# ---- keras-hub task presets ---------------------------------------------------------------------------------


def _describe_keras_hub(path: str, files: model_dir_lib.ModelFiles) -> FineTuned:
    """A preset folder of a `BertTextClassifier` as the classifier it is; any other preset as its backbone."""
    if keras_hub_tasks.task_class(path) != keras_hub_tasks.CLASSIFIER_CLASS:
        return FineTuned(path, files, None)
    head = keras_hub_tasks.read_classifier(path, weights=False)
    stored = head.record
    labels = [str(label) for label in stored.get("label_names") or range(head.num_classes)]
    if len(labels) != head.num_classes:
        raise InputError(f"{path}: {len(labels)} label names in metadata.json for {head.num_classes} classes")
    labels = [] if stored.get("regression") else labels
    kind = HEADS[classifier_head(head.multi_label)]
    task = str(stored.get("task") or GENERIC_TASK)  # the task says whether it takes pairs (GLUE's MRPC does)
    record = {"task": task, "head": kind.name, "labels": labels}
    record.update({key: stored[key] for key in _PAIR_KEYS if key in stored})
    if head.sequence_length:
        record["max_seq_length"] = min(head.sequence_length, files.config.max_position_embeddings)
    thresholds = None
    if head.multi_label:
        thresholds = thresholds_per_label(len(labels), stored.get("thresholds"))
        record.update(classifier_settings(len(labels), thresholds))
    return FineTuned(path, files, kind, task, labels, thresholds, record)


_PAIR_KEYS = ("text_pair", "text_b_column")  # what says that a classifier takes pairs, besides its task


def keras_hub_task_files(fine_tuned: FineTuned, model: keras.Model) -> dict[str, bytes]:
    """The task files of the fine-tuned `model` (a head whose `keras_hub` is set) that `write_preset` writes beside
    its backbone, so that `keras_hub.models.TextClassifier.from_preset` loads the classifier; what keras-hub does
    not keep (the task, label names, text pair, thresholds) goes to metadata.json (keras_hub_tasks.py)."""
    record = {"task": fine_tuned.task or GENERIC_TASK, "label_names": list(fine_tuned.labels) or ["0"]}
    record.update({key: fine_tuned.record[key] for key in _PAIR_KEYS if key in fine_tuned.record})
    if not fine_tuned.labels:
        record["regression"] = True
    if fine_tuned.multi_label:
        record["thresholds"] = list(fine_tuned.thresholds or [])
    config = fine_tuned.files.config
    return keras_hub_tasks.classifier_files_of(
        model,
        do_lower_case=bool(fine_tuned.files.do_lower_case),
        sequence_length=int(fine_tuned.record.get("max_seq_length") or min(512, config.max_position_embeddings)),
        multi_label=fine_tuned.multi_label,
        record=record,
    )


# ---- Model Garden classifiers ---------------------------------------------------------------------------------


def _describe_model_garden(path: str, files: model_dir_lib.ModelFiles) -> FineTuned:
    num_classes = model_garden.read_model_garden_checkpoint(files.checkpoint, shapes_only=True).num_classes
    if num_classes is None:
        return FineTuned(path, files, None)
    labels = [str(i) for i in range(num_classes)] if num_classes > 1 else []
    record = {"task": GENERIC_TASK, "head": CLASSIFIER, "labels": labels}
    return FineTuned(path, files, HEADS[CLASSIFIER], GENERIC_TASK, labels, None, record)


def _model_garden_classifier(fine_tuned: FineTuned) -> BertClassifier:
    source = fine_tuned.files.checkpoint
    weights = model_garden.read_model_garden_checkpoint(source).weights
    kernel, bias = weights.pop(model_garden.CLASSIFIER_KERNEL), weights.pop(model_garden.CLASSIFIER_BIAS)
    encoder = BertEncoder.from_bert_config(fine_tuned.files.config)
    tf1_checkpoints.assign_weights(weights, encoder, source=source)
    model = BertClassifier(encoder, kernel.shape[-1])
    model.classifier.kernel.assign(kernel)
    model.classifier.bias.assign(bias)
    return model


# ---- reading ------------------------------------------------------------------------------------------------


def _resolve(path: str, overrides: Mapping) -> model_dir_lib.ModelFiles:
    try:
        return init_checkpoint_lib.resolve_model_files(path, **overrides)
    except (FileNotFoundError, ValueError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f"{path}: {e}") from e


def _head_of_run(record: dict) -> str | None:
    """The head kind of a fine-tuning run without `best_model/` (trained without --do_eval), whose settings name
    its task but not always its head: run_classifier's runs (their `task_name` setting) are sequence classifiers,
    multi-label with `multi_label`; other tasks record `head` in their settings where they do."""
    if "task_name" in record:
        return classifier_head(bool(record.get("multi_label")))
    return record.get("head")


def describe(path: str, *, files: model_dir_lib.ModelFiles | None = None, **overrides) -> FineTuned:
    """What the model at `path` is (nothing is built): anything `--init_checkpoint` takes, or a Hugging Face
    folder. `files` (already resolved) or `overrides` (`bert_config_file`, `vocab_file`, `do_lower_case`) give its
    files. A fine-tuning `--output_dir` without `best_model/` has the head its settings say (`_head_of_run`), else
    `head` None but its `task` and `labels`: its head is then that of the task, which
    `load_fine_tuned(serving_task=...)` names."""
    path = hub_names.resolve(path)
    files = files or _resolve(path, overrides)
    if files.checkpoint_format == "keras_hub":
        return _describe_keras_hub(path, files)
    config = read_hf_config(path)
    if config is not None:
        return _describe_hf(path, config, files)
    if files.checkpoint_format == "model_garden":
        return _describe_model_garden(path, files)
    found = init_checkpoint_lib.fine_tuned_head(path)
    if found is None:
        return FineTuned(path, files, None)
    recorded = init_checkpoint_lib.read_record(path)
    record = {**recorded, **found}
    name = found.get("head") or _head_of_run(recorded)  # a run without best_model/: found's head is None
    head = head_kind(name) if name else None
    labels = [str(label) for label in record.get("labels") or []]
    multi_label = (head.multi_label if head else False) or bool(record.get("multi_label"))
    thresholds = None
    if multi_label:
        thresholds = thresholds_per_label(len(labels), record.get("thresholds"), record.get("threshold"))
    return FineTuned(path, files, head, record.get("task"), labels, thresholds, record)


def _kind_for(fine_tuned: FineTuned, serving_task: str | None, name: str, what: str, hint: str) -> HeadKind:
    head = fine_tuned.head
    if head is None and serving_task is not None:
        # No record of the head (an output directory without best_model/, whose checkpoint holds the head of the
        # task its settings name, or a checkpoint saved without finetuning.json): the checkpoint says.
        if serving_task == "classifier":
            return HEADS[classifier_head(bool(fine_tuned.record.get("multi_label")))]
        return next(kind for kind in HEADS.values() if kind.serving_task == serving_task)
    if head is None and fine_tuned.task is not None:
        raise InputError(
            f"{name} is a {fine_tuned.task} fine-tuning run without best_model/ (trained without evaluation), whose "
            "settings do not say its head kind; load it through its task (the text task's from_model_dir, "
            "export_model --task), or train with --do_eval to get best_model/"
        )
    if head is None:
        raise InputError(f"{name} holds no fine-tuned {what}; {hint}")
    if head.build is None:
        raise InputError(
            f"{name} holds a fine-tuned {head.name} head, which only the job that trained it builds (with its flags); "
            f"it cannot be loaded or exported as a {what}; {head.instead or hint}"
        )
    if serving_task is not None and head.serving_task != serving_task:
        raise InputError(f"{name} holds a fine-tuned {head.name} head, not a {what}; {hint}")
    return head


def load_fine_tuned(
    path: str,
    *,
    serving_task: str | None = None,
    files: model_dir_lib.ModelFiles | None = None,
    name: str | None = None,
    what: str | None = None,
    hint: str = "fine-tune one first, or load its encoder for a new head",
    **overrides,
) -> tuple[FineTuned, keras.Model]:
    """`(description, model)`: what the fine-tuned model at `path` is (`FineTuned`: its head kind, task, labels,
    thresholds and files; see `describe`) and its Keras model with every weight, head included.

    `serving_task` ("classifier", "ner", "swag", "squad") refuses another kind of head. `name` (default `path`,
    e.g. "--init_checkpoint=<path>"), `what` and `hint` word the `InputError` of a path without the head
    ("<name> holds no fine-tuned <what>; <hint>")."""
    fine_tuned = describe(path, files=files, **overrides)
    name = name or path
    what = what or f"{serving_task or 'task'} head"
    kind = _kind_for(fine_tuned, serving_task, name, what, hint)
    recorded, fine_tuned = fine_tuned.head, dataclasses.replace(fine_tuned, head=kind)
    files = fine_tuned.files
    if files.checkpoint is None:
        raise InputError(f"{name} holds no checkpoint")
    if files.checkpoint_format == "hf":
        if recorded is None:  # a BertModel or BertForPreTraining folder
            raise InputError(f"{name} holds no fine-tuned {what}; {hint}")
        return fine_tuned, _hf_classifier(fine_tuned)
    if files.checkpoint_format == "keras_hub":
        if recorded is None:  # a backbone-only preset
            raise InputError(f"{name} holds no fine-tuned {what}; {hint}")
        return fine_tuned, keras_hub_tasks.build_classifier(fine_tuned.source, fine_tuned.files.config)
    if files.checkpoint_format == "model_garden":
        if recorded is None:  # an encoder or a pretrainer
            raise InputError(f"{name} holds no fine-tuned {what}; {hint}")
        return fine_tuned, _model_garden_classifier(fine_tuned)
    options = kind.options(_checkpoint_shapes(files))
    if options is None:
        raise InputError(f"{name} holds no fine-tuned {what}; {hint}")
    model = kind.build(BertEncoder.from_bert_config(files.config), **options)
    our_checkpoints.restore_checkpoint(model, files.checkpoint)
    return fine_tuned, model


# ---- writing ------------------------------------------------------------------------------------------------


def save_fine_tuned(
    model: keras.Model,
    directory: str,
    files: model_dir_lib.ModelFiles,
    *,
    task_name: str,
    head: str,
    labels: Sequence[str],
    metric: str | None = None,
    evaluation: Mapping | None = None,
    settings: Mapping | None = None,
    owner: str | None = None,
    checkpoint_format: str = "ours",
    flag: str | None = None,
) -> str:
    """Writes a fine-tuned `model` as a model directory plus `finetuning.json` (task, head, labels, evaluation).
    Any fine-tuning job takes it as `--init_checkpoint`: with the same head and labels it restores the head too;
    another label set is refused. `settings` (the job's, see `tasks.finetuning_outputs.serving_settings`) go to
    its `finetuning_settings.json`, so that the directory alone says how to serve it (`max_seq_length`, ...).

    `owner`: the run's `--output_dir`, whose earlier `best_model/` this replaces; without it, `directory` must be
    new or empty (see `model_dir.export_model_dir`)."""
    step = int(evaluation["step"]) if evaluation and evaluation.get("step") is not None else None
    task_file = {
        "task": task_name,
        "head": head,
        "labels": list(labels),
        "metric": metric,
        "evaluation": dict(evaluation or {}),
    }
    json_files = {model_dir_lib.TASK_FILE: task_file}
    if settings is not None:
        json_files[model_dir_lib.SETTINGS_FILE] = dict(settings)
    # The task file goes in before the directory is put in place: a best_model/ without it would load as a bare
    # encoder and silently drop its head.
    model_dir_lib.export_model_dir(
        model,
        directory,
        vocab_file=files.vocab_file,
        do_lower_case=files.do_lower_case,
        step=step,
        json_files=json_files,
        owner=owner,
        checkpoint_format=checkpoint_format,
        flag=flag or "export_dir",
    )
    return directory


def save_described(model: keras.Model, directory: str, fine_tuned: FineTuned, *, flag: str | None = None) -> str:
    """Writes `model` (loaded by `load_fine_tuned`) as a fine-tuned model directory that records what
    `fine_tuned` says: a conversion keeps the head, labels, multi-label and thresholds."""
    return save_fine_tuned(
        model,
        directory,
        fine_tuned.files,
        task_name=fine_tuned.task or GENERIC_TASK,
        head=fine_tuned.head.name,
        labels=fine_tuned.labels,
        metric=fine_tuned.record.get("metric"),
        evaluation=fine_tuned.record.get("evaluation"),
        settings=fine_tuned.settings() or None,
        flag=flag,
    )
