"""The pretraining objectives, shared by `BertPretrainer.fit` and the custom training loop.

Each loss term is a weighted mean of per-element cross entropies, `sum(w * ce) / sum(w)`:

- masked LM: over the `[batch, P]` predictions, `w = masked_lm_weights` (0 for the padding predictions); 0 when a
  batch has no real prediction.
- next sentence: over the `[batch]` examples, `w = 1`; labels 0 = "B follows A", 1 = random B (original order).

`pretraining_loss_weights` and `pretraining_element_losses` give the `w` and `ce` of each term: the training loop
(`official.nlp.training.objectives.PretrainingObjective`) sums them over the global batch, `pretraining_losses`
averages them over one batch (what `fit` minimizes). Both therefore minimize the same objective.

The left-to-right LM (`--objective=ltr`) has one term, `ltr_loss`: the next-token cross entropy at every position
whose next token is real, `w = next_token_weights` (`next_token_labels` makes the labels from the inputs). Its
functions are `ltr_loss_weights`, `ltr_element_losses`, `ltr_metrics` and `ltr_losses`.

All functions take float logits (any float dtype; computed in float32) and return float32.
"""

from __future__ import annotations

from collections.abc import Mapping

from keras import ops

PRETRAINING_LABELS = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")
LTR_LABELS = ("next_token_ids", "next_token_weights")


def cross_entropy(labels, logits):
    """Per-element cross entropy of integer `labels` under `logits` (`[..., classes]`), in float32."""
    return ops.sparse_categorical_crossentropy(ops.cast(labels, "int32"), ops.cast(logits, "float32"), from_logits=True)


def weighted_accuracy(labels, logits, weights=None):
    """`(sum(w * correct), sum(w))` of the arg-max predictions (`w = 1` when `weights` is None), in float32.

    A pair rather than a ratio, so that a loop can add it up over replicas and steps before dividing.
    """
    correct = ops.cast(ops.equal(ops.argmax(logits, axis=-1), ops.cast(labels, "int32")), "float32")
    weights = ops.ones_like(correct) if weights is None else ops.cast(weights, "float32")
    return ops.sum(correct * weights), ops.sum(weights)


def _next_sentence_labels(labels: Mapping):
    """`next_sentence_labels` as `[batch]` (the records hold `[batch, 1]`)."""
    return ops.reshape(labels["next_sentence_labels"], (-1,))


def pretraining_loss_weights(labels: Mapping, use_next_sentence_label: bool = True) -> dict:
    """For each loss term (`mlm_loss`, `nsp_loss`), the float32 weights of its elements; from the labels alone."""
    weights = {"mlm_loss": ops.cast(labels["masked_lm_weights"], "float32")}
    if use_next_sentence_label:
        weights["nsp_loss"] = ops.ones_like(_next_sentence_labels(labels), dtype="float32")
    return weights


def pretraining_element_losses(labels: Mapping, outputs: Mapping, use_next_sentence_label: bool = True) -> dict:
    """For each loss term, the per-element cross entropies (shaped as `pretraining_loss_weights`)."""
    result = {"mlm_loss": cross_entropy(labels["masked_lm_ids"], outputs["mlm_logits"])}
    if use_next_sentence_label:
        result["nsp_loss"] = cross_entropy(_next_sentence_labels(labels), outputs["nsp_logits"])
    return result


def pretraining_metrics(labels: Mapping, outputs: Mapping, use_next_sentence_label: bool = True) -> dict:
    """`mlm_accuracy` (over real predictions) and `nsp_accuracy` as `weighted_accuracy` pairs."""
    result = {
        "mlm_accuracy": weighted_accuracy(labels["masked_lm_ids"], outputs["mlm_logits"], labels["masked_lm_weights"])
    }
    if use_next_sentence_label:
        result["nsp_accuracy"] = weighted_accuracy(_next_sentence_labels(labels), outputs["nsp_logits"])
    return result


def pretraining_losses(labels: Mapping, outputs: Mapping, use_next_sentence_label: bool = True) -> dict:
    """The original pretraining objective on one batch: `loss = mlm_loss + nsp_loss`.

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
    weights = pretraining_loss_weights(labels, use_next_sentence_label)
    losses = pretraining_element_losses(labels, outputs, use_next_sentence_label)
    result = {name: ops.divide_no_nan(ops.sum(losses[name] * w), ops.sum(w)) for name, w in weights.items()}
    result["loss"] = result["mlm_loss"] + result["nsp_loss"] if use_next_sentence_label else result["mlm_loss"]
    return result


def next_token_labels(input_word_ids, input_mask) -> dict:
    """The left-to-right LM's labels: at position i the token at i + 1, weighted 1 where both are real tokens.

    `next_token_ids` is int32 and `next_token_weights` float32, both `[batch, seq]`; the last position (and the last
    real one) predict nothing.
    """
    ids = ops.cast(input_word_ids, "int32")
    real = ops.cast(input_mask, "float32")
    following = ops.concatenate([ids[:, 1:], ops.zeros_like(ids[:, :1])], axis=1)
    following_real = ops.concatenate([real[:, 1:], ops.zeros_like(real[:, :1])], axis=1)
    return {"next_token_ids": following, "next_token_weights": real * following_real}


def ltr_loss_weights(labels: Mapping) -> dict:
    """`{"ltr_loss": next_token_weights}` as float32: from the labels alone."""
    return {"ltr_loss": ops.cast(labels["next_token_weights"], "float32")}


def ltr_element_losses(labels: Mapping, outputs: Mapping) -> dict:
    """The per-position next-token cross entropies `[batch, seq]` of `outputs["ltr_logits"]`."""
    return {"ltr_loss": cross_entropy(labels["next_token_ids"], outputs["ltr_logits"])}


def ltr_metrics(labels: Mapping, outputs: Mapping) -> dict:
    """`ltr_accuracy` (next-token accuracy over the weighted positions) as a `weighted_accuracy` pair."""
    return {
        "ltr_accuracy": weighted_accuracy(labels["next_token_ids"], outputs["ltr_logits"], labels["next_token_weights"])
    }


def ltr_losses(labels: Mapping, outputs: Mapping) -> dict:
    """The left-to-right LM objective on one batch: `loss = ltr_loss`, float32 scalars."""
    missing = [key for key in LTR_LABELS if key not in labels]
    if missing:
        raise KeyError(
            f"left-to-right LM labels lack {', '.join(missing)}; expected a dict with {', '.join(LTR_LABELS)}"
        )
    weights = ltr_loss_weights(labels)["ltr_loss"]
    loss = ops.divide_no_nan(ops.sum(ltr_element_losses(labels, outputs)["ltr_loss"] * weights), ops.sum(weights))
    return {"ltr_loss": loss, "loss": loss}
