"""Writes our models as TensorFlow Model Garden TF2 checkpoints (read: model_garden.py), with the Model Garden's own
variable keys and object-graph edges, as its trainer and `save` write them: `encoder` (its functional `BertEncoder`:
`layer_with_weights-<n>`, then the attribute names both its encoder classes restore through), for a pretrainer
`masked_lm`, `next_sentence.pooler_dense` and `model` (its `BertPretrainerV2`), for a classifier `model` (its
`BertClassifier`) and `sentence_prediction.pooler_dense`, and `save_counter`. So `tf.train.Checkpoint(encoder=...)`,
`tf.train.Checkpoint(**pretrainer.checkpoint_items)` (its `export_tfhub`) and `tf.train.Checkpoint(model=...)` all
restore them. Our pooler goes to the encoder's `pooler_transform` and to the head's own pooler.

Example:

    write_model_garden_checkpoint(pretrainer, "models/mg/bert_model.ckpt")
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints.checkpoint_base import write_staged
from official.nlp.checkpoints.peers import tf1_checkpoints
from official.nlp.checkpoints.peers.model_garden import BLOCK, DENSE, NORM
from official.nlp.common.errors import InputError
from official.nlp.modeling.configs import BertConfig


def check_expressible(config: BertConfig, where: str) -> None:
    """Refuses a layer-norm epsilon other than the 1e-12 the Model Garden's BertEncoder has built in; warns about an
    activation its `hidden_activation` has no name for (the checkpoint does not say it)."""
    if abs(config.layer_norm_eps - 1e-12) > 1e-15:
        raise InputError(
            f"{where}: layer_norm_eps={config.layer_norm_eps} has no Model Garden form (its BertEncoder uses 1e-12); "
            "keep --output_format=ours or hf"
        )
    if config.hidden_act not in ("gelu", "relu", "tanh", "linear"):
        logging.warning(
            "%s: hidden_act=%r; the Model Garden's hidden_activation 'gelu' is the tanh form (our 'gelu'), so "
            "build its encoder with this activation yourself",
            where,
            config.hidden_act,
        )


class _Node(tf.Module):
    """One object of the written graph; its children are tracked in the order they are set, as Keras tracks them
    (a `tf.Module` tracks every attribute, under any name)."""


def _node(**children) -> _Node:
    node = _Node()
    for name, child in children.items():
        setattr(node, name, child)
    return node


def _variables(weights: dict, scope: str, names=DENSE) -> _Node:
    tf1 = ("kernel", "bias") if names == DENSE else ("gamma", "beta")
    return _node(**{name: tf.Variable(weights[f"{scope}/{t}"], name=name) for name, t in zip(names, tf1)})


def _encoder_graph(weights: dict, config: BertConfig) -> tuple[_Node, tf.Variable]:
    """The Model Garden's functional `BertEncoder` as its graph has it: `layer_with_weights-<n>` first (the names
    the keys take), then the attribute names both of its encoder classes restore through. Returns the encoder and its
    word embeddings."""
    hidden, heads = config.hidden_size, config.num_attention_heads
    word = tf.Variable(weights["bert/embeddings/word_embeddings"], name="embeddings")
    position = tf.Variable(weights["bert/embeddings/position_embeddings"], name="embeddings")
    embedding_layers = {
        "_embedding_layer": _node(embeddings=word),
        "_position_embedding_layer": _node(embeddings=position, _position_embeddings=position),
        "_type_embedding_layer": _node(
            embeddings=tf.Variable(weights["bert/embeddings/token_type_embeddings"], name="embeddings")
        ),
        "_embedding_norm_layer": _variables(weights, "bert/embeddings/LayerNorm", NORM),
    }
    blocks = []
    for i in range(config.num_hidden_layers):
        scope = f"bert/encoder/layer_{i}"
        block, attention = {}, {}
        for path, tf1 in BLOCK.items():
            if len(path) == 1:
                block[path[0]] = _variables(weights, f"{scope}/{tf1}", NORM if path[0].endswith("_norm") else DENSE)
                continue
            # TF1's [hidden, hidden] -> EinsumDense's [hidden, heads, head_size] (the output: [heads, size, hidden])
            kernel, bias = weights[f"{scope}/{tf1}/kernel"], weights[f"{scope}/{tf1}/bias"]
            if path[1] == "_output_dense":
                kernel = kernel.reshape(heads, -1, hidden)
            else:
                kernel, bias = kernel.reshape(hidden, heads, -1), bias.reshape(heads, -1)
            attention[path[1]] = _node(kernel=tf.Variable(kernel, name="kernel"), bias=tf.Variable(bias, name="bias"))
        blocks.append(_node(_attention_layer=_node(**attention), **block))
    pooler = _variables(weights, "bert/pooler/dense")
    ordered = [*embedding_layers.values(), *blocks, pooler]
    encoder = _node(**{f"layer_with_weights-{n}": layer for n, layer in enumerate(ordered)})
    encoder._pooler_layer = pooler
    encoder._transformer_layers = blocks  # a list: children "0", "1", ... as the Model Garden's
    for name, layer in embedding_layers.items():
        setattr(encoder, name, layer)
    return encoder, word


def checkpoint_roots(model) -> dict[str, object]:
    """The root children of the Model Garden checkpoint of `model` (ours: encoder, pretrainer or classifier)."""
    weights = tf1_checkpoints.export_weights(model)
    encoder_model, masked_lm, next_sentence = tf1_checkpoints.split_model(model)
    config = encoder_model.config
    encoder, word = _encoder_graph(weights, config)
    roots = {"encoder": encoder}
    classifier = getattr(model, "classifier", None) if masked_lm is None else None
    if masked_lm is not None:
        bias = tf.Variable(weights["cls/predictions/output_bias"], name="bias")
        mlm = _node(
            embedding_table=word,
            dense=_variables(weights, "cls/predictions/transform/dense"),
            layer_norm=_variables(weights, "cls/predictions/transform/LayerNorm", NORM),
        )
        setattr(mlm, "output_bias/bias", bias)
        mlm.bias = bias
        heads = []
        if next_sentence is not None:
            # The next-sentence head's own pooler is ours, as the encoder's pooler_transform is.
            head_pooler = _variables(weights, "bert/pooler/dense")
            out = _node(
                kernel=tf.Variable(weights["cls/seq_relationship/output_weights"].T, name="kernel"),
                bias=tf.Variable(weights["cls/seq_relationship/output_bias"], name="bias"),
            )
            heads.append(_node(dense=head_pooler, out_proj=out))
            roots["next_sentence.pooler_dense"] = head_pooler
        roots["masked_lm"] = mlm
        roots["model"] = _node(encoder_network=encoder, classification_heads=heads, masked_lm=mlm)
    elif classifier is not None and getattr(classifier, "kernel", None) is not None:
        head_pooler = _variables(weights, "bert/pooler/dense")
        out = _node(
            kernel=tf.Variable(np.asarray(classifier.kernel.numpy(), np.float32), name="kernel"),
            bias=tf.Variable(np.asarray(classifier.bias.numpy(), np.float32), name="bias"),
        )
        head = _node(dense=head_pooler, out_proj=out)
        model_node = _node(**{"layer_with_weights-0": encoder, "layer_with_weights-1": head})
        model_node._network = encoder
        model_node.classifier = head
        roots["model"] = model_node
        roots["sentence_prediction.pooler_dense"] = head_pooler
    return roots


def write_model_garden_checkpoint(model, prefix: str) -> str:
    """Writes `model` (ours: an encoder, a pretrainer with its heads, or a classifier with its head) as the Model
    Garden checkpoint `prefix` (see the module docstring). Written in a staging folder beside it and moved in place,
    the index (by which a reader finds the checkpoint) last."""
    roots = checkpoint_roots(model)

    def write(staging_prefix: str) -> None:
        checkpoint = tf.train.Checkpoint(**roots)
        # As `save` writes it (the Model Garden saves with `save`): its export_tfhub restores with
        # `assert_existing_objects_matched`, which asks for `save_counter` too.
        checkpoint.save_counter.assign(1)
        checkpoint.write(staging_prefix)

    return write_staged(prefix, write)
