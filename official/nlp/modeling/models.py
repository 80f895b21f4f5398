"""BERT task models: pretraining, classification/regression, span labeling, token classification, multiple choice.

Every model wraps a `BertEncoder` (`model.encoder`), takes the encoder's input dict (plus
`masked_lm_positions` for the pretrainer), is a functional Keras model (so `summary()`, `.keras` saving,
`fit` and SavedModel export work) and returns float32 logits.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
from keras import ops

from official.nlp.common.errors import InputError
from official.nlp.modeling import losses
from official.nlp.modeling.configs import LTR, MLM, attention_for, left_to_right_conflicts, objective_for
from official.nlp.modeling.encoder import BertEncoder, encoder_inputs
from official.nlp.modeling.heads import MaskedLMHead
from official.nlp.modeling.task_base import BertTask, float32_dense, head_initializer_range


@keras.saving.register_keras_serializable(package="bert")
class BertPretrainer(BertTask):
    """BERT pretraining: the masked-LM head (tied to the word embeddings) and, optionally, next-sentence prediction;
    or, with `objective="ltr"`, the paper's left-to-right LM baseline.

    Inputs: the encoder inputs plus `masked_lm_positions` int32 `[batch, P]`. Outputs: a dict with float32
    `mlm_logits` `[batch, P, vocab_size]` and, when `use_next_sentence_label`, `nsp_logits` `[batch, 2]`.

    The model knows its objective (`official.nlp.modeling.losses.pretraining_losses`), so it trains after a plain
    `compile(optimizer=...)` on a dataset of `(x, y)` where `y` holds `masked_lm_ids`, `masked_lm_weights` and
    `next_sentence_labels`. `fit` reports `loss`, `mlm_loss`, `mlm_accuracy` (over real predictions) and, with
    NSP, `nsp_loss` and `nsp_accuracy`.

    `use_next_sentence_label` defaults to True for the masked LM.
    `objective="ltr"` (the default for an encoder whose config has `attention="left_to_right"`, and only for one)
    predicts the next token at every position with the same head: inputs are the encoder inputs alone, the output
    is `ltr_logits` `[batch, seq, vocab_size]`, `y` is `losses.next_token_labels(...)` (`next_token_ids`,
    `next_token_weights`), `fit` reports `loss`, `ltr_loss` and `ltr_accuracy`, and there is no NSP head.

    Example:

    >>> import numpy as np, keras
    >>> from official.nlp.modeling.configs import BertConfig
    >>> encoder = BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=100))
    >>> pretrainer = BertPretrainer(encoder)
    >>> x = {"input_word_ids": np.full((4, 8), 5, "int32"), "input_mask": np.ones((4, 8), "int32"),
    ...      "input_type_ids": np.zeros((4, 8), "int32"), "masked_lm_positions": np.ones((4, 2), "int32")}
    >>> y = {"masked_lm_ids": np.full((4, 2), 7, "int32"), "masked_lm_weights": np.ones((4, 2), "float32"),
    ...      "next_sentence_labels": np.zeros((4, 1), "int32")}
    >>> pretrainer.compile(optimizer=keras.optimizers.Adam(1e-3))
    >>> history = pretrainer.fit(x, y, epochs=1, verbose=0)
    >>> sorted(history.history)
    ['loss', 'mlm_accuracy', 'mlm_loss', 'nsp_accuracy', 'nsp_loss']
    """

    def __init__(
        self,
        encoder: BertEncoder,
        use_next_sentence_label: bool | None = None,
        mlm_activation: str | None = None,
        initializer_range: float | None = None,
        objective: str | None = None,
        **kwargs,
    ):
        config = encoder.config
        objective = objective_for(config.attention) if objective is None else objective
        conflicts = left_to_right_conflicts(
            objective, use_next_sentence_label=bool(use_next_sentence_label), dynamic_masking=False
        )
        if attention_for(objective) != config.attention:
            raise ValueError(
                f"objective={objective!r} needs a {attention_for(objective)} encoder; this one's attention is "
                f"{config.attention!r}"
            )
        if conflicts:
            raise ValueError(f"the left-to-right LM (objective={LTR!r}) has no next-sentence head")
        # Default: NSP with the masked LM, as the original.
        use_next_sentence_label = objective == MLM if use_next_sentence_label is None else use_next_sentence_label
        mlm_activation = config.hidden_act if mlm_activation is None else mlm_activation
        initializer_range = head_initializer_range(encoder, initializer_range)

        # === Layers ===
        # The LTR model uses the same head (and so the same checkpoint names): transform, tied decoder, bias.
        masked_lm = MaskedLMHead(
            vocab_size=config.vocab_size,
            hidden_act=mlm_activation,
            initializer_range=initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            embedding_layer=encoder.embeddings.word_embeddings,
            dtype=encoder.dtype_policy,
            name="masked_lm",
        )
        next_sentence = float32_dense(2, initializer_range, "next_sentence") if use_next_sentence_label else None

        # === Functional model ===
        inputs = encoder_inputs()
        encoder_input_names = tuple(inputs)
        if objective == MLM:
            inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        encoder_outputs = encoder({key: inputs[key] for key in encoder_input_names})
        if objective == LTR:
            outputs = {"ltr_logits": masked_lm(encoder_outputs["sequence_output"])}
        else:
            outputs = {"mlm_logits": masked_lm(encoder_outputs["sequence_output"], inputs["masked_lm_positions"])}
        if next_sentence is not None:
            outputs["nsp_logits"] = next_sentence(encoder_outputs["pooled_output"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Attributes ===
        self._finish_init(
            encoder,
            use_next_sentence_label=use_next_sentence_label,
            mlm_activation=mlm_activation,
            initializer_range=initializer_range,
            objective=objective,
        )
        self.objective = objective
        self.use_next_sentence_label = use_next_sentence_label
        self.masked_lm = masked_lm
        self.next_sentence = next_sentence
        prefix = objective
        self.lm_loss_tracker = keras.metrics.Mean(name=f"{prefix}_loss")
        self.lm_accuracy = keras.metrics.SparseCategoricalAccuracy(name=f"{prefix}_accuracy")
        if use_next_sentence_label:
            self.nsp_loss_tracker = keras.metrics.Mean(name="nsp_loss")
            self.nsp_accuracy = keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")

    def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
        """`keras.Model.compile` without `loss`/`metrics`: the pretrainer brings its own (see the class doc)."""
        if loss is not None or metrics is not None:
            raise ValueError(
                "BertPretrainer computes its own losses and metrics (official.nlp.modeling.losses); "
                "call compile(optimizer=...) without `loss` or `metrics`"
            )
        super().compile(optimizer=optimizer, **kwargs)

    def compile_from_config(self, config):
        # Keras skips overridden compile() methods when loading a .keras file; ours is safe to call.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        needed = losses.LTR_LABELS if self.objective == LTR else losses.PRETRAINING_LABELS
        if y is None:
            raise ValueError(f"BertPretrainer needs labels: fit/evaluate on (x, y) with y = {{{', '.join(needed)}}}")
        if sample_weight is not None:
            raise ValueError(f"BertPretrainer weighs predictions by y['{needed[1]}']; do not pass sample_weight")
        if self.objective == LTR:
            terms = losses.ltr_losses(y, y_pred)
            self.lm_loss_tracker.update_state(
                terms["ltr_loss"], sample_weight=ops.sum(ops.cast(y["next_token_weights"], "float32"))
            )
        else:
            terms = losses.pretraining_losses(y, y_pred, self.use_next_sentence_label)
            self.lm_loss_tracker.update_state(
                terms["mlm_loss"], sample_weight=ops.sum(ops.cast(y["masked_lm_weights"], "float32"))
            )
        if self.use_next_sentence_label:
            self.nsp_loss_tracker.update_state(terms["nsp_loss"])
        loss = terms["loss"]
        if self.losses:
            loss = loss + ops.sum(self.losses)
        # Keras sums gradients over replicas; scale as its own losses do (a no-op without tf.distribute).
        import tensorflow as tf

        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        return loss / replicas if replicas > 1 else loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if self.objective == LTR:
            self.lm_accuracy.update_state(
                y["next_token_ids"], y_pred["ltr_logits"], sample_weight=y["next_token_weights"]
            )
            return self.get_metrics_result()
        self.lm_accuracy.update_state(y["masked_lm_ids"], y_pred["mlm_logits"], sample_weight=y["masked_lm_weights"])
        if self.use_next_sentence_label:
            self.nsp_accuracy.update_state(ops.reshape(y["next_sentence_labels"], (-1,)), y_pred["nsp_logits"])
        return self.get_metrics_result()


@keras.saving.register_keras_serializable(package="bert")
class BertClassifier(BertTask):
    """Sentence (pair) classification on the pooled `[CLS]` output; `num_classes=1` is regression (STS-B).

    Outputs float32 logits `[batch, num_classes]` (a tensor, so `compile(loss=...)` takes any Keras loss).

    Example:

    >>> import numpy as np, keras
    >>> from official.nlp.modeling.configs import BertConfig
    >>> model = BertClassifier(BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=100)), 3)
    >>> model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    >>> x = {k: np.ones((2, 8), "int32") for k in ("input_word_ids", "input_mask", "input_type_ids")}
    >>> model.predict(x, verbose=0).shape
    (2, 3)
    """

    def __init__(
        self,
        encoder: BertEncoder,
        num_classes: int,
        dropout_rate: float = 0.1,
        initializer_range: float | None = None,
        **kwargs,
    ):
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1 (1 means regression), got {num_classes}")
        initializer_range = head_initializer_range(encoder, initializer_range)
        dropout = keras.layers.Dropout(dropout_rate, name="classifier_dropout")
        classifier = float32_dense(num_classes, initializer_range, "classifier")

        inputs = encoder_inputs()
        logits = classifier(dropout(encoder(inputs)["pooled_output"]))
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        self._finish_init(
            encoder, num_classes=num_classes, dropout_rate=dropout_rate, initializer_range=initializer_range
        )
        self.num_classes = num_classes
        self.classifier = classifier


SPAN_HEADS = ("dense", "bilstm")


def real_tokens_mask(input_mask):
    """The RNN mask of packed BERT inputs: `input_mask` != 0, with position 0 (`[CLS]`) always counted.

    Every real sequence starts with `[CLS]`, so this changes nothing for them; a row of padding alone (the empty-batch
    stand-in of the serving signatures) would be a fully masked sequence, which cuDNN's LSTM refuses on a GPU.
    """
    first = ops.equal(ops.cumsum(ops.ones_like(input_mask), axis=1), 1)  # works on a symbolic (unknown) length
    return ops.logical_or(ops.not_equal(input_mask, 0), first)


def check_label_names(label_names: Sequence[str], num_classes: int, *, head: str = "classifier") -> None:
    """Refuses label names that do not name each output of a classification head once, in order: predictions would
    be reported under the wrong names, or fail on an index past the list. A regression classifier (one output,
    `num_classes=1`) has none. Every export and every saved fine-tuned model directory checks its labels here."""
    names = [str(name) for name in label_names]
    if head == "classifier" and num_classes == 1:
        if names:
            raise InputError(
                f"{len(names)} label names ({', '.join(names)}) for a regression classifier (one output); pass none"
            )
        return
    if len(names) != num_classes:
        raise InputError(
            f"{len(names)} label names ({', '.join(names)}) for a {head} with {num_classes} classes; pass one name "
            "per class in the order of the training labels"
        )


@keras.saving.register_keras_serializable(package="bert")
class BertSpanLabeler(BertTask):
    """Extractive QA (SQuAD): start and end logits for every token.

    Outputs a dict of float32 `start_logits` and `end_logits`, each `[batch, seq]`. Padding positions are not
    masked (as in the original `run_squad.py`); answer post-processing only looks at real context tokens.

    `span_head` chooses what lies between the encoder's sequence output and the start/end dense layer:
    `"dense"` nothing (the original); `"bilstm"` a randomly initialised bidirectional LSTM of `lstm_units` per
    direction (default: the encoder's hidden size), the paper's "LTR & No NSP + BiLSTM" row of Table 5. The LSTM
    skips padding (`input_mask` 0), so the logits of the real tokens do not depend on how far a batch is padded.

    TF1 names of the dense layer: `cls/squad/output_weights` `[2, H]` and `cls/squad/output_bias`.

    Example:

    >>> import numpy as np
    >>> from official.nlp.modeling.configs import BertConfig
    >>> encoder = BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=100))
    >>> model = BertSpanLabeler(encoder, span_head="bilstm", lstm_units=8)
    >>> x = {k: np.ones((2, 6), "int32") for k in ("input_word_ids", "input_mask", "input_type_ids")}
    >>> model.predict(x, verbose=0)["start_logits"].shape
    (2, 6)
    """

    def __init__(
        self,
        encoder: BertEncoder,
        initializer_range: float | None = None,
        span_head: str = "dense",
        lstm_units: int | None = None,
        **kwargs,
    ):
        if span_head not in SPAN_HEADS:
            raise ValueError(f"span_head must be one of {SPAN_HEADS}, got {span_head!r}")
        if span_head == "dense" and lstm_units is not None:
            raise ValueError("lstm_units is for span_head='bilstm'")
        if span_head == "bilstm":
            lstm_units = encoder.config.hidden_size if lstm_units is None else int(lstm_units)
            if lstm_units < 1:
                raise ValueError(f"lstm_units must be positive, got {lstm_units}")
        initializer_range = head_initializer_range(encoder, initializer_range)
        span = float32_dense(2, initializer_range, "span_logits")
        bilstm = None
        if span_head == "bilstm":
            policy = encoder.dtype_policy
            bilstm = keras.layers.Bidirectional(
                keras.layers.LSTM(lstm_units, return_sequences=True, dtype=policy), dtype=policy, name="span_bilstm"
            )

        inputs = encoder_inputs()
        x = encoder(inputs)["sequence_output"]
        if bilstm is not None:
            x = bilstm(x, mask=real_tokens_mask(inputs["input_mask"]))
        logits = span(x)
        super().__init__(
            inputs=inputs, outputs={"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}, **kwargs
        )

        self._finish_init(encoder, initializer_range=initializer_range, span_head=span_head, lstm_units=lstm_units)
        self.span_head = span_head
        self.lstm_units = lstm_units
        self.span_logits = span
        if bilstm is not None:  # an attribute, so that checkpoints key its weights by name (model/span_bilstm/...)
            self.span_bilstm = bilstm


@keras.saving.register_keras_serializable(package="bert")
class BertTokenClassifier(BertTask):
    """Token classification (NER): float32 logits `[batch, seq, num_classes]` for every token."""

    def __init__(
        self,
        encoder: BertEncoder,
        num_classes: int,
        dropout_rate: float = 0.1,
        initializer_range: float | None = None,
        **kwargs,
    ):
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}")
        initializer_range = head_initializer_range(encoder, initializer_range)
        dropout = keras.layers.Dropout(dropout_rate, name="classifier_dropout")
        classifier = float32_dense(num_classes, initializer_range, "classifier")

        inputs = encoder_inputs()
        logits = classifier(dropout(encoder(inputs)["sequence_output"]))
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        self._finish_init(
            encoder, num_classes=num_classes, dropout_rate=dropout_rate, initializer_range=initializer_range
        )
        self.num_classes = num_classes
        self.classifier = classifier


@keras.saving.register_keras_serializable(package="bert")
class _FlattenChoices(keras.layers.Layer):
    """`[batch, choices, seq]` -> `[batch * choices, seq]` for each input (the choice count stays dynamic)."""

    def call(self, inputs):
        return {key: ops.reshape(value, (-1, ops.shape(value)[-1])) for key, value in inputs.items()}


@keras.saving.register_keras_serializable(package="bert")
class _UnflattenChoices(keras.layers.Layer):
    """`[batch * choices, 1]` scores -> `[batch, choices]`, taking the shape from the `[batch, choices, seq]` ids."""

    def call(self, scores, input_word_ids):
        return ops.reshape(scores, (ops.shape(input_word_ids)[0], ops.shape(input_word_ids)[1]))

    def compute_output_spec(self, scores, input_word_ids):
        return keras.KerasTensor(tuple(input_word_ids.shape[:2]), dtype=scores.dtype)


@keras.saving.register_keras_serializable(package="bert")
class BertMultipleChoice(BertTask):
    """Multiple choice (SWAG): each `[CLS] context [SEP] ending [SEP]` gets a score from the pooled output.

    Inputs: the encoder input names, each int32 `[batch, num_choices, seq]`. Outputs float32 logits
    `[batch, num_choices]` (softmax over choices; train with sparse categorical cross-entropy on the answer
    index).
    """

    def __init__(
        self, encoder: BertEncoder, dropout_rate: float = 0.1, initializer_range: float | None = None, **kwargs
    ):
        initializer_range = head_initializer_range(encoder, initializer_range)
        dropout = keras.layers.Dropout(dropout_rate, name="classifier_dropout")
        classifier = float32_dense(1, initializer_range, "classifier")

        inputs = encoder_inputs(batch_shape=(None, None))
        flat = _FlattenChoices(name="flatten_choices")(inputs)
        scores = classifier(dropout(encoder(flat)["pooled_output"]))
        logits = _UnflattenChoices(name="unflatten_choices")(scores, inputs["input_word_ids"])
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        self._finish_init(encoder, dropout_rate=dropout_rate, initializer_range=initializer_range)
        self.classifier = classifier
