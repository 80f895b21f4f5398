"""`QuestionAnswerer`: extractive question answering (SQuAD) on raw questions and contexts, for `predict`.

Example (a tiny random model, so the answer is any span; `from_model_dir` loads `run_squad.py`'s model):

>>> import keras
>>> from official.nlp.modeling.configs import BertConfig
>>> from official.nlp.modeling.encoder import BertEncoder
>>> from official.nlp.modeling.models import BertSpanLabeler
>>> from official.nlp.tokenizers.text_layers import BertTokenizer
>>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "lives", "in", "paris", "john", "?", "."]
>>> keras.utils.set_random_seed(0)
>>> encoder = BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=len(vocab)))
>>> reader = QuestionAnswerer(BertSpanLabeler(encoder), BertTokenizer(vocab), seq_length=16, max_query_length=8,
...                           doc_stride=4)
>>> answers = reader.predict((["Who lives in Paris?"], ["John lives in Paris."]))
>>> sorted(answers)
['answer_end', 'answer_start', 'answer_text', 'score']
>>> context = "John lives in Paris."
>>> context[answers["answer_start"][0] : answers["answer_end"][0]] == answers["answer_text"][0]
True
"""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from official.nlp.checkpoints import fine_tuned
from official.nlp.common.errors import InputError
from official.nlp.data.squad.postprocessing import AnswerSettings
from official.nlp.modeling.models import BertSpanLabeler
from official.nlp.serving import exporter
from official.nlp.text_tasks.base import TextTask, checked_seq_length, model_files, string_column
from official.nlp.tokenizers.text_layers import BertTokenizer

_NAMES = ("question", "context")


@keras.saving.register_keras_serializable(package="bert")
class QuestionAnswerer(TextTask):
    """`BertSpanLabeler` on raw text, decoded as `run_squad.py --do_predict` decodes it, in the graph.

    `predict(x)`: `x` a pair `(questions, contexts)` of lists of strings (or a dict with `question` and
    `context`), or a dataset of such pairs. Returns arrays, one row per question: `answer_text`, `answer_start` and
    `answer_end` (character offsets into the context, -1 for no answer), `score`, and with
    `version_2_with_negative` `null_score_diff`: the exported model's outputs. A long context is read in
    `doc_stride` windows, each answer taken where its tokens have the most context.

    Training is `run_squad.py`'s job (SQuAD's character-offset answers, the v2.0 null answers, the official
    evaluation); `from_model_dir` loads what it trained.

    Args:
      model: a `BertSpanLabeler`.
      tokenizer: the `BertTokenizer` of the model's vocabulary and case.
      seq_length: tokens per packed window (question and context).
      answer_settings: `run_squad.py`'s window and answer settings (`AnswerSettings`, its defaults); or any of them
        by name (`doc_stride=`, `max_query_length=`, `n_best_size=`, `max_answer_length=`,
        `version_2_with_negative=`, `null_score_diff_threshold=`).
    """

    serving_task = "squad"

    def __init__(
        self,
        model: BertSpanLabeler,
        tokenizer: BertTokenizer,
        *,
        seq_length: int = 384,
        answer_settings: AnswerSettings | None = None,
        **kwargs,
    ):
        named = {name: kwargs.pop(name) for name in AnswerSettings.names() if name in kwargs}
        answer = dataclasses.replace(answer_settings or AnswerSettings(), **named)
        kwargs.setdefault("compile", False)  # nothing to train here
        super().__init__(model, tokenizer, seq_length=seq_length, **kwargs)
        self.squad_settings = answer.to_dict()
        if tokenizer.has_vocabulary:
            self.serving_module()  # refuses settings that do not fit, now

    @classmethod
    def from_model_dir(cls, path: str, *, seq_length: int | None = None, **settings) -> QuestionAnswerer:
        """The SQuAD model `run_squad.py` fine-tuned in `path` (its `--output_dir`, `best_model/` or a checkpoint
        prefix), with its span head, vocabulary, and the settings it recorded; keyword arguments override them."""
        files = model_files(path)
        if seq_length is not None:  # before any model is built
            checked_seq_length(seq_length, files.config.max_position_embeddings)
        described, model = fine_tuned.load_fine_tuned(
            path,
            serving_task=cls.serving_task,
            files=files,
            what="question-answering head",
            hint="fine-tune one with run_squad.py (its --output_dir is what this takes)",
        )
        recorded = exporter.recorded_settings(cls.serving_task, described)
        return cls(
            model,
            BertTokenizer(files.vocab_file, files.do_lower_case, vocab_size=files.config.vocab_size),
            seq_length=seq_length
            if seq_length is not None
            else (recorded["max_seq_length"] if described.record else 384),
            **{**recorded["squad_settings"], **settings},
        )

    # -- TextTask ---------------------------------------------------------------------------------------------------

    def task_settings(self) -> dict:
        return dict(self.squad_settings)

    def serving_settings(self) -> dict:
        return {"squad_settings": dict(self.squad_settings)}

    def python_texts(self, x) -> dict[str, np.ndarray]:
        if isinstance(x, dict):
            parts = [x.get(name) for name in _NAMES]
        elif isinstance(x, (tuple, list)) and len(x) == 2 and not isinstance(x[0], (str, bytes)):
            parts = list(x)
        else:
            raise InputError("QuestionAnswerer takes (questions, contexts): a tuple of two lists of strings")
        columns = {name: string_column(part, name) for name, part in zip(_NAMES, parts)}
        if len(columns["question"]) != len(columns["context"]):
            raise InputError(f"{len(columns['question'])} questions for {len(columns['context'])} contexts")
        return columns

    def tensor_texts(self, x) -> dict[str, tf.Tensor]:
        if isinstance(x, dict):
            return {name: x[name] for name in _NAMES}
        return dict(zip(_NAMES, x))

    def fit(self, *args, **kwargs):
        raise NotImplementedError(
            "QuestionAnswerer predicts; fine-tune with run_squad.py and load the result with "
            "QuestionAnswerer.from_model_dir(<its --output_dir>)"
        )

    def evaluate(self, *args, **kwargs):
        raise NotImplementedError(
            "QuestionAnswerer predicts; run_squad.py --do_eval gives SQuAD's exact match and F1 for a model"
        )

    def default_loss(self):
        return None
