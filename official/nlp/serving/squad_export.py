"""Export of `BertSpanLabeler` (SQuAD): a question and a context in, the answer text and its offsets out.

Everything `run_squad.py --do_predict` does happens in the graph, with its settings baked in as variables:
the question is cut to `max_query_length` tokens; the context is cut into windows of
`max_seq_length - len(question) - 3` tokens every `doc_stride` tokens; each window is packed as
`[CLS] question [SEP] window [SEP]`; in each window the `n_best_size` best start and end logits are paired, keeping
pairs whose start and end lie in the window's context, whose start is in the window where it has the most context
(the original's `_check_is_max_context`: min(left, right) + 0.01 * length, first window on ties), with
end >= start and at most `max_answer_length` tokens; the best pair by start + end logit over all windows is the
answer. With `version_2_with_negative`, the null score is the smallest `[CLS]` start + end logit over the windows,
and the answer is empty when null - best > `null_score_diff_threshold`.

The answer text is the context from the start of its first sub-token to the end of its last, with whitespace
runs shown as one space (the original rebuilds answers from whitespace-split tokens joined by single spaces).
The original falls back to whole words when it cannot align its detokenized text (an `[UNK]` in the span,
characters the normalization changes in length); here the span is always exact.

Outputs of `serving_default` (`question`, `context` `[batch]`): `answer_text`, `answer_start` and `answer_end`
(character offsets into the context, end exclusive; -1 for no answer), `score` (start + end logit of the best
span; the lowest float32 when the context has no valid span, then the answer is empty) and, for SQuAD 2.0,
`null_score_diff`. `serve_token_ids` returns `start_logits` and `end_logits` for packed windows.
"""

from __future__ import annotations

import tensorflow as tf

from official.nlp.common.errors import InputError
from official.nlp.data.squad import features as squad_features
from official.nlp.data.squad.postprocessing import AnswerSettings
from official.nlp.serving.export_base import ServingModule, string_spec
from official.nlp.serving.ner_export import char_offsets

# run_squad.py's is_whitespace (the split into doc_tokens).
SQUAD_WHITESPACE = r"[ \t\r\n\x{202F}]+"
NO_SCORE = float(tf.float32.min)


class SpanLabelerExport(ServingModule):
    """`BertSpanLabeler` with in-graph SQuAD decoding (see the module docstring for the algorithm)."""

    task = "squad"

    def __init__(self, model, *, answer_settings: AnswerSettings | None = None, **kwargs):
        super().__init__(model, **kwargs)
        answer = answer_settings or AnswerSettings()
        if self.seq_length - answer.max_query_length - 3 < 1:
            raise InputError(
                f"--max_query_length={answer.max_query_length} leaves no room for the context in "
                f"--max_seq_length={self.seq_length}; lower it below max_seq_length - 3"
            )
        # As run_squad does.
        squad_features.check_window_settings(self.seq_length, answer.doc_stride, answer.max_query_length)
        self.settings = answer.to_dict()
        # Baked in as variables of the same names, which travel with the SavedModel.
        for name, value in self.settings.items():
            setattr(self, name, tf.Variable(value, trainable=False, name=name))

    def text_spec(self):
        return {"question": string_spec("question"), "context": string_spec("context")}

    def pack(self, texts):
        question = self.tokenizer(texts["question"])[:, : self.settings["max_query_length"]]
        ids, starts, ends = self.tokenizer.tokenize_with_offsets(texts["context"])
        len_q = question.row_lengths()
        len_c = ids.row_lengths()
        max_doc = self.seq_length - len_q - 3
        step = tf.minimum(max_doc, self.settings["doc_stride"])
        num_windows = (tf.maximum(len_c - max_doc, 0) + step - 1) // step + 1
        example = tf.repeat(tf.range(tf.shape(len_c, out_type=tf.int64)[0]), num_windows)
        k = tf.ragged.range(num_windows).flat_values
        window_start = k * tf.gather(step, example)
        window_length = tf.minimum(tf.gather(max_doc, example), tf.gather(len_c, example) - window_start)
        first = tf.gather(ids.row_splits[:-1], example) + window_start
        window_ids = tf.gather(ids.flat_values, tf.ragged.range(first, first + window_length))
        features = self.packer([tf.gather(question, example), window_ids])
        context = dict(
            example=example,
            k=k,
            window_start=window_start,
            window_length=window_length,
            len_q=len_q,
            len_c=len_c,
            max_doc=max_doc,
            step=step,
            num_windows=num_windows,
            starts=starts,
            ends=ends,
        )
        return features, context

    def token_id_outputs(self, features, outputs):
        return {"start_logits": outputs["start_logits"], "end_logits": outputs["end_logits"]}

    def _max_context(self, c):
        """`[windows, seq]`: whether the window is the one where context token `j` (window-relative) has the most
        context (the original's score; the first such window on ties)."""
        e = c["example"]
        t = c["window_start"][:, None] + tf.range(self.seq_length, dtype=tf.int64)[None, :]  # [W, L]
        other = tf.range(tf.reduce_max(tf.concat([c["num_windows"], [1]], 0)))  # [N]
        other_start = other[None, :] * tf.gather(c["step"], e)[:, None]  # [W, N]
        other_length = tf.minimum(tf.gather(c["max_doc"], e)[:, None], tf.gather(c["len_c"], e)[:, None] - other_start)
        exists = other[None, :] < tf.gather(c["num_windows"], e)[:, None]
        s, n, t = other_start[:, None, :], other_length[:, None, :], t[:, :, None]  # [W, 1, N], [W, L, 1]
        inside = exists[:, None, :] & (s <= t) & (t < s + n)
        score = tf.cast(tf.minimum(t - s, s + n - 1 - t), tf.float32) + 0.01 * tf.cast(n, tf.float32)
        best = tf.argmax(tf.where(inside, score, -float("inf")), axis=-1)  # first max: the original's strict ">"
        return tf.equal(best, c["k"][:, None])

    def text_outputs(self, texts, features, c, outputs):
        start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]
        settings = self.settings
        e = c["example"]
        batch = tf.shape(texts["context"])[0]
        offset = tf.gather(c["len_q"], e) + 2  # packed position of the window's first context token
        n = min(settings["n_best_size"], self.seq_length)
        start_index = tf.cast(tf.math.top_k(start_logits, n).indices, tf.int64)  # [W, n]
        end_index = tf.cast(tf.math.top_k(end_logits, n).indices, tf.int64)

        def in_context(index):
            return (index >= offset[:, None]) & (index < (offset + c["window_length"])[:, None])

        max_context = self._max_context(c)
        start_ok = in_context(start_index) & tf.gather(
            max_context, tf.clip_by_value(start_index - offset[:, None], 0, self.seq_length - 1), batch_dims=1
        )
        end_ok = in_context(end_index)
        length = end_index[:, None, :] - start_index[:, :, None] + 1
        valid = start_ok[:, :, None] & end_ok[:, None, :] & (length >= 1) & (length <= settings["max_answer_length"])
        score = (
            tf.gather(start_logits, start_index, batch_dims=1)[:, :, None]
            + tf.gather(end_logits, end_index, batch_dims=1)[:, None, :]
        )
        score = tf.reshape(tf.where(valid, score, NO_SCORE), [-1, n * n])
        window_best = tf.reduce_max(score, axis=1)
        window_pair = tf.argmax(score, axis=1)
        per_example = tf.RaggedTensor.from_value_rowids(window_best, e, nrows=tf.cast(batch, tf.int64))
        best_k = tf.argmax(per_example.to_tensor(default_value=NO_SCORE), axis=1)  # first window on ties
        best_window = per_example.row_splits[:-1] + best_k
        best_score = tf.gather(window_best, best_window)
        pair = tf.gather(window_pair, best_window)
        start = tf.gather(start_index, best_window, batch_dims=0)
        start = tf.gather(start, pair // n, batch_dims=1)
        end = tf.gather(tf.gather(end_index, best_window), pair % n, batch_dims=1)
        window_start = tf.gather(c["window_start"], best_window) - tf.gather(offset, best_window)
        token_start = window_start + start
        token_end = window_start + end
        has_answer = best_score > NO_SCORE
        outputs_extra = {}
        if settings["version_2_with_negative"]:
            null = tf.RaggedTensor.from_value_rowids(
                start_logits[:, 0] + end_logits[:, 0], e, nrows=tf.cast(batch, tf.int64)
            )
            null_diff = tf.reduce_min(null.to_tensor(default_value=float("inf")), axis=1) - best_score
            has_answer = has_answer & (null_diff <= settings["null_score_diff_threshold"])
            outputs_extra["null_score_diff"] = null_diff
        row_start = c["starts"].row_splits[:-1]
        token_start = tf.where(has_answer, token_start, 0) + row_start
        token_end = tf.where(has_answer, token_end, 0) + row_start
        flat_starts, flat_ends = c["starts"].flat_values, c["ends"].flat_values
        byte_start = tf.gather(
            tf.concat([flat_starts, [0]], 0), tf.where(has_answer, token_start, tf.size(flat_starts, out_type=tf.int64))
        )
        byte_end = tf.gather(
            tf.concat([flat_ends, [0]], 0), tf.where(has_answer, token_end, tf.size(flat_ends, out_type=tf.int64))
        )
        context_text = texts["context"]
        answer = tf.strings.substr(context_text, byte_start, byte_end - byte_start)
        answer = tf.strings.regex_replace(answer, SQUAD_WHITESPACE, " ")
        return {
            "answer_text": answer,
            "answer_start": tf.where(has_answer, tf.cast(char_offsets(context_text, byte_start), tf.int32), -1),
            "answer_end": tf.where(has_answer, tf.cast(char_offsets(context_text, byte_end), tf.int32), -1),
            "score": best_score,
            **outputs_extra,
        }
