"""`prepare_corpus` on real WikiExtractor output (3 of the 48 Wikipedia files in ../shared/data), checked against a
separate parse of the same files: a regular expression over the ``<doc>`` blocks, whitespace-split words and the
characters of the text, none of which goes through the library's parser or splitter."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from official.nlp.common.errors import InputError
from official.nlp.data.corpus.preparation import prepare_corpus
from official.nlp.data.corpus.settings import CorpusConfig
from official.nlp.data.pretraining import generator as pretraining_data

SLICE = ("wiki_00", "wiki_01", "wiki_02")
_DOC = re.compile(r"^<doc [^>]*>\n(.*?)^</doc>$", re.S | re.M)


def independent_parse(paths) -> list[list[str]]:
    """Each article's lines that are not blank (its title first), in order."""
    articles = []
    for path in paths:
        for block in _DOC.findall(path.read_text(encoding="utf-8")):
            articles.append([line.strip() for line in block.split("\n") if line.strip()])
    return articles


def output_documents(path) -> list[list[str]]:
    text = path.read_text(encoding="utf-8")
    assert not text.startswith("\n") and text.endswith("\n") and "\n\n\n" not in text
    return [block.split("\n") for block in text.rstrip("\n").split("\n\n")]


def letters(lines) -> str:
    """The text without its whitespace: what sentence splitting must keep, whatever it cuts."""
    return "".join("".join(lines).split())


@pytest.fixture(scope="module")
def wiki(shared_data, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wiki")
    inputs = [shared_data / "wikipedia" / name for name in SLICE]
    config = CorpusConfig(input_file=",".join(str(p) for p in inputs), output_file=str(tmp / "drop.txt"), num_workers=1)
    dropped = prepare_corpus(config)
    kept = prepare_corpus(dataclasses.replace(config, output_file=str(tmp / "keep.txt"), keep_headings=True))
    return config, inputs, independent_parse(inputs), (dropped, tmp / "drop.txt"), (kept, tmp / "keep.txt")


def test_the_counts_match_an_independent_parse(wiki):
    _, _, articles, (dropped, drop_path), (kept, keep_path) = wiki
    with_text = [a for a in articles if len(a) > 1]
    assert dropped.counts.documents == kept.counts.documents == len(with_text) > 1000
    assert dropped.counts.stubs == kept.counts.stubs == len(articles) - len(with_text) > 1000
    assert dropped.counts.titles == len(with_text)
    assert dropped.counts.headings == kept.counts.headings > 1000

    for summary, path in ((dropped, drop_path), (kept, keep_path)):
        documents = output_documents(path)
        assert len(documents) == summary.counts.documents
        assert sum(len(d) for d in documents) == summary.counts.sentences
        assert sum(len(line.split()) for d in documents for line in d) == summary.counts.words
        assert json.loads(open(summary.summary_file).read())["words"] == summary.counts.words

    # Kept whole, the text of each article is its input without a character lost, added or moved.
    kept_documents = output_documents(keep_path)
    assert [letters(d) for d in kept_documents] == [letters(a) for a in with_text]
    input_words = sum(len(line.split()) for a in with_text for line in a)
    # The splitter may cut a token without a space ("in 2015.The"): a few words more, never fewer.
    assert input_words <= kept.counts.words <= input_words * 1.001

    # Without headings, each article is its kept lines less the title and the headings, in order.
    removed = []
    for full, short in zip(kept_documents, output_documents(drop_path)):
        gone = _missing(full, short)
        assert gone[0] == full[0]  # the title
        removed += gone[1:]
    assert len(removed) == dropped.counts.headings
    assert all(line.endswith((".", "!", "?")) and len(line.split()) <= 6 for line in removed)


def _missing(full: list[str], short: list[str]) -> list[str]:
    """The lines of `full` that `short` (a subsequence of it) leaves out."""
    gone, j = [], 0
    for line in full:
        if j < len(short) and short[j] == line:
            j += 1
        else:
            gone.append(line)
    assert j == len(short), "the output without headings is not a part of the output with them"
    return gone


def test_the_output_feeds_create_pretraining_data(wiki, shared_data, tmp_path):
    _, _, _, (dropped, drop_path), _ = wiki
    text = drop_path.read_text(encoding="utf-8")
    part = tmp_path / "part.txt"
    part.write_text(text[: text.index("\n\n", 200_000) + 1], encoding="utf-8")
    documents = output_documents(part)
    stats = pretraining_data.create_pretraining_data(
        pretraining_data.PretrainingDataConfig(
            input_file=str(part),
            output_file=str(tmp_path / "records.tfrecord"),
            vocab_file=str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"),
            dupe_factor=1,
            num_workers=1,
        )
    )
    assert stats.input["documents"] == len(documents)
    assert stats.input["sentences"] + stats.input["empty_token_lines"] == sum(len(d) for d in documents)
    assert stats.instances > 500


def test_the_bytes_do_not_depend_on_the_workers_the_units_or_a_rerun(wiki, tmp_path):
    config, _, _, (_, drop_path), _ = wiki
    expected = drop_path.read_bytes()
    again = dataclasses.replace(config, output_file=str(tmp_path / "x.txt"), num_workers=2, unit_mb=0.05)
    prepare_corpus(again)
    assert (tmp_path / "x.txt").read_bytes() == expected
    prepare_corpus(dataclasses.replace(again, num_workers=1))  # over the output of the run before
    assert (tmp_path / "x.txt").read_bytes() == expected


def test_shards_split_the_same_text_at_document_boundaries(wiki, tmp_path):
    config, _, _, (_, drop_path), _ = wiki
    summary = prepare_corpus(dataclasses.replace(config, output_file=str(tmp_path / "wiki.txt@4"), unit_mb=0.2))
    names = [f"wiki.txt-{i:05d}-of-00004" for i in range(4)]
    assert summary.output_files == [str(tmp_path / n) for n in names]
    assert summary.summary_file == str(tmp_path / "stats" / "wiki.txt.json")
    shards = [(tmp_path / n).read_bytes() for n in names]
    assert all(shards) and b"\n".join(shards) == drop_path.read_bytes()


def test_plain_text_and_wikiextractor_files_in_one_run(shared_data, tmp_path):
    sample = shared_data / "bert_sample_text.txt"
    wiki = shared_data / "wikipedia" / "wiki_03"
    summary = prepare_corpus(CorpusConfig(input_file=f"{sample},{wiki}", output_file=str(tmp_path / "out.txt")))
    documents = output_documents(tmp_path / "out.txt")
    sample_documents = [d.split("\n") for d in sample.read_text(encoding="utf-8").strip().split("\n\n")]
    assert len(sample_documents) == 3
    assert [letters(d) for d in documents[:3]] == [letters(d) for d in sample_documents]
    assert summary.counts.documents == 3 + len([a for a in independent_parse([wiki]) if len(a) > 1])


# ---- bad input: one InputError naming the file and line (the script prints it as one line, exit 2) -----------------


def _run(tmp_path, *inputs, **flags):
    config = CorpusConfig(input_file=",".join(str(i) for i in inputs), output_file=str(tmp_path / "out" / "x.txt"))
    return prepare_corpus(dataclasses.replace(config, **flags))


def test_a_doc_never_closed_is_refused_naming_its_line(shared_data, tmp_path):
    data = (shared_data / "wikipedia" / "wiki_00").read_bytes()
    cut = tmp_path / "wiki_cut"
    last = data.rindex(b"<doc ", 0, 500_000)
    cut.write_bytes(data[: data.index(b"\n", last + 300) + 1])
    line = data[:last].count(b"\n") + 1
    with pytest.raises(InputError, match=rf"^{cut}:{line}: <doc id=.* is never closed .* the file is cut short"):
        _run(tmp_path, cut, unit_mb=0.1, num_workers=1)
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p != cut]  # no output, no summary


def test_bytes_that_are_not_utf8_are_refused_naming_their_line(tmp_path):
    text = "".join(f"Document {i} holds a sentence. And a second one.\n\n" for i in range(5000))
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(text.encode() + "Café au lait.\n".encode("latin-1"))
    with pytest.raises(InputError, match=rf"^{latin1}:10001: not valid UTF-8 .* seems to be Latin-1"):
        _run(tmp_path, latin1, unit_mb=0.01, num_workers=1)  # in the last of many work units


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4, r"not valid UTF-8 .*binary data, not text. Pass a text file"),
        (b'<doc id="1" title="A">\nA\n\nText.\n</doc>\nstray text\n', r":6: text outside a <doc> block"),
        (b'<doc id="1" title="A">\nA\n\n<doc id="2" title="B">\n', r":4: a <doc> opens inside the one of line 1"),
        (b'<doc id="1" title="A">\nA\n\nText.\n</doc>\n</doc>\n', r":6: </doc> without a <doc"),
    ],
)
def test_bad_files_are_refused_naming_the_file(tmp_path, content, message):
    bad = tmp_path / "bad"
    bad.write_bytes(content)
    with pytest.raises(InputError, match=rf"^{bad}{'' if message.startswith(':') else ':1: '}{message}"):
        _run(tmp_path, bad)
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p != bad]


def test_inputs_and_flags_that_cannot_work_are_refused(shared_data, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"--input_file pattern .*empty/\*' matches no file"):
        _run(tmp_path, tmp_path / "empty" / "*")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n")
    with pytest.raises(InputError, match=r"--input_file: .*blank.txt hold\(s\) no text"):
        _run(tmp_path, blank)
    with pytest.raises(InputError, match=r"--input_format=wikiextractor, but the file does not start with a <doc"):
        _run(tmp_path, shared_data / "bert_sample_text.txt", input_format="wikiextractor")
    with pytest.raises(InputError, match=r"--output_file: 40 shards, but the input makes only 1 work units"):
        _run(tmp_path, shared_data / "bert_sample_text.txt", output_file=str(tmp_path / "x@40"))
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("One sentence.\n")
    (tmp_path / "corpus" / "prepared.txt").write_text("An earlier run.\n")
    with pytest.raises(InputError, match=r"prepared.txt is also an input \(--input_file=.*corpus/\* names it\)"):
        _run(tmp_path, tmp_path / "corpus" / "*", output_file=str(tmp_path / "corpus" / "prepared.txt"))
    with pytest.raises(InputError, match=r"^--num_workers=-1: must be >= 0; --unit_mb=0.0: must be > 0$"):
        _run(tmp_path, blank, unit_mb=0.0, num_workers=-1)
    assert not (tmp_path / "out").exists()


def test_wikiextractor_output_cut_at_its_start_is_refused_naming_its_line(shared_data, tmp_path):
    """Read as `auto`, a file whose first line is inside an article is not WikiExtractor output by its first line;
    read as text, every <doc ...>, </doc> and title would become a sentence of the corpus."""
    data = (shared_data / "wikipedia" / "wiki_00").read_bytes()
    start = data.index(b"\n</doc>", 2000) - 100  # in the middle of an article's last line
    cut = tmp_path / "wiki_cut"
    cut.write_bytes(data[start : data.index(b"</doc>\n", 300_000) + 7])  # to the end of an article
    line = data[start : data.index(b"</doc>", start)].count(b"\n") + 1
    with pytest.raises(
        InputError, match=rf"^{cut}:{line}: a WikiExtractor '</doc>' line, but the file does not start with a <doc "
    ) as refused:
        _run(tmp_path, cut, num_workers=1)
    assert f"keep its lines from line {line + 1} on" in str(refused.value)
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p != cut]
    # What the message says works: the file from that line on is WikiExtractor output again.
    lines = cut.read_bytes().split(b"\n")
    whole = tmp_path / "wiki_whole"
    whole.write_bytes(b"\n".join(lines[line:]))
    assert _run(tmp_path, whole, num_workers=1).counts.documents > 10
    # and --input_format=text reads every line as text, as asked
    _run(tmp_path, cut, input_format="text", num_workers=1, output_file=str(tmp_path / "as_text.txt"))
    assert "</doc>" in (tmp_path / "as_text.txt").read_text().split("\n")


def test_a_corpus_of_stubs_only_is_refused_and_nothing_is_written(shared_data, tmp_path):
    articles = re.findall(
        r"^<doc [^>]*>\n.*?^</doc>\n", (shared_data / "wikipedia" / "wiki_00").read_text(), re.M | re.S
    )
    stubs = [a for a in articles if len([line for line in a.split("\n") if line.strip()]) == 3]  # tag, title, end
    assert len(stubs) > 100
    path = tmp_path / "stubs"
    path.write_text("".join(stubs[:100]), encoding="utf-8")
    for output in (str(tmp_path / "out" / "x.txt"), str(tmp_path / "out" / "x@2")):
        with pytest.raises(
            InputError,
            match=rf"^--input_file={path}: nothing to write, no output was written: all 100 of its documents were "
            r"dropped as stubs without text",
        ):
            _run(tmp_path, path, output_file=output, unit_mb=0.001, num_workers=1)
        assert not [p for p in tmp_path.rglob("*") if p.is_file() and p != path]
