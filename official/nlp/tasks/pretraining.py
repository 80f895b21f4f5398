"""BERT pretraining: records -> `BertPretrainer` -> the shared training loop -> a model directory.

`run_pretraining(PretrainingConfig(...))` is everything `run_scripts/run_pretraining.py` does, callable from Python.
Run twice with the same config, the second call resumes from the last checkpoint in `model_dir`; once the run is
finished, it trains nothing and leaves the export as it is. A run resumed with settings that change the shapes or
the meaning of the training (batch size, sequence length, schedule, masking, ...) is refused before any work,
naming the flags that differ (`model_dir/pretraining_settings.json` records them).

Example:

    result = run_pretraining(PretrainingConfig(
        input_file="out/train.tfrecord-*", bert_config_file="bert_config.json", vocab_file="vocab.txt",
        model_dir="/tmp/pretrain", max_seq_length=128, max_predictions_per_seq=20, train_batch_size=32,
        num_train_steps=1000, num_warmup_steps=100, learning_rate=1e-4))
    result.export_dir   # a model directory: the fine-tuning scripts take it as --init_checkpoint
"""

from __future__ import annotations

import dataclasses
import os
from typing import ClassVar

import keras
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.checkpoints import restore_plan
from official.nlp.common import input_files, interruption, output_folders
from official.nlp.common.config_flags import field
from official.nlp.common.errors import InputError
from official.nlp.data.pretraining.dataloader import PretrainDataConfig, PretrainDataLoader
from official.nlp.data.pretraining.masking.config import MaskingFlags, action_rate_problems
from official.nlp.modeling.configs import (
    DEFAULT_SEQ_LENGTH,
    LTR,
    MLM,
    OBJECTIVES,
    PRESETS,
    BertConfig,
    attention_for,
    left_to_right_conflicts,
)
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertPretrainer
from official.nlp.training import distribution, optimization, run_settings
from official.nlp.training.config import TrainingConfig, check_training_settings
from official.nlp.training.objectives import PretrainingObjective
from official.nlp.training.trainer import Trainer, TrainerConfig, TrainResult


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


@dataclasses.dataclass
class PretrainingResult(TrainResult):
    """`TrainResult` plus the exported model directory (None on workers other than the chief)."""

    export_dir: str | None = None


def _validate(config: PretrainingConfig, strategy: tf.distribute.Strategy) -> None:
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


def build_pretrainer(
    bert_config: BertConfig, *, use_next_sentence_label: bool = True, mixed_precision: str = "float32"
) -> BertPretrainer:
    """A `BertPretrainer` with fresh weights, computing in `mixed_precision` (variables stay float32); the
    left-to-right LM for a config with `attention="left_to_right"` (which has no NSP)."""
    encoder = BertEncoder.from_bert_config(bert_config, dtype=optimization.dtype_policy(mixed_precision))
    return BertPretrainer(encoder, use_next_sentence_label=use_next_sentence_label and not bert_config.left_to_right)


def model_config(config: PretrainingConfig, files: model_dir_lib.ModelFiles) -> BertConfig:
    """The model config of the run: `files.config`, made left-to-right for `--objective=ltr` from scratch.

    A model that is started from `--init_checkpoint` keeps its attention, so it must be the objective's own.
    """
    bert_config = files.config
    if bert_config.attention == attention_for(config.objective):
        return bert_config
    if files.checkpoint is not None:
        kind = "left-to-right" if bert_config.left_to_right else "bidirectional"
        fix = (
            "pass --objective=ltr to continue it, or start from a bidirectional model directory"
            if bert_config.left_to_right
            else "start from scratch or from a left-to-right model directory"
        )
        raise InputError(
            f"--objective={config.objective} cannot start from --init_checkpoint={config.init_checkpoint}, a {kind} "
            f"model (its config's attention is {bert_config.attention!r}); {fix}"
        )
    if config.objective != LTR:
        source = f"--bert_config_file={config.bert_config_file}" if config.bert_config_file else "the model config"
        raise InputError(
            f"--objective=mlm trains a bidirectional model, but {source} says attention=left_to_right; pass "
            "--objective=ltr or a bidirectional config"
        )
    return dataclasses.replace(bert_config, attention=attention_for(LTR))


def build_model_and_optimizer(
    config: PretrainingConfig, bert_config: BertConfig, strategy: tf.distribute.Strategy
) -> tuple[BertPretrainer, keras.optimizers.Optimizer]:
    """The fresh `BertPretrainer` and the optimizer of `config`, made in `strategy.scope()` for `Trainer`."""
    with strategy.scope():
        model = build_pretrainer(
            bert_config, use_next_sentence_label=config.use_next_sentence_label, mixed_precision=config.mixed_precision
        )
        optimizer = config.build_optimizer(
            config.num_train_steps,
            config.num_warmup_steps,
            end_learning_rate=config.end_learning_rate,
            poly_power=config.poly_power,
        )
    return model, optimizer


def trainer_config(config: PretrainingConfig) -> TrainerConfig:
    """The training-loop settings of `config`."""
    return TrainerConfig.from_training_config(
        config,
        model_dir=config.model_dir,
        num_train_steps=config.num_train_steps,
        checkpoint_input=config.checkpoint_input,
    )


def preset_config(config: PretrainingConfig) -> BertConfig | None:
    """`config.bert_config`, or the `--preset` config with `vocab_size` taken from `--vocab_file` (else 30522)."""
    if not config.preset:
        return config.bert_config
    if config.bert_config_file or config.bert_config is not None or config.init_checkpoint:
        raise InputError(
            f"--preset={config.preset} names the model, and so do --bert_config_file and "
            "--init_checkpoint (whose bert_config.json is used): pass only one of them"
        )
    vocab_size = 30522
    if config.vocab_file:
        from official.nlp.tokenizers import tokenization

        vocab_size = len(tokenization.load_vocab(config.vocab_file))
    return BertConfig.preset(config.preset, vocab_size=vocab_size)


def make_data_loader(config: PretrainingConfig, bert_config: BertConfig) -> PretrainDataLoader:
    """The input pipeline of `config` (validates the records against the flags and the model config)."""
    masking_config = None
    if config.dynamic_masking:
        if not config.vocab_file:
            raise InputError("--dynamic_masking needs --vocab_file (for the [MASK], [CLS] and [SEP] ids)")
        from official.nlp.tokenizers import tokenization

        masking_config = config.masking_config(
            tokenization.load_vocab(config.vocab_file), max_predictions_per_seq=config.max_predictions_per_seq
        )
    return PretrainDataLoader(
        PretrainDataConfig(
            input_patterns=config.input_file,
            seq_length=config.max_seq_length,
            max_predictions_per_seq=config.max_predictions_per_seq,
            global_batch_size=config.train_batch_size,
            is_training=True,
            use_next_sentence_label=config.use_next_sentence_label,
            shuffle_buffer_size=config.shuffle_buffer_size,
            seed=config.seed,
            max_position_embeddings=bert_config.max_position_embeddings,
            vocab_size=bert_config.vocab_size,
            type_vocab_size=bert_config.type_vocab_size,
            dynamic_masking=masking_config,
            dynamic_masking_seed=config.seed,
            objective=config.objective,
        )
    )


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


def run_pretraining(
    config: PretrainingConfig, *, strategy: tf.distribute.Strategy | None = None, stop_at_step: int | None = None
) -> PretrainingResult:
    """Pretrains (or resumes pretraining) and exports the final model directory. See the module docstring.

    `stop_at_step` stops at that step instead (with a checkpoint, and the export of that step), the schedule still
    the one of `num_train_steps`: a later call continues the same run (the paper's transfer curve keeps the model of
    each doubling step so)."""
    if strategy is None:
        # First: multi_worker_mirrored and tpu must configure TensorFlow before anything else touches it.
        strategy = config.make_strategy()
    if config.deterministic:
        tf.config.experimental.enable_op_determinism()
    keras.utils.set_random_seed(config.seed)
    _validate(config, strategy)
    export_dir = check_pretraining_export_dir(config)
    related = {
        "--input_file": config.input_file,
        "--init_checkpoint": config.init_checkpoint,
        "--vocab_file": config.vocab_file,
        "--bert_config_file": config.bert_config_file,
    }
    with output_folders.run_folder(
        config.model_dir,
        flag="--model_dir",
        job="run_pretraining",
        markers=(PRETRAINING_SETTINGS_FILE,),
        related=related,
        writer=distribution.worker_info(strategy).is_chief,
    ):
        return _run_pretraining(config, strategy, export_dir, stop_at_step)


def _run_pretraining(
    config: PretrainingConfig, strategy: tf.distribute.Strategy, export_dir: str, stop_at_step: int | None
) -> PretrainingResult:
    recorded = check_pretraining_resume(config)
    files = init_checkpoint_lib.resolve_model_files(
        config.init_checkpoint,
        bert_config=preset_config(config),
        bert_config_file=config.bert_config_file,
        vocab_file=config.vocab_file,
        do_lower_case=config.do_lower_case,
        require_vocab=False,
    )
    if files.vocab_file is None:
        logging.warning("No --vocab_file: the exported model directory will lack vocab.txt, which fine-tuning needs")
    bert_config = model_config(config, files)
    loader = make_data_loader(dataclasses.replace(config, vocab_file=files.vocab_file), bert_config)
    is_chief = distribution.worker_info(strategy).is_chief
    existing = os.path.join(config.model_dir, model_dir_lib.CONFIG_FILE)
    if input_files.exists(existing) and BertConfig.from_json_file(existing) != bert_config:
        raise InputError(
            f"{existing} differs from the model config of this run; resuming needs the same config "
            "(or use a new --model_dir)"
        )
    if is_chief:
        # model_dir is itself a model directory: any of its checkpoints works as --init_checkpoint.
        model_dir_lib.write_model_files(config.model_dir, bert_config, files.vocab_file, files.do_lower_case)
        if not recorded:
            run_settings.record_settings(
                config.model_dir, PRETRAINING_SETTINGS_FILE, run_settings.training_settings(config), flag="--model_dir"
            )

    # The encoder and, from a pretraining checkpoint, the heads; or the run's own checkpoint, which the loop resumes.
    plan = restore_plan.plan_restore(
        files, init_checkpoint=config.init_checkpoint, output_dir=config.model_dir, head=restore_plan.PRETRAINING
    )
    model, optimizer = build_model_and_optimizer(config, bert_config, strategy)
    trainer = Trainer(
        model,
        optimizer,
        PretrainingObjective(config.use_next_sentence_label, config.objective),
        strategy,
        trainer_config(config),
        global_batch_size=config.train_batch_size,
        init_fn=lambda: plan.apply(model),
    )
    try:
        result = trainer.train(loader.load, stop_at_step=stop_at_step)
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
        diagnosed = loader.diagnose(e)
        if diagnosed is e:
            raise
        raise diagnosed from e
    exported = None
    if is_chief:
        if result.history or not model_dir_lib.export_is_current(export_dir, result.step):
            note = (
                f"interrupted while exporting step {result.step} (training is done); the same command exports it again"
            )
            with interruption.resumable(note):
                exported = model_dir_lib.export_model_dir(
                    model,
                    export_dir,
                    vocab_file=files.vocab_file,
                    do_lower_case=files.do_lower_case,
                    step=result.step,
                    owner=config.model_dir,
                    flag="--export_dir",
                )
        else:
            # A finished job run again (e.g. a relaunched two-phase script): nothing trained, nothing to rewrite.
            logging.info("%s already holds the model of step %d", export_dir, result.step)
            exported = export_dir
    return PretrainingResult(**vars(result), export_dir=exported)
