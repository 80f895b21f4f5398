"""`--init_checkpoint` as every script takes it: one resolver for run_pretraining, run_classifier, run_ner, run_swag,
run_squad, extract_features and export_model.

Accepted: a model directory (`bert_config.json`, `vocab.txt`, `do_lower_case` and a checkpoint), a checkpoint
prefix in one, an original TF1 checkpoint, a Hugging Face folder, and a fine-tuning job's `--output_dir` (or one
of its checkpoint prefixes). An output directory stands for the model it trained: its `best_model/` when it has
one (a model directory with the fine-tuned head's `finetuning.json` and the job's `finetuning_settings.json`),
else its latest checkpoint, read with the config, case and vocabulary its `finetuning_settings.json` recorded.
Predicting with the model a previous run just trained is then one flag: `run_squad --do_predict
--init_checkpoint=<that run's --output_dir>`. `best_model/` holds the best evaluation's weights, which are also
what the job's own `--do_predict` used (`tasks.finetuning`: one model per run); pass a `ckpt-N` prefix for the
weights training ended with.

Example:

    files = resolve_model_files("/tmp/squad_out")        # /tmp/squad_out/best_model, or its latest ckpt-N
    fine_tuned_head("/tmp/squad_out")["task"]            # "squad_v1.1"
"""

from __future__ import annotations

import os

import tensorflow as tf

from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.checkpoints import model_loading
from official.nlp.common import input_files
from official.nlp.common.errors import InputError
from official.nlp.modeling.configs import BertConfig


def _has_checkpoint(path: str) -> bool:
    return input_files.isdir(path) and tf.train.latest_checkpoint(path) is not None


def locate(init_checkpoint: str) -> str:
    """What to load for `init_checkpoint`: a fine-tuning output directory's `best_model/` when it holds a
    checkpoint, else `init_checkpoint` itself."""
    best = os.path.join(init_checkpoint, model_dir_lib.BEST_MODEL_DIR)
    if input_files.isdir(init_checkpoint) and _has_checkpoint(best):
        return best
    return init_checkpoint


def is_output_dir(path: str) -> bool:
    """Whether `path` is a fine-tuning output directory read through its settings: checkpoints and
    `finetuning_settings.json`, but no `bert_config.json` of its own."""
    return (
        _has_checkpoint(path)
        and input_files.exists(os.path.join(path, model_dir_lib.SETTINGS_FILE))
        and not input_files.exists(os.path.join(path, model_dir_lib.CONFIG_FILE))
    )


def holds_a_run(path: str | None) -> bool:
    """Whether folder `path` holds a fine-tuning run's model: a `best_model/`, or checkpoints with the run's
    `finetuning_settings.json`."""
    return bool(path) and (_has_checkpoint(os.path.join(path, model_dir_lib.BEST_MODEL_DIR)) or is_output_dir(path))


def _output_dir_of(path: str) -> str | None:
    """The fine-tuning output directory that `path` (the directory, or a checkpoint prefix in it) stands for."""
    folder = path if input_files.isdir(path) else os.path.dirname(path)
    return folder if folder and is_output_dir(folder) else None


def read_record(init_checkpoint: str | None) -> dict:
    """The job's settings and the fine-tuned head's record (`finetuning_settings.json` + `finetuning.json`) of
    what `init_checkpoint` loads, merged; `{}` where there are none."""
    if not init_checkpoint:
        return {}
    record = {
        **(model_dir_lib.read_settings_file(init_checkpoint) or {}),
        **(model_dir_lib.read_task_file(init_checkpoint) or {}),
    }
    path = locate(init_checkpoint)
    if path != init_checkpoint:
        record.update(model_dir_lib.read_settings_file(path) or {})
        record.update(model_dir_lib.read_task_file(path) or {})
    return record


def fine_tuned_head(init_checkpoint: str | None) -> dict | None:
    """The fine-tuned head `init_checkpoint` holds, `{"task", "head", "labels", ...}`, or None for a pretrained
    model. An output directory without `best_model/` records no head kind (`"head"` None): its checkpoint holds
    the head of the task its settings name."""
    if not init_checkpoint:
        return None
    path = locate(init_checkpoint)
    found = model_dir_lib.read_task_file(path)
    if found is None and _output_dir_of(path):
        settings = model_dir_lib.read_settings_file(_output_dir_of(path)) or {}
        if "task" in settings:
            return {"task": settings["task"], "head": None, "labels": list(settings.get("labels") or [])}
    return found


def resolve_model_files(
    init_checkpoint: str | None = None,
    *,
    bert_config: BertConfig | None = None,
    bert_config_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool | None = None,
    require_vocab: bool = True,
) -> model_dir_lib.ModelFiles:
    """`model_loading.read_model_files` for anything the module docstring lists; the same arguments and errors."""
    path = locate(init_checkpoint) if init_checkpoint else init_checkpoint
    output_dir = _output_dir_of(path) if path else None
    if output_dir:
        settings = model_dir_lib.read_settings_file(output_dir) or {}
        if bert_config is None and bert_config_file is None and settings.get("bert_config"):
            bert_config = BertConfig.from_dict(settings["bert_config"])
        if do_lower_case is None:
            do_lower_case = settings.get("do_lower_case")
        if vocab_file is None:
            vocab_file = _recorded_vocab(output_dir, settings)
    return model_loading.read_model_files(
        path,
        bert_config=bert_config,
        bert_config_file=bert_config_file,
        vocab_file=vocab_file,
        do_lower_case=do_lower_case,
        require_vocab=require_vocab,
    )


def _recorded_vocab(path: str, settings: dict) -> str | None:
    """The vocabulary the job in output directory `path` trained with: its `--vocab_file`, else the one of its
    `--init_checkpoint`."""
    if settings.get("vocab_file"):
        return settings["vocab_file"]
    source = settings.get("init_checkpoint")
    if not source or os.path.normpath(locate(source)) == os.path.normpath(path):
        return None
    try:
        return resolve_model_files(source, require_vocab=False).vocab_file
    except (InputError, FileNotFoundError, ValueError):
        raise InputError(
            f"{path}: its vocabulary is that of the --init_checkpoint it was trained from, {source}, which cannot "
            "be read any more; pass --vocab_file (and --do_lower_case)"
        ) from None
