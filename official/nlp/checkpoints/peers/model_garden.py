"""TensorFlow Model Garden (tf-models-official) TF2 checkpoints of a `BertEncoder`, read into TF1-named weights
(written: model_garden_export.py).

A Model Garden checkpoint is object-based (`tf.train.Checkpoint`); its variables are found by following the object
graph from the root, as the Model Garden restores them, never by their keys. Its roots:

- `encoder`: the `BertEncoder` (its converted TF2 checkpoints; every training run); `model` alone (legacy) too;
- a pretraining run (`MaskedLMTask`'s `BertPretrainerV2`): `masked_lm` (tied to the word embeddings) and the
  next-sentence head, `next_sentence.pooler_dense` + `model/classification_heads/0/out_proj`;
- a classifier run (`SentencePredictionTask`'s `BertClassifier`): `model/classifier/out_proj` and, with the task's
  default `use_encoder_pooler=False`, `model/classifier/dense`;
- training state (`global_step`, `optimizer`, `save_counter`), which is not read.

A head's own pooler (dense + tanh on `[CLS]`, as ours) becomes our pooler: neither task trains the encoder's
`pooler_transform` (the Model Garden's `export_tfhub --copy_pooler_dense_to_encoder` makes the same choice), and the
next-sentence and classifier logits stay the Model Garden's. Written back, it goes to both places.

Its BERT is the original: post-norm, the tanh GELU (its and our `"gelu"`), layer-norm epsilon 1e-12. Attention
kernels are `[hidden, heads, head_size]` (`EinsumDense`), so the checkpoint gives the number of heads; the rest of
the config is `bert_config.json` beside it or `--bert_config_file`, else the shapes with the Model Garden's defaults
(`gelu`, dropout 0.1). A pre-norm encoder (`norm_first=True`) has the same variables and is not told apart.

Writing one is model_garden_export.py.

Example:

    found = read_model_garden_checkpoint("pretrain_run/ckpt-100000")   # weights (TF1 names), heads, config
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints.checkpoint_base import load_checkpoint, shape_text
from official.nlp.checkpoints.integrity import names_damage
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.modeling.configs import BertConfig

_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
# Our own checkpoints also have an `encoder` root (Keras 3: `embeddings`, `transformer_layer_0`, ...); the Model
# Garden's tf_keras encoders have these children.
_MG_ENCODER_MARKS = ("_embedding_layer", "_position_embedding_layer")
# The Model Garden's encoder layout (BLOCK, DENSE, NORM: model_garden_export.py writes it too): its embeddings.
_EMBEDDINGS = {
    "_embedding_layer": "bert/embeddings/word_embeddings",
    "_position_embedding_layer": "bert/embeddings/position_embeddings",
    "_type_embedding_layer": "bert/embeddings/token_type_embeddings",
}
# Inside `_transformer_layers/<i>` (a TransformerEncoderBlock) -> TF1 scope under `bert/encoder/layer_<i>/`.
BLOCK = {
    ("_attention_layer", "_query_dense"): "attention/self/query",
    ("_attention_layer", "_key_dense"): "attention/self/key",
    ("_attention_layer", "_value_dense"): "attention/self/value",
    ("_attention_layer", "_output_dense"): "attention/output/dense",
    ("_attention_layer_norm",): "attention/output/LayerNorm",
    ("_intermediate_dense",): "intermediate/dense",
    ("_output_dense",): "output/dense",
    ("_output_layer_norm",): "output/LayerNorm",
}
DENSE = ("kernel", "bias")  # the variables of a Dense (an EinsumDense) layer, in the order TF1 names them
NORM = ("gamma", "beta")  # of a LayerNormalization
CLASSIFIER_KERNEL = "model_garden/classifier/kernel"  # [hidden, num_classes], with the TF1-named weights
CLASSIFIER_BIAS = "model_garden/classifier/bias"


class _Graph:
    """The object graph of a TF2 checkpoint: follows the attribute names the Model Garden's objects have."""

    def __init__(self, reader, prefix: str, *, shapes_only: bool = False):
        from tensorflow.core.protobuf import trackable_object_graph_pb2

        self.reader, self.prefix, self.shapes_only = reader, prefix, shapes_only
        self.shapes = reader.get_variable_to_shape_map() if shapes_only else None
        self.graph = trackable_object_graph_pb2.TrackableObjectGraph()
        self.graph.ParseFromString(reader.get_tensor(_GRAPH_KEY))
        self.children = [{c.local_name: c.node_id for c in node.children} for node in self.graph.nodes]

    def node(self, path, start: int = 0) -> int | None:
        node = start
        for name in path:
            node = self.children[node].get(name)
            if node is None:
                return None
        return node

    def value(self, start: int, path, where: str) -> np.ndarray:
        node = self.node(path, start)
        key = None
        if node is not None:
            key = next(
                (a.checkpoint_key for a in self.graph.nodes[node].attributes if a.name == "VARIABLE_VALUE"), None
            )
        if key is None:
            raise InputError(
                f"{self.prefix}: the Model Garden checkpoint has no {where}/{'/'.join(path)}: a partial or damaged "
                "checkpoint, or not a BertEncoder's; use the checkpoint its training wrote"
            )
        if self.shapes_only:  # zeros of the right shape that take no memory: for what the shapes say
            return np.broadcast_to(np.float32(0), self.shapes[key])
        return np.asarray(self.reader.get_tensor(key), np.float32)


def _encoder_node(graph: _Graph) -> tuple[int, str] | None:
    """The node of the Model Garden encoder and its path, or None when the root has none."""
    for path in (("encoder",), ("model",), ("model", "encoder_network"), ("model", "_network")):
        node = graph.node(path)
        if node is not None and any(mark in graph.children[node] for mark in _MG_ENCODER_MARKS):
            return node, "/".join(path)
    return None


@names_damage  # the first reader of any checkpoint named: truncated or missing files are named here, in one line
def is_model_garden_checkpoint(prefix: str) -> bool:
    """Whether `prefix` is a TF2 checkpoint holding a Model Garden (tf_keras) encoder."""
    try:
        reader = load_checkpoint(prefix)
        return reader.has_tensor(_GRAPH_KEY) and _encoder_node(_Graph(reader, prefix)) is not None
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        return False


@dataclasses.dataclass
class ModelGardenCheckpoint:
    """What a Model Garden checkpoint holds: `weights` under TF1 names and layouts (the encoder, plus `cls/...` for
    a pretrainer's heads, plus `CLASSIFIER_KERNEL`/`CLASSIFIER_BIAS` for a classifier's logits), the config its
    shapes give (`num_attention_heads` included), and which heads it has."""

    weights: dict[str, np.ndarray]
    config: BertConfig
    masked_lm: bool
    next_sentence: bool
    num_classes: int | None  # a classifier's outputs, None without one


def _dense(graph: _Graph, node: int, where: str, scope: str, weights: dict, names=DENSE) -> None:
    for name, tf1 in zip(names, ("kernel", "bias") if names == DENSE else ("gamma", "beta")):
        weights[f"{scope}/{tf1}"] = graph.value(node, (name,), where)


def _check_kind(graph: _Graph, node: int, where: str) -> None:
    children = graph.children[node]
    missing = [name for name in (*_EMBEDDINGS, "_transformer_layers", "_pooler_layer") if name not in children]
    if missing or "_embedding_projection" in children:  # factorized embeddings: ALBERT's, MobileBERT's
        found = f"it has no {', '.join(missing)}" if missing else "it has factorized embeddings"
        raise InputError(
            f"{graph.prefix}: its {where} is not a Model Garden BertEncoder ({found}; ALBERT, MobileBERT and the "
            "other kinds differ); only BertEncoder checkpoints are read"
        )


def _read_encoder(graph: _Graph, node: int, where: str) -> tuple[dict, int]:
    _check_kind(graph, node, where)
    weights = {scope: graph.value(node, (layer, "embeddings"), where) for layer, scope in _EMBEDDINGS.items()}
    _dense(graph, graph.node(("_embedding_norm_layer",), node), where, "bert/embeddings/LayerNorm", weights, NORM)
    blocks = graph.node(("_transformer_layers",), node)
    count = len(graph.children[blocks])
    if sorted(graph.children[blocks]) != sorted(str(i) for i in range(count)):
        raise InputError(f"{graph.prefix}: its {where}/_transformer_layers are not numbered 0..{count - 1}")
    hidden = weights["bert/embeddings/word_embeddings"].shape[-1]
    heads = None
    for i in range(count):
        block = graph.node((str(i),), blocks)
        for path, scope in BLOCK.items():
            names = NORM if path[-1].endswith("_norm") else DENSE
            sub_where = f"{where}/_transformer_layers/{i}/{'/'.join(path)}"
            sub = graph.node(path, block)
            if sub is None:
                raise InputError(
                    f"{graph.prefix}: the Model Garden checkpoint has no {sub_where}: a partial or damaged checkpoint, "
                    "or not a BertEncoder's TransformerEncoderBlock; use the checkpoint its training wrote"
                )
            _dense(graph, sub, sub_where, f"bert/encoder/layer_{i}/{scope}", weights, names)
        query = weights[f"bert/encoder/layer_{i}/attention/self/query/kernel"]
        if query.ndim != 3:
            raise InputError(
                f"{graph.prefix}: {where}/_transformer_layers/{i}'s query kernel is {shape_text(query.shape)}, not "
                "[hidden, heads, head_size]: not a BertEncoder's attention"
            )
        heads = query.shape[1]
    for name in list(weights):  # EinsumDense layouts -> TF1's [hidden, hidden] and [hidden]
        value = weights[name]
        if "/attention/self/" in name:
            weights[name] = value.reshape((hidden, -1) if name.endswith("kernel") else (-1,))
        elif name.endswith("/attention/output/dense/kernel"):
            weights[name] = value.reshape(-1, value.shape[-1])
    _dense(graph, graph.node(("_pooler_layer",), node), where, "bert/pooler/dense", weights)
    return weights, heads or 1


def _head_pooler(graph: _Graph, head: int, where: str, weights: dict) -> None:
    """A classification head's own pooler (`dense`, dense + tanh on [CLS]) becomes our pooler."""
    pooler = graph.node(("dense",), head)
    if pooler is not None:
        logging.info("%s: the pooler is %s/dense (the encoder's pooler_transform is not trained)", graph.prefix, where)
        _dense(graph, pooler, f"{where}/dense", "bert/pooler/dense", weights)


def _next_sentence_head(graph: _Graph) -> tuple[int, str] | None:
    heads = graph.node(("model", "classification_heads"))
    pooler = graph.node(("next_sentence.pooler_dense",))
    if heads is None:
        return None
    for name, node in sorted(graph.children[heads].items()):
        if pooler is None or graph.node(("dense",), node) == pooler:
            return node, f"model/classification_heads/{name}"
    return None


@names_damage
def read_model_garden_checkpoint(prefix: str, *, shapes_only: bool = False) -> ModelGardenCheckpoint:
    """The weights (TF1 names and layouts), shapes' config and heads of a Model Garden checkpoint (see the module
    docstring); training state (`global_step`, `optimizer`, `save_counter`) is not read. `shapes_only`: every
    weight is zeros of its shape (nothing is read but the index), for the config and the heads."""
    try:
        reader = load_checkpoint(prefix)
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError) as e:
        raise MissingInputError(f"Cannot read a TF checkpoint at {prefix} ({type(e).__name__})") from None
    if not reader.has_tensor(_GRAPH_KEY):
        raise InputError(f"{prefix} is a TF1 (name-based) checkpoint, not a Model Garden TF2 checkpoint")
    graph = _Graph(reader, prefix, shapes_only=shapes_only)
    found = _encoder_node(graph)
    if found is None:
        raise InputError(
            f"{prefix} has no Model Garden encoder (no `encoder` object in its graph); expected a checkpoint of "
            "tf.train.Checkpoint(encoder=...) or of a Model Garden training run"
        )
    node, where = found
    weights, heads = _read_encoder(graph, node, where)
    masked_lm = graph.node(("masked_lm",)) or graph.node(("model", "masked_lm"))
    if masked_lm is not None:
        _dense(graph, graph.node(("dense",), masked_lm), "masked_lm/dense", "cls/predictions/transform/dense", weights)
        norm = graph.node(("layer_norm",), masked_lm)
        _dense(graph, norm, "masked_lm/layer_norm", "cls/predictions/transform/LayerNorm", weights, NORM)
        weights["cls/predictions/output_bias"] = graph.value(masked_lm, ("bias",), "masked_lm")
    next_sentence = _next_sentence_head(graph) if masked_lm is not None else None
    if next_sentence is not None:
        head, head_where = next_sentence
        kernel = graph.value(head, ("out_proj", "kernel"), head_where)
        if kernel.shape[-1] != 2:
            raise InputError(
                f"{prefix}: the pretrainer's classification head {head_where} has {kernel.shape[-1]} outputs, not the "
                "two of next-sentence prediction; only the masked-LM and next-sentence heads are read"
            )
        _head_pooler(graph, head, head_where, weights)
        weights["cls/seq_relationship/output_weights"] = kernel.T
        weights["cls/seq_relationship/output_bias"] = graph.value(head, ("out_proj", "bias"), head_where)
    classifier = graph.node(("model", "classifier"))
    num_classes = None
    if classifier is not None and masked_lm is None:
        _head_pooler(graph, classifier, "model/classifier", weights)
        weights[CLASSIFIER_KERNEL] = graph.value(classifier, ("out_proj", "kernel"), "model/classifier")
        weights[CLASSIFIER_BIAS] = graph.value(classifier, ("out_proj", "bias"), "model/classifier")
        num_classes = int(weights[CLASSIFIER_KERNEL].shape[-1])
    word, positions = weights["bert/embeddings/word_embeddings"], weights["bert/embeddings/position_embeddings"]
    config = BertConfig(
        vocab_size=word.shape[0],
        hidden_size=word.shape[1],
        num_hidden_layers=sum(name.endswith("/intermediate/dense/kernel") for name in weights),
        num_attention_heads=heads,
        intermediate_size=weights["bert/encoder/layer_0/intermediate/dense/kernel"].shape[-1],
        hidden_act="gelu",
        max_position_embeddings=positions.shape[0],
        type_vocab_size=weights["bert/embeddings/token_type_embeddings"].shape[0],
        layer_norm_eps=1e-12,
    )
    return ModelGardenCheckpoint(weights, config, masked_lm is not None, next_sentence is not None, num_classes)


def check_config(found: ModelGardenCheckpoint, config: BertConfig, source: str, prefix: str) -> None:
    """Refuses a config whose head count differs from the checkpoint's: the TF1 layout `assign_weights` checks
    would hide it."""
    if config.num_attention_heads != found.config.num_attention_heads:
        raise InputError(
            f"{source} says num_attention_heads={config.num_attention_heads}, and {prefix}'s attention kernels have "
            f"{found.config.num_attention_heads} heads; fix the config (or drop --bert_config_file)"
        )
