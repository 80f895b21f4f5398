"""The rerun's data splits on the real files: the documented rules recomputed here from hashlib, the two sides
disjoint and complete, and the slices counted by the library's own readers."""

from __future__ import annotations

import hashlib
import json

import pytest

from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.data import classifier_examples, conll, glue
from official.nlp.paper import splits


def _fraction(key: str) -> float:
    """The rule of docs/paper.md, written again: the first 15 hex digits of SHA-256, over 16**15."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:15], 16) / 16**15


def test_qnli_is_split_by_a_hash_of_the_index(shared_data, tmp_path):
    counts = splits.glue_task("qnli", str(shared_data / "glue"), str(tmp_path), None, None)
    rows = (shared_data / "glue" / "QNLI" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
    expected_eval = {r.split("\t")[0] for r in rows if _fraction(r.split("\t")[0]) < 0.2}
    qnli = glue.get_processor("qnli")
    train = qnli.read(str(tmp_path / "train.tsv"), classifier_examples.TRAIN).examples
    evaluation = qnli.read(str(tmp_path / "dev.tsv"), classifier_examples.DEV).examples
    train_ids = {e.guid.split("-")[-1] for e in train}
    eval_ids = {e.guid.split("-")[-1] for e in evaluation}
    assert len(train) + len(evaluation) == len(rows) == 5463
    assert counts == {"train_examples": len(train), "eval_examples": len(evaluation)}
    assert eval_ids == expected_eval and not train_ids & eval_ids
    assert 0.17 < len(evaluation) / len(rows) < 0.23


def test_glue_slices_keep_the_first_rows_and_the_header(shared_data, tmp_path):
    counts = splits.glue_task("mrpc", str(shared_data / "glue"), str(tmp_path), 100, 40)
    assert counts == {"train_examples": 100, "eval_examples": 40}
    mrpc = glue.get_processor("mrpc")
    train = mrpc.read(str(tmp_path / "train.tsv"), classifier_examples.TRAIN).examples
    original = mrpc.read(str(shared_data / "glue" / "MRPC" / "train.tsv"), classifier_examples.TRAIN).examples
    assert [(e.text_a, e.label) for e in train] == [(e.text_a, e.label) for e in original[:100]]


def test_squad_is_split_by_article(shared_data, tmp_path):
    counts = splits.squad_split(str(shared_data / "squad" / "dev-v1.1.json"), str(tmp_path), None, None)
    data = json.loads((shared_data / "squad" / "dev-v1.1.json").read_text())["data"]
    train = json.loads((tmp_path / "train.json").read_text())["data"]
    evaluation = json.loads((tmp_path / "eval.json").read_text())["data"]
    assert {a["title"] for a in evaluation} == {a["title"] for a in data if _fraction(a["title"]) < 0.2}
    assert not {a["title"] for a in train} & {a["title"] for a in evaluation}
    questions = sum(len(p["qas"]) for a in data for p in a["paragraphs"])
    assert counts["train_examples"] + counts["eval_examples"] == questions == 10570
    assert counts["train_articles"] + counts["eval_articles"] == 48


def test_a_squad_slice_keeps_whole_paragraphs(shared_data, tmp_path):
    counts = splits.squad_split(str(shared_data / "squad" / "dev-v1.1.json"), str(tmp_path), 100, 30)
    train = json.loads((tmp_path / "train.json").read_text())["data"]
    paragraphs = [p for a in train for p in a["paragraphs"]]
    assert counts["train_examples"] == sum(len(p["qas"]) for p in paragraphs) >= 100
    assert sum(len(p["qas"]) for p in paragraphs[:-1]) < 100  # the last paragraph crossed the line


def test_conll_slices_count_sentences_as_the_reader_does(shared_data, tmp_path):
    counts = splits.conll_slices(str(shared_data / "conll2003" / "iob2"), str(tmp_path), 250, 80)
    assert counts == {"train_examples": 250, "eval_examples": 80}
    assert len(conll.read_conll(str(tmp_path / "train.txt")).sentences) == 250
    assert len(conll.read_conll(str(tmp_path / "eval.txt")).sentences) == 80


def test_held_out_documents_follow_the_rule(tmp_path):
    documents = [[f"Document {i} says one thing.", f"It says another thing {i}."] for i in range(200)]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(d) for d in documents) + "\n")
    split = splits.hold_out_documents(str(corpus), str(tmp_path / "train.txt"), str(tmp_path / "held.txt"), 0.1, 150)
    held = [d for d in documents[:150] if _fraction("\n".join(d)) < 0.1]
    assert split.heldout_documents == len(held) and split.train_documents == 150 - len(held)
    assert (tmp_path / "held.txt").read_text() == "".join("\n".join(d) + "\n\n" for d in held)
    assert split.train_words + split.heldout_words == sum(len(s.split()) for d in documents[:150] for s in d)


def test_missing_data_is_named(shared_data, tmp_path):
    with pytest.raises(MissingInputError, match="--glue_dir: .*MRPC/train.tsv"):
        splits.glue_task("mrpc", str(tmp_path), str(tmp_path / "out"), None, None)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(InputError, match="--squad_file=.*is not SQuAD JSON"):
        splits.squad_split(str(tmp_path / "bad.json"), str(tmp_path / "out"), None, None)
    with pytest.raises(MissingInputError, match="--conll_dir: .*train.txt"):
        splits.conll_slices(str(tmp_path), str(tmp_path / "out"), None, None)
