"""BERT pretraining: records -> `BertPretrainer` -> the shared training loop -> a model directory.

`run_pretraining(PretrainingConfig(...))` is everything `run_scripts/run_pretraining.py` does, callable from Python.
Run twice with the same config, the second call resumes from the last checkpoint in `model_dir`; once the run is
finished, it trains nothing and leaves the export as it is. A run resumed with settings that change the shapes or
the meaning of the training (batch size, sequence length, schedule, masking, ...) is refused before any work,
naming the flags that differ (`model_dir/pretraining_settings.json` records them). The config and its checks are
`tasks.pretraining_config`'s.

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

import keras
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.checkpoints import restore_plan
from official.nlp.common import input_files, output_folders
from official.nlp.common.errors import InputError
from official.nlp.common.processes import interruption
from official.nlp.data.pretraining.dataloader import PretrainDataConfig, PretrainDataLoader
from official.nlp.modeling.configs import LTR, BertConfig, attention_for
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertPretrainer
from official.nlp.tasks.pretraining_config import (
    PRETRAINING_SETTINGS_FILE,
    PretrainingConfig,
    check_pretraining_export_dir,
    check_pretraining_resume,
    check_pretraining_settings,
)
from official.nlp.training import distribution, precision, run_settings
from official.nlp.training.objectives import PretrainingObjective
from official.nlp.training.trainer import Trainer, TrainerConfig, TrainResult


@dataclasses.dataclass
class PretrainingResult(TrainResult):
    """`TrainResult` plus the exported model directory (None on workers other than the chief)."""

    export_dir: str | None = None


def build_pretrainer(
    bert_config: BertConfig, *, use_next_sentence_label: bool = True, mixed_precision: str = "float32"
) -> BertPretrainer:
    """A `BertPretrainer` with fresh weights, computing in `mixed_precision` (variables stay float32); the
    left-to-right LM for a config with `attention="left_to_right"` (which has no NSP)."""
    encoder = BertEncoder.from_bert_config(bert_config, dtype=precision.dtype_policy(mixed_precision))
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
    check_pretraining_settings(config, strategy)
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
