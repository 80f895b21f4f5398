"""Reading multi-label data: label sets as names or ids (text and JSON lists), GoEmotions' real files, and every bad
row named by file and line; the multi-label flags refused where they cannot apply."""

from __future__ import annotations

import json

import pytest

from official.nlp.common.errors import InputError
from official.nlp.data import classifier_examples
from official.nlp.data import multi_label as data
from official.nlp.tasks import multi_label as task_lib
from official.nlp.tasks.classifier_config import ClassifierConfig, make_processor

LABELS = ("anger", "joy", "love", "neutral")


@pytest.mark.parametrize(
    "value, expected",
    [
        ("joy", ("joy",)),
        ("love,joy", ("joy", "love")),  # head order
        (" 3 , 1 ", ("joy", "neutral")),  # ids
        ("joy,1", ("joy",)),  # the same label twice
        (["love", 0], ("anger", "love")),  # a JSON list of names and ids
    ],
)
def test_label_sets(value, expected):
    assert data.parse_label_set(value, LABELS) == expected


@pytest.mark.parametrize(
    "value, message",
    [
        ("joy,rage", "unknown label 'rage'; the labels are anger, joy, love, neutral (or their ids 0 to 3)"),
        ("4", "label id 4 is out of range: there are 4 labels (ids 0 to 3)"),
        ("joy,,love", "empty label in 'joy,,love'"),
        ("", "no label (an empty labels field)"),
        ([True], "a list of label names or ids is expected"),
    ],
)
def test_bad_label_sets(value, message):
    with pytest.raises(classifier_examples.BadRowError, match=message.replace("(", r"\(").replace(")", r"\)")):
        data.parse_label_set(value, LABELS)


def test_an_empty_label_set_where_allowed():
    assert data.parse_label_set("", LABELS, allow_empty=True) == ()
    assert data.parse_label_set([], LABELS, allow_empty=True) == ()


def test_goemotions_real_rows_and_bad_rows(shared_data, tmp_path):
    lines = (shared_data / "goemotions" / "train.tsv").read_text(encoding="utf-8").splitlines(keepends=True)[:20]
    first = lines[0].split("\t")
    (tmp_path / "train.tsv").write_text("".join(lines), encoding="utf-8")
    examples = data.GoEmotionsProcessor().read(str(tmp_path / "train.tsv"), classifier_examples.TRAIN).examples
    assert len(examples) == 20 and examples[0].text_a == first[0] and examples[0].guid == first[2].strip()
    assert examples[0].label == tuple(data.GOEMOTIONS_LABELS[int(i)] for i in first[1].split(","))
    several = [e for e in examples if len(e.label) > 1]
    assert several, "the slice has an example with several labels"

    for bad, message in (("text\t28\tid1\n", "label id 28 is out of range"), ("text\t\tid1\n", "no label")):
        (tmp_path / "bad.tsv").write_text("".join(lines[:3]) + bad, encoding="utf-8")
        with pytest.raises(classifier_examples.BadRowError, match=f"{tmp_path / 'bad.tsv'}:4: {message}"):
            data.GoEmotionsProcessor().read(str(tmp_path / "bad.tsv"), classifier_examples.TRAIN)
        read = data.GoEmotionsProcessor().read(str(tmp_path / "bad.tsv"), classifier_examples.TRAIN, skip_bad_rows=True)
        assert (len(read.examples), read.bad_rows) == (3, 1)


def test_goemotions_refuses_another_label_list(tmp_path):
    (tmp_path / "emotions.txt").write_text("\n".join(reversed(data.GOEMOTIONS_LABELS)))
    with pytest.raises(InputError, match="lists other labels than GoEmotions' 28"):
        data.GoEmotionsProcessor().files(str(tmp_path))
    (tmp_path / "emotions.txt").write_text("\n".join(data.GOEMOTIONS_LABELS))
    assert data.GoEmotionsProcessor().files(str(tmp_path))[classifier_examples.DEV][0].file == str(tmp_path / "dev.tsv")


def test_generic_json_lines_and_tsv_with_inferred_labels(tmp_path):
    rows = [
        {"text": "so happy", "tags": ["joy", "love"]},
        {"text": "meh", "tags": "neutral"},
        {"text": "grr", "tags": []},
    ]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    processor = data.MultiLabelGenericProcessor(
        text_a_column="text", label_column="tags", file_format="jsonl", allow_empty=True
    )
    processor.infer_labels(str(tmp_path / "train.jsonl"))
    assert processor.labels == ("joy", "love", "neutral")
    read = processor.read(str(tmp_path / "train.jsonl"), classifier_examples.TRAIN).examples
    assert [e.label for e in read] == [("joy", "love"), ("neutral",), ()]

    (tmp_path / "train.tsv").write_text("text\tlabels\na\t10,2\nb\t2\n")
    numbers = data.MultiLabelGenericProcessor(text_a_column="text", label_column="labels")
    numbers.infer_labels(str(tmp_path / "train.tsv"))
    assert numbers.labels == ("2", "10")  # numbers in numeric order
    strict = data.MultiLabelGenericProcessor(text_a_column="text", label_column="tags", file_format="jsonl")
    strict.labels = processor.labels
    with pytest.raises(classifier_examples.BadRowError, match=r"train.jsonl:3: no label"):
        strict.read(str(tmp_path / "train.jsonl"), classifier_examples.TRAIN)


def _config(**fields):
    return ClassifierConfig(output_dir="/tmp/unused", data_dir="/tmp/unused", **fields)


@pytest.mark.parametrize(
    "fields, multi_label, message",
    [
        (dict(task_name="mrpc", multi_label=True), None, "--multi_label: --task_name=mrpc has one label per example"),
        (dict(task_name="generic", multi_label=True, regression=True, text_a_column="t"), None, "exclude each other"),
        (dict(threshold=0.3), False, "--threshold is for multi-label data"),
        (dict(allow_empty_labels=True), False, "--allow_empty_labels is for multi-label data"),
        (dict(threshold=1.0), True, r"--threshold=1.0: must be in \(0, 1\)"),
        (dict(threshold=0.3, tune_thresholds=True, do_eval=True), True, "exclude each other"),
        (dict(tune_thresholds=True), True, "--tune_thresholds tunes the thresholds on the dev set: add --do_eval"),
    ],
)
def test_multi_label_flags_refused(fields, multi_label, message):
    with pytest.raises(InputError, match=message):
        config = _config(**fields)
        if multi_label is None:
            make_processor(config)
        else:
            task_lib.check_flags(config, multi_label)


def test_task_names_pick_the_processors():
    assert isinstance(make_processor(_config(task_name="GoEmotions")), data.GoEmotionsProcessor)
    generic = make_processor(_config(task_name="generic", multi_label=True, text_a_column="t", labels="b,a"))
    assert isinstance(generic, data.MultiLabelGenericProcessor) and generic.labels == ("b", "a")
    assert generic.metrics[0] == "macro_f1"


# ---- issue 40: number-like label names, lists written as text, a training set without a label ----------------------

STARS = ("1", "2", "3", "4", "5")


def test_number_like_label_names_read_every_value_as_a_name():
    """`--labels=1,2,3,4,5`: `0` was read as the id of the rating `1`. A value is now a name, or refused."""
    assert data.parse_label_set("1,5", STARS) == ("1", "5")
    assert data.parse_label_set(["4", 3], STARS) == ("3", "4")  # a JSON number is the name it spells
    for value in ("0", "2,0", "6"):
        with pytest.raises(
            classifier_examples.BadRowError,
            match=r"unknown label '[06]'; the labels are 1, 2, 3, 4, 5, and since they look like numbers a value is "
            "read as a label name, never as an id",
        ):
            data.parse_label_set(value, STARS)
    # Names that are words keep the ids.
    assert data.parse_label_set("0", LABELS) == ("anger",)


def test_number_like_labels_in_a_file_name_the_line(tmp_path):
    (tmp_path / "train.tsv").write_text("text\tstars\ngreat\t5\nawful\t0\n")
    processor = data.MultiLabelGenericProcessor(text_a_column="text", label_column="stars", labels=list(STARS))
    with pytest.raises(classifier_examples.BadRowError, match=r"train.tsv:3: unknown label '0'; the labels are 1, 2"):
        processor.read(str(tmp_path / "train.tsv"), classifier_examples.TRAIN)


@pytest.mark.parametrize("value", ['["joy", "love"]', "['joy', 'love']"])
def test_a_list_written_as_text_is_read_as_a_label_set(value):
    assert data.parse_label_set(value, LABELS) == ("joy", "love")


def test_a_training_set_without_any_label_is_refused(tmp_path):
    """`--allow_empty_labels` with every labels field empty trained a model that predicts nothing, without a word."""
    examples = [classifier_examples.InputExample(str(i), "text", label=()) for i in range(3)]
    with pytest.raises(InputError, match=r"train.tsv: none of its 3 examples has a label \(every labels field is "):
        data.check_some_labelled(examples, str(tmp_path / "train.tsv"))
    with pytest.raises(InputError, match=r"none of the first 3 examples \(--max_train_examples\) has a label"):
        data.check_some_labelled(examples, str(tmp_path / "train.tsv"), truncated=True)
    data.check_some_labelled(examples + [classifier_examples.InputExample("3", "text", label=("joy",))], "train.tsv")
