"""Checkpoint conversion: `convert_checkpoint` writes any checkpoint `model_loading` reads (TF1, Hugging Face,
keras-hub, Model Garden, TF-Hub SavedModels, ours) as a model directory, and `ConversionConfig` holds its settings
(the flags of
`run_scripts/convert_checkpoint.py`).

convert(ConversionConfig(input="uncased_L-12_H-768_A-12/bert_model.ckpt", output_dir="models/bert_base"))
"""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import checkpoint_base, fine_tuned, model_dir, model_loading, our_checkpoints
from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.checkpoints.peers import (
    hf_export,
    hub_names,
    keras_hub_export,
    keras_hub_presets,
    tf_hub_saved_models,
)
from official.nlp.common import input_files, output_folders
from official.nlp.common.config_flags import CheckedConfig, field
from official.nlp.common.errors import InputError


@dataclasses.dataclass
class ConversionConfig(CheckedConfig):
    """What to convert, into which model directory, and the files that override those found with the input."""

    input: str = field(
        path="path",
        help="TF1 checkpoint prefix or folder, Hugging Face model folder (a BertForSequenceClassification keeps its "
        "head, labels and thresholds), keras-hub preset folder (a BertTextClassifier's keeps its head) or preset "
        "name (bert_base_en_uncased), Model Garden TF2 checkpoint prefix or folder (its pretraining or classifier "
        "head kept), TF-Hub/Kaggle BERT encoder SavedModel, hf://org/name[@revision], "
        "kaggle://owner/model/framework/variation[/version], model directory, or a fine-tuning run's --output_dir "
        "or best_model/ (written with its head).",
    )
    output_dir: str = field(
        path="path",
        help="Model directory to write (must not hold a checkpoint yet); for --output_format=hf a new or empty folder.",
    )
    input_format: str = field(
        "auto", enum=["auto", "tf1", "hf", "keras_hub", "model_garden", "tf_hub", "ours"], help="Format of --input."
    )
    output_format: str = field(
        "ours",
        enum=["ours", "tf1", "hf", "keras_hub", "model_garden"],
        help="What to write: our model directory, an original TF1 checkpoint, a Hugging Face folder "
        "(config.json, model.safetensors, vocab.txt, tokenizer settings), a keras-hub preset folder "
        "(BertBackbone.from_preset(folder); a fine-tuned classifier: TextClassifier.from_preset(folder)), or a Model "
        "Garden TF2 checkpoint (bert_model.ckpt, with a pretrainer's or classifier's heads, beside bert_config.json "
        "and vocab.txt).",
    )
    bert_config_file: str | None = field(None, path="path", help="Overrides the config found next to --input.")
    vocab_file: str | None = field(None, path="path", help="Overrides the vocab.txt found next to --input.")
    do_lower_case: bool | None = field(None, help="Overrides the case found with --input (file, folder name or vocab).")
    preprocessor: str | None = field(
        None,
        path="path",
        help="For a TF-Hub encoder SavedModel --input: its preprocessing SavedModel, which gives the vocabulary and "
        "case when the encoder does not carry them (the flags above win over it).",
    )


def convert(config: ConversionConfig) -> model_dir.ModelFiles:
    """Writes the model at `config.input` in `config.output_format`, as `convert_checkpoint.py` does, and returns the
    written model's `ModelFiles` (it logs what it wrote): our model directory, a TF1 or a Model Garden checkpoint
    (`convert_checkpoint`), a Hugging Face folder (`hf_export.export_to_hugging_face`) or a keras-hub preset folder
    (`export_to_keras_hub`).

        convert(ConversionConfig("uncased_L-12_H-768_A-12/bert_model.ckpt", "models/bert_base"))
        convert(ConversionConfig("models/bert_base", "models/bert_base_hf", output_format="hf"))
    """
    # A hub name is fetched (or found in its cache) once, here: every reader below takes the local folder.
    config = dataclasses.replace(config, input=hub_names.resolve(config.input))
    if config.preprocessor:
        config = _with_preprocessor(config)
    settings = dict(
        input_format=config.input_format,
        bert_config_file=config.bert_config_file,
        vocab_file=config.vocab_file,
        do_lower_case=config.do_lower_case,
    )
    if config.output_format == "hf":
        return hf_export.export_to_hugging_face(config.input, config.output_dir, **settings)
    if config.output_format == "keras_hub":
        return export_to_keras_hub(config.input, config.output_dir, **settings)
    return convert_checkpoint(config.input, config.output_dir, output_format=config.output_format, **settings)


def _with_preprocessor(config: ConversionConfig) -> ConversionConfig:
    """`--vocab_file` and `--do_lower_case` from `--preprocessor` where the flags leave them unset; a preprocessor
    whose case contradicts the encoder's own `do_lower_case` is refused (`model_loading.hub_model_files`)."""
    if not tf_hub_saved_models.is_hub_saved_model(config.input):
        raise InputError(
            f"--preprocessor is for a TF-Hub encoder SavedModel --input; {config.input} is not one (no saved_model.pb)"
        )
    vocab_file, do_lower_case = tf_hub_saved_models.preprocessor_vocab(config.preprocessor)
    logging.info("--preprocessor=%s: vocabulary %s, do_lower_case=%s", config.preprocessor, vocab_file, do_lower_case)
    return dataclasses.replace(
        config,
        vocab_file=config.vocab_file or vocab_file,
        do_lower_case=do_lower_case if config.do_lower_case is None else config.do_lower_case,
    )


def _load(input_path: str, *, input_format: str, **overrides):
    """`model_loading.load_model`, which also takes a fine-tuning run's `--output_dir` (or a checkpoint prefix in
    it), as every script's `--init_checkpoint` does: the model of the run, its `best_model/` when it has one, else
    (trained without --do_eval) its last checkpoint, with the config, vocabulary and case its
    `finetuning_settings.json` records. Its encoder is what a model directory holds (a head `fine_tuned` can build
    is converted with it by `convert_checkpoint`, before this)."""
    source = init_checkpoint_lib.locate(input_path)
    folder = source if input_files.isdir(source) else os.path.dirname(source)
    if input_format not in ("auto", "ours") or not init_checkpoint_lib.is_output_dir(folder):
        return model_loading.load_model(source, input_format=input_format, **overrides)
    try:
        files = init_checkpoint_lib.resolve_model_files(source, **overrides)
    except (FileNotFoundError, ValueError) as e:
        raise InputError(f"--input={input_path}: {e}") from e
    logging.info("Converting the model of the run in %s: its checkpoint %s (no best_model/)", folder, files.checkpoint)
    return our_checkpoints.model_from_checkpoint(files.checkpoint, files.config), files


def convert_checkpoint(
    input_path: str,
    output_dir: str,
    *,
    input_format: str = "auto",
    output_format: str = "ours",
    bert_config_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool | None = None,
) -> model_dir.ModelFiles:
    """Converts any checkpoint `model_loading` reads into a model directory (`output_format` ours, tf1 or
    model_garden).

    The model keeps the source's activation (`hidden_act`), its pretraining heads when present, and travels
    with its config, vocabulary and case. A fine-tuned model (a Hugging Face `BertForSequenceClassification`
    folder, a fine-tuned model directory) becomes a fine-tuned model directory with its head, labels, multi-label
    and thresholds (`fine_tuned`), which only our format holds (`model_garden` keeps a classifier's head in its
    checkpoint, without the labels; `tf1`, or a head only its own job builds, keeps the encoder, with a warning
    naming the head). Returns the written directory's `ModelFiles`.
    """
    if output_format not in ("ours", "tf1", "model_garden"):
        raise InputError(f"--output_format must be 'ours', 'tf1' or 'model_garden', got {output_format!r}")
    inputs = {"--input": input_path, "--bert_config_file": bert_config_file, "--vocab_file": vocab_file}
    output_folders.check_new_folder(output_dir, flag="--output_dir", related=inputs)  # before reading anything
    overrides = dict(bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case)
    described = None
    if input_format in ("auto", model_loading.detect_format(input_path)):
        described = fine_tuned.describe(input_path, **overrides)
    head = described.head if described is not None else None
    # The Model Garden's format holds a sequence classifier's head (its BertClassifier), not the others.
    keeps_head = output_format == "ours" or (
        output_format == "model_garden" and head is not None and head.serving_task == "classifier"
    )
    if head is not None and head.build is not None and keeps_head:
        described, model = fine_tuned.load_fine_tuned(input_path, files=described.files)
        files = described.files
        if output_format == "ours":
            fine_tuned.save_described(model, output_dir, described, flag="--output_dir")
        else:
            model_dir.export_model_dir(
                model,
                output_dir,
                vocab_file=files.vocab_file,
                do_lower_case=files.do_lower_case,
                checkpoint_format=output_format,
                flag="--output_dir",
            )
    else:
        if head is not None:
            why = (
                "which only the job that trained it builds"
                if head.build is None
                else f"which {output_format} does not hold (--output_format=ours keeps it)"
            )
            logging.warning(
                "%s holds a fine-tuned %s head, %s: its encoder alone is converted", input_path, head.name, why
            )
        model, files = _load(input_path, input_format=input_format, **overrides)
        model_dir.export_model_dir(
            model,
            output_dir,
            vocab_file=files.vocab_file,
            do_lower_case=files.do_lower_case,
            checkpoint_format=output_format,
            flag="--output_dir",
        )
    prefix = tf.train.latest_checkpoint(output_dir) if output_format == "ours" else None
    prefix = os.path.basename(prefix) if prefix else model_dir.TF1_CHECKPOINT_NAME
    written = model_dir.ModelFiles(
        config=files.config,
        vocab_file=os.path.join(output_dir, model_dir.VOCAB_FILE) if files.vocab_file else None,
        do_lower_case=files.do_lower_case,
        checkpoint=os.path.join(output_dir, prefix),
        checkpoint_format=output_format,
    )
    logging.info(
        "Wrote %s (%s, %s) to %s",
        type(model).__name__,
        output_format,
        checkpoint_base.describe_config(files.config),
        output_dir,
    )
    return written


def export_to_keras_hub(input_path: str, output_dir: str, *, input_format: str = "auto", **overrides):
    """Writes any model `convert_checkpoint` reads as a keras-hub preset folder (keras_hub_export.py): its encoder,
    and a fine-tuned classifier's head as a `BertTextClassifier` (`TextClassifier.from_preset(folder)`;
    keras_hub_tasks.py); another head is left out, with a warning naming it. Returns the written folder's
    `ModelFiles`, as the other formats' writers do."""
    inputs = {"--input": input_path, "--bert_config_file": overrides.get("bert_config_file")}
    output_folders.check_new_folder(output_dir, flag="--output_dir", related=inputs)  # before reading anything
    described = task_files = None
    if input_format in ("auto", model_loading.detect_format(input_path)):
        described = fine_tuned.describe(input_path, **overrides)
    head = described.head if described is not None else None
    if head is not None and head.keras_hub is not None:
        described, model = fine_tuned.load_fine_tuned(input_path, files=described.files)
        files, task_files = described.files, fine_tuned.keras_hub_task_files(described, model)
    else:
        if head is not None:
            logging.warning(
                "%s holds a fine-tuned %s head, which a keras-hub preset does not hold: its encoder alone is written",
                input_path,
                head.name,
            )
        model, files = _load(input_path, input_format=input_format, **overrides)
    keras_hub_export.write_preset(
        model,
        output_dir,
        vocab_file=files.vocab_file,
        do_lower_case=files.do_lower_case,
        source=input_path,
        task_files=task_files,
    )
    return model_dir.ModelFiles(
        config=files.config,
        vocab_file=os.path.join(output_dir, keras_hub_presets.PRESET_VOCAB_FILE) if files.vocab_file else None,
        do_lower_case=files.do_lower_case,
        checkpoint=output_dir,
        checkpoint_format="keras_hub",
    )
