"""The settings of a pretraining run (`PretrainingConfig`) and their checks before any work.

The field names are `run_pretraining.py`'s flags; `tasks.pretraining.run_pretraining` runs a config. Before it trains,
the settings are checked together (`check_pretraining_settings`: the loop, the schedule, the masking rates, the
left-to-right LM's rules), a resumed `--model_dir` against the settings it records (`check_pretraining_resume`,
`model_dir/pretraining_settings.json`), and the export folder (`check_pretraining_export_dir`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import ClassVar

import tensorflow as tf

from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.common import input_files, output_folders
from official.nlp.common.config_flags import field
from official.nlp.common.errors import InputError
from official.nlp.data.pretraining.masking.config import MaskingFlags, action_rate_problems
from official.nlp.modeling.configs import (
    DEFAULT_SEQ_LENGTH,
    MLM,
    OBJECTIVES,
    PRESETS,
    BertConfig,
    left_to_right_conflicts,
)
from official.nlp.training import optimization, run_settings
from official.nlp.training.config import TrainingConfig, check_training_settings


@dataclasses.dataclass
class PretrainingConfig(TrainingConfig, MaskingFlags):
    """Every setting of a pretraining run: the records, the model, the schedule in steps, dynamic masking, and
    `TrainingConfig`'s loop. The field names are the script's flags (see the README); the masking flags of
    `--dynamic_masking` are `create_pretraining_data`'s (`MaskingFlags`)."""

    input_file: str = field(path="patterns", help="TFRecord files: globs, comma-separated (plain or gzip).")
    model_dir: str = field(path="path", help="Checkpoints, summaries and the export go here.")
    bert_config_file: str | None = field(
        None, path="path", help="bert_config.json of the model (optional with a model-dir --init_checkpoint)."
    )
    bert_config: BertConfig | None = field(None, flag=False, help="Instead of bert_config_file, from Python.")
    preset: str | None = field(
        None, enum=PRESETS, help="Instead of --bert_config_file: a BERT size, with vocab_size from --vocab_file."
    )
    init_checkpoint: str | None = field(
        None,
        path="path",
        help=(
            "Start from this model directory, original TF1 checkpoint, Hugging Face folder or fine-tuning "
            "--output_dir, as every script takes it (ignored when --model_dir already holds a checkpoint, which is "
            "resumed)."
        ),
    )
    vocab_file: str | None = field(
        None, path="path", help="vocab.txt to ship with the export (and for --dynamic_masking)."
    )
    do_lower_case: bool | None = field(None, help="Recorded in the export for the fine-tuning tokenizer.")
    export_dir: str | None = field(
        None,
        path="path",
        help=(
            "Where the final model directory goes (default: --model_dir/export): a new or empty folder of its own, or "
            "this run's earlier export, which it replaces."
        ),
    )
    max_seq_length: int = field(
        DEFAULT_SEQ_LENGTH, minimum=5, help="Sequence length of the records ([CLS] A [SEP] B [SEP] at least)."
    )
    max_predictions_per_seq: int = field(20, minimum=1, help="Masked LM predictions per sequence in the records.")
    num_train_steps: int = field(100000, minimum=1, help="Optimizer steps.")
    num_warmup_steps: int = field(10000, minimum=0, help="Linear warmup steps.")
    end_learning_rate: float = field(0.0, minimum=0, help="Learning rate at --num_train_steps.")
    poly_power: float = field(1.0, minimum=0, help="Power of the polynomial decay (1 = linear).")
    use_next_sentence_label: bool = field(True, help="Train next sentence prediction.")
    objective: str = field(
        MLM,
        enum=OBJECTIVES,
        help=(
            "mlm: masked LM (BERT). ltr: a left-to-right LM (the paper's LTR baseline): a causal encoder "
            "(attention=left_to_right in bert_config.json) predicts the next token at every position; needs "
            "--use_next_sentence_label=false."
        ),
    )
    dynamic_masking: bool = field(
        False, help="Draw new masks on every pass (records masked offline are unmasked first); needs --vocab_file."
    )
    shuffle_buffer_size: int = field(
        1000, minimum=0, help="Records in the shuffle buffer, saved with every checkpoint (0 or 1: no shuffling)."
    )
    checkpoint_input: bool = field(True, help="Save the input position with each checkpoint.")

    # The fields a resumed run may change besides the loop's: where things go and the input position. The model
    # config is checked against `model_dir/bert_config.json`; `init_checkpoint` is ignored on resume, and the
    # records may move (`input_file`). Every other field changes the shapes or the meaning of what is trained.
    NOT_TRAINING_SETTINGS: ClassVar[tuple[str, ...]] = TrainingConfig.NOT_TRAINING_SETTINGS + (
        "input_file",
        "model_dir",
        "export_dir",
        "init_checkpoint",
        "bert_config_file",
        "bert_config",
        "preset",
        "vocab_file",
        "do_lower_case",
        "checkpoint_input",
    )


_RATES = ("mask_token_prob", "random_token_prob")
_DEFAULT_RATES = {f.name: f.default for f in dataclasses.fields(PretrainingConfig) if f.name in _RATES}


PRETRAINING_SETTINGS_FILE = "pretraining_settings.json"


def _finished_model_hint(config: PretrainingConfig) -> str:
    """Where a refused resume may start from instead: the earlier run's finished model where one exists (a killed
    run exported nothing), else how to make one."""
    for export in dict.fromkeys(filter(None, (config.export_dir, os.path.join(config.model_dir, "export")))):
        if input_files.isfile(os.path.join(export, model_dir_lib.CONFIG_FILE)):
            return f" (with --init_checkpoint={export} to start from its finished model)"
    return (
        " (it holds no finished model to start from with --init_checkpoint: the run stopped before its export; "
        "rerun it with its own flags to finish and export it)"
    )


def check_pretraining_resume(config: PretrainingConfig) -> bool:
    """`run_settings.check_resume` for `--model_dir`: refuses to resume it with settings that change the training,
    naming the flags; returns whether it records them already. A `--model_dir` an older version wrote without
    `pretraining_settings.json` is resumed with a warning."""
    return run_settings.check_resume(
        config.model_dir,
        PRETRAINING_SETTINGS_FILE,
        run_settings.training_settings(config),
        flag="--model_dir",
        hint=_finished_model_hint(config),
        unrecorded="warn",
        defaults=run_settings.field_defaults(config),
        renamed={"whole_word_mask": "do_whole_word_mask"},  # run_pretraining's name before it took the original's
    )


def check_pretraining_settings(config: PretrainingConfig, strategy: tf.distribute.Strategy) -> None:
    """Refuses settings that do not fit together (before any work): the loop's, the schedule, the masking rates, and
    what the left-to-right LM does not take."""
    check_training_settings(config, strategy.num_replicas_in_sync)
    check_masking_rates(config)
    optimization.check_schedule(
        learning_rate=config.learning_rate,
        num_train_steps=config.num_train_steps,
        num_warmup_steps=config.num_warmup_steps,
        end_learning_rate=config.end_learning_rate,
        weight_decay=config.weight_decay,
        clip_norm=config.clip_norm,
    )
    conflicts = left_to_right_conflicts(
        config.objective,
        use_next_sentence_label=config.use_next_sentence_label,
        dynamic_masking=config.dynamic_masking,
    )
    if "use_next_sentence_label" in conflicts:
        raise InputError(
            "--objective=ltr trains a left-to-right LM without next sentence prediction; add "
            "--use_next_sentence_label=false"
        )
    if "dynamic_masking" in conflicts:
        raise InputError(
            "--dynamic_masking draws masks for --objective=mlm; the left-to-right LM reads the original tokens: "
            "drop --dynamic_masking"
        )


def check_masking_rates(config: PretrainingConfig) -> None:
    """Refuses rates that are no split of the targets, and rates that would not be used: records masked offline keep
    the masks create_pretraining_data drew."""
    problems = action_rate_problems(config.mask_token_prob, config.random_token_prob)
    if not config.dynamic_masking:
        problems += [
            f"--{name}={getattr(config, name)}: applies to --dynamic_masking only (the records' masks were drawn by "
            "create_pretraining_data, whose flags of the same name set them); pass --dynamic_masking"
            for name in _RATES
            if getattr(config, name) != _DEFAULT_RATES[name]
        ]
    if problems:
        raise InputError("; ".join(problems))


def check_pretraining_export_dir(config: PretrainingConfig) -> str:
    """The export folder of `config`, refused before any training if it is not a folder of its own for this run's
    export: the working folder, `--model_dir` or a folder holding it or an input, or one that holds anything but
    this run's earlier export (see `output_folders`)."""
    export_dir = config.export_dir or os.path.join(config.model_dir, "export")
    related = {
        "--model_dir": config.model_dir,
        "--input_file": config.input_file,
        "--init_checkpoint": config.init_checkpoint,
        "--vocab_file": config.vocab_file,
        "--bert_config_file": config.bert_config_file,
    }
    output_folders.check_export(export_dir, flag="--export_dir", owner=config.model_dir, related=related)
    return export_dir
