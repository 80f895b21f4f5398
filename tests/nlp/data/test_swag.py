"""SWAG reading (the real JSON-lines sample and the original CSV layout), bad rows, and [examples, 4, seq] features."""

import json

import pytest

from official.nlp.common.errors import InputError
from official.nlp.data import swag
from official.nlp.tokenizers.tokenization import FullTokenizer

CSV_HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label\n"


def test_reads_the_real_sample(shared_data):
    read = swag.read_swag(str(shared_data / "swag/hf_transformers_sample.jsonl"))
    assert len(read.examples) == 10 and read.bad_rows == 0
    first = read.examples[0]
    assert first.context == "Members of the procession walk down the street holding small horn brass instruments."
    assert first.start == "A drum line" and first.label == 0
    assert first.endings[0] == "passes by walking down the street playing their instruments."
    assert [e.label for e in read.examples[:3]] == [0, 3, 1]


def test_reads_the_original_csv(tmp_path):
    path = tmp_path / "val.csv"
    path.write_text(
        CSV_HEADER + '0,lsmdc3001,42,"Someone, a man, waves. He","Someone, a man, waves.",He,gold,'
        'smiles.,"runs, fast.",sits.,cries.,1\n'
        + "1,anetv_x,7,A boy runs. The dog,A boy runs.,The dog,gen,barks.,eats.,sleeps.,jumps.,3\n"
    )
    read = swag.read_swag(str(path))
    assert [e.label for e in read.examples] == [1, 3]
    assert read.examples[0].context == "Someone, a man, waves." and read.examples[0].endings[1] == "runs, fast."
    assert read.examples[1].where == f"{path}:3"
    test = tmp_path / "test.csv"  # the test split has no label column
    test.write_text(CSV_HEADER.replace(",label", "") + "0,v,1,A. B,A.,B,gen,a.,b.,c.,d.\n")
    assert swag.read_swag(str(test)).examples[0].label is None


@pytest.mark.parametrize(
    "change,message",
    [
        ({"ending2": ""}, "missing ending: 'ending2'"),
        ({"ending3": None}, "missing ending: 'ending3'"),
        ({"sent1": "  "}, "empty text: 'sent1'"),
        ({"label": 4}, "unknown label 4"),
        ({"label": "x"}, "unknown label 'x'"),
    ],
)
def test_bad_rows_named_and_counted(tmp_path, change, message):
    good = {
        "sent1": "A man sits.",
        "sent2": "He",
        "ending0": "a.",
        "ending1": "b.",
        "ending2": "c.",
        "ending3": "d.",
        "label": 2,
    }
    bad = {k: v for k, v in {**good, **change}.items() if v is not None}
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (good, bad, good)) + "\n")
    with pytest.raises(InputError, match=rf"rows\.jsonl:2: {message}.*--skip_bad_rows"):
        swag.read_swag(str(path))
    read = swag.read_swag(str(path), skip_bad_rows=True)
    assert read.bad_rows == 1 and len(read.examples) == 2


def test_short_csv_row(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text(CSV_HEADER + "0,v,1,A. B,A.,B,gen,a.,b.\n")
    with pytest.raises(InputError, match=r"train\.csv:2: 9 columns where the header has 12"):
        swag.read_swag(str(path))
    path.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match=r"train\.csv:1: the SWAG CSV header lacks sent1"):
        swag.read_swag(str(path))


def test_features(shared_data, uncased_vocab):
    tokenizer = FullTokenizer(str(uncased_vocab), do_lower_case=True)
    examples = swag.read_swag(str(shared_data / "swag/hf_transformers_sample.jsonl")).examples
    features = swag.convert_swag_examples(examples, tokenizer, max_seq_length=24)
    arrays = features.arrays
    assert arrays["input_word_ids"].shape == (10, 4, 24) and list(arrays["label"][:3]) == [0, 3, 1]
    # Hand-built first choice: [CLS] sent1 [SEP] sent2 + ending0 [SEP], the longer segment cut first to fit 24.
    a = tokenizer.tokenize(examples[0].context)
    b = tokenizer.tokenize("A drum line passes by walking down the street playing their instruments.")
    assert len(a) + len(b) > 21
    while len(a) + len(b) > 21:
        (a if len(a) > len(b) else b).pop()
    expected = tokenizer.convert_tokens_to_ids(["[CLS]", *a, "[SEP]", *b, "[SEP]"])
    assert list(arrays["input_word_ids"][0, 0]) == expected
    assert list(arrays["input_type_ids"][0, 0]) == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert arrays["input_mask"][0, 0].all()
    # The four choices share the context and differ in the ending.
    assert len({tuple(arrays["input_word_ids"][0, c]) for c in range(4)}) == 4


def test_a_choice_that_tokenizes_to_nothing_has_no_second_segment(uncased_vocab):
    """As the original (`if tokens_b:`) and the in-graph packer of the SWAG export: [CLS] A [SEP], all segment 0."""
    tokenizer = FullTokenizer(str(uncased_vocab), do_lower_case=True)
    example = swag.SwagExample(
        context="The man sat down.", start="", endings=["\u200b", "", "He left.", "Ok"], label=0, where="test:1"
    )
    arrays = swag.convert_swag_examples([example], tokenizer, max_seq_length=12).arrays
    a = tokenizer.tokenize("The man sat down.")
    single = tokenizer.convert_tokens_to_ids(["[CLS]", *a, "[SEP]"])
    assert list(arrays["input_word_ids"][0, 0]) == single + [0] * (12 - len(single))
    assert list(arrays["input_type_ids"][0, 1]) == [0] * 12
    assert list(arrays["input_mask"][0, 1]) == [1] * len(single) + [0] * (12 - len(single))
    b = tokenizer.tokenize("He left.")
    padding = [0] * (12 - len(a) - len(b) - 3)
    assert list(arrays["input_type_ids"][0, 2]) == [0] * (len(a) + 2) + [1] * (len(b) + 1) + padding
