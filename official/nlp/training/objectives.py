"""What the training loop minimizes and reports, for pretraining and fine-tuning tasks (and, for span prediction, the
Keras losses of `fit`).

An objective gives, for each loss term, per-element losses and their weights; the loop minimizes the sum over
terms of `sum(loss * weight) / sum(weight)`, the sums taken over the *global* batch (every replica and every
micro-batch of gradient accumulation). The weights depend on the labels alone, so the loop can sum them over the
global batch before the forward pass. That makes a step on k micro-batches of b examples, or on r replicas, the
same step as one on a batch of k*b (or r*b) examples: no mean-of-means bias when micro-batches hold different
numbers of masked tokens.

Metrics are (numerator, denominator) sums, so that means over replicas and steps are exact too. The per-element
functions (`cross_entropy`, `weighted_accuracy`) are those of `official.nlp.modeling.losses`, which the models' own
`fit` objectives use as well.

Example (a fine-tuning objective):

>>> objective = SparseCategoricalObjective(label_key="label", logits_key="logits")
>>> sorted(objective.loss_weights({"label": tf.constant([0, 1])}))
['loss']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import keras
import tensorflow as tf

from official.nlp.modeling import losses as bert_losses
from official.nlp.modeling.configs import LTR, MLM
from official.nlp.modeling.losses import cross_entropy, weighted_accuracy


class Objective(Protocol):
    """The interface `Trainer` needs from a task."""

    def loss_weights(self, labels) -> Mapping[str, tf.Tensor]:
        """For each loss term, the weights of its elements (shape of the per-element losses); labels only."""

    def losses(self, labels, outputs) -> Mapping[str, tf.Tensor]:
        """For each loss term (same keys as `loss_weights`), the per-element losses in float32."""

    def metrics(self, labels, outputs) -> Mapping[str, tuple[tf.Tensor, tf.Tensor]]:
        """Extra metrics as (sum, count) pairs over this batch, e.g. (correct predictions, predictions)."""


class SparseCategoricalObjective:
    """Classification: mean cross entropy over the examples, and accuracy.

    Args:
      label_key: the key of the labels when `labels` is a dict (None when it is a tensor).
      logits_key: the key of the logits when the model returns a dict (None when it returns a tensor).
    """

    def __init__(self, label_key: str | None = None, logits_key: str | None = None):
        self.label_key = label_key
        self.logits_key = logits_key

    def _labels(self, labels):
        return labels[self.label_key] if self.label_key is not None else labels

    def _logits(self, outputs):
        return outputs[self.logits_key] if self.logits_key is not None else outputs

    def loss_weights(self, labels):
        return {"loss": tf.ones(tf.shape(self._labels(labels)), tf.float32)}

    def losses(self, labels, outputs):
        return {"loss": cross_entropy(self._labels(labels), self._logits(outputs))}

    def metrics(self, labels, outputs):
        return {"accuracy": weighted_accuracy(self._labels(labels), self._logits(outputs))}


class MultiLabelObjective:
    """Multi-label classification: binary cross entropy of each label's sigmoid, averaged over examples and labels
    (as `keras.losses.BinaryCrossentropy(from_logits=True)` and PyTorch's `BCEWithLogitsLoss` average it).

    Args: as `SparseCategoricalObjective`; labels are `[batch, labels]` of 0/1, the model gives one logit per label.
    """

    def __init__(self, label_key: str | None = None, logits_key: str | None = None):
        self.label_key = label_key
        self.logits_key = logits_key

    def _labels(self, labels):
        labels = labels[self.label_key] if self.label_key is not None else labels
        return tf.cast(labels, tf.float32)

    def loss_weights(self, labels):
        return {"loss": tf.ones(tf.shape(self._labels(labels)), tf.float32)}

    def losses(self, labels, outputs):
        logits = outputs[self.logits_key] if self.logits_key is not None else outputs
        return {"loss": tf.nn.sigmoid_cross_entropy_with_logits(self._labels(labels), tf.cast(logits, tf.float32))}

    def metrics(self, labels, outputs):
        return {}


class MeanSquaredErrorObjective:
    """Regression (STS-B): mean squared error of the model's single output against a float label.

    Args: as `SparseCategoricalObjective`; the model outputs `[batch, 1]` (or `[batch]`) scores.
    """

    def __init__(self, label_key: str | None = None, logits_key: str | None = None):
        self.label_key = label_key
        self.logits_key = logits_key

    def _labels(self, labels):
        labels = labels[self.label_key] if self.label_key is not None else labels
        return tf.reshape(tf.cast(labels, tf.float32), [-1])

    def _scores(self, outputs):
        scores = outputs[self.logits_key] if self.logits_key is not None else outputs
        return tf.reshape(tf.cast(scores, tf.float32), [-1])

    def loss_weights(self, labels):
        return {"loss": tf.ones(tf.shape(self._labels(labels)), tf.float32)}

    def losses(self, labels, outputs):
        return {"loss": tf.square(self._scores(outputs) - self._labels(labels))}

    def metrics(self, labels, outputs):
        return {}


class PretrainingObjective:
    """The original objective for the training loop: masked-LM loss (weighted mean over real predictions) plus
    next-sentence loss, with MLM and NSP accuracy; with `objective="ltr"`, the left-to-right LM's next-token loss
    (`ltr_loss`, weighted mean over the positions whose next token is real) and `ltr_accuracy`.

    The terms are `official.nlp.modeling.losses`' per-element losses and weights, so the loop's loss equals
    `losses.pretraining_losses` (`losses.ltr_losses`) on the same global batch (what `BertPretrainer.fit`
    minimizes).
    """

    def __init__(self, use_next_sentence_label: bool = True, objective: str = MLM):
        self.use_next_sentence_label = use_next_sentence_label and objective == MLM
        self.objective = objective

    def loss_weights(self, labels: Mapping) -> dict:
        if self.objective == LTR:
            return bert_losses.ltr_loss_weights(labels)
        return bert_losses.pretraining_loss_weights(labels, self.use_next_sentence_label)

    def losses(self, labels: Mapping, outputs: Mapping) -> dict:
        if self.objective == LTR:
            return bert_losses.ltr_element_losses(labels, outputs)
        return bert_losses.pretraining_element_losses(labels, outputs, self.use_next_sentence_label)

    def metrics(self, labels: Mapping, outputs: Mapping) -> dict:
        if self.objective == LTR:
            return bert_losses.ltr_metrics(labels, outputs)
        return bert_losses.pretraining_metrics(labels, outputs, self.use_next_sentence_label)


SPAN_LOSS_WEIGHTS = {"start_logits": 0.5, "end_logits": 0.5}


def span_losses() -> dict:
    """Keras losses for `BertSpanLabeler.compile`: cross entropy of the start and of the end position."""
    return {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True) for name in SPAN_LOSS_WEIGHTS}


class SpanObjective:
    """The original loss for the training loop: the mean of the start and end cross entropies; and accuracies."""

    def loss_weights(self, labels):
        return {"loss": tf.ones(tf.shape(labels["start_logits"]), tf.float32)}

    def losses(self, labels, outputs):
        return {
            "loss": 0.5
            * (
                cross_entropy(labels["start_logits"], outputs["start_logits"])
                + cross_entropy(labels["end_logits"], outputs["end_logits"])
            )
        }

    def metrics(self, labels, outputs):
        return {f"{name[:-7]}_accuracy": weighted_accuracy(labels[name], outputs[name]) for name in SPAN_LOSS_WEIGHTS}
