"""What the text tasks train on equals what the scripts train on: the packed windows and labels of `fit` on raw
text are the Python feature builders' (`classifier_features.convert_examples`, `conll.convert_sentences`) on real
MRPC pairs and CoNLL-2003 sentences, long ones cut into windows; and a user's mistake is one clear `InputError`."""

import csv

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.common.errors import InputError
from official.nlp.data import classifier_features, conll
from official.nlp.data.classifier_examples import InputExample
from official.nlp.modeling.models import BertClassifier, BertSpanLabeler, BertTokenClassifier
from official.nlp.text_tasks.classifier import TextClassifier
from official.nlp.text_tasks.question_answerer import QuestionAnswerer
from official.nlp.text_tasks.token_classifier import TokenClassifier
from official.nlp.tokenizers.tokenization import FullTokenizer
from tests.nlp.text_tasks.conftest import tiny_encoder

FEATURES = ("input_word_ids", "input_mask", "input_type_ids")


def _stack(dataset):
    parts = list(dataset)
    features = {k: np.concatenate([p[0][k].numpy() for p in parts]) for k in FEATURES}
    return features, [np.concatenate([p[i].numpy() for p in parts]) for i in range(1, len(parts[0]))]


@pytest.fixture(scope="module")
def mrpc_pairs(shared_data):
    with open(shared_data / "glue/MRPC/dev.tsv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:41]
    return [r[3] for r in rows], [r[4] for r in rows], [r[0] for r in rows]


@pytest.mark.slow
def test_classifier_windows_and_labels_are_run_classifiers(uncased_tokenizer, uncased_vocab, mrpc_pairs):
    text_a, text_b, labels = mrpc_pairs
    classifier = TextClassifier(
        BertClassifier(tiny_encoder(), 2),
        uncased_tokenizer,
        seq_length=24,
        text_pair=True,
        long_text="sliding_window",
        doc_stride=8,
    )
    features, (y,) = _stack(classifier.training_data((text_a, text_b), labels, batch_size=16))
    examples = [InputExample(str(i), a, b, label) for i, (a, b, label) in enumerate(zip(text_a, text_b, labels))]
    reference = list(
        classifier_features.convert_examples(
            examples,
            FullTokenizer(str(uncased_vocab), do_lower_case=True),
            labels=("0", "1"),
            max_seq_length=24,
            long_text="sliding_window",
            doc_stride=8,
        )
    )
    assert len(reference) > 2 * len(examples)  # most pairs need several windows at 24 tokens
    for name, key in (("input_word_ids", "input_ids"), ("input_mask", "input_mask"), ("input_type_ids", "segment_ids")):
        np.testing.assert_array_equal(features[name], [r[key] for r in reference])
    np.testing.assert_array_equal(y, [r["label_ids"][0] for r in reference])


@pytest.mark.slow
def test_pair_regression_truncation_and_scores_are_run_classifiers(uncased_tokenizer, uncased_vocab, shared_data):
    """STS-B pairs at 16 tokens: the original pair truncation, and the scores as float labels of the one output."""
    with open(shared_data / "glue/STS-B/dev.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:25]
    text_a, text_b, scores = [r[7] for r in rows], [r[8] for r in rows], [float(r[9]) for r in rows]
    regression = TextClassifier(BertClassifier(tiny_encoder(), 1), uncased_tokenizer, seq_length=16, text_pair=True)
    features, (y,) = _stack(regression.training_data({"text_a": text_a, "text_b": text_b}, scores, batch_size=8))
    examples = [InputExample(str(i), a, b, score) for i, (a, b, score) in enumerate(zip(text_a, text_b, scores))]
    reference = list(
        classifier_features.convert_examples(
            examples, FullTokenizer(str(uncased_vocab), do_lower_case=True), labels=None, max_seq_length=16
        )
    )
    assert len(reference) == len(examples) and max(sum(r["input_mask"]) for r in reference) == 16  # truncated
    for name, key in (("input_word_ids", "input_ids"), ("input_mask", "input_mask"), ("input_type_ids", "segment_ids")):
        np.testing.assert_array_equal(features[name], [r[key] for r in reference])
    np.testing.assert_allclose(y[:, 0], scores, rtol=0, atol=1e-6)


@pytest.mark.slow
def test_token_classifier_windows_and_labels_are_run_ners(uncased_tokenizer, uncased_vocab, shared_data):
    python = FullTokenizer(str(uncased_vocab), do_lower_case=True)
    sentences = conll.read_conll(str(shared_data / "conll2003/iob2/valid.txt")).sentences[:60]
    # run_ner gives a word that tokenizes to nothing an [UNK] to carry its tag; serving has no such word (it has
    # no sub-token), so fit leaves its tag out. Real CoNLL words all have sub-tokens.
    assert all(python.tokenize(word) for s in sentences for word in s.words)
    labels = conll.label_list(sentences)
    tagger = TokenClassifier(
        BertTokenClassifier(tiny_encoder(), len(labels)), uncased_tokenizer, seq_length=16, label_names=labels
    )
    features, (y, weights) = _stack(
        tagger.training_data([s.words for s in sentences], [s.labels for s in sentences], batch_size=32)
    )
    reference = conll.convert_sentences(sentences, python, labels, max_seq_length=16)
    assert len(reference) > len(sentences) + 20  # many sentences take several windows
    for name in FEATURES:
        np.testing.assert_array_equal(features[name], reference.arrays[name])
    np.testing.assert_array_equal(y, reference.arrays["label_ids"])
    np.testing.assert_array_equal(weights, reference.arrays["label_ids"] != conll.IGNORE)


def test_user_mistakes_are_one_clear_error(uncased_tokenizer, tiny_model_dir):
    classifier = TextClassifier(
        BertClassifier(tiny_encoder(), 2), uncased_tokenizer, seq_length=32, label_names=["neg", "pos"]
    )
    with pytest.raises(InputError, match=r"unknown labels \['positive'\]"):
        classifier.training_data(["good"], ["positive"])
    with pytest.raises(InputError, match="got one string"):
        classifier.predict("a single text")
    with pytest.raises(InputError, match="expected 2 labels"):
        classifier.training_data(["good", "bad"], [1])
    with pytest.raises(InputError, match="do not pass y"):
        classifier.training_data(tf.data.Dataset.from_tensor_slices((["a"], [1])), [1])
    pair = TextClassifier(BertClassifier(tiny_encoder(), 2), uncased_tokenizer, seq_length=32, text_pair=True)
    with pytest.raises(InputError, match="tuple of two lists"):
        pair.predict(["only one text"])
    with pytest.raises(InputError, match=r"seq_length=65: .* to the model's max_position_embeddings \(64\)"):
        TextClassifier(BertClassifier(tiny_encoder(), 2), uncased_tokenizer, seq_length=65)

    tagger = TokenClassifier(
        BertTokenClassifier(tiny_encoder(), 2), uncased_tokenizer, seq_length=32, label_names=["O", "B-PER"]
    )
    with pytest.raises(InputError, match=r"texts\[0\]\[1\] = 'New York' holds whitespace"):
        tagger.training_data([["in", "New York"]], [["O", "O"]])
    with pytest.raises(InputError, match=r"y\[0\]: 1 tags for 2 words"):
        tagger.training_data([["John", "Smith"]], [["B-PER"]])
    with pytest.raises(InputError, match=r"unknown tags \['I-PER'\]"):
        tagger.training_data([["John", "Smith"]], [["B-PER", "I-PER"]])

    with pytest.raises(InputError, match="holds no fine-tuned classifier; pass num_classes"):
        TextClassifier.from_model_dir(tiny_model_dir)
    with pytest.raises(InputError, match="holds no fine-tuned token classifier; pass label_names"):
        TokenClassifier.from_model_dir(tiny_model_dir)
    with pytest.raises(InputError, match="holds no fine-tuned question-answering head; fine-tune one with run_squad"):
        QuestionAnswerer.from_model_dir(tiny_model_dir)
    reader = QuestionAnswerer(
        BertSpanLabeler(tiny_encoder()), uncased_tokenizer, seq_length=64, max_query_length=16, doc_stride=32
    )
    with pytest.raises(NotImplementedError, match="run_squad.py"):
        reader.fit((["q"], ["c"]), [0])
