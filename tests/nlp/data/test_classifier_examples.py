"""The reader of any TSV, CSV or JSON-lines file (`GenericProcessor`): columns by name, labels inferred from the
training file, values that are not text, bad rows named by file and line."""

from __future__ import annotations

import json

import pytest

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
