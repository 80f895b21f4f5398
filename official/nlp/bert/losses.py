"""The pretraining losses and metrics, shared by `BertPretrainer.fit` and the custom training loop.

All functions take float logits (any float dtype; computed in float32) and return float32 scalars.

- masked LM: `sum(w * ce) / sum(w)` over the `[batch, P]` predictions, `w = masked_lm_weights` (0 for the
  padding predictions); 0 when a batch has no real prediction.
- next sentence: mean cross-entropy over the batch; labels 0 = "B follows A", 1 = random B (original order).
"""
from __future__ import annotations

from typing import Mapping

from keras import ops

PRETRAINING_LABELS = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def masked_lm_loss_sums(labels, logits, weights):
    """Returns `(sum(w * ce), sum(w))`, for a loop that normalizes over several batches or replicas."""
    weights = ops.cast(weights, "float32")
    ce = ops.sparse_categorical_crossentropy(ops.cast(labels, "int32"), ops.cast(logits, "float32"),
                                             from_logits=True)
    return ops.sum(ce * weights), ops.sum(weights)


def masked_lm_loss(labels, logits, weights):
    """Weighted mean cross-entropy over real masked positions: `sum(w * ce) / sum(w)`.

    Args:
      labels: int `[batch, P]` original token ids (`masked_lm_ids`).
      logits: `[batch, P, vocab_size]`.
      weights: `[batch, P]`, 1.0 for a real prediction and 0.0 for padding (`masked_lm_weights`).
    """
    total, count = masked_lm_loss_sums(labels, logits, weights)
    return ops.divide_no_nan(total, count)


def next_sentence_loss(labels, logits):
    """Mean cross-entropy of the `[batch, 2]` NSP logits; `labels` is `[batch]` or `[batch, 1]`."""
    labels = ops.reshape(ops.cast(labels, "int32"), (-1,))
    return ops.mean(ops.sparse_categorical_crossentropy(labels, ops.cast(logits, "float32"), from_logits=True))


def masked_lm_accuracy(labels, logits, weights):
    """Share of real masked positions whose arg-max prediction is the label (weighted by `weights`)."""
    weights = ops.cast(weights, "float32")
    correct = ops.cast(ops.equal(ops.argmax(logits, axis=-1), ops.cast(labels, "int64")), "float32")
    return ops.divide_no_nan(ops.sum(correct * weights), ops.sum(weights))


def next_sentence_accuracy(labels, logits):
    labels = ops.reshape(ops.cast(labels, "int64"), (-1,))
    return ops.mean(ops.cast(ops.equal(ops.argmax(logits, axis=-1), labels), "float32"))


def pretraining_losses(labels: Mapping, outputs: Mapping, use_next_sentence_label: bool = True) -> dict:
    """The original pretraining objective: `loss = mlm_loss + nsp_loss`.

    Args:
      labels: dict with `masked_lm_ids`, `masked_lm_weights` and (for NSP) `next_sentence_labels`.
      outputs: the `BertPretrainer` outputs, `mlm_logits` and (for NSP) `nsp_logits`.
      use_next_sentence_label: whether the NSP loss is part of the objective.

    Returns:
      dict with float32 scalars `loss`, `mlm_loss` and, with NSP, `nsp_loss`.
    """
    needed = PRETRAINING_LABELS if use_next_sentence_label else PRETRAINING_LABELS[:2]
    missing = [key for key in needed if key not in labels]
    if missing:
        raise KeyError(f"pretraining labels lack {', '.join(missing)}; expected a dict with {', '.join(needed)}")
    result = {"mlm_loss": masked_lm_loss(labels["masked_lm_ids"], outputs["mlm_logits"],
                                         labels["masked_lm_weights"])}
    result["loss"] = result["mlm_loss"]
    if use_next_sentence_label:
        result["nsp_loss"] = next_sentence_loss(labels["next_sentence_labels"], outputs["nsp_logits"])
        result["loss"] = result["mlm_loss"] + result["nsp_loss"]
    return result
