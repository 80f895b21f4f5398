"""The text tasks' arguments and edge inputs from Python (issue 40): each mistake is one `InputError` naming the
argument, raised before the model is traced, and an empty or whitespace-only sentence predicts no entities."""

from __future__ import annotations

import re

import numpy as np
import pytest

from official.nlp.common.errors import InputError
from official.nlp.modeling.models import BertClassifier, BertTokenClassifier
from official.nlp.text_tasks.classifier import TextClassifier
from official.nlp.text_tasks.token_classifier import TokenClassifier
from official.nlp.tokenizers.text_layers import BertTokenizer
from official.nlp.tokenizers.tokenization import FullTokenizer
from tests.nlp.text_tasks.conftest import tiny_encoder

TAGS = ["O", "B-PER", "I-PER"]


def _classifier(tokenizer, num_classes=2, **kwargs):
    return TextClassifier(BertClassifier(tiny_encoder(), num_classes), tokenizer, **{"seq_length": 16, **kwargs})


def _tagger(tokenizer, label_names=TAGS, **kwargs):
    model = BertTokenClassifier(tiny_encoder(), len(label_names))
    return TokenClassifier(model, tokenizer, label_names=label_names, **{"seq_length": 16, **kwargs})


def test_label_names_as_one_string_is_refused(uncased_tokenizer, tiny_model_dir):
    """`label_names="positive"` became the eight labels p, o, s, i, t, i, v, e."""
    message = r"^label_names='positive': got one string; pass a list of names"
    with pytest.raises(InputError, match=message):
        _classifier(uncased_tokenizer, 8, label_names="positive")
    with pytest.raises(InputError, match=message):
        TextClassifier.from_model_dir(tiny_model_dir, label_names="positive", seq_length=16)
    with pytest.raises(InputError, match=r"^label_names='O': got one string"):
        _tagger(uncased_tokenizer, label_names="O")


def test_a_label_named_twice_is_refused_when_the_task_is_made(uncased_tokenizer):
    """Duplicate names failed at `fit` with a lookup-table error."""
    with pytest.raises(InputError, match=r"^label_names: 'a' given more than once; name each class once"):
        _classifier(uncased_tokenizer, 3, label_names=["a", "b", "a"])
    with pytest.raises(InputError, match=r"^label_names: 'O' given more than once"):
        _tagger(uncased_tokenizer, label_names=["O", "O", "B-PER"])


@pytest.mark.parametrize("seq_length", [0, -4, 2, 65, True, 16.0, "16"])
def test_a_sequence_length_out_of_the_models_range_is_refused(uncased_tokenizer, seq_length):
    """`seq_length=0` became 128; the tiny encoder holds 64 positions."""
    message = rf"^seq_length={re.escape(repr(seq_length))}: must be a whole number of tokens from 3 .* \(64\)$"
    with pytest.raises(InputError, match=message):
        _classifier(uncased_tokenizer, seq_length=seq_length)
    with pytest.raises(InputError, match=message):
        _tagger(uncased_tokenizer, seq_length=seq_length)


def test_from_model_dir_takes_a_zero_sequence_length_as_given(tiny_model_dir):
    for load in (
        lambda: TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=0),
        lambda: TokenClassifier.from_model_dir(tiny_model_dir, label_names=TAGS, seq_length=0),
    ):
        with pytest.raises(InputError, match=r"^seq_length=0: must be a whole number of tokens"):
            load()
    assert TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=64).seq_length == 64


@pytest.mark.parametrize("tags", [["PER", "LOC"], ["O", "B_PER"], ["O", "b-PER"], ["O", "X-PER"]])
def test_tags_that_are_not_chunk_tags_are_refused_as_run_ner_refuses_them(uncased_tokenizer, tags):
    """They were accepted and never yielded an entity (conlleval reads chunks from the tag prefixes)."""
    with pytest.raises(InputError, match=r"^label_names: .* chunk tags? \(O, B-TYPE, I-TYPE, E-TYPE or S-TYPE\)"):
        _tagger(uncased_tokenizer, label_names=tags)


def test_chunk_tags_of_each_scheme_are_taken(uncased_tokenizer):
    assert _tagger(uncased_tokenizer, label_names=["O", "S-LOC", "B-LOC", "I-LOC", "E-LOC"]).label_names[1] == "S-LOC"


def test_one_threshold_is_every_labels(uncased_tokenizer):
    """`thresholds=0.3` raised TypeError."""
    tagger = _classifier(uncased_tokenizer, 3, label_names=["joy", "love", "anger"], multi_label=True, thresholds=0.3)
    assert tagger.thresholds == [0.3, 0.3, 0.3]
    tagger.thresholds = 0.8
    assert tagger.thresholds == [0.8, 0.8, 0.8]
    predictions = tagger.predict(["a good film", "a bad one"])
    np.testing.assert_array_equal(predictions["above_threshold"], predictions["probabilities"] >= 0.8)
    with pytest.raises(InputError, match=r"^thresholds: each must be a probability in \(0, 1\); got \[1.5, 1.5, 1.5"):
        tagger.thresholds = 1.5
    for value in (True, "0.3"):
        with pytest.raises(InputError, match=r"^thresholds=.*: give one probability for every label, or a list"):
            tagger.thresholds = value


def test_empty_training_data_is_refused_saying_so(uncased_tokenizer):
    """Multi-label `fit([], [])` failed inside tf.data, single-label named the labels, `tune_thresholds([], [])`
    said that predict got no texts, and `TokenClassifier.fit([[]], [[]])` gave a graph error."""
    empty = r"^x is empty: no texts; pass at least one, with its label in y$"
    multi = _classifier(uncased_tokenizer, 3, multi_label=True)
    for task, x, y in [
        (_classifier(uncased_tokenizer), [], []),
        (multi, [], []),
        (_tagger(uncased_tokenizer), [], []),
    ]:
        with pytest.raises(InputError, match=empty):
            task.fit(x, y, verbose=0)
        with pytest.raises(InputError, match=empty):
            task.evaluate(x, y, verbose=0)
    with pytest.raises(InputError, match=r"^tune_thresholds: x is empty: no texts; pass dev texts"):
        multi.tune_thresholds([], [])
    with pytest.raises(InputError, match=r"^x is empty: no texts; pass at least one$"):
        multi.predict([])
    tagger = _tagger(uncased_tokenizer)
    with pytest.raises(InputError, match=r"^x: the 1 sentence holds no word; fit and evaluate need at least one word"):
        tagger.fit([[]], [[]], verbose=0)
    with pytest.raises(InputError, match=r"^x: the 2 sentences hold no word"):
        tagger.fit([[], []], [[], []], verbose=0)


def _whitespace_words(tokenizer: FullTokenizer, text: str) -> list[tuple[str, int, int]]:
    """The reference: the whitespace-separated runs of `text` that give the pure-Python tokenizer a sub-token."""
    return [(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", text) if tokenizer.tokenize(m.group())]


@pytest.mark.parametrize("lower", [True, False], ids=["uncased", "cased"])
def test_predicted_words_are_the_whitespace_runs_marks_included(uncased_vocab, cased_vocab, lower):
    """A word-final combining mark ("Cafe\\u0301") was dropped from the predicted word and its offsets: lower-casing
    strips it, so the tokens' spans (the Python tokenizer's too: "cafe" is (0, 4)) end before it. A word is the
    whole whitespace run; an empty or whitespace-only text has no words and no entities."""
    vocab = str(uncased_vocab if lower else cased_vocab)
    python = FullTokenizer(vocab, do_lower_case=lower)
    if lower:
        assert python.tokenize_with_offsets("Cafe\u0301") == (["cafe"], [(0, 4)])
    tagger = _tagger(BertTokenizer(vocab, do_lower_case=lower), seq_length=24)
    texts = [
        "Cafe\u0301",
        "Cafe\u0301 au lait a\u0300 Zu\u0308rich",
        "\u0301Leading mark and e\u0301te\u0301\u0302",
        "x \u0301 y",  # a mark alone: no sub-token when lower-cased
        "",
        "   ",
        "\t\n",
        "Jose\u0301 lives in Sa\u0303o Paulo .",
    ]
    predictions = tagger.predict(texts)
    for row, text in enumerate(texts):
        want = _whitespace_words(python, text)
        got = list(zip(predictions["words"][row], predictions["word_start"][row], predictions["word_end"][row]))
        assert got == want, text
        assert predictions["num_words"][row] == len(want)
    for row in (4, 5, 6):
        assert predictions["words"][row] == [] and predictions["entities"][row] == []
    alone = tagger.predict([""])  # a batch without a single word
    assert alone["num_words"].tolist() == [0] and alone["entities"] == [[]]
