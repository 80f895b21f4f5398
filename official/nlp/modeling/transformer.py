"""The post-layer-norm Transformer block of BERT and its self-attention."""

import math

import keras
import tensorflow as tf
from keras import ops

from official.nlp.modeling.activations import get_activation

# The original adds -10000 to the scores of padded positions; exp(-10000) is 0 in float32, so the softmax gives
# them exactly zero weight while a fully padded row stays finite (uniform) instead of NaN.
_MASK_ADDER = -10000.0


def _rows(layer: keras.layers.Dense, rows):
    """`layer` applied to 2-D `[rows, in]` inputs as `MatMul` + `BiasAdd`, on the layer's own variables.

    That exact pair (Keras' `Dense` adds the bias with `AddV2` and runs 3-D inputs through `tensordot` reshapes)
    is what TensorFlow's CPU graph optimizer fuses, with a GELU after it, into one oneDNN kernel
    (`python -m benchmarks.compare --what=step` measures the step). Checkpoints do not change.
    """
    if layer.quantization_mode is not None:  # quantized kernels need Dense's own call
        return layer(rows)
    return tf.nn.bias_add(tf.matmul(rows, layer.kernel), layer.bias)


def _dense(units: int, initializer_range: float, name: str, dtype) -> keras.layers.Dense:
    return keras.layers.Dense(
        units, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range), name=name, dtype=dtype
    )


@keras.saving.register_keras_serializable(package="bert")
class BertSelfAttention(keras.layers.Layer):
    """Multi-head self-attention with separate `[H, H]` query, key and value projections.

    Hand-written rather than `keras.layers.MultiHeadAttention` because BERT checkpoints (TF1 and Hugging Face)
    store the projections as plain `[H, H]` dense layers, and the softmax must run in float32 under mixed
    precision. The output projection lives in the block (`attention/output/dense` in TF1 names).

    Call arguments: `hidden_states` `[batch, seq, H]`; `attention_mask` `[batch, seq]` (1 = attend, 0 = padding)
    or `[batch, from_seq, to_seq]`. Returns the context `[batch, seq, H]` in the compute dtype.

    With `causal=True` (a left-to-right model), position i also ignores every position after it: the mask is the
    padding mask times the lower triangle, so a future position gets exactly zero weight, with dropout too.
    """

    def __init__(
        self,
        num_attention_heads: int,
        dropout: float = 0.1,
        initializer_range: float = 0.02,
        causal: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_attention_heads = num_attention_heads
        self.dropout_rate = dropout
        self.initializer_range = initializer_range
        self.causal = causal
        self.dropout = keras.layers.Dropout(dropout, dtype="float32", name="dropout")

    def build(self, hidden_states_shape, attention_mask_shape=None):
        hidden_size = hidden_states_shape[-1]
        if hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden size {hidden_size} is not divisible by {self.num_attention_heads} heads")
        self.head_size = hidden_size // self.num_attention_heads
        for name in ("query", "key", "value"):
            layer = _dense(hidden_size, self.initializer_range, name, self.dtype_policy)
            layer.build(hidden_states_shape)
            setattr(self, name, layer)
        self.built = True

    def _split_heads(self, x, batch_size):
        x = ops.reshape(x, (batch_size, -1, self.num_attention_heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))  # [batch, heads, seq, head_size]

    def call(self, hidden_states, attention_mask=None, training=None):
        batch_size = ops.shape(hidden_states)[0]
        rows = ops.reshape(hidden_states, (-1, hidden_states.shape[-1]))  # [batch * seq, H]
        query = self._split_heads(_rows(self.query, rows), batch_size)
        key = self._split_heads(_rows(self.key, rows), batch_size)
        value = self._split_heads(_rows(self.value, rows), batch_size)

        scores = tf.matmul(query, key, transpose_b=True)  # no separate transpose of the keys
        scores = ops.cast(scores, "float32") * (1.0 / math.sqrt(self.head_size))
        mask = None
        if attention_mask is not None:
            mask = ops.cast(attention_mask, "float32")
            mask = mask[:, None, None, :] if len(mask.shape) == 2 else mask[:, None, :, :]
        if self.causal:
            length = tf.shape(scores)[-1]
            lower = tf.linalg.band_part(tf.ones([length, length], tf.float32), -1, 0)  # [from, to]: to <= from
            mask = lower if mask is None else mask * lower
        if mask is not None:
            scores = scores + (1.0 - mask) * _MASK_ADDER
        probs = ops.softmax(scores, axis=-1)
        probs = self.dropout(probs, training=training)

        context = ops.matmul(ops.cast(probs, self.compute_dtype), value)
        context = ops.transpose(context, (0, 2, 1, 3))
        return ops.reshape(context, (batch_size, -1, self.num_attention_heads * self.head_size))

    def compute_output_shape(self, hidden_states_shape, attention_mask_shape=None):
        return tuple(hidden_states_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_attention_heads=self.num_attention_heads,
            dropout=self.dropout_rate,
            initializer_range=self.initializer_range,
            causal=self.causal,
        )
        return config


@keras.saving.register_keras_serializable(package="bert")
class TransformerBlock(keras.layers.Layer):
    """One post-layer-norm BERT block.

    `x = LN(x + dropout(dense(attention(x))))`, then `x = LN(x + dropout(dense(act(dense(x)))))`. Layer norms
    run in float32 and so does the residual stream between blocks; dense layers and attention matmuls use the
    compute dtype of the policy (`mixed_bfloat16`/`mixed_float16`). `causal=True` makes the attention left-to-right
    (`BertSelfAttention`).

    Example:

    >>> block = TransformerBlock(num_attention_heads=2, intermediate_size=16)
    >>> block(ops.ones((2, 5, 8)), attention_mask=ops.ones((2, 5), "int32")).shape
    TensorShape([2, 5, 8])
    """

    def __init__(
        self,
        num_attention_heads: int,
        intermediate_size: int,
        hidden_act: str = "gelu",
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        causal: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.causal = causal
        self.hidden_act = hidden_act
        self.activation = get_activation(hidden_act)
        self.training_activation = get_activation(hidden_act, training=True)
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps

    def build(self, hidden_states_shape, attention_mask_shape=None):
        hidden_size = hidden_states_shape[-1]
        intermediate_shape = tuple(hidden_states_shape[:-1]) + (self.intermediate_size,)
        policy = self.dtype_policy
        self.attention = BertSelfAttention(
            self.num_attention_heads,
            dropout=self.attention_probs_dropout_prob,
            initializer_range=self.initializer_range,
            causal=self.causal,
            dtype=policy,
            name="attention",
        )
        self.attention.build(hidden_states_shape, attention_mask_shape)
        self.attention_output_dense = _dense(hidden_size, self.initializer_range, "attention_output_dense", policy)
        self.attention_output_dense.build(hidden_states_shape)
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_eps, dtype="float32", name="attention_layer_norm"
        )
        self.attention_layer_norm.build(hidden_states_shape)
        self.intermediate_dense = _dense(self.intermediate_size, self.initializer_range, "intermediate_dense", policy)
        self.intermediate_dense.build(hidden_states_shape)
        self.output_dense = _dense(hidden_size, self.initializer_range, "output_dense", policy)
        self.output_dense.build(intermediate_shape)
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_eps, dtype="float32", name="output_layer_norm"
        )
        self.output_layer_norm.build(hidden_states_shape)
        self.dropout = keras.layers.Dropout(self.hidden_dropout_prob, dtype=policy, name="dropout")
        self.built = True

    @property
    def input_dtype(self):
        # Keras would cast inputs to the compute dtype; keep them float32 so the residual sums stay float32.
        return "float32"

    def call(self, hidden_states, attention_mask=None, training=None):
        shape = ops.shape(hidden_states)
        hidden_size = hidden_states.shape[-1]
        # The dense layers work on [batch * seq, H] rows (see _rows); the reshapes are free.
        residual = ops.reshape(hidden_states, (-1, hidden_size))
        x = self.attention(hidden_states, attention_mask=attention_mask, training=training)
        x = self.dropout(_rows(self.attention_output_dense, ops.reshape(x, (-1, hidden_size))), training=training)
        x = self.attention_layer_norm(residual + ops.cast(x, "float32"))
        residual = x
        activation = self.training_activation if training else self.activation
        x = activation(_rows(self.intermediate_dense, ops.cast(x, self.compute_dtype)))
        x = self.dropout(_rows(self.output_dense, x), training=training)
        return ops.reshape(self.output_layer_norm(residual + ops.cast(x, "float32")), shape)

    def compute_output_shape(self, hidden_states_shape, attention_mask_shape=None):
        return tuple(hidden_states_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
            causal=self.causal,
        )
        return config
