"""`TextTask`: a Keras model that takes raw text in `fit`, `evaluate` and `predict`, with its tokenizer inside.

A text task is a functional `keras.Model` around one of `official.nlp.modeling.models` (its `model`) plus the exact
in-graph `BertTokenizer` (its `tokenizer`). The raw-text path is the export's: the first `fit`, `evaluate`,
`predict` or `export` builds the task's serving module (`official.nlp.serving`, what `export_model.py` writes), and

- `predict` runs that module's `serving_default` function on each batch of strings, so it answers what the exported
  SavedModel answers (label names, entities, answer texts), on the same graph;
- `fit` and `evaluate` pack text with that module's `pack` (tokenizer, packer, long-text windows) inside `tf.data`,
  so training sees the inputs serving will see;
- `export` saves that module: the SavedModel of `export_model.py`.

`save("x.keras")` writes the whole task: the model, the task's settings in the config, and the vocabulary as an
asset of the tokenizer; `keras.saving.load_model("x.keras")` (after `from official import bert`, which registers the
classes) gives it back with Keras' `safe_mode` on.

Inputs: Python lists or NumPy arrays of strings (each task says how pairs, words or questions are given), or a
`tf.data.Dataset` whose elements are such strings (and labels for `fit`/`evaluate`), batched or not.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import types

import keras
import numpy as np
import tensorflow as tf

from official.nlp.checkpoints import init_checkpoint, model_dir
from official.nlp.common import output_files
from official.nlp.common.errors import InputError
from official.nlp.modeling.encoder import encoder_inputs
from official.nlp.serving import exporter
from official.nlp.tasks import finetuning_outputs
from official.nlp.tokenizers.text_layers import BertTokenizer

DEFAULT_BATCH_SIZE = 32
DEFAULT_LEARNING_RATE = 5e-5  # the first of the paper's fine-tuning rates, keras-hub's default too


def as_strings(array) -> np.ndarray:
    """A NumPy array of `tf.string` values as Python `str` (UTF-8)."""
    array = np.asarray(array)
    if array.dtype != object:
        return array
    return np.vectorize(lambda b: b.decode("utf-8") if isinstance(b, bytes) else b, otypes=[object])(array)


def model_files(path: str):
    """The config, vocabulary, case and checkpoint of `path` (anything `--init_checkpoint` takes) and its record."""
    try:
        files = init_checkpoint.resolve_model_files(path)
    except (FileNotFoundError, ValueError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f"{path}: {e}") from e
    if files.checkpoint is None:
        raise InputError(f"{path} holds no checkpoint; convert one first (convert_checkpoint.py)")
    return files, init_checkpoint.read_record(path)


def string_column(values, what: str) -> np.ndarray:
    """One text per example as a 1-D object array; refuses a bare string (a batch of one needs a list)."""
    if isinstance(values, (str, bytes)):
        raise InputError(f"{what}: got one string; pass a list of strings (one per example)")
    array = np.asarray(values, dtype=object)
    if array.ndim != 1:
        raise InputError(f"{what}: expected a list of strings, got an array of shape {array.shape}")
    for i, value in enumerate(array):
        if not isinstance(value, (str, bytes)):
            raise InputError(f"{what}[{i}] is {type(value).__name__}, not a string")
    return array


def checked_label_names(label_names) -> list[str]:
    """The names of a task's labels as strings; refuses a bare string (which would be one label per character)
    and a name given twice (a lookup table takes each key once)."""
    if isinstance(label_names, (str, bytes)):
        raise InputError(
            f"label_names={label_names!r}: got one string; pass a list of names, one per class in the head's order "
            "(e.g. ['negative', 'positive'])"
        )
    names = [name.decode("utf-8") if isinstance(name, bytes) else str(name) for name in label_names]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise InputError(
            f"label_names: {', '.join(map(repr, twice))} given more than once; name each class once, in the head's "
            "order"
        )
    return names


def check_seq_length(seq_length, max_position_embeddings: int) -> int:
    """`seq_length` when it is a whole number of tokens that the model's position embeddings hold (at least
    [CLS], one token and [SEP])."""
    limit = max_position_embeddings
    if isinstance(seq_length, bool) or not isinstance(seq_length, (int, np.integer)) or not 3 <= seq_length <= limit:
        raise InputError(
            f"seq_length={seq_length!r}: must be a whole number of tokens from 3 ([CLS], one token, [SEP]) to the "
            f"model's max_position_embeddings ({limit})"
        )
    return int(seq_length)


# A dataset's values are seen only inside tf.data, where a bad one can only fail an op (`input_check`); `fit` and
# `evaluate` turn that failure back into the one-line InputError it stands for. The op carries a key, not the
# message: TensorFlow escapes the text of a failed assertion.
_INPUT_CHECK = "text task input check #"
_input_check_messages: dict[str, int] = {}


def input_check(condition: tf.Tensor, message: str) -> tf.Operation:
    """An op that fails when the scalar bool `condition` is false; `fit` and `evaluate` then raise
    `InputError(message)`. Run it as a control dependency of what the check guards."""
    key = _input_check_messages.setdefault(message, len(_input_check_messages))
    return tf.debugging.Assert(condition, [f"{_INPUT_CHECK}{key}#"])


@contextlib.contextmanager
def _input_errors():
    try:
        yield
    except tf.errors.InvalidArgumentError as e:
        found = re.search(re.escape(_INPUT_CHECK) + r"(\d+)#", e.message)
        if found is None:
            raise
        message = next(text for text, key in _input_check_messages.items() if key == int(found.group(1)))
        raise InputError(message) from None


def _unconverted(function):
    """`function` for `Dataset.map` without autograph's conversion, as the export traces it: the packing branches on
    tensors only through explicit `tf.cond` / `tf.while_loop`, and the conversion doubled its tracing time."""
    return tf.autograph.experimental.do_not_convert(function)


class TextTask(keras.Model):
    """Base of the text tasks (see the module docstring); subclasses say what text and labels look like."""

    serving_task = ""  # the task name of `official.nlp.serving.exporter`

    def __init__(self, model: keras.Model, tokenizer: BertTokenizer, *, seq_length: int, compile=True, **kwargs):
        seq_length = check_seq_length(seq_length, model.encoder.config.max_position_embeddings)
        inputs = encoder_inputs()
        super().__init__(inputs=inputs, outputs=model(inputs), **kwargs)
        self.model = model
        self.tokenizer = tokenizer
        self.seq_length = seq_length
        # Built on first use: it needs the vocabulary, which Keras loads after the config. A plain namespace, so
        # that neither Keras nor tf.train tracks (and saves) it.
        self._serving = types.SimpleNamespace(module=None, function=None)
        if compile:
            self.compile()

    # -- what subclasses define -----------------------------------------------------------------------------------

    def task_settings(self) -> dict:
        """The constructor arguments besides `model`, `tokenizer` and `seq_length` (saved in the config)."""
        return {}

    def serving_settings(self) -> dict:
        """Keyword arguments of `exporter.build_export` besides the model, vocabulary and sequence length."""
        return {}

    def python_texts(self, x) -> dict:
        """`x` as Python values -> the serving module's text inputs (1-D arrays), plus what training needs besides
        (a ragged tensor, e.g. NER's words)."""
        raise NotImplementedError

    def tensor_texts(self, x) -> dict[str, tf.Tensor]:
        """One element (or batch) of a dataset's text part -> what `python_texts` gives, as tensors."""
        raise NotImplementedError

    def python_labels(self, y, texts: dict):
        """`y` of `fit`/`evaluate` as Python values -> an array (or ragged tensor), one row per text of `texts`."""
        raise NotImplementedError

    def tensor_labels(self, y):
        """A batch of a dataset's labels -> what `training_batch` takes (e.g. names looked up as ids)."""
        return y

    def training_batch(self, texts, labels):
        """A batch of text inputs and labels -> `(features, y)` or `(features, y, sample_weight)` for Keras."""
        raise NotImplementedError

    def collect(self, batches: list[dict[str, np.ndarray]]) -> dict:
        """The serving outputs of each batch -> what `predict` returns."""
        return {key: np.concatenate([as_strings(b[key]) for b in batches]) for key in batches[0]}

    def default_loss(self):
        raise NotImplementedError

    def default_metrics(self) -> list:
        return []

    # -- the serving module: the one raw-text path ----------------------------------------------------------------

    def serving_module(self):
        """The export of this task (built once, around this task's model and tokenizer)."""
        if self._serving.module is None:
            self._serving.module = exporter.build_export(
                self.serving_task,
                self.model,
                vocab_file=None,
                do_lower_case=self.tokenizer.do_lower_case,
                max_seq_length=self.seq_length,
                tokenizer=self.tokenizer,
                **self.serving_settings(),
            )
        return self._serving.module

    def _serving_function(self):
        if self._serving.function is None:
            self._serving.function = self.serving_module().text_function()
        return self._serving.function

    # -- data -----------------------------------------------------------------------------------------------------

    def _dataset_batches(self, x: tf.data.Dataset, batch_size: int | None, *, labelled: bool) -> tf.data.Dataset:
        """Batches of `(texts, labels)` (or `texts`) from a dataset of strings, taken as it comes."""
        if labelled:
            spec = x.element_spec
            if not (isinstance(spec, tuple) and len(spec) == 2):
                raise InputError(
                    "fit/evaluate take a dataset of (texts, labels) elements (no sample weights); for predict, "
                    "pass texts alone"
                )
            ds = x.map(_unconverted(lambda texts, labels: (self.tensor_texts(texts), labels)))
            first = ds.element_spec[0]
        else:  # a tuple element (a text pair) reaches map's function as several arguments
            ds = x.map(_unconverted(lambda *element: self.tensor_texts(element[0] if len(element) == 1 else element)))
            first = ds.element_spec
        if next(iter(first.values())).shape.rank == 0:  # one example per element
            ds = ds.ragged_batch(batch_size or DEFAULT_BATCH_SIZE)
        elif batch_size is not None:
            raise InputError("the dataset is batched already; leave batch_size out")
        return ds.map(_unconverted(lambda texts, labels: (texts, self.tensor_labels(labels)))) if labelled else ds

    def _python_examples(self, x, y) -> tuple[tf.data.Dataset, int]:
        """Unbatched `(texts, labels)` (or `texts` when `y` is None) from Python values, and how many."""
        texts = self.python_texts(x)
        count = len(next(iter(texts.values())))
        if count == 0:
            raise InputError("x is empty: no texts; pass at least one" + ("" if y is None else ", with its label in y"))
        if y is None:
            return tf.data.Dataset.from_tensor_slices(texts), count
        return tf.data.Dataset.from_tensor_slices((texts, self.python_labels(y, texts))), count

    def text_batches(self, x, batch_size: int | None = None) -> tf.data.Dataset:
        """Batches of the text inputs of `x` (Python values or a dataset), as `predict` reads them."""
        if isinstance(x, tf.data.Dataset):
            return self._dataset_batches(x, batch_size, labelled=False)
        return self._python_examples(x, None)[0].batch(batch_size or DEFAULT_BATCH_SIZE)

    def training_data(self, x, y=None, batch_size: int | None = None, *, shuffle: bool = False) -> tf.data.Dataset:
        """What `fit` and `evaluate` feed Keras: packed features and labels, built in the `tf.data` graph."""
        self.serving_module()  # built here, eagerly: its variables cannot be made inside a dataset function
        if isinstance(x, tf.data.Dataset):  # taken as it comes: order, batches, and maybe more than memory holds
            if y is not None:
                raise InputError("fit/evaluate on a tf.data.Dataset: its elements hold the labels; do not pass y")
            ds = self._dataset_batches(x, batch_size, labelled=True)
            return ds.map(_unconverted(self.training_batch), num_parallel_calls=tf.data.AUTOTUNE).prefetch(
                tf.data.AUTOTUNE
            )
        if y is None:
            raise InputError("fit/evaluate need labels: pass y (one per example), or a dataset of (texts, labels)")
        examples, count = self._python_examples(x, y)
        batch_size = batch_size or DEFAULT_BATCH_SIZE
        packed = examples.batch(batch_size).map(_unconverted(lambda texts, labels: (texts, self.tensor_labels(labels))))
        # Python values are in memory, and so are their packed features: every new iterator of a pipeline with
        # the tokenizer takes seconds to start (TensorFlow instantiates its graph again), which each epoch paid.
        ds = packed.map(_unconverted(self.training_batch), num_parallel_calls=tf.data.AUTOTUNE).unbatch().cache()
        rows = int(ds.reduce(np.int64(0), lambda n, *_: n + 1))  # the one pass that packs, filling the cache
        ds = ds.apply(tf.data.experimental.assert_cardinality(rows))  # so Keras knows an epoch's length
        if shuffle:  # as Keras shuffles arrays: every epoch
            ds = ds.shuffle(count, reshuffle_each_iteration=True)
        return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)

    # -- Keras ----------------------------------------------------------------------------------------------------

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile`; "auto" is Adam at 5e-5, the task's loss on logits and its metrics."""
        super().compile(
            optimizer=keras.optimizers.Adam(DEFAULT_LEARNING_RATE) if optimizer == "auto" else optimizer,
            loss=self.default_loss() if loss == "auto" else loss,
            metrics=self.default_metrics() if metrics == "auto" else metrics,
            **kwargs,
        )

    def compile_from_config(self, config):
        # Keras skips overridden compile() methods when loading a .keras file; ours is safe to call.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def fit(self, x=None, y=None, batch_size=None, validation_data=None, shuffle=True, **kwargs):
        """`keras.Model.fit` on raw text: `x` texts (see the task) and `y` labels, or a dataset of both. Python
        values are shuffled each epoch unless `shuffle=False`; a dataset is taken in its own order."""
        with _input_errors():
            data = self.training_data(x, y, batch_size, shuffle=shuffle)
            if validation_data is not None:
                val_x, val_y = (
                    (validation_data, None) if isinstance(validation_data, tf.data.Dataset) else validation_data
                )
                validation_data = self.training_data(val_x, val_y, batch_size)
            return super().fit(data, validation_data=validation_data, shuffle=False, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """`keras.Model.evaluate` on raw text, as `fit` takes it."""
        if kwargs.get("_use_cached_eval_dataset"):  # fit's validation: packed already
            return super().evaluate(x, y, batch_size=batch_size, **kwargs)
        with _input_errors():
            return super().evaluate(self.training_data(x, y, batch_size), **kwargs)

    def predict(self, x, batch_size=None, verbose="auto"):
        """The answers of the exported model for raw text `x` (see the task for the keys), batch by batch. No
        progress bar (`verbose` is taken for Keras' signature) and no callbacks."""
        del verbose
        serve, names = self._serving_function(), self.serving_module().text_spec()
        batches = [
            {key: value.numpy() for key, value in serve({name: texts[name] for name in names}).items()}
            for texts in self.text_batches(x, batch_size)
        ]
        if not batches:
            raise InputError("predict got no texts")
        return self.collect(batches)

    def model_dir_record(self) -> dict:
        """What `save_model_dir` records: `task`, `head`, `labels` (`finetuning.json`) and `settings`."""
        raise NotImplementedError(f"{type(self).__name__} has no model-directory form; save it as .keras")

    def save_model_dir(self, path: str) -> str:
        """Writes the model as a fine-tuned model directory (checkpoint, `bert_config.json`, `vocab.txt`,
        `do_lower_case`, and the head, labels and sequence settings): what the scripts take as `--init_checkpoint`
        (`export_model.py`, `--do_predict`, further fine-tuning) and `from_model_dir` loads back. Returns `path`."""
        record = self.model_dir_record()
        with tempfile.TemporaryDirectory() as folder:  # the vocabulary may exist only in the tokenizer
            vocab_file = os.path.join(folder, "vocab.txt")
            output_files.write_text(vocab_file, "".join(f"{token}\n" for token in self.tokenizer.vocabulary))
            files = model_dir.ModelFiles(
                config=self.model.encoder.config, vocab_file=vocab_file, do_lower_case=self.tokenizer.do_lower_case
            )
            return finetuning_outputs.save_fine_tuned(
                self.model,
                path,
                files,
                task_name=record["task"],
                head=record["head"],
                labels=record["labels"],
                settings={"max_seq_length": self.seq_length, **record["settings"]},
            )

    def export(self, export_dir: str, version: int | None = None) -> dict:
        """Writes the task as `export_model.py` does: the SavedModel `export_dir/<version>/` (raw text in, answers
        out, and the token-id and tf.Example signatures) and `export_dir/token_ids/<version>/`. Returns their
        paths (`saved_model`, `token_ids`)."""
        saved = self.serving_module().save(export_dir, version)
        return {
            "saved_model": saved,
            "token_ids": os.path.join(export_dir, "token_ids", os.path.basename(saved)),
        }

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "model": keras.saving.serialize_keras_object(self.model),
            "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
            "seq_length": self.seq_length,
            **self.task_settings(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["model"] = keras.saving.deserialize_keras_object(config["model"])
        config["tokenizer"] = keras.saving.deserialize_keras_object(config["tokenizer"])
        return cls(**config)
