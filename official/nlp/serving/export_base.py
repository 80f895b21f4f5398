"""The SavedModel TF Serving loads: a BERT Keras model, its exact tokenizer and packer, and the files that describe it.

`ServingModule` is the `tf.Module` every task export derives from. It holds the Keras model, the in-graph
`BertTokenizer` + `BertPackInputs` (the exact tokenizer of training, `official.nlp.tokenizers.text_layers`), and the
model's description as variables (`max_seq_length`, `do_lower_case`, `label_names`) and assets (`vocab.txt`,
`bert_config.json`, `do_lower_case`, `label_names.txt`, `max_seq_length`). `save` writes three signatures:

- `serving_default`: raw strings in (names per task: `text_a`/`text_b`, `question`/`context`, ...), tokenized and
  packed in the graph, the task's useful outputs out (label names, answers, ...);
- `serve_token_ids`: `input_word_ids`, `input_mask`, `input_type_ids` in;
- `serve_examples`: serialized `tf.Example` protos (`examples`) holding the raw-text inputs as bytes features.

A SavedModel's function library is loaded whole, so a serving binary without the tensorflow-text ops cannot load a
model that tokenizes, even to call `serve_token_ids`. `save` therefore also writes `token_ids/<version>/`: the same
model with `serve_token_ids` alone (also as `serving_default`), which needs no tensorflow-text op.

Layout written by `save(export_dir)` (each `<version>` is a directory TF Serving watches; it is written under a
name of the job and renamed, so a server never sees half a version, and `<version>/` comes last):

    export_dir/<version>/            the full SavedModel (base path for TF Serving: export_dir)
    export_dir/token_ids/<version>/  the SavedModel without tensorflow-text ops (base path: export_dir/token_ids)

An export folder holds exports only, and nothing in it is ever replaced: a job claims its version first (see
`versions`), so two jobs exporting into one folder at once write two versions.
"""

from __future__ import annotations

import json
import os
import tempfile
import types
from collections.abc import Mapping, Sequence

import tensorflow as tf

from official.nlp.common import input_files, output_files, output_folders, text_files
from official.nlp.modeling.configs import check_seq_length
from official.nlp.modeling.encoder import INPUT_NAMES, BertEncoder
from official.nlp.serving.versions import SAVED_MODEL_MARKER, TOKEN_IDS_DIR, check_export_dir, claim_version
from official.nlp.tokenizers import text_layers

_ASSET_NAMES = ("vocab.txt", "bert_config.json", "do_lower_case", "label_names.txt", "max_seq_length")


def string_spec(name: str, rank: int = 1) -> tf.TensorSpec:
    return tf.TensorSpec([None] * rank, tf.string, name=name)


def id_specs(rank: int = 2) -> dict[str, tf.TensorSpec]:
    return {name: tf.TensorSpec([None] * rank, tf.int32, name=name) for name in INPUT_NAMES}


def any_shape(specs: Mapping[str, tf.TensorSpec]) -> dict[str, tf.TensorSpec]:
    """`specs` with the shape left open: what a signature publishes, so that `check_ranks` sees the real rank (a
    rank the signature fixes is taken as known inside the graph, and the check would be folded away)."""
    return {name: tf.TensorSpec(None, spec.dtype, name=spec.name) for name, spec in specs.items()}


def _expected_shape(name: str, rank: int) -> str:
    if name == "endings":
        return "[batch, choices]"
    return {1: "[batch]", 2: "[batch, sequence length]", 3: "[batch, choices, sequence length]"}.get(rank, "")


def check_ranks(signature: str, inputs: Mapping[str, tf.Tensor], specs: Mapping[str, tf.TensorSpec]) -> dict:
    """`inputs` once the graph has checked that each has the rank of its spec: one `InvalidArgument` naming the
    signature, the input and the shape it takes, instead of an error (or a crash) deep inside the model. The
    results carry the specs' static shapes."""
    checks = []
    for name, spec in specs.items():
        rank = len(spec.shape)
        checks.append(
            tf.debugging.Assert(
                tf.equal(tf.rank(inputs[name]), rank),
                [
                    f"{signature}: {name} must be a {rank}-D {spec.dtype.name} tensor "
                    f"{_expected_shape(name, rank)}; got one of shape",
                    tf.shape(inputs[name]),
                ],
            )
        )
    checked = {}
    with tf.control_dependencies(checks):
        for name, value in inputs.items():
            checked[name] = tf.identity(value)
            if name in specs:
                checked[name].set_shape(specs[name].shape)
    return checked


def serve_nonempty(function, inputs: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """`function(inputs)`, and for an empty batch its outputs for no row (each output's first dimension 0).

    Packing and attention take the longest row's length, which an empty batch does not have: such a batch runs
    as one stand-in row ("a", or zeros) whose outputs are then dropped, so that the outputs keep their shapes
    and dtypes."""
    first = next(iter(inputs.values()))
    count = tf.shape(first)[0]

    def stand_in(value):
        dims = tf.maximum(tf.shape(value)[1:], 1)
        shape = tf.concat([[1], dims], axis=0)
        return tf.fill(shape, "a") if value.dtype == tf.string else tf.zeros(shape, value.dtype)

    rows = {
        name: tf.cond(count > 0, lambda value=value: value, lambda value=value: stand_in(value))
        for name, value in inputs.items()
    }
    for name, value in rows.items():
        value.set_shape(inputs[name].shape)
    return {name: value[:count] for name, value in function(rows).items()}


def check_token_id_shapes(features: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """`features` once the graph has checked that `input_mask` and `input_type_ids` have the shape of
    `input_word_ids`: a shorter mask made the length bucketing cut the ids to the mask's length, silently."""
    shape = tf.shape(features["input_word_ids"])
    checks = [
        tf.debugging.assert_equal(
            tf.shape(features[name]),
            shape,
            message=f"serve_token_ids: {name} must have the shape of input_word_ids (one value per token id)",
        )
        for name in INPUT_NAMES
        if name != "input_word_ids"
    ]
    with tf.control_dependencies(checks):
        return {name: tf.identity(value) for name, value in features.items()}


def encoder_of(model) -> BertEncoder:
    return model if isinstance(model, BertEncoder) else model.encoder


class ServingModule(tf.Module):
    """Base of the task exports; subclasses define the signatures' inputs and outputs.

    Subclasses implement `text_spec()` (raw-text inputs), `pack(texts)` (raw text -> model inputs plus whatever
    the outputs need), `text_outputs(...)`, and optionally `token_id_spec()` and `token_id_outputs(...)`.

    Args:
      model: the Keras model (a `BertEncoder` or a task model of `official.nlp.modeling.models`).
      vocab_file: the model's `vocab.txt` (None with a `tokenizer`: its vocabulary is written as the asset).
      do_lower_case: the model's case.
      max_seq_length: length texts are packed (and truncated) to, as in training.
      label_names: names of the classes (classifier, NER); written as an asset and a variable.
      tokenizer: an existing `BertTokenizer` for this vocabulary (building one takes a few seconds).
    """

    task = "base"

    def __init__(
        self,
        model,
        *,
        vocab_file: str | None,
        do_lower_case: bool,
        max_seq_length: int,
        label_names: Sequence[str] = (),
        tokenizer: text_layers.BertTokenizer | None = None,
    ):
        super().__init__(name=f"bert_{self.task}")
        config = encoder_of(model).config
        check_seq_length(max_seq_length, config.max_position_embeddings)
        self.hold_model(model)
        self.bert_config = config
        if vocab_file is None and tokenizer is None:
            raise ValueError("ServingModule needs the vocab_file or a tokenizer")
        self.vocab_path = None if vocab_file is None else os.fspath(vocab_file)
        self.tokenizer = tokenizer or text_layers.BertTokenizer(
            self.vocab_path, do_lower_case, vocab_size=config.vocab_size
        )
        self.packer = self.tokenizer.packer(max_seq_length)
        self.seq_length = int(max_seq_length)
        self.label_list = [str(name) for name in label_names]
        # The model describes itself: these variables are readable from the loaded SavedModel.
        self.max_seq_length = tf.Variable(self.seq_length, dtype=tf.int32, trainable=False, name="max_seq_length")
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False, name="do_lower_case")
        self.label_names = tf.Variable(
            tf.constant(self.label_list, tf.string, shape=[len(self.label_list)]), trainable=False, name="label_names"
        )
        self.task_name = tf.Variable(self.task, trainable=False, name="task")

    # -- the Keras model -------------------------------------------------------------------------------------------

    def hold_model(self, model) -> None:
        hold_model(self, model)

    @property
    def model(self):
        return self._holder.model

    # -- what subclasses define ---------------------------------------------------------------------------------

    def text_spec(self) -> dict[str, tf.TensorSpec]:
        raise NotImplementedError

    def pack(self, texts: Mapping[str, tf.Tensor]):
        """Raw text -> `(features, context)`: the model's input dict and anything `text_outputs` needs."""
        raise NotImplementedError

    def text_outputs(self, texts, features, context, model_outputs) -> dict[str, tf.Tensor]:
        raise NotImplementedError

    def token_id_spec(self) -> dict[str, tf.TensorSpec]:
        return id_specs()

    def token_id_outputs(self, features, model_outputs) -> dict[str, tf.Tensor]:
        raise NotImplementedError

    def example_spec(self) -> dict[str, tf.io.FixedLenFeature | tf.io.VarLenFeature]:
        return {name: tf.io.FixedLenFeature([], tf.string) for name in self.text_spec()}

    # -- the signatures -----------------------------------------------------------------------------------------

    def _run(self, features):
        return self.model(dict(features), training=False)

    def serve_text(self, texts):
        features, context = self.pack(texts)
        return self.text_outputs(texts, features, context, self._run(features))

    def serve_token_ids(self, features):
        features = check_token_id_shapes(features)
        return self.token_id_outputs(features, self._run(features))

    def serve_examples(self, examples, serve_text=None):
        """`serve_text` on the parsed features (`serve_text`: a traced version of it, so tracing happens once)."""
        parsed = tf.io.parse_example(examples, self.example_spec())
        parsed = {k: tf.sparse.to_dense(v) if isinstance(v, tf.SparseTensor) else v for k, v in parsed.items()}
        return (serve_text or self.serve_text)(parsed)

    def tokenize_packed(self, *segments):
        """Tokenizes one or two string batches and packs them as in training (the original truncation)."""
        return self.packer([self.tokenizer(segment) for segment in segments])

    def checked_token_ids(self, features):
        """`serve_token_ids` behind the rank checks (see `check_ranks`)."""
        checked = check_ranks("serve_token_ids", features, self.token_id_spec())
        return serve_nonempty(self.serve_token_ids, checked)

    def checked_text(self, texts):
        """`serve_text` behind the rank checks: what `serving_default` runs (and a text task's `predict`)."""
        return serve_nonempty(self.serve_text, check_ranks("serving_default", texts, self.text_spec()))

    def text_function(self) -> tf.types.experimental.GenericFunction:
        """`checked_text` as the `tf.function` of `serving_default`, for raw-text batches of any size; one per module,
        so that a text task's `predict` and `save` trace it once.

        The signatures trace without autograph, as Keras' own export does: the serving code branches on tensors only
        through explicit `tf.cond` / `tf.while_loop`, and autograph's conversion more than doubled the tracing time
        (NER's packing: 9.4 s against 3.9 s)."""
        if not hasattr(self, "_traced"):  # a plain namespace: tracked, the function would be saved as an object
            function = tf.function(self.checked_text, input_signature=[any_shape(self.text_spec())], autograph=False)
            self._traced = types.SimpleNamespace(text=function)
        return self._traced.text

    def signature_functions(self) -> dict[str, tf.types.experimental.ConcreteFunction]:
        example_spec = {"examples": string_spec("examples")}
        text = self.text_function()
        ids = tf.function(self.checked_token_ids, input_signature=[any_shape(self.token_id_spec())], autograph=False)
        examples = tf.function(
            lambda examples: self.serve_examples(
                check_ranks("serve_examples", {"examples": examples}, example_spec)["examples"], text
            ),
            input_signature=[any_shape(example_spec)["examples"]],
            autograph=False,
        )
        return {
            "serving_default": text.get_concrete_function(),
            "serve_token_ids": ids.get_concrete_function(),
            "serve_examples": examples.get_concrete_function(),
        }

    # -- writing ------------------------------------------------------------------------------------------------

    def write_assets(self, directory: str) -> dict[str, tf.saved_model.Asset]:
        if self.vocab_path is None:  # a tokenizer loaded from a .keras file: its vocabulary is the file
            output_files.write_text(
                os.path.join(directory, "vocab.txt"), "".join(f"{t}\n" for t in self.tokenizer.vocabulary)
            )
        else:
            output_files.copy(self.vocab_path, os.path.join(directory, "vocab.txt"))
        self.bert_config.to_json_file(os.path.join(directory, "bert_config.json"))
        contents = {
            "do_lower_case": "true\n" if bool(self.do_lower_case.numpy()) else "false\n",
            "label_names.txt": "".join(f"{name}\n" for name in self.label_list),
            "max_seq_length": f"{self.seq_length}\n",
        }
        for name, text in contents.items():
            output_files.write_text(os.path.join(directory, name), text)
        return {name: tf.saved_model.Asset(os.path.join(directory, name)) for name in _ASSET_NAMES}

    def save(self, export_dir: str, version: int | None = None, *, token_ids_model: bool = True) -> str:
        """Writes `export_dir/<version>/` (and `export_dir/token_ids/<version>/`); returns the version directory.

        `version` defaults to the next free one (`claim_version`); a version in use is refused. The version folder
        TF Serving watches is put in place last, whole.
        """
        check_export_dir(export_dir, flag="export_dir")
        with claim_version(export_dir, version) as version:
            target = os.path.join(export_dir, str(version))
            signatures = self.signature_functions()
            track_variables(self, signatures.values())
            with tempfile.TemporaryDirectory() as asset_dir:
                self.assets = self.write_assets(asset_dir)
                if token_ids_model:  # the same traced token-id function: the path is traced once for both
                    token_ids = _TokenIdModule(self, signatures["serve_token_ids"])
                    _save_atomically(token_ids, os.path.join(export_dir, TOKEN_IDS_DIR, str(version)), None)
                _save_atomically(self, target, signatures)
        return target


def hold_model(module: tf.Module, model) -> None:
    """Keeps `model` callable from `module`'s functions without saving it as an object (see `track_variables`)."""
    module._holder = types.SimpleNamespace(model=model)  # not trackable, so not saved


def track_variables(module: tf.Module, functions) -> None:
    """Tracks the `tf.Variable`s the concrete `functions` capture, as Keras' own `ExportArchive` does.

    A Keras 3 model tracked as an attribute is saved through wrapper variables that the session-based loaders
    (TF Serving, `saved_model_cli run`) never restore ("Could not find variable ..."): the functions read the
    inner variables, which must be what the SavedModel holds.
    """
    seen, variables = set(), []
    for function in functions:
        for variable in function.variables:
            if id(variable) not in seen:
                seen.add(id(variable))
                variables.append(variable)
    module.function_variables = variables


class _TokenIdModule(tf.Module):
    """The model and its description without the tokenizer: loads where tensorflow-text is missing.

    `serve_token_ids` is the full export's traced `serve_token_ids` (it runs no tensorflow-text op), so that an
    export traces the token-id path once, not once per SavedModel."""

    def __init__(self, parent: ServingModule, serve_token_ids: tf.types.experimental.ConcreteFunction):
        super().__init__(name=parent.name + "_token_ids")
        hold_model(self, parent.model)
        self.max_seq_length = parent.max_seq_length
        self.do_lower_case = parent.do_lower_case
        self.label_names = parent.label_names
        self.task_name = parent.task_name
        self.assets = parent.assets
        self.signatures_to_save = {"serving_default": serve_token_ids, "serve_token_ids": serve_token_ids}
        track_variables(self, self.signatures_to_save.values())


def _save_atomically(module: tf.Module, target: str, signatures) -> None:
    save_saved_model(module, target, module.signatures_to_save if signatures is None else signatures)


def save_saved_model(module: tf.Module, target: str, signatures) -> str:
    """`tf.saved_model.save` into the new folder `target`, which never holds a complete-looking half.

    TF Serving takes a version as soon as its folder appears. The SavedModel is written where no server looks (a
    hidden folder of this job beside a local `target`; a local temporary folder for one in a bucket) and put in
    place with `output_files.commit_folder`: a rename on local disk, on a store a copy with `saved_model.pb` last,
    so that a half-copied folder lacks the file every loader reads first. A `target` that holds files is refused.
    """
    with output_folders.staging_folder(target) as staging:
        with input_files.user_path(staging):  # a full disk, no permission: one line naming the folder
            tf.saved_model.save(module, staging, signatures=signatures)
        output_files.commit_folder(staging, target, marker=SAVED_MODEL_MARKER)
    return target


def read_assets(saved_model_dir: str) -> dict:
    """The description an export carries: `bert_config` (dict), `do_lower_case`, `label_names`, `max_seq_length`."""
    assets = os.path.join(saved_model_dir, "assets")

    def text(name):
        return text_files.read_text(os.path.join(assets, name))

    return {
        "bert_config": json.loads(text("bert_config.json")),
        "do_lower_case": text("do_lower_case").strip() == "true",
        "label_names": text("label_names.txt").splitlines(),
        "max_seq_length": int(text("max_seq_length")),
    }
