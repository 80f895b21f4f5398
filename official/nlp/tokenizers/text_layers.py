"""In-graph preprocessing layers for BERT: an exact WordPiece tokenizer and the input packer.

Both are Keras layers built on TensorFlow and tensorflow-text ops, so they run eagerly, inside
`tf.data.Dataset.map`, in a `tf.function` and in an exported SavedModel (TF Serving needs only
`import tensorflow_text` to load the ops).

Example:

>>> tokenizer = BertTokenizer("vocab.txt", do_lower_case=True)          # doctest: +SKIP
>>> packer = tokenizer.packer(seq_length=128)                           # doctest: +SKIP
>>> ids = tokenizer(tf.constant(["Héllo world!", "½ price"]))           # doctest: +SKIP
>>> ids                                                                 # doctest: +SKIP
<tf.RaggedTensor [[7592, 2088, 999], [1092, 3976]]>
>>> features = packer([tokenizer(questions), tokenizer(contexts)])      # doctest: +SKIP
>>> sorted(features)                                                    # doctest: +SKIP
['input_mask', 'input_type_ids', 'input_word_ids']
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from official.nlp.common import output_files
from official.nlp.tokenizers import graph_basic_tokenizer, stock_routing, tokenization

VOCABULARY_ASSET = "vocabulary.txt"  # the tokenizer's file in a `.keras` archive's assets


def _load_vocabulary(vocabulary) -> list[str]:
    if isinstance(vocabulary, (str, os.PathLike)):
        return list(tokenization.load_vocab(vocabulary))
    tokens = [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in vocabulary]
    return tokens


@keras.saving.register_keras_serializable(package="bert")
class BertTokenizer(keras.layers.Layer):
    """WordPiece tokenizer that gives exactly the original BERT `FullTokenizer`'s ids, in-graph.

    Called on a string tensor `[batch]` it returns a `tf.RaggedTensor` `[batch, (tokens)]` of int32 ids (a scalar
    string gives a 1-D int32 tensor). `tokenize_with_offsets` also returns byte offsets into each input string.

    How it stays exact and fast: each string is checked with one precompiled regular expression. Strings made only
    of characters on which stock `tensorflow_text.FastBertTokenizer` provably behaves like the original (verified
    per character against Python's Unicode rules when the layer is built, see `stock_routing`) keep that fast C++
    op's ids, unless it emitted `[UNK]` (which is how a word over its byte limit shows). The others (compatibility
    characters such as `½`, `ß`, Greek capital sigma, Hangul when uncased, emoji, ...) go through an exact path
    that applies tables derived from Python's `unicodedata` and `str.lower` with TF ops and then tf-text's WordPiece
    on the resulting words (`graph_basic_tokenizer`). A batch is cut into `parallel_shards` contiguous slices
    tokenized side by side, since each tf-text op uses one core.

    Args:
      vocabulary: path of `vocab.txt`, or the list of tokens in id order. A `.keras` file holds it as an asset
        (`save_assets`), not in the layer's config: `keras.saving.load_model` builds the layer with None and then
        reads the asset.
      do_lower_case: lower-case and strip accents (uncased models).
      max_input_chars_per_word: longer words (in characters after normalization) become `[UNK]`.
      vocab_size: if given, the vocabulary must have this many tokens (e.g. `bert_config.vocab_size`).
      fast_path: route strings that allow it through stock `FastBertTokenizer` (same ids, faster). False sends
        everything through the exact path.
      parallel_shards: slices of a batch tokenized in parallel (default: the CPU count, at most 8). Output order
        and ids do not depend on it.
      **kwargs: `keras.layers.Layer` arguments (`name`, ...).

    The vocabulary is validated like `tokenization.FullTokenizer`'s: special tokens present, size, and case.

    Example:

    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "!"],
    ...                           do_lower_case=True)
    >>> tokenizer(tf.constant(["Unaffable!"])).to_list()
    [[5, 6, 7, 8]]
    """

    def __init__(
        self,
        vocabulary: str | os.PathLike | Sequence[str] | None,
        do_lower_case: bool = True,
        *,
        max_input_chars_per_word: int = tokenization.MAX_INPUT_CHARS_PER_WORD,
        vocab_size: int | None = None,
        fast_path: bool = True,
        parallel_shards: int | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.do_lower_case = bool(do_lower_case)
        self.max_input_chars_per_word = int(max_input_chars_per_word)
        self.fast_path = bool(fast_path)
        self.parallel_shards = int(min(os.cpu_count() or 1, 8) if parallel_shards is None else parallel_shards)
        if self.parallel_shards < 1:
            raise ValueError(f"parallel_shards must be at least 1, got {parallel_shards}")
        self._vocab = None
        if vocabulary is not None:  # None only while Keras loads a saved model: `load_assets` sets it
            self.set_vocabulary(vocabulary, vocab_size=vocab_size)

    def set_vocabulary(self, vocabulary: str | os.PathLike | Sequence[str], *, vocab_size: int | None = None) -> None:
        """Validates `vocabulary` (a `vocab.txt` path or the tokens in id order) and builds the WordPiece tables."""
        source = os.fspath(vocabulary) if isinstance(vocabulary, (str, os.PathLike)) else "vocabulary"
        tokens = _load_vocabulary(vocabulary)
        tokenization.validate_vocab(tokens, vocab_size=vocab_size, do_lower_case=self.do_lower_case, source=source)
        unk = tokenization.UNK_TOKEN
        try:
            exact = graph_basic_tokenizer.ExactBasicTokenizer(
                tokens, self.do_lower_case, self.max_input_chars_per_word, unk
            )
            router = (
                stock_routing.StockRouter(tokens, self.do_lower_case, self.max_input_chars_per_word, unk)
                if self.fast_path
                else None
            )
        except Exception as e:  # tf-text's builders fail with terse messages
            raise tokenization.VocabularyError(f"{source}: tensorflow-text cannot build a WordPiece model: {e}") from e
        self._vocab, self._exact, self._router = tokens, exact, router
        self._token_to_id = {t: i for i, t in enumerate(tokens)}

    # -- the vocabulary as a `.keras` asset -----------------------------------------------------------------------

    def save_assets(self, dir_path: str) -> None:
        """Keras' `.keras` saving: the vocabulary goes in as a file (the config holds none), so loading runs no code
        of the file's and keeps Keras' `safe_mode`."""
        output_files.write_text(os.path.join(dir_path, VOCABULARY_ASSET), "".join(f"{t}\n" for t in self._vocabulary()))

    def load_assets(self, dir_path: str) -> None:
        self.set_vocabulary(os.path.join(dir_path, VOCABULARY_ASSET))

    # -- vocabulary ---------------------------------------------------------------------------------------------

    def _vocabulary(self) -> list[str]:
        if self._vocab is None:
            raise ValueError(
                f"BertTokenizer {self.name!r} has no vocabulary: pass one to the constructor, or load the saved model "
                "with keras.saving.load_model (which reads it from the file's assets)"
            )
        return self._vocab

    @property
    def has_vocabulary(self) -> bool:
        """False only between `from_config` and `load_assets` while Keras loads a saved model."""
        return self._vocab is not None

    @property
    def vocabulary(self) -> list[str]:
        return list(self._vocabulary())

    @property
    def vocab_size(self) -> int:
        return len(self._vocabulary())

    def token_to_id(self, token: str) -> int:
        self._vocabulary()
        return self._token_to_id[token]

    def id_to_token(self, token_id: int) -> str:
        return self._vocabulary()[int(token_id)]

    def special_token_ids(self) -> dict[str, int]:
        """Ids of `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]` (keys `pad_id`, `unk_id`, `cls_id`, `sep_id`,
        `mask_id`)."""
        names = {"pad_id": "[PAD]", "unk_id": "[UNK]", "cls_id": "[CLS]", "sep_id": "[SEP]", "mask_id": "[MASK]"}
        return {key: self.token_to_id(token) for key, token in names.items()}

    def packer(self, seq_length: int, **kwargs) -> BertPackInputs:
        """A `BertPackInputs` with this vocabulary's `[CLS]`, `[SEP]` and `[PAD]` ids."""
        ids = self.special_token_ids()
        return BertPackInputs(
            seq_length,
            start_of_sequence_id=ids["cls_id"],
            end_of_segment_id=ids["sep_id"],
            padding_id=ids["pad_id"],
            **kwargs,
        )

    # -- tokenization -------------------------------------------------------------------------------------------

    def _routed(self, texts, with_offsets: bool):
        self._vocabulary()
        exact = self._exact.tokenize_with_offsets if with_offsets else self._exact.tokenize
        if self._router is None:
            return exact(texts)
        return self._router.tokenize(texts, exact, with_offsets)

    def _sharded(self, texts, with_offsets: bool):
        """`_routed` on contiguous slices of the batch, which TF's executor runs in parallel; concatenated back."""
        if self.parallel_shards == 1:
            return self._routed(texts, with_offsets)
        size = tf.shape(texts, out_type=tf.int64)[0]
        bounds = [size * i // self.parallel_shards for i in range(self.parallel_shards + 1)]
        parts = [self._routed(texts[bounds[i] : bounds[i + 1]], with_offsets) for i in range(self.parallel_shards)]
        if with_offsets:
            return tuple(tf.concat(list(outputs), 0) for outputs in zip(*parts))
        return tf.concat(parts, 0)

    @staticmethod
    def _check_text(inputs) -> None:
        """A clear TypeError for non-text input, raised before Keras wraps it (or fails on a list of ints)."""
        dtype = getattr(inputs, "dtype", None)
        if dtype is None:
            try:
                dtype = np.asarray(inputs).dtype
            except (TypeError, ValueError):
                return
        try:
            dtype = tf.as_dtype(dtype)
        except TypeError:
            return  # str/bytes/object arrays: text, or something tf.string conversion will name
        if dtype == tf.string:
            return
        raise TypeError(
            f"BertTokenizer takes text (tf.string or Python str), got {dtype.name} values. "
            "Token ids are already tokenized: pass them to the model (or to BertPackInputs) instead."
        )

    def __call__(self, inputs, *args, **kwargs):
        self._check_text(inputs)
        if isinstance(inputs, (str, bytes, list, tuple)):  # Keras takes only tensors positionally
            inputs = tf.constant(inputs, tf.string)
        return super().__call__(inputs, *args, **kwargs)

    def _apply(self, inputs, with_offsets: bool):
        self._check_text(inputs)
        texts = tf.convert_to_tensor(inputs, dtype=tf.string)
        rank = texts.shape.rank
        if rank not in (0, 1):
            raise ValueError(
                f"BertTokenizer takes a string scalar or a 1-D batch of strings, got shape {texts.shape}. "
                "Reshape the input (e.g. tf.reshape(x, [-1]))."
            )
        outputs = self._sharded(tf.reshape(texts, [-1]), with_offsets)
        if rank == 0:
            outputs = tuple(o[0] for o in outputs) if with_offsets else outputs[0]
        return outputs

    def call(self, inputs):
        return self._apply(inputs, with_offsets=False)

    def compute_output_spec(self, inputs):
        # Without running the tokenizer: a functional model that holds this layer is rebuilt from its config before
        # Keras loads the vocabulary asset.
        return keras.KerasTensor(tuple(inputs.shape) + (None,), dtype="int32")

    def tokenize(self, inputs):
        """Same as calling the layer: int32 ids, `[batch, (tokens)]`."""
        return self._apply(inputs, with_offsets=False)

    def tokenize_with_offsets(self, inputs):
        """Returns `(ids, start_offsets, end_offsets)`; offsets are int64 UTF-8 byte offsets into each input string
        (`tf.strings.substr(text, start, end - start)` is the token's original text, as in tf-text)."""
        return self._apply(inputs, with_offsets=True)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": None,  # an asset of the `.keras` file (`save_assets`), not 30k tokens of JSON
                "do_lower_case": self.do_lower_case,
                "max_input_chars_per_word": self.max_input_chars_per_word,
                "fast_path": self.fast_path,
                "parallel_shards": self.parallel_shards,
            }
        )
        return config


def truncated_pair_lengths(len_a, len_b, max_total):
    """Lengths the original `_truncate_seq_pair` leaves: it pops from the end of the longer segment (B on ties)
    until the pair fits, so the result is the closed form below (int tensors, broadcast)."""
    len_a = tf.convert_to_tensor(len_a)
    len_b = tf.cast(len_b, len_a.dtype)
    max_total = tf.cast(max_total, len_a.dtype)
    half_up = (max_total + 1) // 2
    new_a = tf.minimum(len_a, tf.maximum(half_up, max_total - len_b))
    fits = len_a + len_b <= max_total
    return tf.where(fits, len_a, new_a), tf.where(fits, len_b, max_total - new_a)


@keras.saving.register_keras_serializable(package="bert")
class BertPackInputs(keras.layers.Layer):
    """Packs one or two tokenized segments into BERT's inputs: `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`
    (`[CLS] A [SEP]` for an example whose B has no token, as the original packs it).

    Called on a RaggedTensor `[batch, (tokens)]` of ids, or a list of one or two of them, it returns the dict
    `input_word_ids`, `input_mask`, `input_type_ids` of int32 `[batch, seq_length]` tensors. Truncation is the
    original's: a single segment keeps its first `seq_length - 2` tokens; a pair is cut by `_truncate_seq_pair`
    (pop the last token of the longer segment, of B when they are equally long, until `seq_length - 3` fit).
    1-D inputs (one example, e.g. inside `Dataset.map` before batching) give `[seq_length]` outputs.

    Args:
      seq_length: length of the packed sequence.
      start_of_sequence_id: id of `[CLS]`.
      end_of_segment_id: id of `[SEP]`.
      padding_id: id of `[PAD]`.

    Example:

    >>> packer = BertPackInputs(8, start_of_sequence_id=101, end_of_segment_id=102, padding_id=0)
    >>> out = packer([tf.ragged.constant([[1, 2, 3, 4]]), tf.ragged.constant([[5, 6, 7]])])
    >>> out["input_word_ids"].numpy().tolist(), out["input_type_ids"].numpy().tolist()
    ([[101, 1, 2, 3, 102, 5, 6, 102]], [[0, 0, 0, 0, 0, 1, 1, 1]])
    """

    def __init__(
        self,
        seq_length: int,
        *,
        start_of_sequence_id: int = 101,
        end_of_segment_id: int = 102,
        padding_id: int = 0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if seq_length < 3:
            raise ValueError(f"seq_length must be at least 3 to hold [CLS] A [SEP] B [SEP], got {seq_length}")
        self.seq_length = int(seq_length)
        self.start_of_sequence_id = int(start_of_sequence_id)
        self.end_of_segment_id = int(end_of_segment_id)
        self.padding_id = int(padding_id)

    @staticmethod
    def _as_ragged(segment):
        if isinstance(segment, tf.RaggedTensor):
            return tf.cast(segment, tf.int32), False
        segment = tf.convert_to_tensor(segment)
        if segment.shape.rank == 1:
            return tf.RaggedTensor.from_tensor(tf.cast(segment[None], tf.int32)), True
        if segment.shape.rank == 2:  # a dense batch: every row is full
            return tf.RaggedTensor.from_tensor(tf.cast(segment, tf.int32)), False
        raise ValueError(f"BertPackInputs takes [batch, (tokens)] ragged or 1-D ids, got shape {segment.shape}")

    @staticmethod
    def _keep_first(segment, lengths):
        positions = tf.ragged.range(segment.row_lengths())
        return tf.ragged.boolean_mask(segment, positions < tf.cast(lengths, positions.dtype)[:, None])

    def call(self, inputs, seq_length=None):
        """`seq_length` (an int or a scalar tensor) overrides the layer's, e.g. for TF-Hub's
        `bert_pack_inputs(segments, seq_length)` in a SavedModel."""
        seq_length = self.seq_length if seq_length is None else tf.cast(seq_length, tf.int64)
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(segments) not in (1, 2):
            raise ValueError(f"BertPackInputs packs one or two segments, got {len(segments)}")
        converted = [self._as_ragged(s) for s in segments]
        segments = [s for s, _ in converted]
        single_example = converted[0][1]
        if len(segments) == 1:
            segments = [self._keep_first(segments[0], tf.minimum(segments[0].row_lengths(), seq_length - 2))]
        else:
            len_a, len_b = truncated_pair_lengths(segments[0].row_lengths(), segments[1].row_lengths(), seq_length - 3)
            # A B with no token is no second segment, per example (the original's `if tokens_b:`): A alone may
            # then take `seq_length - 2` tokens, and its `[SEP]` is dropped below.
            no_b = tf.equal(segments[1].row_lengths(), 0)
            len_a = tf.where(no_b, tf.minimum(segments[0].row_lengths(), tf.cast(seq_length - 2, len_a.dtype)), len_a)
            segments = [self._keep_first(segments[0], len_a), self._keep_first(segments[1], len_b)]
        ids, type_ids = tf_text.combine_segments(
            segments, start_of_sequence_id=self.start_of_sequence_id, end_of_segment_id=self.end_of_segment_id
        )
        if len(segments) == 2:
            ids, type_ids = (
                self._keep_first(ids, ids.row_lengths() - tf.cast(no_b, tf.int64)),
                self._keep_first(type_ids, type_ids.row_lengths() - tf.cast(no_b, tf.int64)),
            )
        word_ids, mask = tf_text.pad_model_inputs(ids, seq_length, pad_value=self.padding_id)
        type_ids, _ = tf_text.pad_model_inputs(type_ids, seq_length, pad_value=0)
        outputs = {
            "input_word_ids": tf.cast(word_ids, tf.int32),
            "input_mask": tf.cast(mask, tf.int32),
            "input_type_ids": tf.cast(type_ids, tf.int32),
        }
        if single_example:
            outputs = {k: v[0] for k, v in outputs.items()}
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "seq_length": self.seq_length,
                "start_of_sequence_id": self.start_of_sequence_id,
                "end_of_segment_id": self.end_of_segment_id,
                "padding_id": self.padding_id,
            }
        )
        return config
