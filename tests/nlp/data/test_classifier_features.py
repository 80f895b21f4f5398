"""Classification features: truncation as the original, sliding windows, the cached records and the pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from official.nlp.common.errors import InputError
from official.nlp.data import classifier_examples, classifier_features, feature_cache, glue
from official.nlp.data.squad.features import doc_windows
from official.nlp.tasks import feature_extraction
from official.nlp.tokenizers.tokenization import FullTokenizer


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab):
    return FullTokenizer(str(uncased_vocab), do_lower_case=True)


@pytest.fixture(scope="module")
def mrpc_dev(shared_data):
    return glue.get_processor("mrpc").read(str(shared_data / "glue" / "MRPC" / "dev.tsv")).examples[:60]


def test_truncation_matches_the_original_pair_rule(tokenizer, mrpc_dev):
    """feature_extraction ports the original `convert_examples_to_features`/`_truncate_seq_pair`."""
    features = list(classifier_features.convert_examples(mrpc_dev, tokenizer, labels=("0", "1"), max_seq_length=32))
    reference = feature_extraction.convert_extraction_examples(
        [feature_extraction.ExtractionExample(i, e.text_a, e.text_b) for i, e in enumerate(mrpc_dev)], 32, tokenizer
    )
    assert len(features) == len(reference) == 60
    for ours, theirs, example in zip(features, reference, mrpc_dev):
        n = len(theirs.input_ids)
        assert ours["input_ids"][:n] == theirs.input_ids and set(ours["input_ids"][n:]) <= {0}
        assert ours["segment_ids"][:n] == theirs.input_type_ids
        assert ours["input_mask"] == [1] * n + [0] * (32 - n)
        assert ours["label_ids"] == [int(example.label)]


def test_hand_worked_truncation_and_windows(tokenizer):
    example = classifier_examples.InputExample("0", "one two three four five six", "seven eight")
    [f] = classifier_features.convert_examples([example], tokenizer, labels=None, max_seq_length=8)
    # 5 tokens fit: the longer A loses its tail first (A=3, B=2), the original's rule.
    assert tokenizer.convert_ids_to_tokens(f["input_ids"]) == [
        "[CLS]",
        "one",
        "two",
        "three",
        "[SEP]",
        "seven",
        "eight",
        "[SEP]",
    ]
    single = classifier_examples.InputExample("1", "one two three four five six seven", None, "1")
    windows = list(
        classifier_features.convert_examples(
            [single], tokenizer, labels=("0", "1"), max_seq_length=6, long_text="sliding_window", doc_stride=2
        )
    )
    # 7 tokens, windows of 4 starting 2 apart: [0:4], [2:6], [4:7].
    assert [tokenizer.convert_ids_to_tokens(w["input_ids"]) for w in windows] == [
        ["[CLS]", "one", "two", "three", "four", "[SEP]"],
        ["[CLS]", "three", "four", "five", "six", "[SEP]"],
        ["[CLS]", "five", "six", "seven", "[SEP]", "[PAD]"],
    ]
    assert {tuple(w["example_index"]) for w in windows} == {(0,)} and windows[0]["label_ids"] == [1]
    pair = classifier_examples.InputExample("2", "question here", "one two three four five six seven eight", "0")
    pieces = list(
        classifier_features.convert_examples(
            [pair], tokenizer, labels=("0", "1"), max_seq_length=10, long_text="sliding_window", doc_stride=3
        )
    )
    texts = [tokenizer.convert_ids_to_tokens(p["input_ids"]) for p in pieces]
    assert all(t[:4] == ["[CLS]", "question", "here", "[SEP]"] for t in texts)  # the short text in each window
    covered = [tok for t in texts for tok in t[4:] if tok not in ("[SEP]", "[PAD]")]
    assert sorted(set(covered)) == sorted("one two three four five six seven eight".split())


def test_windows_cover_everything_with_the_stride():
    for n, window, stride in [(1, 4, 2), (10, 4, 2), (10, 4, 4), (10, 4, 8), (9, 9, 3), (100, 30, 7)]:
        spans = doc_windows(n, window, stride)
        covered = set()
        for start, length in spans:
            assert 0 < length <= window
            covered.update(range(start, start + length))
        assert covered == set(range(n))
        assert spans[-1][0] + spans[-1][1] == n
        assert all(b[0] - a[0] == min(stride, window) for a, b in zip(spans, spans[1:]))


def test_average_by_example():
    outputs = np.array([[1.0, 3.0], [3.0, 1.0], [0.0, 2.0]])
    np.testing.assert_allclose(
        classifier_features.average_by_example(outputs, np.array([0, 0, 1]), 2), [[2.0, 2.0], [0.0, 2.0]]
    )
    with pytest.raises(ValueError, match="1 example"):
        classifier_features.average_by_example(outputs, np.array([0, 0, 2]), 3)


@pytest.mark.parametrize("regression", [False, True])
def test_records_round_trip_through_make_dataset(tmp_path, tokenizer, mrpc_dev, regression):
    examples = mrpc_dev[:10]
    if regression:
        examples = [
            classifier_examples.InputExample(e.guid, e.text_a, e.text_b, float(i) / 2) for i, e in enumerate(examples)
        ]
    labels = None if regression else ("0", "1")
    features = list(classifier_features.convert_examples(examples, tokenizer, labels=labels, max_seq_length=24))
    path = str(tmp_path / "eval.tf_record")
    assert feature_cache.cached_records(path, {"k": 1}, lambda: iter(features)) == 10
    batches = list(classifier_features.make_dataset(path, 24, 4, regression=regression, is_training=False))
    assert [len(b[1]["label"]) for b in batches] == [4, 4, 2]
    x = {k: np.concatenate([b[0][k] for b in batches]) for k in batches[0][0]}
    np.testing.assert_array_equal(x["input_word_ids"], [f["input_ids"] for f in features])
    np.testing.assert_array_equal(x["input_type_ids"], [f["segment_ids"] for f in features])
    labels_out = np.concatenate([b[1]["label"] for b in batches])
    np.testing.assert_allclose(labels_out, [f["label_ids"][0] for f in features])
    train = next(iter(classifier_features.make_dataset(path, 24, 8, regression=regression, is_training=True, seed=1)))
    assert train[0]["input_word_ids"].shape == (8, 24) and train[0]["input_word_ids"].dtype.name == "int32"


def test_a_stride_longer_than_any_window_is_refused(tokenizer):
    single = classifier_examples.InputExample("1", "one two three four five six seven", None, "1")
    with pytest.raises(
        InputError,
        match=r"--doc_stride=5 is longer than the largest window .* 4 tokens.*"
        r"Pass --doc_stride=4 or less",
    ):
        list(
            classifier_features.convert_examples(
                [single], tokenizer, labels=("0", "1"), max_seq_length=6, long_text="sliding_window", doc_stride=5
            )
        )


def test_an_empty_second_segment_is_left_out(tokenizer):
    """As the original (`if tokens_b:`): same hand-worked layouts as the in-graph packer's test."""
    from tests.nlp.tokenizers.test_text_layers import EMPTY_B_CASES

    examples = [classifier_examples.InputExample(str(i), a, b, "0") for i, (a, b, _, _) in enumerate(EMPTY_B_CASES)]
    features = classifier_features.convert_examples(examples, tokenizer, labels=("0", "1"), max_seq_length=8)
    for feature, (_, _, tokens, types) in zip(features, EMPTY_B_CASES):
        n = len(tokens)
        assert tokenizer.convert_ids_to_tokens(feature["input_ids"][:n]) == tokens and feature["input_ids"][n:] == [
            0
        ] * (8 - n)
        assert feature["segment_ids"] == types + [0] * (8 - n)
        assert feature["input_mask"] == [1] * n + [0] * (8 - n)
