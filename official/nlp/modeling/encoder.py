"""`BertEncoder`: the BERT Transformer encoder as a functional Keras model."""

from __future__ import annotations

import keras
from keras import ops

from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.embeddings import BertEmbeddings
from official.nlp.modeling.transformer import TransformerBlock

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")  # the inputs of TF-Hub's BERT SavedModels


def encoder_inputs(batch_shape: tuple = (None,)) -> dict[str, keras.KerasTensor]:
    """The three symbolic model inputs (int32), with `batch_shape` dims before a dynamic sequence length."""
    shape = tuple(batch_shape[1:]) + (None,)
    return {name: keras.Input(shape=shape, dtype="int32", name=name) for name in INPUT_NAMES}


def _last_real_token(sequence, input_mask):
    """`sequence[b, last real position of b]`, `[batch, H]`; position 0 for a row without real tokens."""
    # The running count of real tokens reaches its maximum first at the last real one (argmax takes the first).
    last = ops.argmax(ops.cumsum(ops.cast(input_mask, "int32"), axis=1), axis=1)
    return ops.take_along_axis(sequence, ops.cast(last, "int32")[:, None, None], axis=1)[:, 0, :]


@keras.saving.register_keras_serializable(package="bert")
class BertEncoder(keras.Model):
    """The BERT encoder: embeddings, `num_hidden_layers` post-LN Transformer blocks and the tanh pooler.

    Inputs: a dict of int32 `[batch, seq]` tensors `input_word_ids`, `input_mask` (1 for real tokens, 0 for
    padding) and `input_type_ids` (segment ids). The sequence length is dynamic.

    Outputs: a dict with `sequence_output` `[batch, seq, H]` (the last layer), `pooled_output` `[batch, H]`
    (tanh dense on the `[CLS]` position) and `encoder_outputs` (a list, one `[batch, seq, H]` per layer). All
    outputs are float32, also under a mixed precision policy.

    With `attention="left_to_right"` every block attends only to the current and earlier positions, so
    `sequence_output` and `encoder_outputs` at position i do not depend on any token after i. `pooled_output` then
    reads the last real token (the last position where `input_mask` is 1), the only one that has seen the whole
    input, instead of `[CLS]`, which sees nothing but itself (GPT classifies from the last token too).

    The constructor arguments are the `BertConfig` fields, so `BertEncoder(**config.to_dict())` and
    `BertEncoder.from_bert_config(config)` are the same.

    Example:

    >>> import numpy as np
    >>> from official.nlp.modeling.configs import BertConfig
    >>> encoder = BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=100))
    >>> ids = np.array([[2, 7, 8, 3, 0]], "int32")
    >>> out = encoder({"input_word_ids": ids, "input_mask": np.int32(ids > 0),
    ...                "input_type_ids": np.zeros_like(ids)})
    >>> out["sequence_output"].shape, out["pooled_output"].shape, len(out["encoder_outputs"])
    (TensorShape([1, 5, 128]), TensorShape([1, 128]), 2)
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int = 768,
        num_hidden_layers: int = 12,
        num_attention_heads: int = 12,
        intermediate_size: int = 3072,
        hidden_act: str = "gelu",
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        attention: str = "bidirectional",
        dtype=None,
        **kwargs,
    ):
        # Validates the hyperparameters with the same messages as a config file would get.
        config = BertConfig(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            num_hidden_layers=num_hidden_layers,
            num_attention_heads=num_attention_heads,
            intermediate_size=intermediate_size,
            hidden_act=hidden_act,
            hidden_dropout_prob=hidden_dropout_prob,
            attention_probs_dropout_prob=attention_probs_dropout_prob,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            initializer_range=initializer_range,
            layer_norm_eps=layer_norm_eps,
            attention=attention,
        )

        # === Layers ===
        embeddings = BertEmbeddings(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            dropout=hidden_dropout_prob,
            initializer_range=initializer_range,
            layer_norm_eps=layer_norm_eps,
            name="embeddings",
        )
        transformer_layers = [
            TransformerBlock(
                num_attention_heads=num_attention_heads,
                intermediate_size=intermediate_size,
                hidden_act=hidden_act,
                hidden_dropout_prob=hidden_dropout_prob,
                attention_probs_dropout_prob=attention_probs_dropout_prob,
                initializer_range=initializer_range,
                layer_norm_eps=layer_norm_eps,
                causal=config.left_to_right,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_hidden_layers)
        ]
        # The pooler is one [H, H] matmul per sequence; float32 costs nothing and keeps pooled_output float32.
        pooler = keras.layers.Dense(
            hidden_size,
            activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype="float32",
            name="pooler",
        )

        # === Functional model ===
        inputs = encoder_inputs()
        x = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
        encoder_outputs = []
        for layer in transformer_layers:
            x = layer(x, attention_mask=inputs["input_mask"])
            encoder_outputs.append(x)
        pooled_output = pooler(_last_real_token(x, inputs["input_mask"]) if config.left_to_right else x[:, 0, :])
        super().__init__(
            inputs=inputs,
            outputs={"sequence_output": x, "pooled_output": pooled_output, "encoder_outputs": encoder_outputs},
            dtype=dtype,
            **kwargs,
        )

        # === Attributes (set after the functional init, which resets layer tracking) ===
        # Functional.__init__ drops `dtype`; record it so get_config and the task heads see the policy.
        self.dtype_policy = keras.dtype_policies.get(dtype)
        self.config = config
        self.embeddings = embeddings
        self.transformer_layers = transformer_layers
        # One attribute per block as well: tf.train.Checkpoint then keys the variables by these names
        # (`encoder/transformer_layer_3/...`) instead of by their position in the functional graph.
        for i, layer in enumerate(transformer_layers):
            setattr(self, f"transformer_layer_{i}", layer)
        self.pooler = pooler

    @classmethod
    def from_bert_config(cls, config: BertConfig, **kwargs) -> BertEncoder:
        """Builds an encoder (with fresh weights) for a `BertConfig`; `kwargs` go to `keras.Model` (name, dtype)."""
        return cls(**config.to_dict(), **kwargs)

    def get_embedding_table(self):
        """The `[vocab_size, H]` word embedding variable (for output weight tying)."""
        return self.embeddings.word_embeddings.embeddings

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable, **self.config.to_dict()}
        if isinstance(self.dtype_policy, keras.DTypePolicy):
            config["dtype"] = keras.dtype_policies.serialize(self.dtype_policy)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "dtype" in config and isinstance(config["dtype"], dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)
