"""Writes our models as keras-hub BERT preset folders (read: keras_hub_presets.py, which holds the layout both
directions share), which keras-hub's `BertBackbone.from_preset(folder)` loads: `config.json`, `model.weights.h5` in
the layout Keras' own saving uses (written with h5py; keras-hub is not needed), and with a vocabulary
`tokenizer.json`, `preprocessor.json` and `assets/tokenizer/vocabulary.txt`. keras-hub's BERT has no activation,
epsilon or attention-kind argument: a model it cannot hold is refused.

Example:

    write_preset(model, "preset_out/", vocab_file="vocab.txt", do_lower_case=True)  # from_preset("preset_out/")
"""

from __future__ import annotations

import io
import json
import os

import h5py
import numpy as np
from absl import logging

from official.nlp.checkpoints.peers import keras_hub_presets, tf1_checkpoints
from official.nlp.common import claims, full_disk, output_files, output_folders
from official.nlp.common.errors import InputError
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder

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
    f"{keras_hub_presets.ATTENTION_LAYER}/_dropout_layer": "dropout",
    f"{keras_hub_presets.ATTENTION_LAYER}/_softmax": "softmax",
}


def _check_expressible(config: BertConfig, source: str) -> None:
    """keras-hub's BertBackbone has no activation, epsilon or attention-kind argument: refuse what it cannot hold."""
    problems = []
    if config.hidden_act != "gelu":
        problems.append(f"hidden_act={config.hidden_act!r} (keras-hub's BERT uses the tanh GELU, our 'gelu')")
    if abs(config.layer_norm_eps - keras_hub_presets.LAYER_NORM_EPS) > 1e-15:
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
            "config_file": keras_hub_presets.TOKENIZER_FILE,
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
        keras_hub_presets.PRESET_CONFIG_FILE: _layer_json(
            "keras_hub.src.models.bert.bert_backbone",
            keras_hub_presets.BACKBONE_CLASS,
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
        keras_hub_presets.METADATA_FILE: {
            "written_by": "official.nlp.checkpoints.peers.keras_hub_export",
            "tasks": ["TextClassifier"],
        },
    }
    if do_lower_case is not None:
        files[keras_hub_presets.TOKENIZER_FILE] = _tokenizer_json(do_lower_case)
        files[keras_hub_presets.PREPROCESSOR_FILE] = _layer_json(
            "keras_hub.src.models.bert.bert_text_classifier_preprocessor",
            "BertTextClassifierPreprocessor",
            {
                "name": "bert_text_classifier_preprocessor",
                "trainable": True,
                "dtype": float32,
                "tokenizer": _tokenizer_json(do_lower_case),
                "config_file": keras_hub_presets.PREPROCESSOR_FILE,
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
        for group, (scope, name) in keras_hub_presets.EMBEDDING_LAYERS.items():
            put(f"layers/{group}", name, [weights[scope]])
        for group, (scope, name, names) in keras_hub_presets.DENSE_OR_NORM_LAYERS.items():
            put(f"layers/{group}", name, [weights[f"{scope}/{n}"] for n in names])
        for i in range(config.num_hidden_layers):
            block = "layers/transformer_encoder" + (f"_{i}" if i else "")
            put(block, f"transformer_layer_{i}", [])
            put(f"{block}/{keras_hub_presets.ATTENTION_LAYER}", "self_attention_layer", [])
            for sub, name in _EMPTY_BLOCK.items():
                put(f"{block}/{sub}", name, [])
            for sub, (scope, name, names) in keras_hub_presets.BLOCK_LAYERS.items():
                values = [weights[f"bert/encoder/layer_{i}/{scope}/{n}"] for n in names]
                if sub == f"{keras_hub_presets.ATTENTION_LAYER}/output_dense":
                    values = [values[0].reshape(heads, -1, hidden), values[1]]
                elif sub.startswith(f"{keras_hub_presets.ATTENTION_LAYER}/"):
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
        output_files.write_bytes(
            os.path.join(staging, keras_hub_presets.PRESET_WEIGHTS_FILE), weights_file_bytes(weights, config)
        )
        if vocab_file is not None:
            output_files.makedirs(os.path.join(staging, os.path.dirname(keras_hub_presets.PRESET_VOCAB_FILE)))
            output_files.copy(vocab_file, os.path.join(staging, keras_hub_presets.PRESET_VOCAB_FILE))
        for file_name, content in preset_json_files(config, do_lower_case if vocab_file else None).items():
            output_files.write_text(os.path.join(staging, file_name), json.dumps(content, indent=4))
        for file_name, content in (task_files or {}).items():
            output_files.write_bytes(os.path.join(staging, file_name), content)
        output_folders.commit_export(staging, folder, marker=keras_hub_presets.PRESET_CONFIG_FILE, replace=False)
    logging.info(
        "Wrote the keras-hub preset %s (%d layers, hidden %d)", folder, config.num_hidden_layers, config.hidden_size
    )
    return folder
