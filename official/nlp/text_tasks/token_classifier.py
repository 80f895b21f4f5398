"""`TokenClassifier`: named-entity recognition (token classification) on words and raw text, the tokenizer inside.

Example (a tiny random model; `from_model_dir` starts from a checkpoint):

>>> import keras
>>> from official.nlp.modeling.configs import BertConfig
>>> from official.nlp.modeling.encoder import BertEncoder
>>> from official.nlp.modeling.models import BertTokenClassifier
>>> from official.nlp.tokenizers.text_layers import BertTokenizer
>>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "lives", "in", "paris", "."]
>>> keras.utils.set_random_seed(0)
>>> encoder = BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=len(vocab)))
>>> tagger = TokenClassifier(BertTokenClassifier(encoder, 3), BertTokenizer(vocab), seq_length=16,
...                          label_names=["O", "B-PER", "B-LOC"])
>>> history = tagger.fit([["John", "lives", "in", "Paris", "."]], [["B-PER", "O", "O", "B-LOC", "O"]], verbose=0)
>>> predictions = tagger.predict(["John lives in Paris."])
>>> predictions["words"]
[['John', 'lives', 'in', 'Paris.']]
>>> sorted(predictions)
['entities', 'num_words', 'word_end', 'word_label_ids', 'word_labels', 'word_probabilities', 'word_start', 'words']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf

from official.nlp.checkpoints import fine_tuned, head_kinds
from official.nlp.common.errors import InputError
from official.nlp.data import conll
from official.nlp.data.conll import IGNORE
from official.nlp.metrics import conlleval
from official.nlp.modeling.configs import DEFAULT_SEQ_LENGTH
from official.nlp.modeling.models import BertTokenClassifier
from official.nlp.serving import exporter
from official.nlp.text_tasks.base import (
    TextTask,
    as_strings,
    checked_label_names,
    checked_seq_length,
    input_check,
    model_files,
    string_column,
)
from official.nlp.tokenizers.text_layers import BertTokenizer

_WHITESPACE = re.compile(r"[\t\n\r\u0020\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")  # BERT's: tab, CR, LF, Zs
_PER_WORD = ("words", "word_labels", "word_label_ids", "word_probabilities", "word_start", "word_end")


def _text(value) -> str:
    return value if isinstance(value, str) else value.decode("utf-8")


def _entities(words, labels, starts, ends) -> list[dict]:
    """The chunks of one text's word labels by conlleval's rules (IOB1, IOB2 or IOBES), in text order."""
    return [
        {
            "label": kind,
            "text": " ".join(words[first : last + 1]),
            "start": int(starts[first]),
            "end": int(ends[last]),
            "words": (first, last + 1),
        }
        for kind, first, last in sorted(conlleval.chunks(labels), key=lambda chunk: chunk[1])
    ]


@keras.saving.register_keras_serializable(package="bert")
class TokenClassifier(TextTask):
    """`BertTokenClassifier` on words: one label per word, as `run_ner.py` labels CoNLL-2003.

    - `fit(x, y)` / `evaluate(x, y)`: `x` a list of sentences, each a list of words (no whitespace in a word), `y`
      their tags (names of `label_names`), one per word; or a dataset of `(words, tags)` elements. Each word's label
      trains its first sub-token; a sentence longer than `seq_length - 2` sub-tokens is cut into run_ner's
      windows, each word trained in the window where it has the most context.
    - `predict(x)`: `x` raw sentences (split at whitespace) or lists of words. Returns one list per text of
      `words`, `word_labels`, `word_label_ids`, `word_probabilities` and `word_start`/`word_end` (character
      offsets into the text; words joined by single spaces when given as lists), `num_words`, and `entities`: the
      chunks of the word labels by conlleval's rules, each `{"label", "text", "start", "end", "words"}` (`words`
      the half-open range of word indices). These are the exported model's outputs, per text.

    Args:
      model: a `BertTokenClassifier`.
      tokenizer: the `BertTokenizer` of the model's vocabulary and case.
      seq_length: sub-tokens per packed window.
      label_names: the tag set in output order.
      window_stride: sub-tokens between window starts (default: half a window).
      compile: compile with `compile()`'s defaults (Adam 5e-5, cross-entropy over first sub-tokens, accuracy).
    """

    serving_task = "ner"

    def __init__(
        self,
        model: BertTokenClassifier,
        tokenizer: BertTokenizer,
        *,
        seq_length: int = DEFAULT_SEQ_LENGTH,
        label_names: Sequence[str] = (),
        window_stride: int | None = None,
        **kwargs,
    ):
        label_names = checked_label_names(label_names)
        not_chunks = [name for name in label_names if not conll.is_chunk_tag(name)]
        if not_chunks:  # as run_ner refuses them: no entity would ever be found
            raise InputError(
                f"label_names: {', '.join(map(repr, not_chunks[:5]))} "
                f"{'is not a chunk tag' if len(not_chunks) == 1 else 'are not chunk tags'} ({conll.CHUNK_TAGS}); "
                "entities are read from chunk tags (IOB1, IOB2 or IOBES), so name the tags that way"
            )
        if len(label_names) != model.num_classes:
            raise InputError(
                f"{len(label_names)} label_names for a token classifier with {model.num_classes} classes; pass the "
                "tag set in the head's order"
            )
        super().__init__(model, tokenizer, seq_length=seq_length, **kwargs)
        self.label_names = label_names
        self.window_stride = window_stride
        if tokenizer.has_vocabulary:
            self.serving_module()  # refuses a stride or length that does not fit, now

    @classmethod
    def from_model_dir(
        cls,
        path: str,
        *,
        label_names: Sequence[str] | None = None,
        seq_length: int | None = None,
        window_stride: int | None = None,
        dropout_rate: float = 0.1,
        **kwargs,
    ) -> TokenClassifier:
        """A token classifier on the encoder of `path` (anything `--init_checkpoint` takes), with its vocabulary.

        With `label_names` the head is new. Without, `path` must hold a fine-tuned one (`run_ner.py`'s
        `--output_dir` or `best_model/`): its head, tags, sequence length and window stride come along.
        `seq_length` defaults to 128.
        """
        if label_names is not None:  # before any model is built
            label_names = checked_label_names(label_names)
        files = model_files(path)
        if seq_length is not None:  # before any model is built
            checked_seq_length(seq_length, files.config.max_position_embeddings)
        tokenizer = BertTokenizer(files.vocab_file, files.do_lower_case, vocab_size=files.config.vocab_size)
        if label_names is None:
            described, model = fine_tuned.load_fine_tuned(
                path,
                serving_task=cls.serving_task,
                files=files,
                what="token classifier",
                hint="pass label_names for a new head on its encoder",
            )
            recorded = exporter.recorded_settings(cls.serving_task, described)
            label_names = recorded["label_names"] or [str(i) for i in range(model.num_classes)]
            seq_length = recorded["max_seq_length"] if seq_length is None else seq_length
            window_stride = window_stride or recorded["window_stride"]
        else:
            model = BertTokenClassifier(files.build_encoder(), len(label_names), dropout_rate=dropout_rate)
        return cls(
            model,
            tokenizer,
            seq_length=DEFAULT_SEQ_LENGTH if seq_length is None else seq_length,
            label_names=label_names,
            window_stride=window_stride,
            **kwargs,
        )

    # -- TextTask ---------------------------------------------------------------------------------------------------

    def task_settings(self) -> dict:
        return {"label_names": list(self.label_names), "window_stride": self.window_stride}

    def model_dir_record(self) -> dict:
        return {
            "task": head_kinds.NER_TASK,
            "head": head_kinds.TOKEN_CLASSIFIER,
            "labels": list(self.label_names),
            "settings": {"window_stride": self.window_stride},
        }

    def serving_settings(self) -> dict:
        return {"label_names": self.label_names, "window_stride": self.window_stride}

    def python_texts(self, x) -> dict:
        if isinstance(x, (str, bytes)) or not isinstance(x, (list, tuple, np.ndarray)):
            raise InputError("texts: pass a list of sentences, each a string or a list of words")
        if all(isinstance(text, (str, bytes)) for text in x):
            texts = [_text(t) for t in string_column(x, "texts")]
            words = [t.split(" ") if t else [] for t in texts]
        else:
            words = []
            for i, sentence in enumerate(x):
                if isinstance(sentence, (str, bytes)):
                    raise InputError(f"texts[{i}] is a string and others are lists of words; give one kind")
                sentence = [_text(word) for word in string_column(sentence, f"texts[{i}]")]
                for j, word in enumerate(sentence):
                    if _WHITESPACE.search(word):
                        raise InputError(f"texts[{i}][{j}] = {word!r} holds whitespace; a word is split at none")
                words.append(sentence)
            texts = [" ".join(sentence) for sentence in words]
        return {
            "text_a": np.array(texts, dtype=object),
            "words": tf.ragged.constant(words, dtype=tf.string, ragged_rank=1),
        }

    def tensor_texts(self, x) -> dict[str, tf.Tensor]:
        if x.dtype != tf.string or x.shape.rank not in (1, 2):
            raise InputError("the dataset's texts must be words: 1-D strings per sentence, or a ragged batch of them")
        return {"text_a": tf.strings.reduce_join(x, axis=-1, separator=" "), "words": x}

    def python_labels(self, y, texts: dict):
        words = texts["words"].row_lengths().numpy()
        if isinstance(y, (str, bytes)) or len(y) != len(words):
            raise InputError(f"y: expected {len(words)} tag lists (one per sentence), got {len(y)}")
        index = {name: i for i, name in enumerate(self.label_names)}
        rows = []
        for i, (tags, count) in enumerate(zip(y, words)):
            tags = [str(tag) for tag in tags]
            if len(tags) != count:
                raise InputError(f"y[{i}]: {len(tags)} tags for {count} words; give one tag per word")
            unknown = sorted(set(tags) - set(index))
            if unknown:
                raise InputError(f"y[{i}]: unknown tags {unknown[:5]}; the tags are {', '.join(self.label_names)}")
            rows.append([index[tag] for tag in tags])
        if not any(rows):
            raise InputError(
                f"x: the {len(rows)} sentence{'s hold' if len(rows) > 1 else ' holds'} no word; fit and evaluate "
                "need at least one word with its tag"
            )
        return tf.ragged.constant(rows, dtype=tf.int32, ragged_rank=1)

    def training_data(self, x, y=None, batch_size=None, *, shuffle=False):
        if not hasattr(self._serving, "label_ids"):  # made eagerly, used in the pipeline
            keys = tf.constant(self.label_names)
            self._serving.label_ids = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(keys, tf.range(len(self.label_names), dtype=tf.int32)), -1
            )
        return super().training_data(x, y, batch_size, shuffle=shuffle)

    def tensor_labels(self, y):
        if y.dtype != tf.string:
            return tf.cast(y, tf.int32)
        ids = tf.ragged.map_flat_values(self._serving.label_ids.lookup, y)
        unknown = f"the dataset's labels: a tag is not one of {', '.join(self.label_names)}"
        with tf.control_dependencies([input_check(tf.reduce_all(ids.flat_values >= 0), unknown)]):
            return tf.identity(ids)

    def training_batch(self, texts, labels):
        """Packs the windows serving packs, with each word's label at the position whose logits label it."""
        serving = self.serving_module()
        words = texts["words"]
        if not isinstance(labels, tf.RaggedTensor):
            labels = tf.RaggedTensor.from_tensor(labels, lengths=words.row_lengths())
        features, (found, windows) = serving.pack({"text_a": texts["text_a"]})
        # Serving's words are the whitespace-separated runs with a sub-token: each takes the tag of the given word
        # it starts in (a word that tokenizes to nothing has no logits to train, and its tag is left out).
        length = tf.cast(tf.strings.length(words.flat_values), tf.int64) + 1  # the word and its space
        ends = tf.cumsum(length)
        row_starts = tf.gather(tf.concat([[0], ends], 0), words.row_splits[:-1])
        starts = ends - length - tf.repeat(row_starts, words.row_lengths())  # byte offset in the joined text
        stride = tf.constant(2**32, tf.int64)  # orders (row, byte offset) pairs as one key
        keys = words.value_rowids() * stride + starts
        word = tf.searchsorted(keys, found["row"] * stride + found["byte_start"], side="right") - 1
        checks = [
            tf.debugging.assert_equal(
                labels.row_lengths(), words.row_lengths(), message="a sentence has not one tag per word"
            ),
            tf.debugging.assert_equal(
                tf.size(tf.unique(word).y), tf.size(word), message="a word holds whitespace; split it into words"
            ),
        ]
        with tf.control_dependencies(checks):
            word_labels = tf.gather(labels.flat_values, word)
        batch = tf.shape(texts["text_a"])[0]
        owner, position = serving.word_owners(found, windows, batch)
        shape = tf.shape(features["input_word_ids"])
        y = tf.tensor_scatter_nd_update(
            tf.fill(shape, tf.constant(IGNORE, tf.int32)), tf.stack([owner, position], axis=1), word_labels
        )
        return features, y, tf.cast(y != IGNORE, tf.float32)

    def collect(self, batches: list[dict[str, np.ndarray]]) -> dict:
        out = {key: [] for key in (*_PER_WORD, "num_words", "entities")}
        for batch in batches:
            for row, count in enumerate(batch["num_words"]):
                values = {key: as_strings(batch[key][row, :count]).tolist() for key in _PER_WORD}
                for key in _PER_WORD:
                    out[key].append(values[key])
                out["num_words"].append(int(count))
                out["entities"].append(
                    _entities(values["words"], values["word_labels"], values["word_start"], values["word_end"])
                )
        out["num_words"] = np.array(out["num_words"], "int32")
        return out

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE)

    def default_metrics(self) -> list:
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
