"""Original TF1 BERT checkpoints, and the TF1-named weights every converter goes through (Hugging Face: hf_weights.py).

**Converters** go through one intermediate: a dict of NumPy arrays under the original TF1 variable names and
layouts (`bert/encoder/layer_3/attention/self/query/kernel`, ...). `read_tf1_checkpoint` and
`hf_weights.read_hf_weights` produce it, `assign_weights` loads it into our models, `export_weights` +
`write_tf1_checkpoint` write it back. Any disagreement between weights and model raises
`CheckpointMismatchError`, which lists what is missing, unexpected and of the wrong shape.

What every format shares (`CheckpointMismatchError`, `load_checkpoint`, the parts of a BERT model a checkpoint covers,
the model its heads describe) is in checkpoint_base.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints.checkpoint_base import (
    ENCODER_SCOPE,
    MLM_SCOPE,
    NSP_SCOPE,
    CheckpointMismatchError,
    describe_config,
    load_checkpoint,
    model_for_heads,
    shape_text,
    split_model,
    write_staged,
)
from official.nlp.checkpoints.integrity import names_damage
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder

# Stored [2, H] in TF1 (used with transpose_b) and in PyTorch; a Keras Dense kernel is [H, 2].
_TRANSPOSED_IN_TF1 = frozenset({"cls/seq_relationship/output_weights"})
# Training state in original checkpoints (Adam/LAMB slots, step, loss scale) that conversion drops.
_TF1_TRAINING_STATE = re.compile(
    r"(^|/)(global_step|good_steps|bad_steps|loss_scale|current_loss_scale)$|/(adam_[mv]|lamb_[mv]|Adam(_1)?|"
    r"Momentum|LAMB(_1)?)$"
)
# ---------------------------------------------------------------------------------------------------------------
# TF1 names <-> our variables


def tf1_variable_map(encoder: BertEncoder, masked_lm=None, next_sentence=None) -> dict[str, keras.Variable]:
    """Our variables under their original TF1 names (`next_sentence` kernel is stored transposed there)."""
    names: dict[str, keras.Variable] = {}

    def dense(prefix, layer):
        names[f"{prefix}/kernel"] = layer.kernel
        names[f"{prefix}/bias"] = layer.bias

    def layer_norm(prefix, layer):
        names[f"{prefix}/gamma"] = layer.gamma
        names[f"{prefix}/beta"] = layer.beta

    emb = encoder.embeddings
    names["bert/embeddings/word_embeddings"] = emb.word_embeddings.embeddings
    names["bert/embeddings/token_type_embeddings"] = emb.token_type_embeddings.embeddings
    names["bert/embeddings/position_embeddings"] = emb.position_embeddings
    layer_norm("bert/embeddings/LayerNorm", emb.layer_norm)
    for i, block in enumerate(encoder.transformer_layers):
        prefix = f"bert/encoder/layer_{i}"
        dense(f"{prefix}/attention/self/query", block.attention.query)
        dense(f"{prefix}/attention/self/key", block.attention.key)
        dense(f"{prefix}/attention/self/value", block.attention.value)
        dense(f"{prefix}/attention/output/dense", block.attention_output_dense)
        layer_norm(f"{prefix}/attention/output/LayerNorm", block.attention_layer_norm)
        dense(f"{prefix}/intermediate/dense", block.intermediate_dense)
        dense(f"{prefix}/output/dense", block.output_dense)
        layer_norm(f"{prefix}/output/LayerNorm", block.output_layer_norm)
    dense("bert/pooler/dense", encoder.pooler)
    if masked_lm is not None:
        if masked_lm.embedding_layer is None:
            raise ValueError("Only a MaskedLMHead tied to the word embeddings has a TF1 equivalent")
        dense("cls/predictions/transform/dense", masked_lm.dense)
        layer_norm("cls/predictions/transform/LayerNorm", masked_lm.layer_norm)
        names["cls/predictions/output_bias"] = masked_lm.output_bias
    if next_sentence is not None:
        names["cls/seq_relationship/output_weights"] = next_sentence.kernel
        names["cls/seq_relationship/output_bias"] = next_sentence.bias
    return names


def assign_weights(
    weights: Mapping[str, np.ndarray],
    model,
    *,
    source: str = "weights",
    allow_missing_pooler: bool = True,
    display_name=None,
) -> list[str]:
    """Loads TF1-named, TF1-layout arrays into `model` (a `BertEncoder`, a `BertPretrainer`, or a task model).

    Every variable of the encoder (and of the pretraining heads, for a `BertPretrainer`) must be present with the
    right shape. Names in the scopes the model covers (`bert/`, plus `cls/predictions/` and
    `cls/seq_relationship/` for a pretrainer) that the model does not have are unexpected (e.g. a layer more than
    the config says). Either raises `CheckpointMismatchError`; nothing is assigned then.

    Sources without a pooler (Hugging Face `BertForMaskedLM`) are accepted with a warning when
    `allow_missing_pooler`: the pooler keeps its fresh initialization, as transformers does.

    `display_name` maps a TF1 name to the name the user's file has (e.g. the Hugging Face key) for the error.

    Returns:
      the names that were ignored because the model does not cover them (e.g. the pretraining heads when loading
      an encoder, or a fine-tuned classifier's `output_weights`).
    """
    encoder, masked_lm, next_sentence = split_model(model)
    variables = tf1_variable_map(encoder, masked_lm, next_sentence)
    scopes = (
        [ENCODER_SCOPE]
        + ([MLM_SCOPE] if masked_lm is not None else [])
        + ([NSP_SCOPE] if next_sentence is not None else [])
    )
    shown = display_name or (lambda name: name)
    missing, wrong_shape, values = [], [], {}
    for name, variable in variables.items():
        if name not in weights:
            missing.append(name)
            continue
        value = np.asarray(weights[name])
        if name in _TRANSPOSED_IN_TF1:
            value = value.T
        if tuple(value.shape) != tuple(variable.shape):
            shown_shape = value.T.shape if name in _TRANSPOSED_IN_TF1 else value.shape
            expected = tuple(variable.shape)[::-1] if name in _TRANSPOSED_IN_TF1 else variable.shape
            wrong_shape.append(f"{shown(name)}: checkpoint {shape_text(shown_shape)}, model {shape_text(expected)}")
            continue
        values[name] = value
    unexpected, ignored = [], []
    for name in sorted(set(weights) - set(variables)):
        (unexpected if name.startswith(tuple(scopes)) else ignored).append(name)
    unexpected = [f"{shown(name)} {shape_text(np.shape(weights[name]))}" for name in unexpected]
    pooler = [m for m in missing if m.startswith("bert/pooler/")]
    if allow_missing_pooler and len(pooler) == 2 and len(missing) == 2 and not (unexpected or wrong_shape):
        logging.warning(
            "%s has no pooler (bert/pooler/dense): pooled_output comes from a freshly initialized "
            "layer; fine-tune before using it",
            source,
        )
        missing = []
    if missing or unexpected or wrong_shape:
        missing = [f"{shown(name)} {shape_text(variables[name].shape)}" for name in missing]
        raise CheckpointMismatchError(
            source,
            describe_config(encoder.config),
            missing,
            unexpected,
            wrong_shape,
            hint="Check that bert_config.json belongs to this checkpoint.",
        )
    for name, value in values.items():
        variables[name].assign(value.astype(np.float32))
    if ignored:
        logging.info(
            "%s: ignored %d weights the model does not use: %s",
            source,
            len(ignored),
            ", ".join(ignored[:10]) + (" ..." if len(ignored) > 10 else ""),
        )
    return ignored


def export_weights(model) -> dict[str, np.ndarray]:
    """The weights of `model` (encoder, plus pretraining heads) under TF1 names, in TF1 layout."""
    encoder, masked_lm, next_sentence = split_model(model)
    result = {}
    for name, variable in tf1_variable_map(encoder, masked_lm, next_sentence).items():
        value = np.asarray(variable.numpy(), np.float32)
        result[name] = value.T if name in _TRANSPOSED_IN_TF1 else value
    return result


def model_from_weights(
    weights: Mapping[str, np.ndarray], config: BertConfig, *, source: str = "weights", display_name=None
):
    """Builds the model the weights describe: a `BertPretrainer` when MLM weights are present, else an encoder.
    `display_name`: see `assign_weights`."""
    model = model_for_heads(
        config,
        masked_lm=any(name.startswith(MLM_SCOPE) for name in weights),
        next_sentence=any(name.startswith(NSP_SCOPE) for name in weights),
    )
    assign_weights(weights, model, source=source, display_name=display_name)
    return model


# ---------------------------------------------------------------------------------------------------------------
# Original TF1 checkpoints


@names_damage
def read_tf1_checkpoint(prefix: str) -> dict[str, np.ndarray]:
    """All weights of an original TF1 checkpoint (`bert_model.ckpt`), without optimizer slots and step counters."""
    try:
        reader = load_checkpoint(prefix)
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError) as e:
        raise MissingInputError(
            f"Cannot read a TF checkpoint at {prefix} ({type(e).__name__}); expected the "
            "prefix, e.g. uncased_L-12_H-768_A-12/bert_model.ckpt"
        ) from None
    names = reader.get_variable_to_shape_map()
    if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
        raise InputError(f"{prefix} is an object-based TF2 checkpoint, not an original TF1 BERT checkpoint")
    weights, dropped = {}, 0
    for name in names:
        if _TF1_TRAINING_STATE.search(name):
            dropped += 1
            continue
        weights[name] = reader.get_tensor(name)
    if dropped:
        logging.info("%s: dropped %d optimizer/step variables", prefix, dropped)
    return weights


def write_tf1_checkpoint(prefix: str, weights: Mapping[str, np.ndarray]) -> str:
    """Writes `weights` (TF1 names and layouts) as a checkpoint that TF1 code and `tf.train.load_checkpoint` read.

    TensorFlow writes it in a folder of this process beside it (`output_files.temporary_name`), where a job killed
    mid-write leaves its half-written ``.tempstate`` files; the files are then moved in place, the index (by which
    a reader finds the checkpoint) last. A later write deletes the folders of killed writers (`owners`).
    """
    names = sorted(weights)

    def write(staging_prefix: str) -> None:
        tf.raw_ops.SaveV2(
            prefix=staging_prefix,
            tensor_names=names,
            shape_and_slices=[""] * len(names),
            tensors=[tf.constant(np.asarray(weights[name], np.float32)) for name in names],
        )

    return write_staged(prefix, write)


def is_tf1_checkpoint(prefix: str) -> bool:
    """Whether `prefix` is a checkpoint with the original `bert/...` variable names."""
    try:
        names = load_checkpoint(prefix).get_variable_to_shape_map()
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        return False
    return "_CHECKPOINTABLE_OBJECT_GRAPH" not in names and any(n.startswith(ENCODER_SCOPE) for n in names)
