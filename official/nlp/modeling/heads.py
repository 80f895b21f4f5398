"""Prediction heads that need more than a `keras.layers.Dense`: the masked-LM head (also the left-to-right LM's)."""

import keras
from keras import ops

from official.nlp.modeling.activations import get_activation


@keras.saving.register_keras_serializable(package="bert")
class MaskedLMHead(keras.layers.Layer):
    """The BERT masked-LM head: gather at `masked_lm_positions`, dense + activation + layer norm, then logits.

    The logits are `transform(x) @ E^T + output_bias`, where `E` is the word embedding table of
    `embedding_layer` (weight tying, as in the original). Without `embedding_layer` the head owns an
    `[vocab_size, H]` output matrix, which is what a standalone layer (e.g. deserialized alone) gets.

    Call arguments: `sequence_output` `[batch, seq, H]`, `masked_lm_positions` int `[batch, P]`.
    Returns float32 logits `[batch, P, vocab_size]`. Without `masked_lm_positions` it predicts at every position,
    `[batch, seq, vocab_size]`: the left-to-right LM's next-token logits, with the same transform, tied decoder and
    bias.

    TF1 names: `cls/predictions/transform/dense`, `cls/predictions/transform/LayerNorm`,
    `cls/predictions/output_bias`.

    Example:

    >>> head = MaskedLMHead(vocab_size=50)
    >>> head(ops.ones((2, 6, 8)), ops.zeros((2, 3), "int32")).shape
    TensorShape([2, 3, 50])
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_act: str = "gelu",
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        embedding_layer: keras.layers.Embedding | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_act = hidden_act
        self.activation = get_activation(hidden_act)
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.embedding_layer = embedding_layer
        if embedding_layer is not None and embedding_layer.input_dim != vocab_size:
            raise ValueError(
                f"MaskedLMHead: vocab_size {vocab_size} differs from the tied embedding's "
                f"{embedding_layer.input_dim} rows"
            )

    def build(self, sequence_output_shape, masked_lm_positions_shape=None):
        hidden_size = sequence_output_shape[-1]
        initializer = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        self.dense = keras.layers.Dense(
            hidden_size, kernel_initializer=initializer, dtype=self.dtype_policy, name="dense"
        )
        self.dense.build(sequence_output_shape)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_eps, dtype="float32", name="layer_norm"
        )
        self.layer_norm.build(sequence_output_shape)
        if self.embedding_layer is None:
            self.output_embeddings = self.add_weight(
                name="output_embeddings", shape=(self.vocab_size, hidden_size), initializer=initializer
            )
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros", dtype="float32", autocast=False
        )
        self.built = True

    def call(self, sequence_output, masked_lm_positions=None):
        x = sequence_output
        if masked_lm_positions is not None:
            positions = ops.cast(masked_lm_positions, "int32")
            x = ops.take_along_axis(sequence_output, positions[:, :, None], axis=1)  # [batch, P, H]
        x = self.layer_norm(self.activation(self.dense(x)))
        table = self.embedding_layer.embeddings if self.embedding_layer is not None else self.output_embeddings
        logits = ops.matmul(ops.cast(x, self.compute_dtype), ops.transpose(ops.cast(table, self.compute_dtype)))
        return ops.cast(logits, "float32") + self.output_bias

    def compute_output_spec(self, sequence_output, masked_lm_positions=None):
        rows = sequence_output.shape[:2] if masked_lm_positions is None else masked_lm_positions.shape
        shape = tuple(rows) + (self.vocab_size,)
        return keras.KerasTensor(shape, dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_act=self.hidden_act,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
        )
        return config
