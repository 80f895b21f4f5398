"""Export of `BertTokenClassifier` (NER): one label per input word, with the word's character offsets.

A *word* is a whitespace-separated run of the input, the unit of CoNLL-2003 (each CoNLL word is tokenized into
sub-tokens and its first sub-token carries the label). The graph tokenizes the whole text with offsets and starts
a new word at every sub-token that has whitespace before it (the original's whitespace: space, tab, newline,
carriage return and Unicode category Zs); the word's label is the argmax at its first sub-token. Words whose first
sub-token falls past `max_seq_length - 2` are truncated away, as in training, and are not returned.

Outputs of `serving_default` (`text_a` `[batch]` in), padded to the most words in the batch:
`words` (the word's text), `word_labels`, `word_label_ids` (-1 for padding), `word_probabilities`, `word_start`
and `word_end` (character offsets into the input, end exclusive; -1 for padding) and `num_words` `[batch]`.
`serve_token_ids` gives per-position `token_labels`, `token_label_ids`, `probabilities` and `logits`.
"""
from __future__ import annotations

import tensorflow as tf

from official.nlp.serving import export_base
from official.nlp.serving.export_base import ServingModule, string_spec

# Python BERT's whitespace (`_is_whitespace`), as an RE2 class.
WHITESPACE = r"[\t\n\r\p{Zs}]"


def char_offsets(texts, byte_offsets):
    """Character (code point) offsets of `byte_offsets` into `texts` (same shape; offsets on character
    boundaries, as the tokenizer's are)."""
    return tf.strings.length(tf.strings.substr(texts, tf.zeros_like(byte_offsets), byte_offsets), unit="UTF8_CHAR")


class TokenClassifierExport(ServingModule):
    """`BertTokenClassifier` with word-level outputs (see the module docstring)."""

    task = "ner"

    def __init__(self, model, *, label_names=(), **kwargs):
        if not label_names:
            label_names = [str(i) for i in range(model.num_classes)]
        if len(label_names) != model.num_classes:
            raise export_base.InputError(
                f"{len(label_names)} label names for a token classifier with {model.num_classes} classes; pass "
                "one name per class in the order of the training labels")
        super().__init__(model, label_names=label_names, **kwargs)

    def text_spec(self):
        return {"text_a": string_spec("text_a")}

    def pack(self, texts):
        text = texts["text_a"]
        ids, starts, ends = self.tokenizer.tokenize_with_offsets(text)
        return self.packer(ids), (ids, starts, ends)

    def token_id_outputs(self, features, logits):
        probabilities = tf.nn.softmax(logits, axis=-1)
        index = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"logits": logits, "probabilities": probabilities, "token_label_ids": index,
                "token_labels": tf.gather(self.label_names, index)}

    def text_outputs(self, texts, features, context, logits):
        text = texts["text_a"]
        ids, starts, ends = context
        batch = tf.shape(text)[0]
        rows = ids.value_rowids()
        position = tf.ragged.range(ids.row_lengths()).flat_values
        starts, ends = starts.flat_values, ends.flat_values
        previous_end = tf.concat([tf.zeros([1], ends.dtype), ends[:-1]], axis=0)
        previous_end = tf.where(position == 0, tf.zeros_like(previous_end), previous_end)
        gap = tf.strings.substr(tf.gather(text, rows), previous_end, starts - previous_end)
        is_first = tf.logical_or(position == 0, tf.strings.regex_full_match(gap, f"(?s).*{WHITESPACE}.*"))
        word_of_piece = tf.cumsum(tf.cast(is_first, tf.int32)) - 1
        first = tf.cast(tf.reshape(tf.where(is_first), [-1]), tf.int32)
        num_all = tf.shape(first)[0]
        word_rows = tf.gather(rows, first)
        word_byte_start = tf.gather(starts, first)
        word_byte_end = tf.math.unsorted_segment_max(ends, word_of_piece, num_all)
        # Keep the words whose first sub-token survived truncation ([CLS] takes position 0).
        packed_position = tf.gather(position, first) + 1
        kept = packed_position < self.seq_length - 1
        word_rows, word_byte_start, word_byte_end, packed_position = (
            tf.boolean_mask(t, kept) for t in (word_rows, word_byte_start, word_byte_end, packed_position))
        word_logits = tf.gather_nd(logits, tf.stack([tf.cast(word_rows, tf.int32), tf.cast(packed_position,
                                                                                          tf.int32)], axis=1))
        label_ids = tf.argmax(word_logits, axis=-1, output_type=tf.int32)
        word_text = tf.gather(text, word_rows)

        def per_row(values, default):
            ragged = tf.RaggedTensor.from_value_rowids(values, word_rows, nrows=tf.cast(batch, tf.int64))
            return ragged.to_tensor(default_value=default)

        return {
            "words": per_row(tf.strings.substr(word_text, word_byte_start, word_byte_end - word_byte_start), ""),
            "word_labels": per_row(tf.gather(self.label_names, label_ids), ""),
            "word_label_ids": per_row(label_ids, -1),
            "word_probabilities": per_row(tf.reduce_max(tf.nn.softmax(word_logits, axis=-1), axis=-1), 0.0),
            "word_start": per_row(tf.cast(char_offsets(word_text, word_byte_start), tf.int32), -1),
            "word_end": per_row(tf.cast(char_offsets(word_text, word_byte_end), tf.int32), -1),
            "num_words": tf.cast(tf.math.bincount(tf.cast(word_rows, tf.int32), minlength=batch, maxlength=batch),
                                 tf.int32),
        }
