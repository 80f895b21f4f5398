"""keras-hub BERT preset folders, both ways: read one into TF1-named weights, write one from our model.

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
    write_preset(model, "preset_out/", vocab_file="vocab.txt", do_lower_case=True)  # from_preset("preset_out/")
"""

from __future__ import annotations

import io
import json
import os
import re

import h5py
import numpy as np
from absl import logging

from official.nlp.checkpoints.peers import tf1_checkpoints
from official.nlp.common import claims, full_disk, input_files, output_files, output_folders, text_files
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder

PRESET_CONFIG_FILE = "config.json"
PRESET_WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_FILE = "tokenizer.json"
PREPROCESSOR_FILE = "preprocessor.json"
METADATA_FILE = "metadata.json"
PRESET_VOCAB_FILE = "assets/tokenizer/vocabulary.txt"
_BACKBONE = "BertBackbone"
_LAYER_NORM_EPS = 1e-12

# Keras' weights-file paths of a BertBackbone (`layers/<layer>` is the snake-cased class, numbered from the second
# instance on) -> TF1 scope. Each holds `vars/0` (kernel, embeddings or gamma) and, for two-variable layers,
# `vars/1` (bias or beta).
_EMBEDDINGS = {
    "reversible_embedding": ("bert/embeddings/word_embeddings", "token_embedding"),
    "position_embedding": ("bert/embeddings/position_embeddings", "position_embedding"),
    "embedding": ("bert/embeddings/token_type_embeddings", "segment_embedding"),
}
_DENSE_OR_NORM = {
    "layer_normalization": ("bert/embeddings/LayerNorm", "embeddings_layer_norm", ("gamma", "beta")),
    "dense": ("bert/pooler/dense", "pooled_dense", ("kernel", "bias")),
}
_ATTENTION = "_self_attention_layer"
# Inside `layers/transformer_encoder[_i]` -> (TF1 scope under layer_i, Keras name, variable names).
_BLOCK = {
    f"{_ATTENTION}/query_dense": ("attention/self/query", "query", ("kernel", "bias")),
    f"{_ATTENTION}/key_dense": ("attention/self/key", "key", ("kernel", "bias")),
    f"{_ATTENTION}/value_dense": ("attention/self/value", "value", ("kernel", "bias")),
    f"{_ATTENTION}/output_dense": ("attention/output/dense", "attention_output", ("kernel", "bias")),
    "_self_attention_layer_norm": ("attention/output/LayerNorm", "self_attention_layer_norm", ("gamma", "beta")),
    "_feedforward_intermediate_dense": ("intermediate/dense", "feedforward_intermediate_dense", ("kernel", "bias")),
    "_feedforward_output_dense": ("output/dense", "feedforward_output_dense", ("kernel", "bias")),
    "_feedforward_layer_norm": ("output/LayerNorm", "feedforward_layer_norm", ("gamma", "beta")),
}
# Layers without variables that Keras also writes a group for; keras-hub's loader does not need them, written for
# a file that looks like Keras' own.
_EMPTY_LAYERS = {
    "add": "embeddings_add",
    "dropout": "embeddings_dropout",
    "input_layer": "token_ids",
    "input_layer_1": "segment_ids",
    "input_layer_2": "padding_mask",
}
_EMPTY_BLOCK = {
    "_feedforward_dropout": "feedforward_dropout",
    "_self_attention_dropout": "self_attention_dropout",
    f"{_ATTENTION}/_dropout_layer": "dropout",
    f"{_ATTENTION}/_softmax": "softmax",
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
    if stored.get("class_name") != _BACKBONE:
        raise InputError(
            f"{path} describes a {stored.get('class_name')!r}, not a keras-hub {_BACKBONE}; only BERT presets are "
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
            layer_norm_eps=_LAYER_NORM_EPS,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: the {_BACKBONE} config lacks or mangles {e}; is the file complete?") from None


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
        for group, (scope, _) in _EMBEDDINGS.items():
            (weights[scope],) = take(f"layers/{group}", 1)
        for group, (scope, _, names) in _DENSE_OR_NORM.items():
            for name, value in zip(names, take(f"layers/{group}", 2)):
                weights[f"{scope}/{name}"] = value
        for i, block in enumerate(_numbered(layers, "transformer_encoder")):
            for sub, (scope, _, names) in _BLOCK.items():
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


# ---------------------------------------------------------------------------------------------------------------
# Writing


def _check_expressible(config: BertConfig, source: str) -> None:
    """keras-hub's BertBackbone has no activation, epsilon or attention-kind argument: refuse what it cannot hold."""
    problems = []
    if config.hidden_act != "gelu":
        problems.append(f"hidden_act={config.hidden_act!r} (keras-hub's BERT uses the tanh GELU, our 'gelu')")
    if abs(config.layer_norm_eps - _LAYER_NORM_EPS) > 1e-15:
        problems.append(f"layer_norm_eps={config.layer_norm_eps} (keras-hub's BERT uses 1e-12)")
    if getattr(config, "attention", "bidirectional") != "bidirectional":
        problems.append(f"attention={config.attention!r} (keras-hub's BERT attends both ways)")
    if config.hidden_dropout_prob != config.attention_probs_dropout_prob:
        logging.warning(
            "%s: keras-hub has one dropout rate; writing hidden_dropout_prob=%s (attention_probs_dropout_prob=%s "
            "is not kept)",
            source,
            config.hidden_dropout_prob,
            config.attention_probs_dropout_prob,
        )
    if problems:
        raise InputError(
            f"{source} cannot be written as a keras-hub preset: {'; '.join(problems)}. "
            "Use --output_format=ours or hf for this model"
        )


def _layer_json(module: str, class_name: str, config: dict) -> dict:
    return {"module": module, "class_name": class_name, "config": config, "registered_name": f"keras_hub>{class_name}"}


def _tokenizer_json(do_lower_case: bool) -> dict:
    return _layer_json(
        "keras_hub.src.models.bert.bert_tokenizer",
        "BertTokenizer",
        {
            "name": "bert_tokenizer",
            "trainable": True,
            "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "int32"}},
            "config_file": TOKENIZER_FILE,
            "vocabulary": None,
            "sequence_length": None,
            "lowercase": do_lower_case,
            "strip_accents": do_lower_case,
            "split": True,
            "suffix_indicator": "##",
            "oov_token": "[UNK]",
            "special_tokens": None,
            "special_tokens_in_strings": False,
        },
    )


def preset_json_files(config: BertConfig, do_lower_case: bool | None) -> dict[str, dict]:
    """`config.json`, `metadata.json` and, with a case, `tokenizer.json` + `preprocessor.json` of a preset."""
    float32 = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}}
    files = {
        PRESET_CONFIG_FILE: _layer_json(
            "keras_hub.src.models.bert.bert_backbone",
            _BACKBONE,
            {
                "name": "bert_backbone",
                "trainable": True,
                "dtype": float32,
                "vocabulary_size": config.vocab_size,
                "num_layers": config.num_hidden_layers,
                "num_heads": config.num_attention_heads,
                "hidden_dim": config.hidden_size,
                "intermediate_dim": config.intermediate_size,
                "dropout": config.hidden_dropout_prob,
                "max_sequence_length": config.max_position_embeddings,
                "num_segments": config.type_vocab_size,
            },
        ),
        METADATA_FILE: {"written_by": "official.nlp.checkpoints.peers.keras_hub_presets", "tasks": ["TextClassifier"]},
    }
    if do_lower_case is not None:
        files[TOKENIZER_FILE] = _tokenizer_json(do_lower_case)
        files[PREPROCESSOR_FILE] = _layer_json(
            "keras_hub.src.models.bert.bert_text_classifier_preprocessor",
            "BertTextClassifierPreprocessor",
            {
                "name": "bert_text_classifier_preprocessor",
                "trainable": True,
                "dtype": float32,
                "tokenizer": _tokenizer_json(do_lower_case),
                "config_file": PREPROCESSOR_FILE,
                "sequence_length": min(512, config.max_position_embeddings),
                "truncate": "round_robin",
            },
        )
    return files


def weights_file_bytes(weights: dict[str, np.ndarray], config: BertConfig) -> bytes:
    """A `model.weights.h5` (Keras' layout for a BertBackbone) from TF1-named, TF1-layout weights."""
    hidden, heads = config.hidden_size, config.num_attention_heads
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:

        def put(group_path: str, keras_name: str, values: list[np.ndarray]) -> None:
            group = handle.require_group(f"{group_path}/vars")
            group.attrs["name"] = keras_name
            for i, value in enumerate(values):
                group.create_dataset(str(i), data=np.asarray(value, np.float32))

        handle.create_group("vars").attrs["name"] = "bert_backbone"
        for group, name in _EMPTY_LAYERS.items():
            put(f"layers/{group}", name, [])
        for group, (scope, name) in _EMBEDDINGS.items():
            put(f"layers/{group}", name, [weights[scope]])
        for group, (scope, name, names) in _DENSE_OR_NORM.items():
            put(f"layers/{group}", name, [weights[f"{scope}/{n}"] for n in names])
        for i in range(config.num_hidden_layers):
            block = "layers/transformer_encoder" + (f"_{i}" if i else "")
            put(block, f"transformer_layer_{i}", [])
            put(f"{block}/{_ATTENTION}", "self_attention_layer", [])
            for sub, name in _EMPTY_BLOCK.items():
                put(f"{block}/{sub}", name, [])
            for sub, (scope, name, names) in _BLOCK.items():
                values = [weights[f"bert/encoder/layer_{i}/{scope}/{n}"] for n in names]
                if sub == f"{_ATTENTION}/output_dense":
                    values = [values[0].reshape(heads, -1, hidden), values[1]]
                elif sub.startswith(f"{_ATTENTION}/"):
                    values = [values[0].reshape(hidden, heads, -1), values[1].reshape(heads, -1)]
                put(f"{block}/{sub}", name, values)
    return buffer.getvalue()


def write_preset(
    model,
    folder: str,
    *,
    vocab_file: str | None,
    do_lower_case: bool | None,
    source: str = "the model",
    task_files: dict[str, bytes] | None = None,
) -> str:
    """Writes the encoder of `model` (ours: an encoder, pretrainer or task model) as the keras-hub preset folder
    `folder` (new or empty), which `keras_hub.models.BertBackbone.from_preset(folder)` loads, and, with a
    vocabulary, `BertTokenizer`/`BertTextClassifierPreprocessor.from_preset(folder)` too. `task_files` (a task's
    `task.json` and weights: keras_hub_tasks.py) are written beside them.

    Written in a staging folder and put in place with `config.json` (what keras-hub opens first) last.
    """
    encoder = model if isinstance(model, BertEncoder) else getattr(model, "encoder", None)
    if not isinstance(encoder, BertEncoder):
        raise TypeError(f"Expected a BertEncoder or a BERT task model, got {type(model).__name__}")
    config = encoder.config
    _check_expressible(config, source)
    weights = {
        name: value
        for name, value in tf1_checkpoints.export_weights(encoder).items()
        if name.startswith(tf1_checkpoints.ENCODER_SCOPE)
    }
    output_folders.check_new_folder(folder, flag="--output_dir")
    parent, name = output_folders.split(folder)
    full = full_disk.naming_output_when_full(folder, name="--output_dir")
    with full, claims.claim(parent, name, what=folder), output_folders.staging_folder(folder) as staging:
        output_files.write_bytes(os.path.join(staging, PRESET_WEIGHTS_FILE), weights_file_bytes(weights, config))
        if vocab_file is not None:
            output_files.makedirs(os.path.join(staging, os.path.dirname(PRESET_VOCAB_FILE)))
            output_files.copy(vocab_file, os.path.join(staging, PRESET_VOCAB_FILE))
        for file_name, content in preset_json_files(config, do_lower_case if vocab_file else None).items():
            output_files.write_text(os.path.join(staging, file_name), json.dumps(content, indent=4))
        for file_name, content in (task_files or {}).items():
            output_files.write_bytes(os.path.join(staging, file_name), content)
        output_folders.commit_export(staging, folder, marker=PRESET_CONFIG_FILE, replace=False)
    logging.info(
        "Wrote the keras-hub preset %s (%d layers, hidden %d)", folder, config.num_hidden_layers, config.hidden_size
    )
    return folder
