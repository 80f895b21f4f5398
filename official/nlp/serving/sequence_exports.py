"""Exports of the models that read a whole sequence: encoder, classifier (regression, multi-label), multiple choice,
pretrainer.

Raw-text inputs (`serving_default`, and the bytes features of `serve_examples`):
- encoder, classifier (and multi-label classifier): `text_a` `[batch]`, plus `text_b` `[batch]` when exported with
  `pair=True`;
- multiple choice: `context` `[batch]` and `endings` `[batch, num_choices]`;
- pretrainer: `text_a` (and `text_b` with a next-sentence head), where each literal `[MASK]` is the mask token.

Example:

>>> from official.nlp.modeling import models                                   # doctest: +SKIP
>>> export = ClassifierExport(classifier, vocab_file="vocab.txt", do_lower_case=True, max_seq_length=128,
...                           label_names=["negative", "positive"])           # doctest: +SKIP
>>> export.save("/tmp/sst2")                                                   # doctest: +SKIP
'/tmp/sst2/1'

Then, in any process with TensorFlow and `import tensorflow_text`:

>>> serve = tf.saved_model.load("/tmp/sst2/1").signatures["serving_default"]  # doctest: +SKIP
>>> serve(text_a=tf.constant(["a gorgeous film"]))["label_name"]              # doctest: +SKIP
<tf.Tensor: shape=(1,), dtype=string, numpy=array([b'positive'], dtype=object)>
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import tensorflow as tf

from official.nlp.common import output_files
from official.nlp.common.errors import InputError
from official.nlp.data import classifier_features, length_buckets, swag
from official.nlp.modeling import models
from official.nlp.serving.export_base import ServingModule, id_specs, string_spec


class _TextSegments(ServingModule):
    """One text (`text_a`) or a pair (`text_a`, `text_b`), packed like training's `[CLS] A [SEP] (B [SEP])`."""

    def __init__(self, model, *, pair: bool = False, **kwargs):
        super().__init__(model, **kwargs)
        self.pair = bool(pair)

    def text_spec(self):
        names = ("text_a", "text_b") if self.pair else ("text_a",)
        return {name: string_spec(name) for name in names}

    def pack(self, texts):
        return self.tokenize_packed(*(texts[name] for name in self.text_spec())), None


class EncoderExport(_TextSegments):
    """The encoder: `pooled_output` `[batch, H]`, `sequence_output` `[batch, seq, H]` and one
    `encoder_output_<i>` per layer (a signature cannot hold a list), plus the packed inputs from raw text
    (`input_mask` says which positions are real tokens)."""

    task = "encoder"

    def _encoder_outputs(self, outputs):
        named = {"pooled_output": outputs["pooled_output"], "sequence_output": outputs["sequence_output"]}
        for i, layer in enumerate(outputs["encoder_outputs"]):
            named[f"encoder_output_{i}"] = layer
        return named

    def text_outputs(self, texts, features, context, model_outputs):
        return {**self._encoder_outputs(model_outputs), **features}

    def token_id_outputs(self, features, model_outputs):
        return self._encoder_outputs(model_outputs)


def _class_outputs(logits, label_names):
    probabilities = tf.nn.softmax(logits, axis=-1)
    index = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {
        "logits": logits,
        "probabilities": probabilities,
        "label_index": index,
        "label_name": tf.gather(label_names, index),
    }


class ClassifierExport(_TextSegments):
    """`BertClassifier`: `probabilities`, `label_index`, `label_name` and `logits`; a regression model
    (`num_classes=1`) gives `score`. `label_names` default to "0", "1", ...; serve_examples also gives TF
    Serving's classify outputs `classes` (all label names) and `scores` (their probabilities).

    `long_text` is the fine-tuning job's: `truncate` packs each raw text as training's truncation does;
    `sliding_window` cuts a text longer than `max_seq_length` into the windows of `classifier_features` (same
    `doc_stride`, the shorter text of a pair repeated in each) and averages the logits over them, as
    `run_classifier --do_predict` does. `serve_token_ids` takes packed sequences and answers for each."""

    task = "classifier"

    def __init__(
        self,
        model,
        *,
        label_names: Sequence[str] = (),
        long_text: str = "truncate",
        doc_stride: int | None = None,
        **kwargs,
    ):
        regression = model.num_classes == 1
        if regression:
            label_names = ()
        elif not label_names:
            label_names = [str(i) for i in range(model.num_classes)]
        models.check_label_names(label_names, model.num_classes)
        super().__init__(model, label_names=label_names, **kwargs)
        classifier_features.check_long_text_settings(self.seq_length, long_text, doc_stride)
        self.regression = regression
        self.buckets = length_buckets.bucket_lengths(self.seq_length)
        self.windows = long_text == "sliding_window"
        self.doc_stride = doc_stride
        self.long_text = tf.Variable(long_text, trainable=False, name="long_text")

    def pack(self, texts):
        if not self.windows:
            return super().pack(texts)
        a = self.tokenizer(texts["text_a"])
        b = self.tokenizer(texts["text_b"]) if self.pair else a[:, :0]
        return self._windows(a, b)

    def _windows(self, a, b):
        """`classifier_features.convert_examples`' sliding windows, for a batch: the packed windows, and for each
        its example (see that function for the rule; a text that fits is one window, packed as `truncate` does)."""
        len_a, len_b = a.row_lengths(), b.row_lengths()
        batch = tf.shape(len_a, out_type=tf.int64)[0]
        has_b = len_b > 0  # a B that tokenizes to nothing is no second segment
        budget = self.seq_length - tf.where(has_b, tf.constant(3, tf.int64), 2)
        b_is_longer = has_b & (len_b >= len_a)
        rows = tf.range(batch)
        both = tf.concat([a, b], axis=0)
        long = tf.gather(both, tf.where(b_is_longer, rows + batch, rows))
        short = tf.gather(both, tf.where(b_is_longer, rows, rows + batch))
        len_short = tf.where(has_b, tf.minimum(short.row_lengths(), budget // 2), tf.zeros_like(budget))
        len_long = long.row_lengths()
        window = budget - len_short
        stride = tf.fill([batch], tf.cast(self.doc_stride, tf.int64)) if self.doc_stride else tf.maximum(window // 2, 1)
        step = tf.minimum(window, stride)
        num_windows = (tf.maximum(len_long - window, 0) + step - 1) // step + 1
        example = tf.repeat(rows, num_windows)
        start = tf.ragged.range(num_windows).flat_values * tf.gather(step, example)
        length = tf.minimum(tf.gather(window, example), tf.gather(len_long, example) - start)
        first = tf.gather(long.row_splits[:-1], example) + start
        piece = tf.gather(long.flat_values, tf.ragged.range(first, first + length))
        kept_short = tf.gather(
            short.flat_values,
            tf.ragged.range(
                tf.gather(short.row_splits[:-1], example), tf.gather(short.row_splits[:-1] + len_short, example)
            ),
        )
        short_first, piece_first = self.packer([kept_short, piece]), self.packer([piece, kept_short])
        order = tf.gather(b_is_longer, example)[:, None]
        features = {k: tf.where(order, short_first[k], piece_first[k]) for k in short_first}
        return features, dict(example=example, batch=batch)

    def text_outputs(self, texts, features, context, logits):
        if context is not None:  # the mean of the logits of each example's windows
            logits = tf.math.unsorted_segment_mean(logits, context["example"], context["batch"])
        return self.token_id_outputs(features, logits)

    def _run(self, features):
        # One output per text, which padding does not change: cut each request batch to its length bucket
        # (a handful of shapes), so short texts do not pay for max_seq_length.
        return super()._run(length_buckets.trim_batch(dict(features), self.buckets))

    def token_id_outputs(self, features, logits):
        if self.regression:
            return {"score": logits[:, 0]}
        return _class_outputs(logits, self.label_names)

    def serve_examples(self, examples, serve_text=None):
        outputs = dict(super().serve_examples(examples, serve_text))
        if not self.regression:
            batch = tf.shape(outputs["probabilities"])[0]
            outputs["classes"] = tf.tile(self.label_names[None, :], [batch, 1])
            outputs["scores"] = outputs["probabilities"]
        return outputs


class MultiLabelClassifierExport(ClassifierExport):
    """`BertClassifier` fine-tuned on multi-label data: a sigmoid per label, and the labels at or above their
    thresholds (the model's, `tasks.multi_label`), most probable first, as `run_classifier --do_predict` writes them.

    Outputs: `logits` and `probabilities` `[batch, labels]`; `above_threshold` `[batch, labels]` (bool);
    `predicted_labels` `[batch, k]` (names, then "") and `predicted_scores` `[batch, k]` (their probabilities, then
    0), `k` the most labels any text of the request has (at least 1); `predicted_count` `[batch]`. The thresholds are
    the variable `thresholds` and the asset `thresholds.txt`; `serve_examples` also gives TF Serving's classify
    outputs `classes` (every label name) and `scores` (every probability)."""

    task = "multi_label_classifier"

    def __init__(self, model, *, thresholds: Sequence[float], **kwargs):
        super().__init__(model, **kwargs)
        if self.regression or len(thresholds) != len(self.label_list):
            raise InputError(
                f"{len(thresholds)} thresholds for a multi-label classifier with {model.num_classes} labels; pass "
                "one per label"
            )
        self.threshold_list = [float(t) for t in thresholds]
        self.thresholds = tf.Variable(self.threshold_list, dtype=tf.float32, trainable=False, name="thresholds")

    def token_id_outputs(self, features, logits):
        probabilities = tf.sigmoid(logits)
        above = probabilities >= self.thresholds
        # Most probable first, then the labels at or above their thresholds before the others (stable sorts, so
        # equal probabilities keep the label order, as --do_predict's).
        by_probability = tf.argsort(probabilities, axis=-1, direction="DESCENDING", stable=True)
        sorted_above = tf.cast(tf.gather(above, by_probability, batch_dims=1), tf.int32)
        chosen_first = tf.argsort(sorted_above, axis=-1, direction="DESCENDING", stable=True)
        order = tf.gather(by_probability, chosen_first, batch_dims=1)
        count = tf.reduce_sum(tf.cast(above, tf.int32), axis=-1)
        width = tf.maximum(tf.reduce_max(count), 1)
        kept = tf.gather(above, order, batch_dims=1)[:, :width]
        return {
            "logits": logits,
            "probabilities": probabilities,
            "above_threshold": above,
            "predicted_labels": tf.where(kept, tf.gather(self.label_names, order[:, :width]), ""),
            "predicted_scores": tf.where(kept, tf.gather(probabilities, order[:, :width], batch_dims=1), 0.0),
            "predicted_count": count,
        }

    def write_assets(self, directory: str) -> dict[str, tf.saved_model.Asset]:
        assets = super().write_assets(directory)
        path = os.path.join(directory, "thresholds.txt")
        output_files.write_text(path, "".join(f"{t!r}\n" for t in self.threshold_list))
        return {**assets, "thresholds.txt": tf.saved_model.Asset(path)}


class MultipleChoiceExport(ServingModule):
    """`BertMultipleChoice` (SWAG): `context` `[batch]` and `endings` `[batch, num_choices]` in, each pair packed as
    `[CLS] context [SEP] ending [SEP]`; `probabilities` `[batch, num_choices]`, `label_index` and `logits` out."""

    task = "multiple_choice"

    def text_spec(self):
        return {"context": string_spec("context"), "endings": string_spec("endings", rank=2)}

    def example_spec(self):
        return {"context": tf.io.FixedLenFeature([], tf.string), "endings": tf.io.VarLenFeature(tf.string)}

    def pack(self, texts):
        endings = texts["endings"]
        shape = tf.shape(endings)
        contexts = tf.repeat(texts["context"], shape[1])
        flat = self.tokenize_packed(contexts, tf.reshape(endings, [-1]))
        return {k: tf.reshape(v, [shape[0], shape[1], self.seq_length]) for k, v in flat.items()}, None

    def token_id_spec(self):
        return id_specs(rank=3)

    def serve_examples(self, examples, serve_text=None):
        parsed = tf.io.parse_example(examples, self.example_spec())
        endings = tf.sparse.to_dense(parsed["endings"])
        # An empty batch has no endings to count the choices by: it answers `[0, choices]` with the choices of
        # training (SWAG's), not the `[0, 1]` of a stand-in row.
        endings = tf.cond(
            tf.shape(endings)[0] > 0,
            lambda: endings,
            lambda: tf.zeros([0, swag.NUM_CHOICES], tf.string),
        )
        return (serve_text or self.serve_text)({"context": parsed["context"], "endings": endings})

    def token_id_outputs(self, features, logits):
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_index": tf.argmax(logits, axis=-1, output_type=tf.int32),
        }

    def text_outputs(self, texts, features, context, logits):
        return self.token_id_outputs(features, logits)


MASK_TEXT = "[MASK]"


class PretrainerExport(_TextSegments):
    """`BertPretrainer`: fills in masks and judges the next sentence.

    Raw text: each literal `[MASK]` in `text_a`/`text_b` becomes the mask token (the rest is tokenized as usual;
    `[` and `]` are punctuation, so splitting there changes no other token). Outputs: `mlm_positions`
    `[batch, P]` (positions of the masks in the packed sequence, -1 for padding), `mlm_token_ids`, `mlm_tokens`
    and `mlm_probabilities` (the top prediction at each), and with the NSP head `nsp_probabilities` `[batch, 2]`
    (index 1 is "B is a random sentence", the original label). `serve_token_ids` also takes
    `masked_lm_positions` and returns `mlm_logits` (and `nsp_logits`).
    """

    task = "pretrainer"

    def __init__(self, model, **kwargs):
        super().__init__(model, pair=model.use_next_sentence_label, **kwargs)
        self.vocab_table = tf.constant(self.tokenizer.vocabulary)
        self.mask_id = self.tokenizer.token_to_id(MASK_TEXT)

    def _tokenize_with_masks(self, texts):
        pieces = tf.strings.split(texts, sep=MASK_TEXT)  # [batch, (pieces)]
        ids = self.tokenizer(pieces.flat_values)  # [pieces, (tokens)]
        masks = tf.fill([tf.shape(ids.row_lengths())[0], 1], self.mask_id)
        with_mask = tf.concat([ids, tf.RaggedTensor.from_tensor(masks)], axis=1)
        per_text = pieces.with_flat_values(with_mask).merge_dims(1, 2)  # every piece followed by a mask
        return per_text[:, :-1]  # the last piece of each text has none

    def pack(self, texts):
        segments = [self._tokenize_with_masks(texts[name]) for name in self.text_spec()]
        features = self.packer(segments)
        is_mask = tf.logical_and(tf.equal(features["input_word_ids"], self.mask_id), features["input_mask"] > 0)
        positions = tf.ragged.boolean_mask(tf.broadcast_to(tf.range(self.seq_length), tf.shape(is_mask)), is_mask)
        width = tf.maximum(tf.reduce_max(positions.row_lengths()), 1)
        batch = tf.shape(is_mask)[0]
        padded = positions.to_tensor(default_value=-1, shape=tf.stack([batch, tf.cast(width, tf.int32)]))
        features = {**features, "masked_lm_positions": tf.maximum(padded, 0)}
        return features, padded

    def token_id_spec(self):
        specs = id_specs()
        specs["masked_lm_positions"] = tf.TensorSpec([None, None], tf.int32, name="masked_lm_positions")
        return specs

    def token_id_outputs(self, features, outputs):
        named = {"mlm_logits": outputs["mlm_logits"]}
        if "nsp_logits" in outputs:
            named["nsp_logits"] = outputs["nsp_logits"]
            named["nsp_probabilities"] = tf.nn.softmax(outputs["nsp_logits"], axis=-1)
        return named

    def text_outputs(self, texts, features, positions, outputs):
        probabilities = tf.nn.softmax(outputs["mlm_logits"], axis=-1)
        top = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        real = positions >= 0
        named = {
            "mlm_positions": positions,
            "mlm_token_ids": tf.where(real, top, -1),
            "mlm_tokens": tf.where(real, tf.gather(self.vocab_table, top), ""),
            "mlm_probabilities": tf.where(real, tf.reduce_max(probabilities, axis=-1), 0.0),
        }
        if "nsp_logits" in outputs:
            named["nsp_probabilities"] = tf.nn.softmax(outputs["nsp_logits"], axis=-1)
        return named
