"""What every checkpoint format shares (TF1: tf1_checkpoints.py, ours: our_checkpoints.py, Hugging Face: hf_weights.py).

`CheckpointMismatchError` (weights and model disagree), `load_checkpoint` (a reader of any checkpoint prefix), the
parts of a BERT model a checkpoint covers (`bert_parts`, `split_model`), the model a checkpoint's heads describe
(`model_for_heads`), the TF1 scopes of those heads, and how an error shows a shape and a config.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import tensorflow as tf

from official.nlp.common import input_files, output_files
from official.nlp.common.errors import InputError
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertPretrainer

# The TF1 scopes of the encoder and of the pretraining heads (original names; Hugging Face maps onto them).
ENCODER_SCOPE = "bert/"
MLM_SCOPE = "cls/predictions/"
NSP_SCOPE = "cls/seq_relationship/"


class CheckpointMismatchError(InputError):
    """Weights and model disagree. `missing`, `unexpected` and `wrong_shape` hold the details."""

    def __init__(
        self, source: str, model_desc: str, missing: list, unexpected: list, wrong_shape: list, hint: str = ""
    ):
        self.missing, self.unexpected, self.wrong_shape = missing, unexpected, wrong_shape
        lines = [f"{source} does not match the model ({model_desc}):"]
        for title, items in (("missing", missing), ("unexpected", unexpected), ("wrong shape", wrong_shape)):
            if items:
                lines.append(f"  {title} ({len(items)}):")
                lines.extend(f"    {item}" for item in items[:20])
                if len(items) > 20:
                    lines.append(f"    ... and {len(items) - 20} more")
        if hint:
            lines.append(hint)
        super().__init__("\n".join(lines))


def shape_text(shape) -> str:
    """A shape as a mismatch error shows it: `[768, 3072]`."""
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def describe_config(config: BertConfig) -> str:
    """The sizes of a config in one line, for errors and logs."""
    return (
        f"{config.num_hidden_layers} layers, hidden {config.hidden_size}, {config.num_attention_heads} heads, "
        f"intermediate {config.intermediate_size}, vocab {config.vocab_size}, "
        f"{config.max_position_embeddings} positions, {config.type_vocab_size} token types"
    )


def bert_parts(model) -> tuple[BertEncoder, object, object] | None:
    """`(encoder, masked_lm, next_sentence)` of a BERT model (heads None where absent); None for other models."""
    if isinstance(model, BertEncoder):
        return model, None, None
    if isinstance(model, BertPretrainer):
        return model.encoder, model.masked_lm, model.next_sentence
    if hasattr(model, "encoder"):
        return model.encoder, None, None
    return None


def split_model(model) -> tuple[BertEncoder, object, object]:
    """`bert_parts` of a model that must be a BERT model (a `TypeError` otherwise: a bug, not a user mistake)."""
    parts = bert_parts(model)
    if parts is None:
        raise TypeError(f"Expected a BertEncoder or a BERT task model, got {type(model).__name__}")
    return parts


def model_for_heads(config: BertConfig, *, masked_lm: bool, next_sentence: bool):
    """The model that a checkpoint with these heads describes: a `BertPretrainer` when it has the masked-LM head
    (with NSP when it has that head too), else a `BertEncoder`."""
    encoder = BertEncoder.from_bert_config(config)
    return BertPretrainer(encoder, use_next_sentence_label=next_sentence) if masked_lm else encoder


def load_checkpoint(prefix: str):
    """A reader of the checkpoint `prefix` (a prefix, never a folder). `tf.train.load_checkpoint` first asks whether
    the path is a folder, and ``ram://`` answers yes for any prefix of a file name (``ckpt-4`` of ``ckpt-4.index``)."""
    return tf.compat.v1.train.NewCheckpointReader(prefix)


def write_staged(prefix: str, write: Callable[[str], None]) -> str:
    """Writes checkpoint `prefix` with `write(staging_prefix)` in a folder of this process beside it
    (`output_files.temporary_name`), where a job killed mid-write leaves only half-written temporary files, then moves
    the files in place, the index (by which a reader finds the checkpoint) last. Returns `prefix`."""
    directory = os.path.dirname(prefix)
    if directory:
        output_files.makedirs(directory, name="checkpoint folder")
    output_files.remove_leftovers([prefix])
    staging = output_files.temporary_name(prefix)
    output_files.rmtree(staging)
    output_files.makedirs(staging)
    try:
        write(os.path.join(staging, os.path.basename(prefix)))
        for name in sorted(input_files.listdir(staging), key=lambda n: n.endswith(".index")):
            output_files.commit(os.path.join(staging, name), os.path.join(directory, name))
    finally:
        output_files.rmtree(staging)
    return prefix
