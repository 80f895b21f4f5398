"""The BERT input embeddings: word + token type + position, then layer norm and dropout."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="bert")
class BertEmbeddings(keras.layers.Layer):
    """Sums word, token type (segment) and absolute position embeddings, then layer norm and dropout.

    The layer runs in float32 whatever the global dtype policy: the sum and layer norm are cheap and feed the
    float32 residual stream of the Transformer blocks (mixed precision casts at the next dense layer).

    Weights (the original TF1 names in brackets): `word_embeddings` `[vocab_size, H]`
    (`bert/embeddings/word_embeddings`), `token_type_embeddings` `[type_vocab_size, H]`, `position_embeddings`
    `[max_position_embeddings, H]`, `layer_norm` (`bert/embeddings/LayerNorm`).

    Example:

    >>> layer = BertEmbeddings(vocab_size=100, hidden_size=8)
    >>> layer(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32")).shape
    TensorShape([2, 5, 8])
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        dropout: float = 0.1,
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        **kwargs,
    ):
        kwargs["dtype"] = "float32"
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout_rate = dropout
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps

        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.word_embeddings = keras.layers.Embedding(
            vocab_size, hidden_size, embeddings_initializer=initializer, dtype="float32", name="word_embeddings"
        )
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size,
            hidden_size,
            embeddings_initializer=initializer,
            dtype="float32",
            name="token_type_embeddings",
        )
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, dtype="float32", name="layer_norm")
        self.dropout = keras.layers.Dropout(dropout, dtype="float32", name="dropout")

    def build(self, input_word_ids_shape, input_type_ids_shape=None):
        self.word_embeddings.build(input_word_ids_shape)
        self.token_type_embeddings.build(input_word_ids_shape)
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
        )
        self.layer_norm.build(tuple(input_word_ids_shape) + (self.hidden_size,))
        self.built = True

    def _check_length(self, seq_length):
        if seq_length is not None and seq_length > self.max_position_embeddings:
            raise ValueError(
                f"Sequence length {seq_length} exceeds max_position_embeddings "
                f"({self.max_position_embeddings}); shorten the inputs (--max_seq_length)"
            )

    def call(self, input_word_ids, input_type_ids, training=None):
        self._check_length(input_word_ids.shape[1])
        seq_length = ops.shape(input_word_ids)[1]
        # Same order of additions as the original (word + type, then + position) so float32 rounding matches.
        x = self.word_embeddings(input_word_ids) + self.token_type_embeddings(input_type_ids)
        x = x + ops.expand_dims(self.position_embeddings[:seq_length], 0)
        x = self.layer_norm(x)
        return self.dropout(x, training=training)

    def compute_output_shape(self, input_word_ids_shape, input_type_ids_shape=None):
        self._check_length(input_word_ids_shape[1])
        return tuple(input_word_ids_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.pop("dtype", None)  # always float32, see the class docstring
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            dropout=self.dropout_rate,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
        )
        return config
