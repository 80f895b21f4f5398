"""The BERT paper's feature-based NER model (Section 5.3, Table 7): a frozen encoder's hidden layers as features.

The encoder runs in inference mode with its weights frozen; the chosen layers (by default the last four,
concatenated, the paper's best at 96.1 dev F1 with BERT-Base) feed a two-layer bidirectional LSTM of 768 units and a
per-token classifier. Only the LSTM and the classifier train.

Layers are named as in `feature_layers`: an index into the encoder's `encoder_outputs` (-1 the last Transformer
layer), `"embeddings"` (the embedding layer's output, the input of the first Transformer layer) or `"all"` (every
Transformer layer, first to last). Table 7's rows:

| Table 7 row                     | layers                 | combine        |
|---------------------------------|------------------------|----------------|
| Embeddings                      | `["embeddings"]`       | either         |
| Second-to-Last Hidden           | `[-2]`                 | either         |
| Last Hidden                     | `[-1]`                 | either         |
| Weighted Sum Last Four Hidden   | `[-1, -2, -3, -4]`     | `weighted_sum` |
| Concat Last Four Hidden         | `[-1, -2, -3, -4]`     | `concat`       |
| Weighted Sum All 12 Layers      | `["all"]`              | `weighted_sum` |
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
from keras import ops

from official.nlp.modeling.encoder import BertEncoder, encoder_inputs
from official.nlp.modeling.models import real_tokens_mask
from official.nlp.modeling.task_base import BertTask, float32_dense, head_initializer_range

COMBINE = ("concat", "weighted_sum")
EMBEDDINGS = "embeddings"
ALL_LAYERS = "all"


def feature_layers(layers: Sequence[int | str], num_layers: int) -> list[int | str]:
    """`layers` as the model keeps them: ints (numbers given as strings, from flags, too) and `"embeddings"`, with
    `"all"` spelled out as `0 ... num_layers - 1`. Raises `ValueError` for a name or index the encoder does not
    have, for a layer named twice, and for no layer."""
    chosen: list[int | str] = []
    for layer in layers:
        name = str(layer).strip()
        if name == ALL_LAYERS:
            chosen += range(num_layers)
        elif name == EMBEDDINGS:
            chosen.append(EMBEDDINGS)
        else:
            try:
                index = int(name)
            except ValueError:
                raise ValueError(
                    f"{name!r} is not a layer: give indexes of the model's {num_layers} layers (-1 is the last), "
                    f"{EMBEDDINGS!r} or {ALL_LAYERS!r}"
                ) from None
            if not -num_layers <= index < num_layers:
                raise ValueError(
                    f"layer {index} is not one of the model's {num_layers} layers (-{num_layers}...{num_layers - 1})"
                )
            chosen.append(index)
    positions = [layer if layer == EMBEDDINGS else layer % num_layers for layer in chosen]
    if len(set(positions)) != len(positions):
        raise ValueError(f"a layer is named twice in {list(layers)} (with {num_layers} layers, -1 is {num_layers - 1})")
    if not chosen:
        raise ValueError("no layer chosen")
    return chosen


@keras.saving.register_keras_serializable(package="bert")
class LayerCombination(keras.layers.Layer):
    """Combines hidden layers `[batch, seq, H]` into one feature tensor.

    `concat`: `[batch, seq, H * len(layers)]`. `weighted_sum`: the ELMo scalar mix `gamma * sum_j softmax(s)_j h_j`
    with trainable `s` (one per layer, starting equal) and `gamma` (starting at 1), `[batch, seq, H]`.
    """

    def __init__(self, combine: str = "concat", **kwargs):
        if combine not in COMBINE:
            raise ValueError(f"combine must be one of {COMBINE}, got {combine!r}")
        super().__init__(**kwargs)
        self.combine = combine

    def build(self, input_shape):
        if self.combine == "weighted_sum":
            self.layer_logits = self.add_weight(shape=(len(input_shape),), initializer="zeros", name="layer_logits")
            self.gamma = self.add_weight(shape=(), initializer="ones", name="gamma")

    def call(self, layers):
        if self.combine == "concat":
            return ops.concatenate(list(layers), axis=-1) if len(layers) > 1 else layers[0]
        weights = ops.cast(ops.softmax(self.layer_logits), self.compute_dtype)
        stacked = ops.stack(list(layers), axis=0)
        return ops.cast(self.gamma, self.compute_dtype) * ops.tensordot(weights, stacked, axes=1)

    def compute_output_shape(self, input_shape):
        first = tuple(input_shape[0])
        if self.combine == "weighted_sum":
            return first
        width = None if any(s[-1] is None for s in input_shape) else sum(s[-1] for s in input_shape)
        return first[:-1] + (width,)

    def get_config(self):
        return {**super().get_config(), "combine": self.combine}


class _FrozenFeatures(keras.layers.Layer):
    """Runs the encoder in inference mode and returns the chosen hidden layers (see `feature_layers`).

    A Keras functional model hands its own `training` flag to every layer it calls, overriding `training=False`
    given at construction; this layer's `call` has no `training` argument, so the flag stops here.
    """

    def __init__(self, encoder: BertEncoder, layers: Sequence[int | str], **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.layer_indices = list(layers)

    def call(self, inputs):
        hidden = self.encoder(inputs, training=False)["encoder_outputs"]
        # The encoder's outputs hold the Transformer layers only; its embedding layer, run again, gives the tensor
        # the first of them reads (a lookup and a layer norm: cheap next to the layers).
        embedded = (
            self.encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=False)
            if EMBEDDINGS in self.layer_indices
            else None
        )
        return [embedded if i == EMBEDDINGS else hidden[i] for i in self.layer_indices]


@keras.saving.register_keras_serializable(package="bert")
class BertFeatureTagger(BertTask):
    """Token classification from frozen BERT features through a BiLSTM (the paper's feature-based approach).

    Args:
      encoder: the `BertEncoder`; it is frozen (`trainable = False`) and always runs in inference mode.
      num_classes: tags per token.
      layers: indices into the encoder's `encoder_outputs` (-1 is the last layer), `"embeddings"`, `"all"` (see
        `feature_layers` and the module docstring for Table 7's rows).
      combine: `concat` (the paper's best) or `weighted_sum` of the chosen layers.
      lstm_units: units of each LSTM direction.
      num_lstm_layers: stacked bidirectional LSTMs.
      dropout_rate: dropout on the features and between LSTM layers.

    Outputs float32 logits `[batch, seq, num_classes]`; padding (`input_mask` 0) is masked out of the LSTMs.

    Example:

    >>> import numpy as np
    >>> from official.nlp.modeling.configs import BertConfig
    >>> encoder = BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=100))
    >>> model = BertFeatureTagger(encoder, num_classes=5, layers=(-1, -2), lstm_units=8)  # tiny has 2 layers
    >>> x = {k: np.ones((2, 6), "int32") for k in ("input_word_ids", "input_mask", "input_type_ids")}
    >>> model.predict(x, verbose=0).shape
    (2, 6, 5)
    >>> len(model.encoder.trainable_weights)
    0
    """

    def __init__(
        self,
        encoder: BertEncoder,
        num_classes: int,
        layers: Sequence[int | str] = (-1, -2, -3, -4),
        combine: str = "concat",
        lstm_units: int = 768,
        num_lstm_layers: int = 2,
        dropout_rate: float = 0.1,
        initializer_range: float | None = None,
        **kwargs,
    ):
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}")
        layers = feature_layers(layers, encoder.config.num_hidden_layers)
        if lstm_units < 1 or num_lstm_layers < 1:
            raise ValueError("lstm_units and num_lstm_layers must be positive")
        initializer_range = head_initializer_range(encoder, initializer_range)
        encoder.trainable = False
        policy = encoder.dtype_policy
        combination = LayerCombination(combine, dtype=policy, name="layer_combination")
        dropout = keras.layers.Dropout(dropout_rate, name="feature_dropout")
        lstms = [
            keras.layers.Bidirectional(
                keras.layers.LSTM(lstm_units, return_sequences=True, dtype=policy), dtype=policy, name=f"bilstm_{i}"
            )
            for i in range(num_lstm_layers)
        ]
        between = [keras.layers.Dropout(dropout_rate, name=f"lstm_dropout_{i}") for i in range(num_lstm_layers)]
        classifier = float32_dense(num_classes, initializer_range, "classifier")

        inputs = encoder_inputs()
        # The features are those of the pretrained model, without dropout, as in feature extraction.
        features = _FrozenFeatures(encoder, layers, dtype=policy, name="frozen_encoder")
        x = dropout(combination(features(inputs)))
        mask = real_tokens_mask(inputs["input_mask"])
        for lstm, drop in zip(lstms, between):
            x = drop(lstm(x, mask=mask))
        logits = classifier(x)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        self._finish_init(
            encoder,
            num_classes=num_classes,
            layers=layers,
            combine=combine,
            lstm_units=lstm_units,
            num_lstm_layers=num_lstm_layers,
            dropout_rate=dropout_rate,
            initializer_range=initializer_range,
        )
        self.num_classes = num_classes
        # Attributes, not just graph nodes: tf.train.Checkpoint (the training loop's checkpoints and model
        # directories) saves what attributes reach.
        self.layer_combination = combination
        self.bilstms = lstms
        self.classifier = classifier
