"""GLUE processors on the real files (counts of the GLUE release), the original layouts of the tasks whose files are
not in ../shared/data (QQP, MNLI, AX), bad rows, the generic reader and TFDS."""

from __future__ import annotations

import json

import pytest

from official.nlp.data import glue

# (task, folder, {file: examples}) - the counts of the GLUE release.
REAL = [
    ("sst-2", "SST-2", {"train.tsv": 67349, "dev.tsv": 872}),
    ("mrpc", "MRPC", {"train.tsv": 3668, "dev.tsv": 408, "test.tsv": 1725}),
    ("cola", "CoLA", {"train.tsv": 8551, "dev.tsv": 527}),
    ("sts-b", "STS-B", {"train.tsv": 5749, "dev.tsv": 1500, "test.tsv": 1379}),
    ("rte", "RTE", {"train.tsv": 2490, "dev.tsv": 277, "test.tsv": 3000}),
    ("qnli", "QNLI", {"dev.tsv": 5463, "test.tsv": 5463}),
    ("wnli", "WNLI", {"train.tsv": 635, "dev.tsv": 71, "test.tsv": 146}),
]


@pytest.mark.parametrize("task,folder,counts", REAL, ids=[r[0] for r in REAL])
def test_real_files_read_without_a_bad_row(shared_data, task, folder, counts):
    processor = glue.get_processor(task)
    for name, expected in counts.items():
        split = {"train.tsv": glue.TRAIN, "dev.tsv": glue.DEV, "test.tsv": glue.TEST}[name]
        result = processor.read(str(shared_data / "glue" / folder / name), split)
        assert (len(result.examples), result.bad_rows) == (expected, 0), name
        for example in result.examples:
            assert example.text_a.strip() and (example.text_b is None or example.text_b.strip())
            if split == glue.TEST:
                assert example.label is None
            elif processor.is_regression:
                assert 0.0 <= example.label <= 5.0
            else:
                assert example.label in processor.labels


def test_mrpc_byte_order_mark_and_columns(shared_data):
    path = shared_data / "glue" / "MRPC" / "train.tsv"
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    first = glue.get_processor("mrpc").read(str(path), glue.TRAIN).examples[0]
    assert first.label == "1"
    assert first.text_a.startswith('Amrozi accused his brother, whom he called "the witness"')
    assert first.text_b.startswith('Referring to him as only "the witness"')
    test = glue.get_processor("MRPC").read(str(shared_data / "glue" / "MRPC" / "test.tsv"), glue.TEST).examples
    assert [e.guid for e in test[:3]] == ["0", "1", "2"]


def test_cola_and_stsb_columns(shared_data):
    cola = glue.get_processor("cola").read(str(shared_data / "glue" / "CoLA" / "dev.tsv")).examples
    assert (cola[0].text_a, cola[0].label) == ("The sailors rode the breeze clear of the rocks.", "1")
    assert sum(e.label == "0" for e in cola) == 162  # in_domain_dev: 365 acceptable, 162 not
    sts = glue.get_processor("STS-B").read(str(shared_data / "glue" / "STS-B" / "dev.tsv")).examples
    assert (sts[0].text_a, sts[0].text_b, sts[0].label) == (
        "A man with a hard hat is dancing.",
        "A man wearing a hard hat is dancing.",
        5.0,
    )


def _write(path, rows):
    path.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


MNLI_HEADER = [
    "index",
    "promptID",
    "pairID",
    "genre",
    "sentence1_binary_parse",
    "sentence2_binary_parse",
    "sentence1_parse",
    "sentence2_parse",
    "sentence1",
    "sentence2",
]


def test_qqp_mnli_ax_original_layouts(tmp_path):
    qqp = glue.get_processor("qqp")
    train = _write(
        tmp_path / "qqp.tsv",
        [
            ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
            ["133273", "213221", "213222", "How is the life?", "How's life?", "1"],
        ],
    )
    assert qqp.read(train, glue.TRAIN).examples[0] == glue.InputExample(
        "train-133273", "How is the life?", "How's life?", "1"
    )
    test = _write(tmp_path / "qqp_test.tsv", [["id", "question1", "question2"], ["0", "Why?", "Why not?"]])
    assert qqp.read(test, glue.TEST).examples[0] == glue.InputExample("0", "Why?", "Why not?")

    mnli = glue.get_processor("MNLI")
    parses = ["( a )", "( b )", "(ROOT a)", "(ROOT b)"]
    train = _write(
        tmp_path / "mnli.tsv",
        [
            MNLI_HEADER + ["label1", "gold_label"],
            ["0", "31193", "31193n", "government"] + parses + ["A.", "B.", "neutral", "neutral"],
        ],
    )
    dev = _write(
        tmp_path / "dev_matched.tsv",
        [
            MNLI_HEADER + [f"label{i}" for i in range(1, 6)] + ["gold_label"],
            ["0", "63735", "63735n", "slate"]
            + parses
            + ["C.", "D.", "neutral", "entailment", "neutral", "neutral", "neutral", "neutral"],
        ],
    )
    assert mnli.read(train, glue.TRAIN).examples[0].label == "neutral"
    assert mnli.read(dev).examples[0] == glue.InputExample("dev-0", "C.", "D.", "neutral")
    assert [s.submission for s in mnli.files("x")[glue.TEST]] == ["MNLI-m.tsv", "MNLI-mm.tsv"]
    assert [s.suffix for s in mnli.files("x")[glue.DEV]] == ["", "_mismatched"]

    ax = glue.get_processor("ax")
    diag = _write(tmp_path / "diagnostic.tsv", [["index", "sentence1", "sentence2"], ["0", "The cat sat.", "A cat."]])
    assert ax.read(diag, glue.TEST).examples == [glue.InputExample("0", "The cat sat.", "A cat.")]
    assert ax.labels == mnli.labels and ax.files("x")[glue.TRAIN] == []


def test_bad_rows_are_named_by_file_and_line_or_skipped_and_counted(tmp_path):
    rte = glue.get_processor("rte")
    path = _write(
        tmp_path / "train.tsv",
        [
            ["index", "sentence1", "sentence2", "label"],
            ["0", "A man sleeps.", "A man is awake.", "not_entailment"],
            ["1", "Too few columns."],
            ["2", "A dog.", "An animal.", "maybe"],
            ["3", "  ", "Empty first text.", "entailment"],
            ["4", "Fine.", "Fine too.", "entailment"],
        ],
    )
    with pytest.raises(glue.BadRowError, match=rf"{path}:3: 2 column\(s\), rte needs at least 4"):
        rte.read(path, glue.TRAIN)
    result = rte.read(path, glue.TRAIN, skip_bad_rows=True)
    assert (len(result.examples), result.bad_rows) == (2, 3)
    bad_label = _write(tmp_path / "b.tsv", [["index", "sentence1", "sentence2", "label"], ["2", "A.", "B.", "maybe"]])
    with pytest.raises(glue.BadRowError, match=r"b.tsv:2: unknown label 'maybe'.*\['entailment', 'not_entailment'\]"):
        rte.read(bad_label, glue.TRAIN)
    empty = _write(tmp_path / "c.tsv", [["index", "sentence1", "sentence2", "label"], ["3", " ", "B.", "entailment"]])
    with pytest.raises(glue.BadRowError, match=r"c.tsv:2: empty text"):
        rte.read(empty, glue.TRAIN)
    # An empty second text is no second segment, as the original packs it and as the export serves it.
    no_b = _write(tmp_path / "d.tsv", [["index", "sentence1", "sentence2", "label"], ["3", "A.", " ", "entailment"]])
    example = rte.read(no_b, glue.TRAIN).examples[0]
    assert (example.text_a, example.text_b) == ("A.", " ")
    sts = _write(tmp_path / "s.tsv", [["h"] * 10, ["0"] * 7 + ["A.", "B.", "high"]])
    with pytest.raises(glue.BadRowError, match=r"s.tsv:2: label 'high' is not a number"):
        glue.get_processor("sts-b").read(sts, glue.TRAIN)


def test_unknown_task_is_refused():
    with pytest.raises(glue.InputError, match="--task_name=squad: unknown task"):
        glue.get_processor("squad")
    assert glue.get_processor("SST2").name == glue.get_processor("sst-2").name == "sst-2"


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
    processor = glue.GenericProcessor(
        text_a_column="review", text_b_column="title", label_column="stars", id_column="id", file_format=file_format
    )
    processor.infer_labels(str(path))
    assert processor.labels == ("neg", "pos")
    examples = processor.read(str(path), glue.TRAIN).examples
    assert [(e.guid, e.text_b, e.label) for e in examples] == [("a", "T1", "pos"), ("b", "T2", "neg")]
    if file_format != "tsv":
        assert examples[0].text_a == 'Great, "really" great'
    missing = glue.GenericProcessor(
        text_a_column="text", label_column="stars", labels=["neg", "pos"], file_format=file_format
    )
    line = 1 if file_format == "jsonl" else 2  # the first record's line (after the header row)
    with pytest.raises(glue.BadRowError, match=rf"train.{file_format}:{line}: no column 'text'"):
        missing.read(str(path), glue.TRAIN)


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
    processor = glue.GenericProcessor(
        text_a_column="a", text_b_column="b", label_column="y", labels=["neg", "pos"], file_format="jsonl"
    )
    read = processor.read(str(path), glue.TRAIN, skip_bad_rows=True)
    assert [(e.text_a, e.text_b) for e in read.examples] == [("First.", ""), ("1984", "Second.")]
    assert read.bad_rows == 3
    with pytest.raises(glue.BadRowError, match=r"train.jsonl:3: column 'b' holds \["):
        processor.read(str(path), glue.TRAIN)


@pytest.mark.slow  # tfds' mock imports its lazy dependencies: ~40 s on a busy 2-core machine
def test_tfds_glue_with_mock_data():
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=7):
        processor = glue.TfdsProcessor("glue/mrpc")
        assert processor.labels == ("not_equivalent", "equivalent")
        assert processor.metrics[0] == "f1"
        files = processor.files()
        assert [s.file for s in files[glue.DEV]] == ["validation"]
        assert files[glue.TEST][0].submission == "MRPC.tsv"
        train = processor.read("train", glue.TRAIN, skip_bad_rows=True)
        assert len(train.examples) + train.bad_rows == 7
        assert all(e.label in processor.labels for e in train.examples)
        test = processor.read("test", glue.TEST, skip_bad_rows=True)
        assert all(e.label is None for e in test.examples)
        mnli = glue.TfdsProcessor("glue/mnli")
        assert [s.submission for s in mnli.files()[glue.TEST]] == ["MNLI-m.tsv", "MNLI-mm.tsv"]
    with pytest.raises(glue.InputError, match="expected glue/<task>"):
        glue.TfdsProcessor("imdb_reviews")


def test_a_truncated_json_line_is_named_when_labels_are_inferred(tmp_path):
    """Issue 30: one truncated line of a JSON-lines training file raised `AttributeError: 'BadRowError' object has no
    attribute 'get'` (inferring the labels), with or without --skip_bad_rows."""
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "Good.", "label": "pos"}\n{"text": "Bad", "lab\n{"text": "Meh.", "label": "neg"}\n')
    processor = glue.GenericProcessor(text_a_column="text", label_column="label", file_format="jsonl")
    with pytest.raises(glue.BadRowError, match=r"train.jsonl:2: not JSON \(.*\) \(--skip_bad_rows skips and counts"):
        processor.infer_labels(str(path))
    processor.infer_labels(str(path), skip_bad_rows=True)
    assert processor.labels == ("neg", "pos")
    read = processor.read(str(path), glue.TRAIN, skip_bad_rows=True)
    assert [e.text_a for e in read.examples] == ["Good.", "Meh."] and read.bad_rows == 1
