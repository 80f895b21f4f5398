"""GLUE processors on the real files (counts of the GLUE release), the original layouts of the tasks whose files are
not in ../shared/data (QQP, MNLI, AX), bad rows and TFDS."""

from __future__ import annotations

import pytest

from official.nlp.common.errors import InputError
from official.nlp.data import classifier_examples, glue

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
        split = {
            "train.tsv": classifier_examples.TRAIN,
            "dev.tsv": classifier_examples.DEV,
            "test.tsv": classifier_examples.TEST,
        }[name]
        result = processor.read(str(shared_data / "glue" / folder / name), split)
        assert (len(result.examples), result.bad_rows) == (expected, 0), name
        for example in result.examples:
            assert example.text_a.strip() and (example.text_b is None or example.text_b.strip())
            if split == classifier_examples.TEST:
                assert example.label is None
            elif processor.is_regression:
                assert 0.0 <= example.label <= 5.0
            else:
                assert example.label in processor.labels


def test_mrpc_byte_order_mark_and_columns(shared_data):
    path = shared_data / "glue" / "MRPC" / "train.tsv"
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    first = glue.get_processor("mrpc").read(str(path), classifier_examples.TRAIN).examples[0]
    assert first.label == "1"
    assert first.text_a.startswith('Amrozi accused his brother, whom he called "the witness"')
    assert first.text_b.startswith('Referring to him as only "the witness"')
    test = (
        glue.get_processor("MRPC")
        .read(str(shared_data / "glue" / "MRPC" / "test.tsv"), classifier_examples.TEST)
        .examples
    )
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
    assert qqp.read(train, classifier_examples.TRAIN).examples[0] == classifier_examples.InputExample(
        "train-133273", "How is the life?", "How's life?", "1"
    )
    test = _write(tmp_path / "qqp_test.tsv", [["id", "question1", "question2"], ["0", "Why?", "Why not?"]])
    assert qqp.read(test, classifier_examples.TEST).examples[0] == classifier_examples.InputExample(
        "0", "Why?", "Why not?"
    )

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
    assert mnli.read(train, classifier_examples.TRAIN).examples[0].label == "neutral"
    assert mnli.read(dev).examples[0] == classifier_examples.InputExample("dev-0", "C.", "D.", "neutral")
    assert [s.submission for s in mnli.files("x")[classifier_examples.TEST]] == ["MNLI-m.tsv", "MNLI-mm.tsv"]
    assert [s.suffix for s in mnli.files("x")[classifier_examples.DEV]] == ["", "_mismatched"]

    ax = glue.get_processor("ax")
    diag = _write(tmp_path / "diagnostic.tsv", [["index", "sentence1", "sentence2"], ["0", "The cat sat.", "A cat."]])
    assert ax.read(diag, classifier_examples.TEST).examples == [
        classifier_examples.InputExample("0", "The cat sat.", "A cat.")
    ]
    assert ax.labels == mnli.labels and ax.files("x")[classifier_examples.TRAIN] == []


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
    with pytest.raises(classifier_examples.BadRowError, match=rf"{path}:3: 2 column\(s\), rte needs at least 4"):
        rte.read(path, classifier_examples.TRAIN)
    result = rte.read(path, classifier_examples.TRAIN, skip_bad_rows=True)
    assert (len(result.examples), result.bad_rows) == (2, 3)
    bad_label = _write(tmp_path / "b.tsv", [["index", "sentence1", "sentence2", "label"], ["2", "A.", "B.", "maybe"]])
    with pytest.raises(
        classifier_examples.BadRowError, match=r"b.tsv:2: unknown label 'maybe'.*\['entailment', 'not_entailment'\]"
    ):
        rte.read(bad_label, classifier_examples.TRAIN)
    empty = _write(tmp_path / "c.tsv", [["index", "sentence1", "sentence2", "label"], ["3", " ", "B.", "entailment"]])
    with pytest.raises(classifier_examples.BadRowError, match=r"c.tsv:2: empty text"):
        rte.read(empty, classifier_examples.TRAIN)
    # An empty second text is no second segment, as the original packs it and as the export serves it.
    no_b = _write(tmp_path / "d.tsv", [["index", "sentence1", "sentence2", "label"], ["3", "A.", " ", "entailment"]])
    example = rte.read(no_b, classifier_examples.TRAIN).examples[0]
    assert (example.text_a, example.text_b) == ("A.", " ")
    sts = _write(tmp_path / "s.tsv", [["h"] * 10, ["0"] * 7 + ["A.", "B.", "high"]])
    with pytest.raises(classifier_examples.BadRowError, match=r"s.tsv:2: label 'high' is not a number"):
        glue.get_processor("sts-b").read(sts, classifier_examples.TRAIN)


def test_unknown_task_is_refused():
    with pytest.raises(InputError, match="--task_name=squad: unknown task"):
        glue.get_processor("squad")
    assert glue.get_processor("SST2").name == glue.get_processor("sst-2").name == "sst-2"


@pytest.mark.slow  # tfds' mock imports its lazy dependencies: ~40 s on a busy 2-core machine
def test_tfds_glue_with_mock_data():
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=7):
        processor = glue.TfdsProcessor("glue/mrpc")
        assert processor.labels == ("not_equivalent", "equivalent")
        assert processor.metrics[0] == "f1"
        files = processor.files()
        assert [s.file for s in files[classifier_examples.DEV]] == ["validation"]
        assert files[classifier_examples.TEST][0].submission == "MRPC.tsv"
        train = processor.read("train", classifier_examples.TRAIN, skip_bad_rows=True)
        assert len(train.examples) + train.bad_rows == 7
        assert all(e.label in processor.labels for e in train.examples)
        test = processor.read("test", classifier_examples.TEST, skip_bad_rows=True)
        assert all(e.label is None for e in test.examples)
        mnli = glue.TfdsProcessor("glue/mnli")
        assert [s.submission for s in mnli.files()[classifier_examples.TEST]] == ["MNLI-m.tsv", "MNLI-mm.tsv"]
    with pytest.raises(InputError, match="expected glue/<task>"):
        glue.TfdsProcessor("imdb_reviews")
