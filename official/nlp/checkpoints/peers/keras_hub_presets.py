"""Reads keras-hub BERT preset folders into TF1-named weights (written from our models: keras_hub_export.py), and
the preset's layout both directions share: its file names and the Keras weights-file path of each TF1 variable.

A preset folder is what keras-hub's `save_to_preset` writes and `BertBackbone.from_preset(folder)` reads:
`config.json` (the `BertBackbone` constructor arguments), `model.weights.h5` (Keras' weights file),
`tokenizer.json` (the `BertTokenizer`, whose `lowercase` is the case), `assets/tokenizer/vocabulary.txt`, and
optionally `preprocessor.json` and `metadata.json`. keras-hub is not needed for either direction: the weights file
is HDF5, read and written with h5py (a Keras dependency), in the layout Keras' own saving uses.

keras-hub's BERT is the original BERT: post-norm blocks, the tanh GELU (our `"gelu"`), layer-norm epsilon 1e-12,
one dropout rate. Its attention kernels are `[hidden, heads, head_size]` (`EinsumDense`); TF1's are
`[hidden, hidden]` with the heads as consecutive column blocks, so a reshape converts both ways. A preset holds the
backbone only (no pretraining heads).

Example:

    weights, config, vocab_file, do_lower_case = read_preset("bert_tiny_en_uncased/")
"""

from __future__ import annotations

import io
import json
import os
import re

import h5py
import numpy as np
from absl import logging

from official.nlp.common import input_files, text_files
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.modeling.configs import BertConfig

PRESET_CONFIG_FILE = "config.json"
PRESET_WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_FILE = "tokenizer.json"
PREPROCESSOR_FILE = "preprocessor.json"
METADATA_FILE = "metadata.json"
PRESET_VOCAB_FILE = "assets/tokenizer/vocabulary.txt"
BACKBONE_CLASS = "BertBackbone"
LAYER_NORM_EPS = 1e-12

# Keras' weights-file paths of a BertBackbone (`layers/<layer>` is the snake-cased class, numbered from the second
# instance on) -> TF1 scope. Each holds `vars/0` (kernel, embeddings or gamma) and, for two-variable layers,
# `vars/1` (bias or beta).
EMBEDDING_LAYERS = {
    "reversible_embedding": ("bert/embeddings/word_embeddings", "token_embedding"),
    "position_embedding": ("bert/embeddings/position_embeddings", "position_embedding"),
    "embedding": ("bert/embeddings/token_type_embeddings", "segment_embedding"),
}
DENSE_OR_NORM_LAYERS = {
    "layer_normalization": ("bert/embeddings/LayerNorm", "embeddings_layer_norm", ("gamma", "beta")),
    "dense": ("bert/pooler/dense", "pooled_dense", ("kernel", "bias")),
}
ATTENTION_LAYER = "_self_attention_layer"
# Inside `layers/transformer_encoder[_i]` -> (TF1 scope under layer_i, Keras name, variable names).
BLOCK_LAYERS = {
    f"{ATTENTION_LAYER}/query_dense": ("attention/self/query", "query", ("kernel", "bias")),
    f"{ATTENTION_LAYER}/key_dense": ("attention/self/key", "key", ("kernel", "bias")),
    f"{ATTENTION_LAYER}/value_dense": ("attention/self/value", "value", ("kernel", "bias")),
    f"{ATTENTION_LAYER}/output_dense": ("attention/output/dense", "attention_output", ("kernel", "bias")),
    "_self_attention_layer_norm": ("attention/output/LayerNorm", "self_attention_layer_norm", ("gamma", "beta")),
    "_feedforward_intermediate_dense": ("intermediate/dense", "feedforward_intermediate_dense", ("kernel", "bias")),
    "_feedforward_output_dense": ("output/dense", "feedforward_output_dense", ("kernel", "bias")),
    "_feedforward_layer_norm": ("output/LayerNorm", "feedforward_layer_norm", ("gamma", "beta")),
}


def is_preset_folder(path: str) -> bool:
    """Whether `path` is a folder holding a keras-hub preset's `config.json` and `model.weights.h5`."""
    return (
        input_files.isdir(path)
        and input_files.exists(os.path.join(path, PRESET_CONFIG_FILE))
        and input_files.exists(os.path.join(path, PRESET_WEIGHTS_FILE))
    )


def _read_json(path: str, folder: str) -> dict:
    try:
        value = json.loads(text_files.read_text(path))
    except json.JSONDecodeError as e:
        raise InputError(f"{path} is not valid JSON ({e}); is {folder} a whole keras-hub preset?") from None
    if not isinstance(value, dict):
        raise InputError(f"{path} is not a JSON object; is {folder} a keras-hub preset?")
    return value


def read_preset_config(folder: str) -> BertConfig:
    """The `BertConfig` of a preset's `config.json` (a `BertBackbone`; any other class is refused)."""
    path = os.path.join(folder, PRESET_CONFIG_FILE)
    if not input_files.exists(path):
        raise MissingInputError(f"{folder} has no {PRESET_CONFIG_FILE}: not a keras-hub preset folder")
    stored = _read_json(path, folder)
    if stored.get("class_name") != BACKBONE_CLASS:
        raise InputError(
            f"{path} describes a {stored.get('class_name')!r}, not a keras-hub {BACKBONE_CLASS}; only BERT presets are "
            "read (a task preset's backbone is in its own folder's config.json)"
        )
    args = stored.get("config") or {}
    try:
        dropout = float(args.get("dropout", 0.1))
        return BertConfig(
            vocab_size=int(args["vocabulary_size"]),
            hidden_size=int(args["hidden_dim"]),
            num_hidden_layers=int(args["num_layers"]),
            num_attention_heads=int(args["num_heads"]),
            intermediate_size=int(args["intermediate_dim"]),
            hidden_act="gelu",
            hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout,
            max_position_embeddings=int(args.get("max_sequence_length", 512)),
            type_vocab_size=int(args.get("num_segments", 2)),
            layer_norm_eps=LAYER_NORM_EPS,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: the {BACKBONE_CLASS} config lacks or mangles {e}; is the file complete?") from None


def preset_case(folder: str) -> bool | None:
    """The tokenizer's `lowercase` from `tokenizer.json` (else `preprocessor.json`'s tokenizer), None if neither."""
    for name in (TOKENIZER_FILE, PREPROCESSOR_FILE):
        path = os.path.join(folder, name)
        if not input_files.exists(path):
            continue
        args = _read_json(path, folder).get("config") or {}
        if name == PREPROCESSOR_FILE:
            args = (args.get("tokenizer") or {}).get("config") or {}
        if isinstance(args.get("lowercase"), bool):
            lowercase = args["lowercase"]
            if isinstance(args.get("strip_accents"), bool) and args["strip_accents"] != lowercase:
                # keras-hub's own uncased presets say lowercase=True, strip_accents=False; the original BERT
                # tokenizer (and ours) strips accents when it lowercases, as their vocabularies expect.
                logging.info(
                    "%s: lowercase=%s with strip_accents=%s; read as do_lower_case=%s, which strips accents "
                    "when it lowercases, as the original BERT tokenizer does",
                    path,
                    lowercase,
                    args["strip_accents"],
                    lowercase,
                )
            return lowercase
    return None


def preset_vocab_file(folder: str) -> str | None:
    """`assets/tokenizer/vocabulary.txt` of the preset (one token a line, as `vocab.txt`), None if absent."""
    path = os.path.join(folder, PRESET_VOCAB_FILE)
    return path if input_files.exists(path) else None


def _open_weights(folder: str) -> h5py.File:
    path = os.path.join(folder, PRESET_WEIGHTS_FILE)
    if not input_files.exists(path):
        raise MissingInputError(
            f"{folder} has no {PRESET_WEIGHTS_FILE}: not a keras-hub preset folder (or a partial copy)"
        )
    try:
        return h5py.File(io.BytesIO(input_files.read_bytes(path)), "r")
    except OSError as e:
        raise InputError(
            f"{path} is not a readable HDF5 weights file, or is truncated ({e}); copy or download it again"
        ) from None


def _numbered(group: h5py.Group, base: str) -> list[str]:
    """The names `base`, `base_1`, `base_2`, ... in `group`, in Keras' numbering order."""
    found = [name for name in group if re.fullmatch(rf"{base}(_\d+)?", name)]
    return sorted(found, key=lambda name: int(name.rsplit("_", 1)[1]) if name != base else 0)


def read_preset_weights(folder: str) -> dict[str, np.ndarray]:
    """The preset's backbone weights under TF1 names, in TF1 layout (float32), for `tf1_checkpoints.assign_weights`."""
    path = os.path.join(folder, PRESET_WEIGHTS_FILE)
    weights: dict[str, np.ndarray] = {}

    def take(group_path: str, count: int) -> list[np.ndarray]:
        values = []
        for i in range(count):
            key = f"{group_path}/vars/{i}"
            if key not in handle:
                raise InputError(
                    f"{path} has no {key}: not a keras-hub BertBackbone weights file, or a damaged one; "
                    "save it again with save_to_preset"
                )
            try:
                values.append(np.asarray(handle[key][()], np.float32))
            except (OSError, ValueError) as e:
                raise InputError(f"{path}: {key} cannot be read ({e}); the file is damaged: copy it again") from None
        return values

    with _open_weights(folder) as handle:
        if "layers" not in handle:
            raise InputError(f"{path} has no `layers` group: not a Keras weights file of a BertBackbone")
        layers = handle["layers"]
        for group, (scope, _) in EMBEDDING_LAYERS.items():
            (weights[scope],) = take(f"layers/{group}", 1)
        for group, (scope, _, names) in DENSE_OR_NORM_LAYERS.items():
            for name, value in zip(names, take(f"layers/{group}", 2)):
                weights[f"{scope}/{name}"] = value
        for i, block in enumerate(_numbered(layers, "transformer_encoder")):
            for sub, (scope, _, names) in BLOCK_LAYERS.items():
                for name, value in zip(names, take(f"layers/{block}/{sub}", 2)):
                    weights[f"bert/encoder/layer_{i}/{scope}/{name}"] = value
    hidden = weights["bert/embeddings/word_embeddings"].shape[-1]
    for name, value in weights.items():  # EinsumDense layouts -> TF1's [hidden, hidden] and [hidden]
        if re.search(r"/attention/self/\w+/(kernel|bias)$", name):
            weights[name] = value.reshape((hidden, -1) if name.endswith("kernel") else (-1,))
        elif re.search(r"/attention/output/dense/kernel$", name):
            weights[name] = value.reshape(-1, hidden)
    return weights


def read_preset(folder: str) -> tuple[dict[str, np.ndarray], BertConfig, str | None, bool | None]:
    """`(weights, config, vocab_file, do_lower_case)` of a keras-hub preset folder (see `read_preset_weights`)."""
    if not input_files.isdir(folder):
        raise MissingInputError(f"{folder} is not a folder: expected a keras-hub preset folder")
    config = read_preset_config(folder)
    return read_preset_weights(folder), config, preset_vocab_file(folder), preset_case(folder)
