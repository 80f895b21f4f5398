"""CoNLL-2003 reading (real files, IOB1 and IOB2), bad input, first-sub-token features, windows, predictions back
to words and the conlleval-readable writer."""

import numpy as np
import pytest

from official.nlp.common.errors import InputError
from official.nlp.data import conll
from official.nlp.tokenizers.tokenization import FullTokenizer

IOB1 = "conll2003/original_iob1/eng."
IOB2 = "conll2003/iob2/"


@pytest.mark.parametrize("scheme,names", [("iob1", ("train", "testa", "testb")), ("iob2", ("train", "valid", "test"))])
def test_real_files_counts(shared_data, scheme, names):
    prefix = IOB1 if scheme == "iob1" else IOB2
    suffix = "" if scheme == "iob1" else ".txt"
    read = [conll.read_conll(str(shared_data / f"{prefix}{name}{suffix}")) for name in names]
    assert [len(f.sentences) for f in read] == [14041, 3250, 3453]
    assert [f.documents for f in read] == [946, 216, 231]
    assert [sum(len(s.words) for s in f.sentences) for f in read] == [203621, 51362, 46435]
    assert all(f.bad_rows == 0 for f in read)
    labels = conll.label_list(read[0].sentences)
    types = ["LOC", "MISC", "ORG", "PER"]
    if scheme == "iob2":
        assert labels == ["O"] + [f"B-{t}" for t in types] + [f"I-{t}" for t in types]
    else:  # IOB1: B- only where two entities of one type touch; train has no B-PER
        assert labels == ["O", "B-LOC", "B-MISC", "B-ORG"] + [f"I-{t}" for t in types]
    for f in read[1:]:  # dev and test use only the training labels
        assert conll.check_labels(f.sentences, labels) == (f.sentences, 0)
    first = read[0].sentences[0]
    assert first.words[:3] == ["EU", "rejects", "German"] and first.labels[0] in ("I-ORG", "B-ORG")
    assert first.columns[0][:2] == ["EU", "NNP"] and first.where() == f"{read[0].path}:3"


def _write(tmp_path, text, name="bad.txt"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "line,message",
    [
        ("Paris", "malformed CoNLL line 'Paris'"),
        ("Paris NNP I-LOC", "3 columns where the file's first word line has 4"),
        ("Paris NNP I-NP LOC", "tag 'LOC' is not a chunk tag"),
    ],
)
def test_bad_lines_named_and_skipped(tmp_path, line, message):
    text = "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\n\nin IN I-PP O\n" + line + " \n\nok JJ I-NP O\n"
    path = _write(tmp_path, text)
    with pytest.raises(InputError, match=rf"bad\.txt:6: .*{message}.*--skip_bad_rows"):
        conll.read_conll(path)
    read = conll.read_conll(path, skip_bad_rows=True)
    assert read.bad_rows == 1 and [s.words for s in read.sentences] == [["EU"], ["ok"]]


def test_unknown_label_and_empty_file(tmp_path):
    dev = conll.read_conll(_write(tmp_path, "a NN I-PER\nb NN I-GPE\n\nc NN O\n", "dev.txt"))
    with pytest.raises(InputError, match=r"dev\.txt:2: unknown label 'I-GPE'.*O, I-PER"):
        conll.check_labels(dev.sentences, ["O", "I-PER"])
    kept, bad = conll.check_labels(dev.sentences, ["O", "I-PER"], skip_bad_rows=True)
    assert bad == 1 and [s.words for s in kept] == [["c"]]
    with pytest.raises(InputError, match="no sentence found"):
        conll.read_conll(_write(tmp_path, "-DOCSTART- -X- O O\n\n", "empty.txt"))
    with pytest.raises(InputError, match="cannot read CoNLL file"):
        conll.read_conll(str(tmp_path / "missing.txt"))


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab):
    return FullTokenizer(str(uncased_vocab), do_lower_case=True)


def test_first_sub_token_carries_the_label(tmp_path, tokenizer):
    sentence = conll.read_conll(_write(tmp_path, "Johanson NNP I-PER\nvisited VBD O\nU.S. NNP I-LOC\n")).sentences
    labels = ["O", "I-LOC", "I-PER"]
    features = conll.convert_sentences(sentence, tokenizer, labels, max_seq_length=16)
    tokens = ["[CLS]", *tokenizer.tokenize("Johanson"), "visited", "u", ".", "s", ".", "[SEP]"]
    assert tokenizer.tokenize("Johanson") == ["johan", "##son"]
    n = len(tokens)
    ids = features.arrays["input_word_ids"][0]
    assert list(ids[:n]) == tokenizer.convert_tokens_to_ids(tokens) and not ids[n:].any()
    assert list(features.arrays["input_mask"][0]) == [1] * n + [0] * (16 - n)
    # Hand-worked: Johanson -> I-PER (2) on "johan", visited -> O (0), U.S. -> I-LOC (1) on "u"; the rest -1.
    assert list(features.arrays["label_ids"][0]) == [-1, 2, -1, 0, 1, -1, -1, -1, -1] + [-1] * 7
    assert list(features.arrays["word_index"][0]) == [-1, 0, -1, 1, 2, -1, -1, -1, -1] + [-1] * 7


def test_windows_cover_every_word_once():
    lengths = [1, 3, 1, 1, 2, 5, 1, 1]
    windows = conll._windows(lengths, budget=6, stride=3)
    assert windows[0][0] == 0 and windows[-1][1] == len(lengths)
    for start, end in windows:
        assert end > start and (end - start == 1 or sum(lengths[start:end]) <= 6)
    assert all(b[0] <= a[1] for a, b in zip(windows, windows[1:]))  # no word falls between two windows
    owners = [conll._owner(windows, i) for i in range(len(lengths))]
    assert all(windows[o][0] <= i < windows[o][1] for i, o in enumerate(owners))


def test_long_sentences_round_trip_on_real_data(shared_data, tokenizer, tmp_path):
    read = conll.read_conll(str(shared_data / f"{IOB1}testa"))
    sentences = sorted(read.sentences, key=lambda s: -len(s.words))[:40]  # the longest sentences need windows
    labels = conll.label_list(read.sentences)
    features = conll.convert_sentences(sentences, tokenizer, labels, max_seq_length=24)
    assert len(features) > 2 * len(sentences)
    arrays = features.arrays
    assert (arrays["input_mask"].sum(1) <= 24).all() and arrays["input_type_ids"].max() == 0
    # Each word is labelled in exactly one window, so the gold ids as "predictions" give back the gold tags.
    assert (arrays["label_ids"] >= 0).sum() == sum(len(s.words) for s in sentences)
    gold_ids = np.where(arrays["label_ids"] >= 0, arrays["label_ids"], 0)
    assert conll.word_predictions(features, gold_ids, labels, sentences) == [s.labels for s in sentences]

    out = tmp_path / "predictions.txt"
    conll.write_predictions(str(out), sentences, [s.labels for s in sentences])
    lines = out.read_text().split("\n")
    assert lines[0] == " ".join(sentences[0].columns[0] + [sentences[0].labels[0]])
    reread = conll.read_conll(str(out))
    assert [s.columns for s in reread.sentences] == [[c + [c[-1]] for c in s.columns] for s in sentences]


def test_word_predictions_refuses_other_sentences(tmp_path, tokenizer):
    sentences = conll.read_conll(_write(tmp_path, "a NN O\nb NN O\n")).sentences
    features = conll.convert_sentences(sentences, tokenizer, ["O"], max_seq_length=8)
    longer = conll.read_conll(_write(tmp_path, "a NN O\nb NN O\nc NN O\n", "longer.txt")).sentences
    with pytest.raises(ValueError, match="do not cover every word"):
        conll.word_predictions(features, np.zeros((1, 8), int), ["O"], longer)
