"""Our checkpoint format: a `tf.train.Checkpoint` with the encoder as a child of its own.

The root has the child `encoder` (the `BertEncoder`) and, for a task model, `model` (the whole model), plus
whatever training state the caller adds (`optimizer`, `step`, ...). `checkpoint_root(model, **state)` builds that
root, so any checkpoint gives back the encoder alone (`restore_checkpoint(encoder, prefix)`), e.g. to fine-tune
from a pretraining run. Restoring follows the attribute names through the stored object graph and reports
missing / unexpected / wrong-shape variables (`CheckpointMismatchError`) before assigning anything.
"""
from __future__ import annotations

import collections

import keras
import tensorflow as tf

from official.nlp.bert.checkpoints import CheckpointMismatchError, describe_config, shape_text, split_model



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


def is_our_checkpoint(prefix: str) -> bool:
    try:
        reader = tf.train.load_checkpoint(prefix)
        if not reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):
            return False
        return _SavedGraph(reader).node(("encoder",)) is not None
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        return False


def restore_checkpoint(model, prefix: str, *, encoder_only: bool = False) -> None:
    """Restores `model` (or, with `encoder_only` or a plain encoder, its encoder) from one of our checkpoints.

    Partial restore is the point: a classifier takes the encoder out of a pretraining checkpoint, which may also
    hold an optimizer and a step. Raises `CheckpointMismatchError` listing missing, unexpected and wrong-shape
    variables; nothing is assigned then.
    """
    encoder, _, _ = split_model(model)
    root = tf.train.Checkpoint(encoder=encoder) if encoder_only or model is encoder else checkpoint_root(model)
    reader = tf.train.load_checkpoint(prefix)
    if not reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):
        raise ValueError(f"{prefix} is not one of our checkpoints (no object graph); for an original TF1 "
                         "checkpoint use read_tf1_checkpoint + assign_weights")
    saved = _SavedGraph(reader)
    children = [name for name in ("encoder", "model") if getattr(root, name, None) is not None]
    for name in children:
        if saved.node((name,)) is None:
            raise ValueError(f"{prefix} has no `{name}` object; write checkpoints with "
                             "official.nlp.bert.checkpoint_format.checkpoint_root(model, ...)")
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
        raise CheckpointMismatchError(prefix, describe_config(encoder.config), missing, unexpected, wrong_shape,
                                      hint="Check that bert_config.json belongs to this checkpoint.")
    for key, variable in matched.items():
        variable.assign(reader.get_tensor(key))


def save_checkpoint(model, prefix: str) -> str:
    """Writes `model`'s weights (our format, no training state) to `prefix`; returns the written prefix."""
    return checkpoint_root(model).write(prefix)
