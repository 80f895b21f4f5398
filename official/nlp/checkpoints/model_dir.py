"""Model directories: a checkpoint together with the config, vocabulary and case that belong to it.

A model directory holds

    bert_config.json   the BertConfig
    vocab.txt          the WordPiece vocabulary
    do_lower_case      "true" or "false"
    checkpoint, ckpt-N.index, ckpt-N.data-*    our checkpoint (tf.train.Checkpoint, see our_checkpoints.py)
      or bert_model.ckpt.index/.data-*         a TF1 (--output_format=tf1) or Model Garden (model_garden) one
    finetuning.json    only in a fine-tuned model directory: the task, head and labels of its head (TASK_FILE)

A fine-tuning job's output directory is a model directory too (its checkpoints hold the whole task model), plus
`finetuning_settings.json` (the settings it was trained with, SETTINGS_FILE) and `best_model/` (the best checkpoint
as a fine-tuned model directory, BEST_MODEL_DIR).

This module is the format: its file names, `ModelFiles` (a model directory's contents, and how its checkpoint of
any format is restored into a Keras model), the readers of its small files and the checks of its vocabulary and
case, and the writers: `save_model_dir` writes a model directory, `export_model_dir` puts a trained model's in
place so that no half-written one looks complete. Finding the model in whatever a user names (a model directory, a
checkpoint prefix, an original TF1 checkpoint, a Hugging Face folder) is `model_loading`'s.

Example:

    written = save_model_dir("/models/mine", encoder, vocab_file="vocab.txt", do_lower_case=True)
    written.checkpoint                         # "/models/mine/ckpt-1"
    written.build_encoder()                    # a new encoder with the saved weights
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
from collections.abc import Mapping

import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import our_checkpoints
from official.nlp.checkpoints.peers import (
    hf_weights,
    keras_hub_presets,
    model_garden,
    tf1_checkpoints,
    tf_hub_saved_models,
)
from official.nlp.checkpoints.peers.model_garden_export import check_expressible, write_model_garden_checkpoint
from official.nlp.common import claims, full_disk, input_files, output_files, output_folders, text_files
from official.nlp.common.errors import InputError, MissingInputError, OutputExistsError
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertPretrainer

CONFIG_FILE = "bert_config.json"
VOCAB_FILE = "vocab.txt"
DO_LOWER_CASE_FILE = "do_lower_case"
TF1_CHECKPOINT_NAME = "bert_model.ckpt"
CHECKPOINT_NAME = our_checkpoints.CHECKPOINT_NAME
CHECKPOINT_STATE_FILE = "checkpoint"  # written by tf.train.CheckpointManager after the checkpoint: the marker
TASK_FILE = "finetuning.json"
SETTINGS_FILE = "finetuning_settings.json"
BEST_MODEL_DIR = "best_model"


@dataclasses.dataclass(frozen=True)
class ModelFiles:
    """Everything a script needs to rebuild a model: checkpoint, config, vocabulary, case (what
    `model_loading.read_model_files` reads, and what a conversion returns of the model it wrote).

    `checkpoint` is a checkpoint prefix, a Hugging Face folder, a keras-hub preset folder or a TF-Hub SavedModel
    folder (None when training from scratch) and `checkpoint_format` is `"ours"`, `"tf1"`, `"hf"`, `"keras_hub"`,
    `"model_garden"` or `"tf_hub"`.
    """

    config: BertConfig
    vocab_file: str | None
    do_lower_case: bool | None
    checkpoint: str | None = None
    checkpoint_format: str | None = None

    def build_encoder(self, **kwargs) -> BertEncoder:
        """A `BertEncoder` for `config`, with the checkpoint's weights when there is a checkpoint."""
        encoder = BertEncoder.from_bert_config(self.config, **kwargs)
        if self.checkpoint is not None:
            self.restore(encoder)
        return encoder

    def restore(self, model, *, encoder_only: bool = False) -> None:
        """Loads the checkpoint into `model`: the encoder, plus the pretraining heads for a `BertPretrainer`.

        Other task models get the encoder only (their heads start fresh, as in fine-tuning). A `BertPretrainer`
        from a checkpoint without pretraining heads (a converted Hugging Face encoder, a TF1 checkpoint without
        `cls/*`) gets the encoder, and its heads keep their fresh initial values. To resume a whole fine-tuned
        model from our format use `our_checkpoints.restore_checkpoint(model, prefix)`; a job decides what it starts
        from with `restore_plan.plan_restore`.
        """
        if self.checkpoint is None:
            raise ValueError("No checkpoint to restore (the model directory was resolved without one)")
        heads = isinstance(model, BertPretrainer) and not encoder_only
        if heads and not has_masked_lm_head(self.checkpoint, self.checkpoint_format):
            logging.info(
                "Restored the encoder from %s (%s format); it has no pretraining heads, so the masked-LM "
                "and next-sentence heads start from fresh initial values",
                self.checkpoint,
                self.checkpoint_format,
            )
            restore_weights(model, self.checkpoint, self.checkpoint_format, whole_model=False)
            return
        restore_weights(model, self.checkpoint, self.checkpoint_format, whole_model=heads)
        logging.info(
            "Restored %s from %s (%s format)",
            "the pretraining model" if heads else "the encoder",
            self.checkpoint,
            self.checkpoint_format,
        )

    def check_text_pairs(self, inputs: str) -> None:
        """Refuses text pairs (`inputs` names them) for a model with one token type: the second text's segment id
        1 is past its `token_type_embeddings`, which fails inside the first step (or, on a GPU, reads garbage)."""
        if self.config.type_vocab_size < 2:
            raise InputError(
                f"{inputs} are text pairs, whose second text has token type (segment id) 1, but the model's "
                f"bert_config.json has type_vocab_size={self.config.type_vocab_size}: it reads single texts only. "
                "Use a model with type_vocab_size=2 (BERT's), or single-text inputs"
            )

    def tokenizer(self):
        """The pure-Python `FullTokenizer` for this vocabulary and case."""
        from official.nlp.tokenizers.tokenization import FullTokenizer

        if self.vocab_file is None or self.do_lower_case is None:
            raise InputError(
                "No vocabulary or case: pass --vocab_file and --do_lower_case, or use a model "
                "directory that has vocab.txt and do_lower_case"
            )
        return FullTokenizer(self.vocab_file, do_lower_case=self.do_lower_case)


def has_masked_lm_head(checkpoint: str, checkpoint_format: str) -> bool:
    """Whether a checkpoint of any format holds the masked-LM head (public encoder-only ones do not)."""
    if checkpoint_format == "hf":
        return hf_weights.hf_has_masked_lm_head(checkpoint)
    if checkpoint_format == "keras_hub":
        return False  # a preset holds the backbone only
    if checkpoint_format == "tf_hub":
        return any(name.startswith("cls/") for name in tf_hub_saved_models.read_hub_weights(checkpoint))
    if checkpoint_format == "model_garden":
        return model_garden.read_model_garden_checkpoint(checkpoint, shapes_only=True).masked_lm
    return our_checkpoints.checkpoint_has_masked_lm_head(checkpoint)


def restore_weights(model, checkpoint: str, checkpoint_format: str, *, whole_model: bool) -> None:
    """Reads `checkpoint` (of any `ModelFiles.checkpoint_format`) into `model`'s encoder, or with `whole_model`
    into all of `model` (a `BertPretrainer`'s heads; any task model's head from our format). Decides nothing."""
    target = model if whole_model or isinstance(model, BertEncoder) else model.encoder
    if checkpoint_format == "tf1":
        tf1_checkpoints.assign_weights(tf1_checkpoints.read_tf1_checkpoint(checkpoint), target, source=checkpoint)
    elif checkpoint_format == "hf":
        tf1_checkpoints.assign_weights(hf_weights.read_hf_weights(checkpoint), target, source=checkpoint)
    elif checkpoint_format == "keras_hub":
        weights = keras_hub_presets.read_preset_weights(checkpoint)
        tf1_checkpoints.assign_weights(weights, target, source=checkpoint)
    elif checkpoint_format == "tf_hub":
        tf1_checkpoints.assign_weights(tf_hub_saved_models.read_hub_weights(checkpoint), target, source=checkpoint)
    elif checkpoint_format == "model_garden":
        weights = model_garden.read_model_garden_checkpoint(checkpoint).weights
        tf1_checkpoints.assign_weights(weights, target, source=checkpoint)
    else:
        our_checkpoints.restore_checkpoint(target, checkpoint, encoder_only=not whole_model)


# ---------------------------------------------------------------------------------------------------------------
# Writing


def write_model_files(model_dir: str, config: BertConfig, vocab_file: str | None, do_lower_case: bool | None) -> None:
    """Writes `bert_config.json`, `vocab.txt` and `do_lower_case` into `model_dir` (checked against each other).

    A training job calls this once for its `--model_dir`; its checkpoints then land next to these files.
    """
    output_files.makedirs(model_dir, name="model directory")
    if vocab_file is not None:
        validate_vocab_file(vocab_file, config, do_lower_case)
        target = os.path.join(model_dir, VOCAB_FILE)
        if os.path.normpath(vocab_file) != os.path.normpath(target):
            output_files.write_bytes(target, input_files.read_bytes(vocab_file))
    config.to_json_file(os.path.join(model_dir, CONFIG_FILE))
    if do_lower_case is not None:
        output_files.write_text(os.path.join(model_dir, DO_LOWER_CASE_FILE), "true\n" if do_lower_case else "false\n")


def save_model_dir(
    model_dir: str,
    model,
    *,
    vocab_file: str | None,
    do_lower_case: bool | None,
    checkpoint_format: str = "ours",
    checkpoint_number: int | None = None,
) -> ModelFiles:
    """Writes `model` (encoder or BERT task model) with its config, vocabulary and case as a model directory.

    Our checkpoint is `ckpt-<checkpoint_number>` (default `ckpt-1`), e.g. the training step of an export.
    `checkpoint_format="tf1"` writes `bert_model.ckpt` with the original variable names (encoder, plus the
    pretraining heads of a `BertPretrainer`) instead of our checkpoint; it refuses a left-to-right model, which
    the original code cannot express; `"model_garden"` writes it as the Model Garden's TF2 checkpoint, with a
    pretrainer's or classifier's heads. Refuses a directory that already holds a checkpoint.
    """
    if checkpoint_format not in ("ours", "tf1", "model_garden"):
        raise InputError(f"checkpoint_format must be 'ours', 'tf1' or 'model_garden', got {checkpoint_format!r}")
    if input_files.isdir(model_dir) and (
        tf.train.latest_checkpoint(model_dir) or tf.io.gfile.glob(os.path.join(model_dir, "*.index"))
    ):
        raise OutputExistsError(f"{model_dir} already holds a checkpoint; choose an empty or new directory")
    config = model.config if isinstance(model, BertEncoder) else model.encoder.config
    if checkpoint_format != "ours" and config.left_to_right:
        # The original code reads bert_config.json into its own fields and would drop `attention` unseen.
        raise InputError(
            f"{model_dir}: a left-to-right model (attention=left_to_right) has no "
            f"{'TF1' if checkpoint_format == 'tf1' else 'Model Garden'} form: that code has no causal attention and "
            "would run it bidirectionally; keep --output_format=ours"
        )
    if checkpoint_format == "model_garden":
        check_expressible(config, model_dir)
    write_model_files(model_dir, config, vocab_file, do_lower_case)
    if checkpoint_format == "tf1":
        if config.hidden_act not in ("gelu", "relu", "tanh", "linear"):
            logging.warning(
                "hidden_act=%r: the original TF1 BERT code has no such activation; only this "
                "library reads bert_config.json correctly for this checkpoint",
                config.hidden_act,
            )
        prefix = tf1_checkpoints.write_tf1_checkpoint(
            os.path.join(model_dir, TF1_CHECKPOINT_NAME), tf1_checkpoints.export_weights(model)
        )
    elif checkpoint_format == "model_garden":
        prefix = write_model_garden_checkpoint(model, os.path.join(model_dir, TF1_CHECKPOINT_NAME))
    else:
        prefix = tf.train.CheckpointManager(
            our_checkpoints.checkpoint_root(model), model_dir, max_to_keep=None, checkpoint_name=CHECKPOINT_NAME
        ).save(1 if checkpoint_number is None else checkpoint_number)
    return ModelFiles(
        config=config,
        vocab_file=os.path.join(model_dir, VOCAB_FILE) if vocab_file else None,
        do_lower_case=do_lower_case,
        checkpoint=prefix,
        checkpoint_format=checkpoint_format,
    )


# ---------------------------------------------------------------------------------------------------------------
# Reading


def _read_json_beside(path: str | None, name: str) -> dict | None:
    if not path:
        return None
    folder = path if input_files.isdir(path) else os.path.dirname(path)
    file = os.path.join(folder, name)
    if not input_files.exists(file):
        return None
    with tf.io.gfile.GFile(file) as f:
        return json.load(f)


def read_task_file(path: str | None) -> dict | None:
    """The `finetuning.json` of a fine-tuned model directory (or of the folder of a checkpoint prefix in one):
    `{"task", "head", "labels", "metric", "evaluation"}`; None where there is none."""
    return _read_json_beside(path, TASK_FILE)


def read_settings_file(path: str | None) -> dict | None:
    """The `finetuning_settings.json` of a fine-tuning output directory (or of the folder of a checkpoint prefix in
    one); None where there is none."""
    return _read_json_beside(path, SETTINGS_FILE)


def read_do_lower_case(path: str) -> bool:
    text = text_files.read_text(path).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise InputError(f"{path}: expected 'true' or 'false', found {text!r}")


def case_from_directory_name(directory: str | None) -> bool | None:
    """The case Google's released folder names state (`uncased_L-12_H-768_A-12`, `cased_L-12_H-768_A-12`), else
    None."""
    if directory:
        name = os.path.basename(os.path.normpath(directory)).lower()
        if re.search(r"(^|[_\-])uncased([_\-]|$)", name):
            return True
        if re.search(r"(^|[_\-])cased([_\-]|$)", name):
            return False
    return None


def _case_from_vocab(vocab) -> bool | None:
    """The one case the vocabulary's case rule accepts (`tokenization.validate_vocab` judges it), else None."""
    from official.nlp.tokenizers import tokenization

    verdicts = []
    for value in (True, False):
        try:
            tokenization.validate_vocab(vocab, do_lower_case=value)
            verdicts.append(value)
        except tokenization.VocabularyError:
            pass
    return verdicts[0] if len(verdicts) == 1 else None


def validate_vocab_file(
    vocab_file: str,
    config: BertConfig,
    do_lower_case: bool | None,
    *,
    infer_case: bool = False,
    infer_from: str | None = None,
    require_case: bool = False,
) -> bool | None:
    """Refuses a vocabulary whose size differs from `config.vocab_size` or whose case contradicts `do_lower_case`;
    returns the case. Reads `vocab_file` once.

    With `infer_case`, a case left None is inferred first: from Google's name of the directory `infer_from`
    (`uncased_L-12_H-768_A-12`), else from the vocabulary. With `require_case`, a case that stays unknown is an
    error.
    """
    from official.nlp.tokenizers import tokenization

    if not input_files.exists(vocab_file):
        raise MissingInputError(f"Vocabulary file not found: {vocab_file}")
    vocab = tokenization.load_vocab(vocab_file)
    if do_lower_case is None and infer_case:
        do_lower_case = case_from_directory_name(infer_from)
        if do_lower_case is None:
            do_lower_case = _case_from_vocab(vocab)
        if do_lower_case is None and require_case:
            raise InputError(
                f"Cannot tell whether {vocab_file} is for a cased or an uncased model; pass --do_lower_case"
            )
        if do_lower_case is not None:
            logging.info("do_lower_case=%s inferred for %s", do_lower_case, infer_from or vocab_file)
    tokenization.validate_vocab(vocab, vocab_size=config.vocab_size, do_lower_case=do_lower_case, source=vocab_file)
    return do_lower_case


# ---------------------------------------------------------------------------------------------------------------
# Exporting


def export_model_dir(
    model,
    export_dir: str,
    *,
    vocab_file: str | None,
    do_lower_case: bool | None,
    step: int | None = None,
    json_files: Mapping[str, Mapping] | None = None,
    owner: str | None = None,
    checkpoint_format: str = "ours",
    flag: str = "export_dir",
) -> str:
    """Writes a trained model (weights only) as the model directory `export_dir`.

    `owner` is the folder of the run that exports (run_pretraining's `--model_dir`, a fine-tuning `--output_dir`):
    an earlier export of that same run is replaced, since its `output_folders.OWNER_FILE` names the run; anything
    else in `export_dir` is refused. Without `owner`, `export_dir` must be new or empty (a converted checkpoint,
    `save_classifier`), and it is claimed, so that a second job writing it at the same time is refused.

    The checkpoint is `ckpt-<step>` when `step` is given (`export_is_current` reads it back), `bert_model.ckpt` for
    `checkpoint_format` "tf1" or "model_garden". `json_files` (`{file name: content}`, e.g. `finetuning.json`) too.
    Everything is written where no reader looks (a hidden folder of this job beside a local `export_dir`, a local
    temporary folder for a bucket's) and put in place by `output_files.commit_folder` with the checkpoint's marker
    last: a job killed while exporting leaves the previous export or a folder without that marker, never half one.
    """
    if owner is None:
        output_folders.check_new_folder(export_dir, flag=flag)
        parent, name = output_folders.split(export_dir)
        claim = claims.claim(parent, name, what=export_dir)
    else:
        output_folders.check_export(export_dir, flag=flag, owner=owner)
        claim = contextlib.nullcontext()
    # A full disk names export_dir (and the flag), not the staging file being written.
    full = full_disk.naming_output_when_full(export_dir, name=flag)
    with full, claim, output_folders.staging_folder(export_dir) as staging:
        save_model_dir(
            staging,
            model,
            vocab_file=vocab_file,
            do_lower_case=do_lower_case,
            checkpoint_format=checkpoint_format,
            checkpoint_number=step,
        )
        for name, content in (json_files or {}).items():
            output_files.write_text(os.path.join(staging, name), json.dumps(dict(content), indent=1, sort_keys=True))
        if owner is not None:
            record = output_folders.owner_record(export_dir, owner, output_files.files_under(staging))
            output_files.write_text(os.path.join(staging, output_folders.OWNER_FILE), record)
        # The checkpoint state file holds relative paths, so the folder can move.
        marker = CHECKPOINT_STATE_FILE if checkpoint_format == "ours" else TF1_CHECKPOINT_NAME + ".index"
        output_folders.commit_export(staging, export_dir, marker=marker, replace=owner is not None)
    logging.info("Exported the model directory %s", export_dir)
    return export_dir


def export_is_current(export_dir: str, step: int) -> bool:
    """Whether `export_dir` holds the export of training step `step` (written by `export_model_dir`)."""
    latest = tf.train.latest_checkpoint(export_dir) if input_files.isdir(export_dir) else None
    return latest is not None and os.path.basename(latest) == f"{CHECKPOINT_NAME}-{step}"
