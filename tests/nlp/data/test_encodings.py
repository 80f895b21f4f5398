"""Every reader of user data files (GLUE and generic classification files, CoNLL, SWAG, SQuAD, bert_config.json)
refuses a file that is not UTF-8 with one message naming the file, the first line that is not UTF-8 and the
encoding the file seems to be in, instead of a `UnicodeDecodeError ... position 138` without a file name. The
files are real data slices, re-encoded; the expected line is found by decoding each line on its own with Python's
codecs."""

from __future__ import annotations

import json

import pytest

from official.nlp.common.errors import InputError
from official.nlp.data import classifier_examples, conll, glue, swag
from official.nlp.data.squad import examples as squad_examples
from official.nlp.modeling.configs import BertConfig


def first_bad_line(raw: bytes) -> int:
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return number
    raise AssertionError("every line is UTF-8")


def write(path, text: str, codec: str) -> tuple[str, int]:
    """`text` in `codec` at `path`; returns the path and the line a reader must name."""
    raw = text.encode(codec, errors="replace")
    path.write_bytes(raw)
    return str(path), 1 if codec == "utf-16" else first_bad_line(raw)


def assert_names(error: pytest.ExceptionInfo, path: str, line: int, codec: str) -> None:
    message = str(error.value)
    assert message.startswith(f"{path}:{line}: not "), message
    named = "UTF-16" if codec == "utf-16" else "Latin-1 (ISO-8859-1) or Windows-1252"
    assert f"the file seems to be {named}. Re-encode the file as UTF-8" in message


@pytest.fixture(scope="module")
def mrpc_text(shared_data) -> str:
    """The header and first 110 rows of MRPC's train.tsv; row 105 holds a '½'."""
    lines = (shared_data / "glue" / "MRPC" / "train.tsv").read_text(encoding="utf-8-sig").split("\n")
    return "\n".join(lines[:111]) + "\n"


@pytest.mark.parametrize("codec", ["latin-1", "utf-16"])
def test_glue(tmp_path, mrpc_text, codec):
    path, line = write(tmp_path / "train.tsv", mrpc_text, codec)
    if codec == "latin-1":
        assert line == 105
    with pytest.raises(InputError) as e:
        glue.get_processor("MRPC").read(path, classifier_examples.TRAIN)
    assert_names(e, path, line, codec)


@pytest.mark.parametrize("file_format", ["tsv", "jsonl"])
def test_generic_classification_files(tmp_path, mrpc_text, file_format):
    rows = [r.split("\t") for r in mrpc_text.splitlines()[1:]]
    if file_format == "tsv":
        text = "label\ttext\n" + "".join(f"{r[0]}\t{r[3]}\n" for r in rows)
    else:
        text = "".join(json.dumps({"label": r[0], "text": r[3]}, ensure_ascii=False) + "\n" for r in rows)
    path, line = write(tmp_path / f"train.{file_format}", text, "latin-1")
    processor = classifier_examples.GenericProcessor(
        text_a_column="text", label_column="label", file_format=file_format
    )
    with pytest.raises(InputError) as e:
        processor.infer_labels(path)
    assert_names(e, path, line, "latin-1")


def test_conll(tmp_path, shared_data):
    lines = (shared_data / "conll2003" / "iob2" / "valid.txt").read_text(encoding="utf-8").splitlines(True)
    text = "".join(lines[:200])
    path, line = write(tmp_path / "valid.txt", text, "utf-16")
    with pytest.raises(InputError) as e:
        conll.read_conll(path)
    assert_names(e, path, line, "utf-16")


@pytest.mark.parametrize("codec", ["latin-1", "utf-16"])
def test_swag(tmp_path, shared_data, codec):
    text = (shared_data / "swag" / "hf_transformers_sample.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(r) for r in text.splitlines()]
    rows[6]["sent1"] += " at the café"  # the sample is ASCII: one accented word, as real text has
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path, line = write(tmp_path / "sample.jsonl", text, codec)
    if codec == "latin-1":
        assert line == 7
    with pytest.raises(InputError) as e:
        swag.read_swag(path)
    assert_names(e, path, line, codec)


@pytest.mark.parametrize("codec", ["latin-1", "utf-16"])
def test_squad(tmp_path, shared_data, codec):
    data = json.loads((shared_data / "squad" / "dev-v2.0-subset-Normans-Rhine.json").read_text(encoding="utf-8"))
    text = json.dumps(data, ensure_ascii=False, indent=1)
    path, line = write(tmp_path / "dev.json", text, codec)
    with pytest.raises(InputError) as e:
        squad_examples.read_squad_examples(path, is_training=False, version_2_with_negative=True)
    assert_names(e, path, line, codec)


def test_bert_config(tmp_path, shared_data):
    text = (shared_data / "vocab" / "bert-base-uncased-bert_config.json").read_text(encoding="utf-8")
    path, line = write(tmp_path / "bert_config.json", text, "utf-16")
    with pytest.raises(InputError) as e:
        BertConfig.from_json_file(path)
    assert_names(e, path, line, "utf-16")
