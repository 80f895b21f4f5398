"""Our checkpoint format (original TF1 checkpoints: tf1_checkpoints.py; what every format shares: checkpoint_base.py).

**Our format** is a `tf.train.Checkpoint` whose root has the child `encoder` (the `BertEncoder`) and, for a task
model, `model` (the whole model), plus whatever training state the caller adds (`optimizer`, `step`, ...).
`checkpoint_root(model, **state)` builds that root, so that any checkpoint can give back the encoder alone
(`restore_checkpoint(encoder, prefix)`), e.g. to fine-tune from a pretraining run.
"""

from __future__ import annotations

import collections

import keras
import tensorflow as tf

from official.nlp.checkpoints.checkpoint_base import (
    MLM_SCOPE,
    CheckpointMismatchError,
    bert_parts,
    describe_config,
    load_checkpoint,
    model_for_heads,
    shape_text,
    split_model,
)
from official.nlp.checkpoints.integrity import names_damage
from official.nlp.common.errors import InputError
from official.nlp.modeling.configs import BertConfig

# Our checkpoints are `ckpt-<n>` (model directories, exports, training checkpoints).
CHECKPOINT_NAME = "ckpt"


def training_checkpoint_root(model, **training_state) -> tf.train.Checkpoint:
    """The root a training loop saves: `checkpoint_root` for a BERT model, so that every training checkpoint is
    also a valid `--init_checkpoint` for the next job; any other Keras model goes under `model`."""
    if bert_parts(model) is None:
        return tf.train.Checkpoint(model=model, **training_state)
    return checkpoint_root(model, **training_state)


def checkpoint_root(model, **training_state) -> tf.train.Checkpoint:
    """The root object of our checkpoints: `encoder`, the task `model` (if not the encoder), training state.

    Example (a training loop):

        manager = tf.train.CheckpointManager(
            checkpoint_root(pretrainer, optimizer=optimizer, step=step), model_dir, max_to_keep=3)
    """
    encoder, _, _ = split_model(model)
    children = {"encoder": encoder}
    if model is not encoder:
        children["model"] = model
    return tf.train.Checkpoint(**children, **training_state)


def _live_variable_paths(root) -> dict[tuple[str, ...], object]:
    """One object-graph path (attribute names from `root`) for every variable under `root`, breadth first."""
    view = tf.train.TrackableView(root)
    paths, seen = {}, {id(root)}
    queue = collections.deque([(root, ())])
    while queue:
        obj, path = queue.popleft()
        for name, child in view.children(obj).items():
            if id(child) in seen:
                continue
            seen.add(id(child))
            if isinstance(child, (keras.Variable, tf.Variable)):
                paths[path + (name,)] = child
            queue.append((child, path + (name,)))
    return paths


class _SavedGraph:
    """The object graph stored in one of our checkpoints: follows attribute names to checkpoint keys.

    A variable is stored once, under the first path TF's breadth-first walk found (with an optimizer in the root
    that may be `optimizer/_trainable_variables/3`), but the graph keeps every edge; so following the model's
    own attribute names finds it whatever the key.
    """

    def __init__(self, reader):
        from tensorflow.core.protobuf import trackable_object_graph_pb2

        self.graph = trackable_object_graph_pb2.TrackableObjectGraph()
        self.graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
        self.children = [{c.local_name: c.node_id for c in node.children} for node in self.graph.nodes]

    def node(self, path) -> int | None:
        node = 0
        for name in path:
            node = self.children[node].get(name)
            if node is None:
                return None
        return node

    def variable_key(self, node: int) -> str | None:
        for attribute in self.graph.nodes[node].attributes:
            if attribute.name == "VARIABLE_VALUE":
                return attribute.checkpoint_key
        return None

    def keys_under(self, node: int) -> set[str]:
        """Variable keys reachable from `node`, not entering an `optimizer` (a compiled Keras model tracks its
        optimizer, whose slots are training state, not weights)."""
        keys, stack, seen = set(), [node], set()
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            key = self.variable_key(current)
            if key is not None:
                keys.add(key)
            stack.extend(child for name, child in self.children[current].items() if name != "optimizer")
        return keys


@names_damage
def is_our_checkpoint(prefix: str) -> bool:
    try:
        reader = load_checkpoint(prefix)
        if not reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):
            return False
        return _SavedGraph(reader).node(("encoder",)) is not None
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        return False


@names_damage
def restore_checkpoint(model, prefix: str, *, encoder_only: bool = False) -> None:
    """Restores `model` (or, with `encoder_only` or a plain encoder, its encoder) from one of our checkpoints.

    Partial restore is the point: a classifier takes the encoder out of a pretraining checkpoint, which may also
    hold an optimizer and a step. Raises `CheckpointMismatchError` listing missing, unexpected and wrong-shape
    variables; nothing is assigned then.
    """
    encoder, _, _ = split_model(model)
    root = tf.train.Checkpoint(encoder=encoder) if encoder_only or model is encoder else checkpoint_root(model)
    reader = load_checkpoint(prefix)
    if not reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):
        raise InputError(
            f"{prefix} is not one of our checkpoints (no object graph); for an original TF1 "
            "checkpoint use read_tf1_checkpoint + assign_weights"
        )
    saved = _SavedGraph(reader)
    children = [name for name in ("encoder", "model") if getattr(root, name, None) is not None]
    for name in children:
        if saved.node((name,)) is None:
            raise InputError(
                f"{prefix} has no `{name}` object; write checkpoints with "
                "official.nlp.checkpoints.our_checkpoints.checkpoint_root(model, ...)"
            )
    shapes = reader.get_variable_to_shape_map()
    missing, wrong_shape, matched = [], [], {}
    for path, variable in _live_variable_paths(root).items():
        node = saved.node(path)
        key = saved.variable_key(node) if node is not None else None
        shown = "/".join(path)
        if key is None:
            missing.append(f"{shown} {shape_text(variable.shape)}")
        elif tuple(shapes[key]) != tuple(variable.shape):
            wrong_shape.append(f"{shown}: checkpoint {shape_text(shapes[key])}, model {shape_text(variable.shape)}")
        else:
            matched[key] = variable
    reachable = set().union(*(saved.keys_under(saved.node((name,))) for name in children))
    unexpected = [f"{key} {shape_text(shapes[key])}" for key in sorted(reachable - set(matched))]
    if missing or unexpected or wrong_shape:
        raise CheckpointMismatchError(
            prefix,
            describe_config(encoder.config),
            missing,
            unexpected,
            wrong_shape,
            hint="Check that bert_config.json belongs to this checkpoint.",
        )
    for key, variable in matched.items():
        variable.assign(reader.get_tensor(key))


@names_damage
def checkpoint_has_masked_lm_head(prefix: str) -> bool:
    """Whether a checkpoint (ours or an original TF1 one) holds the masked-LM head; public encoder-only
    checkpoints (converted Hugging Face models, TF1 without ``cls/*``) do not."""
    reader = load_checkpoint(prefix)
    if reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):
        return _SavedGraph(reader).node(("model", "masked_lm")) is not None
    return any(name.startswith(MLM_SCOPE) for name in reader.get_variable_to_shape_map())


@names_damage
def model_from_checkpoint(prefix: str, config: BertConfig):
    """Builds the model one of our checkpoints holds (the rule of `model_from_weights`) and restores it.

    The heads are found in the checkpoint's object graph (`model/masked_lm`, `model/next_sentence`), which holds
    them whatever keys TF chose for their variables.
    """
    saved = _SavedGraph(load_checkpoint(prefix))
    model = model_for_heads(
        config,
        masked_lm=saved.node(("model", "masked_lm")) is not None,
        next_sentence=saved.node(("model", "next_sentence")) is not None,
    )
    restore_checkpoint(model, prefix)
    return model


def save_checkpoint(model, prefix: str) -> str:
    """Writes `model`'s weights (our format, no training state) to `prefix`; returns the written prefix."""
    return checkpoint_root(model).write(prefix)


@names_damage
def saved_variable_shape(prefix: str, path: tuple[str, ...]) -> list[int] | None:
    """The shape of the variable at object path `path` in one of our checkpoints (e.g. `("model", "classifier",
    "_kernel")`), or None when there is none; tells what head a fine-tuned checkpoint holds before building it."""
    reader = load_checkpoint(prefix)
    if not reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):
        return None
    saved = _SavedGraph(reader)
    node = saved.node(path)
    key = saved.variable_key(node) if node is not None else None
    return None if key is None else list(reader.get_variable_to_shape_map()[key])
