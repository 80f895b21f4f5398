"""A TF-Hub-style pair of SavedModels: a `preprocessor` (text -> encoder inputs) and an `encoder`.

The layout TF-Hub BERT users know (`hub.KerasLayer(preprocessor)`, `hub.KerasLayer(encoder)`), without the
`tensorflow_hub` package; `tf.saved_model.load` is enough:

>>> preprocessor = tf.saved_model.load("export/hub/1/preprocessor")                     # doctest: +SKIP
>>> encoder = tf.saved_model.load("export/hub/1/encoder")                               # doctest: +SKIP
>>> a, b = preprocessor.tokenize(tf.constant(["Who?"])), preprocessor.tokenize(tf.constant(["Him."]))  # doctest: +SKIP
>>> inputs = preprocessor.bert_pack_inputs([a, b], seq_length=tf.constant(64))          # doctest: +SKIP
>>> encoder(inputs)["pooled_output"].shape                                              # doctest: +SKIP
TensorShape([1, 384])

- `preprocessor(texts)`: a `[batch]` string tensor -> `input_word_ids`, `input_mask`, `input_type_ids` packed to
  the exported `max_seq_length` (also its `serving_default` signature);
- `preprocessor.tokenize(texts)`: `[batch]` strings -> int32 RaggedTensor `[batch, (tokens)]` (TF-Hub's has an
  extra words dimension; ours is flat, as our packer takes it); `preprocessor.tokenize.get_special_tokens_dict()`
  gives the `[CLS]`, `[SEP]`, `[PAD]` and `[MASK]` ids and the vocabulary size under TF-Hub's names;
- `preprocessor.bert_pack_inputs(segments, seq_length=max_seq_length)`: a list of one or two tokenized segments
  (ours, or TF-Hub's `[batch, words, word pieces]`) and a scalar int32 `seq_length` tensor -> the encoder inputs,
  truncated as in training;
- `encoder(inputs, training=False)`: the dict above -> `pooled_output` (also as `default`, TF-Hub's alias),
  `sequence_output` and `encoder_outputs` (a list, one per layer); its `serving_default` signature flattens the list
  into `encoder_output_<i>`. The encoder is a Reusable SavedModel (`variables`, `trainable_variables`,
  `regularization_losses`, dropout live with `training=True`): `hub.KerasLayer(encoder_path, trainable=True)`
  fine-tunes it inside a `tf_keras` model.

Both carry `vocab.txt`, `bert_config.json` and `do_lower_case` as assets; the encoder also has TF-Hub's
`vocab_file` (the asset) and `do_lower_case` (a bool variable) attributes, so that `convert_checkpoint.py` reads
it back as it reads a TF-Hub encoder (checkpoints/peers/tf_hub_saved_models.py).
"""

from __future__ import annotations

import os

import tensorflow as tf

from official.nlp.serving import export_base
from official.nlp.serving.sequence_exports import EncoderExport

_RAGGED_IDS = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1, row_splits_dtype=tf.int64)
_RAGGED_WORDS = tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2, row_splits_dtype=tf.int64)


class _Tokenize(tf.Module):
    """`preprocessor.tokenize`: callable on texts, with TF-Hub's `get_special_tokens_dict()` (the ids a user who packs
    inputs by hand needs: `start_of_sequence_id`, `end_of_segment_id`, `padding_id`, `mask_id`, `vocab_size`)."""

    def __init__(self, function, tokenizer):
        super().__init__(name="tokenize")
        self.__call__ = function
        ids = tokenizer.special_token_ids()
        values = {
            "start_of_sequence_id": ids["cls_id"],
            "end_of_segment_id": ids["sep_id"],
            "padding_id": ids["pad_id"],
            "mask_id": ids["mask_id"],
            "vocab_size": tokenizer.vocab_size,
        }
        self.get_special_tokens_dict = tf.Module(name="get_special_tokens_dict")
        self.get_special_tokens_dict.__call__ = tf.function(
            lambda: {name: tf.constant(value, tf.int32) for name, value in values.items()}, input_signature=[]
        )


class _Preprocessor(tf.Module):
    def __init__(self, export: EncoderExport):
        super().__init__(name="bert_preprocessor")
        self.tokenizer = export.tokenizer
        self.packer = export.packer
        self.max_seq_length = export.max_seq_length
        self.do_lower_case = export.do_lower_case
        self.assets = export.assets
        # Published with an open shape and checked in the graph, as the task exports' signatures are: a scalar or a
        # `[batch, 1]` column gets one InvalidArgument naming the input, an empty batch empty outputs.
        spec = {"texts": export_base.string_spec("texts")}

        def checked(signature, texts):
            return export_base.check_ranks(signature, {"texts": texts}, spec)["texts"]

        self.tokenize = _Tokenize(
            tf.function(
                lambda texts: self.tokenizer(checked("tokenize", texts)),
                input_signature=[export_base.any_shape(spec)["texts"]],
            ),
            export.tokenizer,
        )
        default_seq_length = export.seq_length

        def pack(segments, seq_length=default_seq_length):
            # TF-Hub's tokenize gives [batch, words, word pieces]; ours [batch, tokens]. Both are packed.
            segments = [s.merge_dims(1, -1) if s.ragged_rank > 1 else s for s in segments]
            return self.packer(segments, seq_length=seq_length)

        self.bert_pack_inputs = tf.function(pack)
        seq = tf.TensorSpec([], tf.int32, name="seq_length")
        for ragged in (_RAGGED_IDS, _RAGGED_WORDS):
            for count in (1, 2):
                self.bert_pack_inputs.get_concrete_function([ragged] * count, seq)
        self.__call__ = tf.function(
            lambda texts: export_base.serve_nonempty(
                lambda rows: self.packer(self.tokenizer(rows["texts"])), {"texts": checked("serving_default", texts)}
            ),
            input_signature=[export_base.any_shape(spec)["texts"]],
        )


class _Encoder(tf.Module):
    """TF Hub's Reusable SavedModel: `__call__(inputs, training=...)` (dropout live when training), `variables`,
    `trainable_variables` and `regularization_losses`, which `hub.KerasLayer(..., trainable=True)` fine-tunes.

    tf.Module's `variables` and `trainable_variables` are computed properties, which a SavedModel does not keep;
    the class attributes below make them plain attributes, saved as lists (see `_set_variables`)."""

    variables = ()
    trainable_variables = ()

    def __init__(self, export: EncoderExport):
        super().__init__(name="bert_encoder")
        export_base.hold_model(self, export.model)
        model = export.model
        self.assets = {name: export.assets[name] for name in ("vocab.txt", "bert_config.json", "do_lower_case")}
        # What TF-Hub's BERT encoders carry for users who tokenize themselves (the Model Garden's export_tfhub).
        self.vocab_file = export.assets["vocab.txt"]
        self.do_lower_case = export.do_lower_case

        @tf.function
        def call(inputs, training=False):
            outputs = dict(model(dict(inputs), training=training))
            outputs["default"] = outputs["pooled_output"]  # TF-Hub's alias of the whole-input representation
            return outputs

        for training in (False, True):
            call.get_concrete_function(export_base.id_specs(), training=training)
        self.__call__ = call
        # The serving signature checks ranks and shapes as the task exports' serve_token_ids does.
        self.flat = tf.function(
            lambda inputs: export_base.serve_nonempty(
                lambda rows: export.token_id_outputs(
                    rows, model(dict(export_base.check_token_id_shapes(rows)), training=False)
                ),
                export_base.check_ranks("serving_default", inputs, export_base.id_specs()),
            ),
            input_signature=[export_base.any_shape(export_base.id_specs())],
        )
        # The encoder has no weight regularizer; the attribute is what the API asks for.
        self.regularization_losses = []

    def _set_variables(self) -> None:
        """`variables` and `trainable_variables`: the `tf.Variable`s the traced functions read (Keras 3 keeps them
        inside its own variables; `export_base.track_variables` explains why those are what must be saved), the
        trainable ones being the model's trainable weights (dropout's seed state is not)."""
        functions = [self.__call__.get_concrete_function(export_base.id_specs(), training=t) for t in (False, True)]
        functions.append(self.flat.get_concrete_function())
        export_base.track_variables(self, functions)
        trainable = {id(_inner(w)) for w in self._holder.model.trainable_weights}
        self.variables = list(self.function_variables)
        self.trainable_variables = [v for v in self.function_variables if id(v) in trainable]


def _inner(weight):
    """The `tf.Variable` behind a Keras 3 variable (itself for a `tf.Variable`)."""
    return getattr(weight, "value", weight) if not isinstance(weight, tf.Variable) else weight


def save_hub_pair(export: EncoderExport, directory: str) -> tuple[str, str]:
    """Writes `directory/preprocessor` and `directory/encoder` for an `EncoderExport`; returns their paths."""
    import tempfile

    with tempfile.TemporaryDirectory() as asset_dir:
        export.assets = export.write_assets(asset_dir)
        preprocessor, encoder = _Preprocessor(export), _Encoder(export)
        paths = os.path.join(directory, "preprocessor"), os.path.join(directory, "encoder")
        encoder._set_variables()
        for module, path, signature in (
            (preprocessor, paths[0], preprocessor.__call__),
            (encoder, paths[1], encoder.flat),
        ):
            export_base.save_saved_model(
                module, path, signatures={"serving_default": signature.get_concrete_function()}
            )
    return paths
