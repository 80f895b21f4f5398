"""`export_model`: a checkpoint in, TF Serving SavedModels (and a `.keras` file, and for the encoder a TF-Hub pair) out.

`init_checkpoint` is anything the other jobs write or accept: a model directory, a fine-tuning `--output_dir`
(its `best_model/` when there is one, else its latest checkpoint; the labels and `max_seq_length` come from its
`finetuning.json` / `finetuning_settings.json`, which a fine-tuned model directory such as `best_model/` carries
itself), an original TF1 checkpoint or a converted one. Task heads must be fine-tuned (the checkpoint holds
`model/classifier` or `model/span_logits`, and for SQuAD's BiLSTM span head `model/span_bilstm`, which the export
rebuilds); the encoder exports from any checkpoint. A classifier fine-tuned on multi-label data (its record says
`multi_label`) exports as `sequence_exports.MultiLabelClassifierExport` with the thresholds it recorded
(`tasks.multi_label`).

Example:

    paths = export_model("classifier", "/tmp/mrpc", "/tmp/mrpc_export", text_pair=True)
    paths["saved_model"]   # "/tmp/mrpc_export/1"

Written under `export_dir`: `<version>/` (all signatures), `token_ids/<version>/` (no tensorflow-text op),
`keras/<version>.keras`, and for `task="encoder"` `hub/<version>/preprocessor` and `hub/<version>/encoder`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from absl import logging

from official.nlp.checkpoints import fine_tuned, head_kinds, model_loading
from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.common import claims, input_files, output_files
from official.nlp.common.errors import InputError
from official.nlp.data.squad.postprocessing import AnswerSettings
from official.nlp.modeling import models
from official.nlp.modeling.configs import DEFAULT_SEQ_LENGTH, MLM
from official.nlp.serving import hub, ner_export, sequence_exports, squad_export, versions

# The tasks between the encoder and the pretrainer serve fine-tuned heads: the `serving_task`s of the head kinds
# (`head_kinds.HEADS`), each with its module in `build_export`.
TASKS = (
    "encoder",
    *dict.fromkeys(kind.serving_task for kind in head_kinds.HEADS.values() if kind.serving_task),
    "pretrainer",
)
# The one-sentence tasks: GLUE's and GoEmotions (names of official.nlp.data.glue and data.multi_label).
_SINGLE_TEXT_TASKS = ("cola", "sst-2", "goemotions")
SQUAD_SETTINGS = AnswerSettings.names()  # the answer post-processing settings a SQuAD export records


def load_task_model(task: str, files: model_dir_lib.ModelFiles, init_checkpoint: str):
    """The Keras model of `task` with every weight from the checkpoint (a fine-tuned head included: its kind must be
    one `task` serves, `head_kinds.HEADS`)."""
    if task == "encoder":
        return files.build_encoder()
    if task == "pretrainer":
        model, _ = model_loading.load_model(files.checkpoint, bert_config_file=None, input_format="auto")
        if not isinstance(model, models.BertPretrainer):
            raise InputError(
                f"--init_checkpoint={init_checkpoint} holds no masked-LM head; --task=pretrainer needs "
                "a pretraining checkpoint (run_pretraining.py's export, or a converted one with heads)"
            )
        if model.objective != MLM:
            raise InputError(
                f"--init_checkpoint={init_checkpoint} is a left-to-right LM; --task=pretrainer serves the masked LM "
                "(it fills in [MASK]s): export --task=encoder, or a model fine-tuned from it"
            )
        return model
    return fine_tuned.load_fine_tuned(
        init_checkpoint,
        serving_task=task,
        files=files,
        name=f"--init_checkpoint={init_checkpoint}",
        what=f"{task} head",
        hint="export the fine-tuning job's --output_dir, or use --task=encoder for the encoder alone",
    )[1]


def task_record(task: str, files: model_dir_lib.ModelFiles, init_checkpoint: str) -> fine_tuned.FineTuned:
    """What the model at `init_checkpoint` is, as `recorded_settings` reads it (`fine_tuned.describe`: its head,
    labels and thresholds), with everything its directory records; for the encoder and the pretrainer only the
    records (`head` None)."""
    record = init_checkpoint_lib.read_record(init_checkpoint)
    if task in ("encoder", "pretrainer"):
        return fine_tuned.FineTuned(init_checkpoint, files, None, record=record)
    described = fine_tuned.describe(init_checkpoint, files=files)
    return dataclasses.replace(described, record={**record, **described.record})


def build_export(
    task: str,
    model,
    *,
    vocab_file: str | None,
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
    `squad_export`); `vocab_file` may be None when `tokenizer` is given. `thresholds` (one per label) make a
    classifier a multi-label one."""
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
        return squad_export.SpanLabelerExport(model, answer_settings=AnswerSettings(**(squad_settings or {})), **common)
    if task == "pretrainer":
        return sequence_exports.PretrainerExport(model, **common)
    raise InputError(f"--task={task!r} is not one of {', '.join(TASKS)}")


def recorded_settings(task: str, described: fine_tuned.FineTuned) -> dict:
    """How the fine-tuned model `described` (`fine_tuned.describe`, `load_fine_tuned`, `task_record`) serves `task`:
    the `build_export` arguments `label_names`, `text_pair`, `long_text`, `doc_stride`, `window_stride`,
    `squad_settings`, `thresholds` (a multi-label classifier's, as the head registry reads them), plus
    `max_seq_length`. Where the run recorded nothing: `label_names` "0", "1", ... (empty here), `text_pair` False
    (True for GLUE pair tasks), `max_seq_length` 128, truncation, and `run_squad.py`'s defaults."""
    record = described.record
    name = str(record.get("task", "")).lower()
    pair_task = bool(name) and name not in _SINGLE_TEXT_TASKS
    text_pair = bool(record.get("text_b_column")) if name == "generic" else pair_task
    text_pair = bool(record.get("text_pair", text_pair))  # said outright by a text task's save_model_dir
    return {
        "label_names": list(described.labels) if task in ("classifier", "ner") else [],
        "text_pair": text_pair,
        "max_seq_length": int(record.get("max_seq_length") or DEFAULT_SEQ_LENGTH),
        "long_text": record.get("long_text") or "truncate",
        "doc_stride": record.get("doc_stride"),
        "window_stride": record.get("window_stride"),
        "squad_settings": {key: record[key] for key in SQUAD_SETTINGS if key in record},
        "thresholds": described.thresholds if task == "classifier" else None,
    }


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

    Unset arguments come from the fine-tuning record next to the checkpoint (`recorded_settings`). `tokenizer`
    reuses a `BertTokenizer` of the same vocabulary and case (building one takes seconds).
    Raises `InputError` for a checkpoint, label list or setting that does not fit.
    """
    if task not in TASKS:
        raise InputError(f"--task={task!r} is not one of {', '.join(TASKS)}")
    inputs = {"--init_checkpoint": init_checkpoint, "--bert_config_file": bert_config_file, "--vocab_file": vocab_file}
    versions.check_export_dir(export_dir, related=inputs)  # before any work: a folder that is not exports
    if version is not None:
        versions.check_version_free(export_dir, int(version))
    try:
        files = init_checkpoint_lib.resolve_model_files(
            init_checkpoint, bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case
        )
    except (FileNotFoundError, ValueError) as e:
        raise InputError(f"--init_checkpoint={init_checkpoint}: {e}") from e
    if files.checkpoint is None:
        raise InputError(f"--init_checkpoint={init_checkpoint} holds no checkpoint")
    model = load_task_model(task, files, init_checkpoint)
    settings = recorded_settings(task, task_record(task, files, init_checkpoint))
    recorded_length = settings.pop("max_seq_length")
    if label_names is not None:
        settings["label_names"] = label_names
    if text_pair is not None:
        settings["text_pair"] = text_pair
    settings["squad_settings"] = {**settings["squad_settings"], **(squad_settings or {})} if task == "squad" else None
    export = build_export(
        task,
        model,
        vocab_file=files.vocab_file,
        do_lower_case=files.do_lower_case,
        max_seq_length=int(max_seq_length or recorded_length),
        tokenizer=tokenizer,
        **settings,
    )
    # The version is this job's alone from here on; its folder TF Serving watches (`save`) is put in place last.
    with versions.claim_version(export_dir, version) as version:
        paths = {
            "saved_model": os.path.join(export_dir, str(version)),
            "token_ids": os.path.join(export_dir, versions.TOKEN_IDS_DIR, str(version)),
        }
        if keras_file:
            paths["keras"] = os.path.join(export_dir, versions.KERAS_DIR, f"{version}.keras")
            save_keras_file(model, paths["keras"])
        if task == "encoder" and hub_pair:
            paths["hub_preprocessor"], paths["hub_encoder"] = hub.save_hub_pair(
                export, os.path.join(export_dir, versions.HUB_DIR, str(version))
            )
        export.save(export_dir, version)
    logging.info("Exported %s: %s", task, paths)
    return paths


def save_keras_file(model, path: str) -> None:
    """`model.save(path)` that leaves a whole `.keras` file under `path` or nothing: written under a name of this
    job in the same folder, then renamed (one object, copied whole, on a store)."""
    folder, name = os.path.split(path)
    output_files.makedirs(folder)
    staging = os.path.join(folder, claims.staging_name(name, ".keras"))  # Keras insists on the extension
    try:
        with input_files.user_path(path):
            model.save(staging)
        output_files.commit(staging, path)
    finally:
        output_files.remove(staging)
