"""Export of `BertTokenClassifier` (NER): one label per input word, with the word's character offsets.

A *word* is a whitespace-separated run of the input, the unit of CoNLL-2003 (each CoNLL word is tokenized into
sub-tokens and its first sub-token carries the label). The graph tokenizes the whole text with offsets and starts
a new word at every sub-token that has whitespace before it (the original's whitespace: space, tab, newline,
carriage return and Unicode category Zs); the word's label is the argmax at its first sub-token. A text longer than
`max_seq_length - 2` sub-tokens is cut into run_ner's overlapping windows (at word boundaries, `window_stride`
sub-tokens apart, `conll.convert_sentences`), and each word takes the label of the window where it has the most
context, so every word is labelled as `run_ner --do_predict` labels it.

Outputs of `serving_default` (`text_a` `[batch]` in), padded to the most words in the batch:
`words` (the word's text), `word_labels`, `word_label_ids` (-1 for padding), `word_probabilities`, `word_start`
and `word_end` (character offsets into the input, end exclusive; -1 for padding) and `num_words` `[batch]`.
`serve_token_ids` gives per-position `token_labels`, `token_label_ids`, `probabilities` and `logits`.
"""

from __future__ import annotations

import tensorflow as tf

from official.nlp.modeling import models
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

    def __init__(self, model, *, label_names=(), window_stride: int | None = None, **kwargs):
        if not label_names:
            label_names = [str(i) for i in range(model.num_classes)]
        models.check_label_names(label_names, model.num_classes, head="token classifier")
        super().__init__(model, label_names=label_names, **kwargs)
        budget = self.seq_length - 2
        self.window_stride = int(window_stride or max(budget // 2, 1))
        if not 1 <= self.window_stride <= budget:
            raise export_base.InputError(
                f"--window_stride={window_stride} must be between 1 and max_seq_length - 2 = {budget}"
            )

    def text_spec(self):
        return {"text_a": string_spec("text_a")}

    def pack(self, texts):
        text = texts["text_a"]
        ids, starts, ends = self.tokenizer.tokenize_with_offsets(text)
        words = self._words(text, ids, starts, ends)
        windows = self._windows(words, tf.shape(text, out_type=tf.int64)[0])
        first = tf.gather(ids.row_splits[:-1], windows["row"]) + windows["token_start"]
        window_ids = tf.gather(ids.flat_values, tf.ragged.range(first, first + windows["token_length"]))
        return self.packer(window_ids), (words, windows)

    @staticmethod
    def _words(text, ids, starts, ends):
        """The words (whitespace-separated runs that have sub-tokens), flat over the batch: their row, byte span (the
        whole run: characters that give no sub-token, such as a combining mark that lower-casing strips from
        "Cafe\u0301", belong to their word), first sub-token's position in the row and number of sub-tokens."""
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
        word_text = tf.gather(text, word_rows)
        piece_start = tf.gather(starts, first)
        piece_end = tf.math.unsorted_segment_max(ends, word_of_piece, num_all)
        # The run around the word's sub-tokens: back to the whitespace before it, on to the whitespace after it.
        before = tf.strings.substr(word_text, tf.zeros_like(piece_start), piece_start)
        after = tf.strings.substr(
            word_text, piece_end, tf.cast(tf.strings.length(word_text), piece_end.dtype) - piece_end
        )
        lead = tf.cast(tf.strings.length(tf.strings.regex_replace(before, f"(?s)^.*{WHITESPACE}", "")), starts.dtype)
        trail = tf.cast(tf.strings.length(tf.strings.regex_replace(after, f"(?s){WHITESPACE}.*$", "")), ends.dtype)
        return {
            "row": word_rows,
            "byte_start": piece_start - lead,
            "byte_end": piece_end + trail,
            "position": tf.gather(position, first),
            "length": tf.math.unsorted_segment_sum(tf.ones_like(position), word_of_piece, num_all),
        }

    def _windows(self, words, batch):
        """run_ner's windows (`conll.convert_sentences`): per row, word ranges `[start, end)` of at most
        `max_seq_length - 2` sub-tokens (at least one word), each next one starting `window_stride` sub-tokens
        later at a word boundary; a row without words gets one empty window. Flat, in run_ner's order per row."""
        budget, stride = self.seq_length - 2, self.window_stride
        per_row = tf.RaggedTensor.from_value_rowids(words["position"], words["row"], nrows=batch)
        count = per_row.row_lengths()
        big = tf.constant(2**62, tf.int64)
        pos = per_row.to_tensor(default_value=big)  # [batch, max words]: first sub-token of each word
        end_pos = tf.RaggedTensor.from_value_rowids(
            words["position"] + words["length"], words["row"], nrows=batch
        ).to_tensor(default_value=big)
        j = tf.range(tf.shape(pos, out_type=tf.int64)[1])[None, :]

        # A finished row's start is its word count, one past its last word (and a batch may have no word at all).
        padded_pos = tf.concat([pos, tf.fill([batch, 1], big)], axis=1)

        def body(start, active, found):
            start_pos = tf.gather(padded_pos, start[:, None], batch_dims=1)  # [batch, 1]
            fits = (j >= start[:, None]) & (j < count[:, None]) & (end_pos - start_pos <= budget)
            end = tf.minimum(count, start + tf.maximum(tf.reduce_sum(tf.cast(fits, tf.int64), axis=1), 1))
            moved = (j > start[:, None]) & (j < end[:, None]) & (pos - start_pos >= stride)
            following = tf.reduce_min(tf.where(moved, j, big), axis=1)
            found = found.write(found.size(), tf.stack([tf.cast(active, tf.int64), start, end], axis=1))
            return tf.minimum(following, end), active & (end < count), found

        found = tf.TensorArray(tf.int64, size=0, dynamic_size=True, element_shape=[None, 3])
        _, _, found = tf.while_loop(
            lambda start, active, found: tf.reduce_any(active),
            body,
            (tf.zeros([batch], tf.int64), tf.ones([batch], tf.bool), found),
        )
        found = found.stack()  # [iterations, batch, 3]
        rows = tf.broadcast_to(tf.range(batch)[None, :], tf.shape(found)[:2])
        kept = found[:, :, 0] > 0
        rows, start, end = (
            tf.boolean_mask(rows, kept),
            tf.boolean_mask(found[:, :, 1], kept),
            tf.boolean_mask(found[:, :, 2], kept),
        )
        order = tf.argsort(rows, stable=True)  # row by row, each row's windows in the order they were made
        rows, start, end = tf.gather(rows, order), tf.gather(start, order), tf.gather(end, order)
        first_pos = tf.gather_nd(tf.concat([pos, tf.zeros([batch, 1], tf.int64)], 1), tf.stack([rows, start], 1))
        last_end = tf.gather_nd(tf.concat([tf.zeros([batch, 1], tf.int64), end_pos], 1), tf.stack([rows, end], 1))
        first_pos = tf.where(end > start, first_pos, 0)
        return {
            "row": rows,
            "start": start,
            "end": end,
            "token_start": first_pos,
            "token_length": tf.where(end > start, tf.minimum(last_end - first_pos, budget), 0),
        }

    def token_id_outputs(self, features, logits):
        probabilities = tf.nn.softmax(logits, axis=-1)
        index = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "logits": logits,
            "probabilities": probabilities,
            "token_label_ids": index,
            "token_labels": tf.gather(self.label_names, index),
        }

    @staticmethod
    def word_owners(words, windows, batch):
        """For each word of `pack`'s context, the window where it has the most context (`conll._owner`: the first
        best score, in run_ner's window order) and the word's first sub-token's position in that packed window: the
        one position whose logits label the word (and whose label trains it, as run_ner's features have it)."""
        word_rows = words["row"]
        splits = tf.RaggedTensor.from_value_rowids(word_rows, word_rows, nrows=tf.cast(batch, tf.int64)).row_splits
        local = tf.range(tf.shape(word_rows, out_type=tf.int64)[0]) - tf.gather(splits, word_rows)  # index in row
        w_start, w_end = windows["start"][None, :], windows["end"][None, :]
        inside = (
            tf.equal(word_rows[:, None], windows["row"][None, :])
            & (w_start <= local[:, None])
            & (local[:, None] < w_end)
        )
        score = tf.cast(tf.minimum(local[:, None] - w_start, w_end - 1 - local[:, None]), tf.float32) + 0.01 * tf.cast(
            w_end - w_start, tf.float32
        )
        owner = tf.argmax(tf.where(inside, score, -float("inf")), axis=-1)
        packed_position = words["position"] - tf.gather(windows["token_start"], owner) + 1  # [CLS] is position 0
        return tf.cast(owner, tf.int32), tf.cast(packed_position, tf.int32)

    def text_outputs(self, texts, features, context, logits):
        text = texts["text_a"]
        words, windows = context
        batch = tf.shape(text)[0]
        word_rows, word_byte_start, word_byte_end = words["row"], words["byte_start"], words["byte_end"]
        owner, packed_position = self.word_owners(words, windows, batch)
        word_logits = tf.gather_nd(logits, tf.stack([owner, packed_position], axis=1))
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
            "num_words": tf.cast(
                tf.math.bincount(tf.cast(word_rows, tf.int32), minlength=batch, maxlength=batch), tf.int32
            ),
        }
