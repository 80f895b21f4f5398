"""The reader of any TSV, CSV or JSON-lines file (`GenericProcessor`): columns by name, labels inferred from the
training file, values that are not text, bad rows named by file and line."""

from __future__ import annotations

import csv
import json
import re

import pytest

from official.nlp.common.errors import InputError
from official.nlp.data import classifier_examples


@pytest.mark.parametrize("file_format", ["tsv", "csv", "jsonl"])
def test_generic_reader(tmp_path, file_format):
    rows = [
        {"id": "a", "review": 'Great, "really" great', "title": "T1", "stars": "pos"},
        {"id": "b", "review": "Bad", "title": "T2", "stars": "neg"},
    ]
    path = tmp_path / f"train.{file_format}"
    if file_format == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        import csv

        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(
                f,
                fieldnames=list(rows[0]),
                delimiter="\t" if file_format == "tsv" else ",",
                quoting=csv.QUOTE_NONE if file_format == "tsv" else csv.QUOTE_MINIMAL,
                escapechar="\\" if file_format == "tsv" else None,
            )
            writer.writeheader()
            writer.writerows(rows)
    processor = classifier_examples.GenericProcessor(
        text_a_column="review", text_b_column="title", label_column="stars", id_column="id", file_format=file_format
    )
    processor.infer_labels(str(path))
    assert processor.labels == ("neg", "pos")
    examples = processor.read(str(path), classifier_examples.TRAIN).examples
    assert [(e.guid, e.text_b, e.label) for e in examples] == [("a", "T1", "pos"), ("b", "T2", "neg")]
    if file_format != "tsv":
        assert examples[0].text_a == 'Great, "really" great'
    missing = classifier_examples.GenericProcessor(
        text_a_column="text", label_column="stars", labels=["neg", "pos"], file_format=file_format
    )
    line = 1 if file_format == "jsonl" else 2  # the first record's line (after the header row)
    with pytest.raises(classifier_examples.BadRowError, match=rf"train.{file_format}:{line}: no column 'text'"):
        missing.read(str(path), classifier_examples.TRAIN)


def test_generic_jsonl_values_that_are_not_text(tmp_path):
    """JSON's null second text is no second segment (not the text "None"); a number is its digits; a list, an
    object or a boolean is a bad row named by its line, not its Python repr as text."""
    rows = [
        {"a": "First.", "b": None, "y": "pos"},
        {"a": 1984, "b": "Second.", "y": "neg"},
        {"a": "Third.", "b": ["x", "y"], "y": "pos"},
        {"a": None, "b": "Fourth.", "y": "neg"},
        {"a": "Fifth.", "b": True, "y": "neg"},
    ]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    processor = classifier_examples.GenericProcessor(
        text_a_column="a", text_b_column="b", label_column="y", labels=["neg", "pos"], file_format="jsonl"
    )
    read = processor.read(str(path), classifier_examples.TRAIN, skip_bad_rows=True)
    assert [(e.text_a, e.text_b) for e in read.examples] == [("First.", ""), ("1984", "Second.")]
    assert read.bad_rows == 3
    with pytest.raises(classifier_examples.BadRowError, match=r"train.jsonl:3: column 'b' holds \["):
        processor.read(str(path), classifier_examples.TRAIN)


def test_a_truncated_json_line_is_named_when_labels_are_inferred(tmp_path):
    """Issue 30: one truncated line of a JSON-lines training file raised `AttributeError: 'BadRowError' object has no
    attribute 'get'` (inferring the labels), with or without --skip_bad_rows."""
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "Good.", "label": "pos"}\n{"text": "Bad", "lab\n{"text": "Meh.", "label": "neg"}\n')
    processor = classifier_examples.GenericProcessor(text_a_column="text", label_column="label", file_format="jsonl")
    with pytest.raises(
        classifier_examples.BadRowError, match=r"train.jsonl:2: not JSON \(.*\) \(--skip_bad_rows skips and counts"
    ):
        processor.infer_labels(str(path))
    processor.infer_labels(str(path), skip_bad_rows=True)
    assert processor.labels == ("neg", "pos")
    read = processor.read(str(path), classifier_examples.TRAIN, skip_bad_rows=True)
    assert [e.text_a for e in read.examples] == ["Good.", "Meh."] and read.bad_rows == 1


# ---- issue 40: label sets in single-label mode, long fields ----------------------------------------------------------


@pytest.mark.parametrize("file_format", ["tsv", "jsonl"])
def test_multi_label_data_in_single_label_mode_is_refused_naming_the_line(tmp_path, file_format):
    """Inferring the labels made `admiration,gratitude` (and, in JSON lines, `['admiration']`) classes of their own."""
    rows = [("Thanks!", "gratitude"), ("Wow.", "admiration"), ("Thank you, wow.", "admiration,gratitude")]
    path = tmp_path / f"train.{file_format}"
    if file_format == "tsv":
        path.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows))
        line, shown = 4, "'admiration,gratitude'"
    else:
        rows[2] = ("Thank you, wow.", ["admiration", "gratitude"])
        path.write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in rows))
        line, shown = 3, '["admiration", "gratitude"]'
    processor = classifier_examples.GenericProcessor(
        text_a_column="text", label_column="label", file_format=file_format
    )
    message = rf"train.{file_format}:{line}: label {re.escape(shown)} is a set of labels \(admiration, gratitude\)"
    for skip in (False, True):  # not a bad row to skip: skipping them would train on the rest silently
        with pytest.raises(InputError, match=message + ".*Add --multi_label"):
            processor.infer_labels(str(path), skip_bad_rows=skip)
    # With the label set given (--labels), reading the file names the row the same way.
    given = classifier_examples.GenericProcessor(
        text_a_column="text", label_column="label", labels=["admiration", "gratitude"], file_format=file_format
    )
    with pytest.raises(InputError, match=message):
        given.read(str(path), classifier_examples.TRAIN, skip_bad_rows=True)


@pytest.mark.parametrize("value", ["['admiration']", '["admiration", "gratitude"]'])
def test_a_list_written_as_text_is_a_label_set(tmp_path, value):
    path = tmp_path / "train.tsv"
    path.write_text(f"text\tlabel\nWow.\tadmiration\nThanks.\t{value}\n")
    processor = classifier_examples.GenericProcessor(text_a_column="text", label_column="label")
    with pytest.raises(InputError, match=r"train.tsv:3: label .* is a set of labels .*--multi_label"):
        processor.infer_labels(str(path))


def test_labels_with_commas_that_are_not_label_sets_stay_labels(tmp_path):
    """A class name with a comma is a label set only when its parts are labels of the file too."""
    path = tmp_path / "train.tsv"
    path.write_text("text\tlabel\na\tgood, mostly\nb\tbad\nc\tgood\n")
    processor = classifier_examples.GenericProcessor(text_a_column="text", label_column="label")
    processor.infer_labels(str(path))
    assert processor.labels == ("bad", "good", "good, mostly")
    assert [e.label for e in processor.read(str(path), classifier_examples.TRAIN).examples] == [
        "good, mostly",
        "bad",
        "good",
    ]


@pytest.mark.parametrize("file_format", ["tsv", "csv"])
def test_a_field_longer_than_the_csv_default_limit_is_read(tmp_path, file_format):
    """`_csv.Error: field larger than field limit (131072)` before: a long text is truncated like any other."""
    long_text = " ".join(["word"] * 60_000)  # 299,999 characters
    assert len(long_text) > 131_072
    separator = "\t" if file_format == "tsv" else ","
    path = tmp_path / f"train.{file_format}"
    path.write_text(f"text{separator}label\nshort{separator}a\n{long_text}{separator}b\n")
    processor = classifier_examples.GenericProcessor(
        text_a_column="text", label_column="label", file_format=file_format
    )
    processor.infer_labels(str(path))
    examples = processor.read(str(path), classifier_examples.TRAIN).examples
    assert [(len(e.text_a), e.label) for e in examples] == [(5, "a"), (len(long_text), "b")]
    assert csv.field_size_limit() <= 2**31 - 1  # bounded: the file's size


def test_a_line_the_csv_reader_cannot_split_is_named(tmp_path, monkeypatch):
    """A field longer than the bounded limit (here 20 characters, in the real reader) is one line naming it."""
    path = tmp_path / "train.csv"
    path.write_text('text,label\nfine,a\n"x' + "y" * 50 + '",b\n')
    monkeypatch.setattr(classifier_examples, "_MAX_FIELD_LIMIT", 20)
    before = csv.field_size_limit(20)
    try:
        processor = classifier_examples.GenericProcessor(text_a_column="text", label_column="label", file_format="csv")
        with pytest.raises(InputError, match=r"train.csv:3: cannot be read as CSV \(field larger than field limit"):
            processor.infer_labels(str(path))
    finally:
        csv.field_size_limit(before)
