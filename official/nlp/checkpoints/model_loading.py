"""The model a user names, in any format: a model directory, one of our checkpoint prefixes, an original TF1
checkpoint (prefix or folder), a Model Garden TF2 checkpoint (prefix or folder) or a Hugging Face folder, read
as `model_dir.ModelFiles` or built as a Keras model.

`read_model_files` finds the checkpoint and its format, takes `bert_config.json`/`vocab.txt`/`do_lower_case` from
beside it (for a TF1 prefix, as in Google's released zips) where the flags did not give them, and refuses
contradictions at start-up. A script's `--init_checkpoint` goes through `init_checkpoint.resolve_model_files`,
which also takes a fine-tuning job's output directory and then calls this. `load_model` rebuilds the model a
checkpoint holds (a `BertPretrainer` when it has the masked-LM head, else a `BertEncoder`), which is what a
conversion reads.

Example:

    files = read_model_files("/models/uncased_L-12_H-768_A-12/bert_model.ckpt")
    encoder = files.build_encoder()            # weights restored
    tokenizer = files.tokenizer()              # FullTokenizer(vocab.txt, do_lower_case)
"""

from __future__ import annotations

import dataclasses
import json
import os

import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import model_dir, our_checkpoints
from official.nlp.checkpoints.peers import (
    hf_weights,
    hub_names,
    keras_hub_presets,
    model_garden,
    tf1_checkpoints,
    tf_hub_saved_models,
)
from official.nlp.common import input_files, text_files
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.modeling.configs import BertConfig


def find_checkpoint(path: str) -> tuple[str, str]:
    """`(prefix, format)` for a model directory or a checkpoint prefix; format is `"ours"`, `"tf1"` or
    `"model_garden"`."""
    if input_files.isdir(path):
        prefix = tf.train.latest_checkpoint(path)
        if prefix is None:
            indexes = sorted(tf.io.gfile.glob(os.path.join(path, "*.index")))
            if not indexes:
                hf = (
                    "it has config.json, as a Hugging Face folder does, but no model.safetensors (the weights; "
                    "a pytorch_model.bin alone is not read)"
                    if input_files.exists(os.path.join(path, "config.json"))
                    else "it holds no weights"
                )
                raise MissingInputError(
                    f"{path}: {hf}. Expected a model directory (checkpoint + ckpt-N.index), an original TF1 "
                    "checkpoint (bert_model.ckpt.index) or a Hugging Face folder (config.json + model.safetensors "
                    "+ vocab.txt)"
                )
            if len(indexes) != 1:
                found = ", ".join(os.path.basename(i) for i in indexes)
                raise MissingInputError(
                    f"{path}: cannot tell which checkpoint to use (no `checkpoint` state file; "
                    f"*.index files: {found}); pass the checkpoint prefix instead"
                )
            prefix = indexes[0][: -len(".index")]
    elif input_files.exists(path + ".index"):
        prefix = path
    else:
        raise MissingInputError(f"{path} is neither a model directory nor a checkpoint prefix (no {path}.index)")
    # Before ours: a Model Garden checkpoint has an `encoder` object too (of tf_keras layers).
    if model_garden.is_model_garden_checkpoint(prefix):
        return prefix, "model_garden"
    if our_checkpoints.is_our_checkpoint(prefix):
        return prefix, "ours"
    if tf1_checkpoints.is_tf1_checkpoint(prefix):
        return prefix, "tf1"
    raise InputError(
        f"{prefix} is not a BERT checkpoint this library knows: neither ours (an `encoder` object), a Model Garden "
        "one (an `encoder` of tf_keras layers) nor an original TF1 one (`bert/...` variables). Convert it with "
        "run_scripts/convert_checkpoint.py"
    )


def _merge_case(do_lower_case: bool | None, stored: bool | None, source: str) -> bool | None:
    """The `--do_lower_case` flag, else the case stored with the model; refuses a flag that contradicts it."""
    if do_lower_case is not None and stored is not None and do_lower_case != stored:
        raise InputError(
            f"--do_lower_case={do_lower_case} contradicts {source} ({stored}); the model was trained "
            "with the latter. Drop the flag or fix the file."
        )
    return stored if do_lower_case is None else do_lower_case


def read_model_files(
    init_checkpoint: str | None = None,
    *,
    bert_config: BertConfig | None = None,
    bert_config_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool | None = None,
    require_vocab: bool = True,
) -> model_dir.ModelFiles:
    """The `ModelFiles` of a model directory, a checkpoint prefix or a Hugging Face folder (`init_checkpoint`),
    with `--bert_config_file`, `--vocab_file` and `--do_lower_case` (a script's flags go through
    `init_checkpoint.resolve_model_files`, which also takes a fine-tuning output directory).

    Arguments left as None come from the model directory (or, for a checkpoint prefix, its folder): the config
    from `bert_config.json`, the vocabulary from `vocab.txt`, the case from `do_lower_case`, else from Google's
    folder names (`uncased_L-12_H-768_A-12`), else from the vocabulary itself. Pass absl flags as None when the
    user did not set them (`FLAGS["do_lower_case"].present`), so that the directory's values apply. From Python,
    `bert_config` gives the config itself instead of `bert_config_file`.

    Raises (at start-up, naming the file and what to change): a missing file; a vocabulary whose size is not
    the config's `vocab_size`; a `do_lower_case` that contradicts the directory's file or the vocabulary.
    """
    if bert_config is not None and bert_config_file is not None:
        raise ValueError("Pass bert_config or --bert_config_file, not both")
    init_checkpoint = hub_names.resolve(init_checkpoint) if init_checkpoint else init_checkpoint
    if init_checkpoint and keras_hub_presets.is_preset_folder(init_checkpoint):
        return preset_model_files(
            init_checkpoint, bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case
        )
    if init_checkpoint and tf_hub_saved_models.is_hub_saved_model(init_checkpoint):
        return hub_model_files(
            init_checkpoint, bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case
        )
    if init_checkpoint and is_hugging_face(init_checkpoint):
        files = hf_model_files(
            init_checkpoint, bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case
        )
        if bert_config is not None and bert_config != files.config:
            raise ValueError(f"bert_config differs from {init_checkpoint}'s config.json")
        return files
    prefix = fmt = None
    directory = None
    if init_checkpoint:
        prefix, fmt = find_checkpoint(init_checkpoint)
        directory = init_checkpoint if input_files.isdir(init_checkpoint) else os.path.dirname(prefix)

    def beside(name):
        if directory is None:
            return None
        path = os.path.join(directory, name)
        return path if input_files.exists(path) else None

    config = bert_config
    if config is None:
        config_file = bert_config_file or beside(model_dir.CONFIG_FILE)
        if config_file is None and fmt == "model_garden":
            config = model_garden_config(prefix)
        elif config_file is None:
            if directory is None:
                raise InputError(
                    "--bert_config_file is required "
                    f"(there is no --init_checkpoint to take {model_dir.CONFIG_FILE} from)"
                )
            raise MissingInputError(
                f"No BERT config: --bert_config_file is not set and {directory} has no {model_dir.CONFIG_FILE}"
            )
        else:
            config = BertConfig.from_json_file(config_file)
    if fmt == "model_garden":
        found = model_garden.read_model_garden_checkpoint(prefix, shapes_only=True)
        model_garden.check_config(
            found, config, bert_config_file or beside(model_dir.CONFIG_FILE) or "bert_config", prefix
        )

    vocab_file = vocab_file or beside(model_dir.VOCAB_FILE)
    if vocab_file is None and require_vocab:
        where = f" and {directory} has no {model_dir.VOCAB_FILE}" if directory else ""
        raise MissingInputError(f"No vocabulary: --vocab_file is not set{where}")

    case_file = beside(model_dir.DO_LOWER_CASE_FILE)
    if case_file:
        do_lower_case = _merge_case(do_lower_case, model_dir.read_do_lower_case(case_file), case_file)
    if vocab_file is not None:
        do_lower_case = model_dir.validate_vocab_file(
            vocab_file, config, do_lower_case, infer_case=True, infer_from=directory, require_case=True
        )
    elif do_lower_case is None:
        do_lower_case = model_dir.case_from_directory_name(directory)
        if do_lower_case is not None:
            logging.info("do_lower_case=%s inferred for %s", do_lower_case, directory)
    return model_dir.ModelFiles(
        config=config, vocab_file=vocab_file, do_lower_case=do_lower_case, checkpoint=prefix, checkpoint_format=fmt
    )


def model_garden_config(prefix: str) -> BertConfig:
    """The config of a Model Garden checkpoint without `bert_config.json` (a training run's folder holds none): its
    sizes from the variables' shapes, its activation and dropout the Model Garden's defaults."""
    config = model_garden.read_model_garden_checkpoint(prefix, shapes_only=True).config
    logging.info(
        "%s has no %s beside it: its sizes come from its variables (%d layers, hidden %d, %d heads), with "
        "hidden_act=%s and dropout %s (the Model Garden's defaults); pass --bert_config_file for others",
        prefix,
        model_dir.CONFIG_FILE,
        config.num_hidden_layers,
        config.hidden_size,
        config.num_attention_heads,
        config.hidden_act,
        config.hidden_dropout_prob,
    )
    return config


def _hf_do_lower_case(directory: str) -> bool | None:
    path = os.path.join(directory, "tokenizer_config.json")
    if input_files.exists(path):
        value = json.loads(text_files.read_text(path)).get("do_lower_case")
        if isinstance(value, bool):
            return value
    return None


def hf_model_files(
    path: str, *, bert_config_file: str | None = None, vocab_file: str | None = None, do_lower_case: bool | None = None
) -> model_dir.ModelFiles:
    """`ModelFiles` of a Hugging Face BERT folder (`config.json`, `model.safetensors`, `vocab.txt`) or of its
    `.safetensors` file; `checkpoint_format` is `"hf"`, so `restore` and `build_encoder` read the safetensors."""
    directory = os.path.dirname(path) if path.endswith(".safetensors") else path
    config = BertConfig.from_json_file(bert_config_file or os.path.join(directory, "config.json"))
    vocab_file = vocab_file or (
        os.path.join(directory, model_dir.VOCAB_FILE)
        if input_files.exists(os.path.join(directory, model_dir.VOCAB_FILE))
        else None
    )
    if vocab_file is None:
        raise MissingInputError(
            f"{directory} has no {model_dir.VOCAB_FILE} (a tokenizer.json alone is not read); pass --vocab_file"
        )
    do_lower_case = _merge_case(
        do_lower_case, _hf_do_lower_case(directory), f"{directory}/tokenizer_config.json's do_lower_case"
    )
    do_lower_case = model_dir.validate_vocab_file(vocab_file, config, do_lower_case, infer_case=True)
    return model_dir.ModelFiles(
        config=config, vocab_file=vocab_file, do_lower_case=do_lower_case, checkpoint=path, checkpoint_format="hf"
    )


def preset_model_files(
    path: str, *, bert_config_file: str | None = None, vocab_file: str | None = None, do_lower_case: bool | None = None
) -> model_dir.ModelFiles:
    """`ModelFiles` of a keras-hub preset folder; `checkpoint_format` is `"keras_hub"` (see keras_hub_presets.py)."""
    config = (
        BertConfig.from_json_file(bert_config_file) if bert_config_file else keras_hub_presets.read_preset_config(path)
    )
    vocab_file = vocab_file or keras_hub_presets.preset_vocab_file(path)
    if vocab_file is None:
        raise MissingInputError(
            f"{path} has no {keras_hub_presets.PRESET_VOCAB_FILE} (a backbone-only preset); pass --vocab_file"
        )
    do_lower_case = _merge_case(do_lower_case, keras_hub_presets.preset_case(path), f"{path}'s tokenizer lowercase")
    do_lower_case = model_dir.validate_vocab_file(vocab_file, config, do_lower_case, infer_case=True)
    return model_dir.ModelFiles(
        config=config,
        vocab_file=vocab_file,
        do_lower_case=do_lower_case,
        checkpoint=path,
        checkpoint_format="keras_hub",
    )


def hub_model_files(
    path: str, *, bert_config_file: str | None = None, vocab_file: str | None = None, do_lower_case: bool | None = None
) -> model_dir.ModelFiles:
    """`ModelFiles` of a TF-Hub/Kaggle BERT encoder SavedModel (or a pair's folder holding `encoder/`), with the
    vocabulary and case it carries; `checkpoint_format` is `"tf_hub"` (see tf_hub_saved_models.py)."""
    folder = tf_hub_saved_models.encoder_folder(path) or path
    if bert_config_file:
        config = BertConfig.from_json_file(bert_config_file)
    else:
        config = tf_hub_saved_models.read_hub_config(folder)
    stored_vocab, stored_case = tf_hub_saved_models.hub_vocab(folder)
    vocab_file = vocab_file or stored_vocab
    if vocab_file is None:
        raise MissingInputError(
            f"{folder} carries no vocabulary (no vocab_file asset, or its file is missing from assets/); pass its "
            "preprocessing model as convert_checkpoint.py --preprocessor, or --vocab_file and --do_lower_case"
        )
    do_lower_case = _merge_case(do_lower_case, stored_case, f"{folder}'s do_lower_case variable")
    do_lower_case = model_dir.validate_vocab_file(vocab_file, config, do_lower_case, infer_case=True)
    return model_dir.ModelFiles(
        config=config, vocab_file=vocab_file, do_lower_case=do_lower_case, checkpoint=folder, checkpoint_format="tf_hub"
    )


def is_hugging_face(path: str) -> bool:
    """Whether `path` is a Hugging Face model folder (`model.safetensors` or `pytorch_model.bin`) or `.safetensors`
    file."""
    return path.endswith(".safetensors") or (
        input_files.isdir(path)
        and (
            input_files.exists(os.path.join(path, "model.safetensors"))
            or input_files.exists(os.path.join(path, "pytorch_model.bin"))
        )
    )


def detect_format(path: str) -> str:
    """`"keras_hub"` for a keras-hub preset folder, `"tf_hub"` for a SavedModel (a TF-Hub encoder), `"hf"` for a
    Hugging Face model folder or `.safetensors` file, else `"ours"`, `"tf1"` or `"model_garden"` (see
    find_checkpoint)."""
    if keras_hub_presets.is_preset_folder(path):
        return "keras_hub"
    if tf_hub_saved_models.is_hub_saved_model(path):
        return "tf_hub"
    return "hf" if is_hugging_face(path) else find_checkpoint(path)[1]


def load_model(
    path: str,
    *,
    input_format: str = "auto",
    bert_config_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool | None = None,
):
    """Loads any supported checkpoint as `(model, ModelFiles)`; the model is a `BertPretrainer` when the source
    has the masked-LM head (with NSP when it has that head), else a `BertEncoder`.

    `input_format` is `auto`, `tf1` (original checkpoint prefix or folder), `hf` (Hugging Face folder with
    `config.json` + `model.safetensors`), `keras_hub` (preset folder), `model_garden` (Model Garden TF2
    checkpoint prefix or folder: a classifier's head is not part of the model, see `fine_tuned`) or `ours` (model
    directory or prefix).
    """
    path = hub_names.resolve(path)
    if input_format == "auto":
        input_format = detect_format(path)
    if input_format == "keras_hub":
        files = preset_model_files(
            path, bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case
        )
        model = tf1_checkpoints.model_from_weights(
            keras_hub_presets.read_preset_weights(path), files.config, source=path
        )
        return model, dataclasses.replace(files, checkpoint=None, checkpoint_format=None)
    if input_format == "tf_hub":
        files = hub_model_files(
            path, bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case
        )
        weights = tf_hub_saved_models.read_hub_weights(files.checkpoint)
        model = tf1_checkpoints.model_from_weights(weights, files.config, source=files.checkpoint)
        return model, dataclasses.replace(files, checkpoint=None, checkpoint_format=None)
    if input_format == "hf":
        files = hf_model_files(
            path, bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case
        )
        model = tf1_checkpoints.model_from_weights(
            hf_weights.read_hf_weights(path), files.config, source=path, display_name=hf_weights.tf1_name_to_hf
        )
        return model, dataclasses.replace(files, checkpoint=None, checkpoint_format=None)
    if input_format not in ("tf1", "ours", "model_garden"):
        raise InputError(
            f"input_format must be auto, tf1, hf, keras_hub, tf_hub, model_garden or ours; got {input_format!r}"
        )
    files = read_model_files(
        path, bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case
    )
    if files.checkpoint_format != input_format:
        raise InputError(f"{path} holds a checkpoint in the {files.checkpoint_format!r} format, not {input_format!r}")
    if input_format == "tf1":
        weights = tf1_checkpoints.read_tf1_checkpoint(files.checkpoint)
        model = tf1_checkpoints.model_from_weights(weights, files.config, source=files.checkpoint)
    elif input_format == "model_garden":
        weights = model_garden.read_model_garden_checkpoint(files.checkpoint).weights
        model = tf1_checkpoints.model_from_weights(weights, files.config, source=files.checkpoint)
    else:
        model = our_checkpoints.model_from_checkpoint(files.checkpoint, files.config)
    return model, files
