"""`export_model`: a checkpoint in, TF Serving SavedModels (and a `.keras` file, and for the encoder a TF-Hub pair) out.

`init_checkpoint` is anything the other jobs write or accept: a model directory, a fine-tuning `--output_dir`
(its `best_model/` when there is one, else its latest checkpoint; the labels and `max_seq_length` come from its
`finetuning.json` / `finetuning_settings.json`, which a fine-tuned model directory such as `best_model/` carries
itself), an original TF1 checkpoint or a converted one. Task heads must be fine-tuned (the checkpoint holds
`model/classifier` or `model/span_logits`); the encoder exports from any checkpoint. A classifier fine-tuned on
multi-label data (its record says `multi_label`) exports as `sequence_exports.MultiLabelClassifierExport` with the
thresholds it recorded (`tasks.multi_label`).

Example:

    paths = export_model("classifier", "/tmp/mrpc", "/tmp/mrpc_export", text_pair=True)
    paths["saved_model"]   # "/tmp/mrpc_export/1"

Written under `export_dir`: `<version>/` (all signatures), `token_ids/<version>/` (no tensorflow-text op),
`keras/<version>.keras`, and for `task="encoder"` `hub/<version>/preprocessor` and `hub/<version>/encoder`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from absl import logging

from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.checkpoints import tf_checkpoints
from official.nlp.common import output_files
from official.nlp.common.errors import InputError
from official.nlp.metrics import multi_label as multi_label_metrics
from official.nlp.modeling import models
from official.nlp.serving import hub, ner_export, sequence_exports, squad_export

TASKS = ("encoder", "classifier", "ner", "swag", "squad", "pretrainer")
# The one-sentence tasks: GLUE's and GoEmotions (names of official.nlp.data.glue and data.multi_label).
_SINGLE_TEXT_TASKS = ("cola", "sst-2", "goemotions")
_SQUAD_SETTINGS = (
    "doc_stride",
    "max_query_length",
    "n_best_size",
    "max_answer_length",
    "version_2_with_negative",
    "null_score_diff_threshold",
)


def _head_shape(files: model_dir_lib.ModelFiles, path: tuple[str, ...], task: str, init_checkpoint: str):
    shape = tf_checkpoints.saved_variable_shape(files.checkpoint, path) if files.checkpoint_format == "ours" else None
    if shape is None:
        raise InputError(
            f"--init_checkpoint={init_checkpoint} holds no fine-tuned {task} head ({'/'.join(path)}); "
            f"export the fine-tuning job's --output_dir, or use --task=encoder for the encoder alone"
        )
    return shape


def load_task_model(task: str, files: model_dir_lib.ModelFiles, init_checkpoint: str):
    """The Keras model of `task` with every weight from the checkpoint (heads included)."""
    if task == "encoder":
        return files.build_encoder()
    if task == "pretrainer":
        model, _ = model_dir_lib.load_model(files.checkpoint, bert_config_file=None, input_format="auto")
        if not isinstance(model, models.BertPretrainer):
            raise InputError(
                f"--init_checkpoint={init_checkpoint} holds no masked-LM head; --task=pretrainer needs "
                "a pretraining checkpoint (run_pretraining.py's export, or a converted one with heads)"
            )
        return model
    encoder = models.BertEncoder.from_bert_config(files.config)
    if task == "squad":
        _head_shape(files, ("model", "span_logits", "_kernel"), task, init_checkpoint)
        model = models.BertSpanLabeler(encoder)
    else:
        shape = _head_shape(files, ("model", "classifier", "_kernel"), task, init_checkpoint)
        model = {
            "classifier": lambda: models.BertClassifier(encoder, shape[-1]),
            "ner": lambda: models.BertTokenClassifier(encoder, shape[-1]),
            "swag": lambda: models.BertMultipleChoice(encoder),
        }[task]()
    tf_checkpoints.restore_checkpoint(model, files.checkpoint)
    return model


def build_export(
    task: str,
    model,
    *,
    vocab_file: str,
    do_lower_case: bool,
    max_seq_length: int,
    label_names: Sequence[str] = (),
    text_pair: bool = False,
    squad_settings: dict | None = None,
    tokenizer=None,
    long_text: str = "truncate",
    doc_stride: int | None = None,
    window_stride: int | None = None,
    thresholds: Sequence[float] | None = None,
):
    """The `ServingModule` for `task` around an in-memory `model` (see `sequence_exports`, `ner_export`,
    `squad_export`). `thresholds` (one per label) make a classifier a multi-label one."""
    common = dict(
        vocab_file=vocab_file, do_lower_case=do_lower_case, max_seq_length=max_seq_length, tokenizer=tokenizer
    )
    if task == "encoder":
        return sequence_exports.EncoderExport(model, pair=text_pair, **common)
    if task == "classifier":
        classifier = dict(pair=text_pair, label_names=label_names, long_text=long_text, doc_stride=doc_stride)
        if thresholds is not None:
            return sequence_exports.MultiLabelClassifierExport(model, thresholds=thresholds, **classifier, **common)
        return sequence_exports.ClassifierExport(model, **classifier, **common)
    if task == "ner":
        return ner_export.TokenClassifierExport(model, label_names=label_names, window_stride=window_stride, **common)
    if task == "swag":
        return sequence_exports.MultipleChoiceExport(model, **common)
    if task == "squad":
        return squad_export.SpanLabelerExport(model, **(squad_settings or {}), **common)
    if task == "pretrainer":
        return sequence_exports.PretrainerExport(model, **common)
    raise InputError(f"--task={task!r} is not one of {', '.join(TASKS)}")


def export_model(
    task: str,
    init_checkpoint: str,
    export_dir: str,
    *,
    max_seq_length: int | None = None,
    label_names: Sequence[str] | None = None,
    text_pair: bool | None = None,
    version: int | None = None,
    bert_config_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool | None = None,
    squad_settings: dict | None = None,
    keras_file: bool = True,
    hub_pair: bool = True,
    tokenizer=None,
) -> dict:
    """Exports `init_checkpoint` for `task`; returns the written paths (`saved_model`, `token_ids`, `keras`, and
    `hub_preprocessor`/`hub_encoder` for the encoder).

    Unset arguments come from the fine-tuning record next to the checkpoint, else: `max_seq_length` 128,
    `label_names` "0", "1", ..., `text_pair` False (True for GLUE pair tasks), SQuAD settings `run_squad.py`'s
    defaults. `tokenizer` reuses a `BertTokenizer` of the same vocabulary and case (building one takes seconds).
    Raises `InputError` for a checkpoint, label list or setting that does not fit.
    """
    if task not in TASKS:
        raise InputError(f"--task={task!r} is not one of {', '.join(TASKS)}")
    record = init_checkpoint_lib.read_record(init_checkpoint)
    try:
        files = init_checkpoint_lib.resolve_model_files(
            init_checkpoint, bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case
        )
    except (FileNotFoundError, ValueError) as e:
        raise InputError(f"--init_checkpoint={init_checkpoint}: {e}") from e
    if files.checkpoint is None:
        raise InputError(f"--init_checkpoint={init_checkpoint} holds no checkpoint")
    model = load_task_model(task, files, init_checkpoint)
    if label_names is None:
        label_names = [str(label) for label in record.get("labels", [])] if task in ("classifier", "ner") else []
    if text_pair is None:
        name = str(record.get("task", "")).lower()
        text_pair = (
            bool(record.get("text_b_column")) if name == "generic" else bool(name) and (name not in _SINGLE_TEXT_TASKS)
        )
    max_seq_length = int(max_seq_length or record.get("max_seq_length") or 128)
    thresholds = None
    if task == "classifier" and record.get("multi_label"):  # the thresholds the model recorded (tasks.multi_label)
        thresholds = multi_label_metrics.decision_thresholds(
            model.num_classes, thresholds=record.get("thresholds"), threshold=record.get("threshold")
        ).tolist()
    settings = {key: record[key] for key in _SQUAD_SETTINGS if key in record}
    settings.update(squad_settings or {})
    export = build_export(
        task,
        model,
        vocab_file=files.vocab_file,
        do_lower_case=files.do_lower_case,
        max_seq_length=max_seq_length,
        label_names=label_names,
        text_pair=text_pair,
        squad_settings=settings if task == "squad" else None,
        tokenizer=tokenizer,
        long_text=record.get("long_text") or "truncate",
        doc_stride=record.get("doc_stride"),
        window_stride=record.get("window_stride"),
        thresholds=thresholds,
    )
    saved = export.save(export_dir, version)
    version = int(os.path.basename(saved))
    paths = {"saved_model": saved, "token_ids": os.path.join(export_dir, "token_ids", str(version))}
    if keras_file:
        paths["keras"] = os.path.join(export_dir, "keras", f"{version}.keras")
        output_files.makedirs(os.path.dirname(paths["keras"]))
        model.save(paths["keras"])
    if task == "encoder" and hub_pair:
        paths["hub_preprocessor"], paths["hub_encoder"] = hub.save_hub_pair(
            export, os.path.join(export_dir, "hub", str(version))
        )
    logging.info("Exported %s: %s", task, paths)
    return paths
