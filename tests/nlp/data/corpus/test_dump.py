"""`prepare_corpus` on a Wikipedia XML dump: a small dump built around four real articles (data/make_wiki_dump.py
wrote ``data/wiki_dump.xml.bz2`` from the WikiExtractor text of ../shared/data/wikipedia/wiki_00, with wikitext
markup around it, plus a redirect, a disambiguation page, a Talk: page, a Template: page and an empty article),
checked against the expected text in ``data/wiki_dump_expected.txt`` (read line by line against the articles'
WikiExtractor text) and against the WikiExtractor file itself; hand-written wikitext for each kind of markup; and
the bad inputs a dump brings."""

from __future__ import annotations

import bz2
import dataclasses
import json
import pathlib
import re

import pytest
import tensorflow as tf

from official.nlp.common.errors import InputError
from official.nlp.data.corpus import wikitext
from official.nlp.data.corpus.preparation import prepare_corpus
from official.nlp.data.corpus.settings import CorpusConfig

DATA = pathlib.Path(__file__).parent / "data"
DUMP = DATA / "wiki_dump.xml.bz2"
EXPECTED = DATA / "wiki_dump_expected.txt"
TITLES = ("Jarred Shaw", "Harrow International School Shanghai", "Gennady Leonov", "Woolundunga, South Australia")


def run(tmp_path, input_file, name="out.txt", **kwargs):
    config = CorpusConfig(input_file=str(input_file), output_file=str(tmp_path / name), num_workers=1, **kwargs)
    return prepare_corpus(config)


def test_the_fixture_gives_the_expected_text_and_counts(tmp_path):
    summary = run(tmp_path, DUMP)
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == EXPECTED.read_text(encoding="utf-8")
    c = summary.counts
    assert (c.documents, c.redirects, c.disambiguations, c.other_namespaces, c.stubs) == (4, 1, 1, 2, 1)
    assert c.titles == 4 and c.headings == 5
    record = json.loads((tmp_path / "stats" / "out.txt.json").read_text())
    assert record["redirects"] == 1 and record["wikitext_parser"].startswith("mwparserfromhell ")
    assert "1 redirects, 1 disambiguation pages and 2 pages of other namespaces" in summary.describe()


def test_the_text_is_the_wikiextractor_text_of_the_same_articles(shared_data):
    """The expected text holds the words of each article's WikiExtractor paragraphs, its heading lines aside."""
    source = (shared_data / "wikipedia" / "wiki_00").read_text(encoding="utf-8")
    expected = EXPECTED.read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    assert len(expected) == len(TITLES)
    headings = {"Professional career.", "Location.", "The school.", "School structure.", "Extra-curricular activities."}
    headings |= {"The campus."}
    for title, document in zip(TITLES, expected):
        block = re.search(rf'title="{re.escape(title)}">\n{re.escape(title)}\n(.*?)</doc>', source, re.S).group(1)
        paragraphs = [line for line in block.split("\n") if line.strip() and line.strip() not in headings]
        assert "".join("".join(paragraphs).split()) == "".join(document.split())


def test_headings_are_known_from_the_markup(tmp_path):
    summary = run(tmp_path, DUMP, keep_headings=True)
    documents = (tmp_path / "out.txt").read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    assert [d.split("\n")[0] for d in documents] == list(TITLES)
    assert documents[0].split("\n")[2] == "Professional career."
    # "The school." heads a section with no text of its own (only the next heading): dropped, as MediaWiki shows none
    assert "The school." not in documents[1].split("\n") and "School structure." in documents[1].split("\n")
    assert summary.counts.headings == 5


@pytest.mark.parametrize(
    "markup, paragraphs, headings",
    [
        ("'''Paris''' is the [[capital city|capital]] of [[France]]s.", ["Paris is the capital of Frances."], set()),
        ("A{{Infobox\n| a = {{b|c}}\n}} b.<ref>{{cite web|title=T [[x]]}}</ref> C.<ref name=n/>", ["A b. C."], set()),
        (
            "A&nbsp;b &amp; c.<!-- note --> [https://example.org the site] [https://example.org]",
            ["A b & c. the site"],
            set(),
        ),
        ("Text.\n\n{| class=wikitable\n|-\n| a || b\n|}\nMore text.", ["Text.", "More text."], set()),
        ("Intro:\n* one\n* two [[x]]\n# three\n; term\n: definition\nAfter.", ["Intro:", "After."], set()),
        ("[[File:a.jpg|thumb|A caption.]]Text [[fr:Texte]].\n[[Category:Things]]", ["Text ."], set()),
        ("[[image:b.png]]See [[CSI: Miami]] and [[:Category:Things]].", ["See CSI: Miami and Category:Things."], set()),
        (
            "Lead.\n== Early life ==\nBorn.\n=== Empty ===\n== Career! ==\nWorked.",
            ["Lead.", "Early life.", "Born.", "Career!", "Worked."],
            {1, 3},
        ),
        ("Lead.\n== References ==\n{{Reflist}}\n== See also ==\n* [[x]]", ["Lead."], set()),
        ("One line\nand the next are one paragraph.__NOTOC__", ["One line and the next are one paragraph."], set()),
        ("E = <math>mc^2</math>, a<sub>1</sub> and x<br>y.", ["E = , a1 and x y."], set()),
    ],
)
def test_wikitext_markup(markup, paragraphs, headings):
    assert wikitext.paragraphs(wikitext.parse(markup)) == (paragraphs, headings)


@pytest.mark.parametrize(
    "markup, expected",
    [("{{disambiguation}}", True), ("{{Disambig|geo}}", True), ("{{hndis|Smith, John}}", True), ("{{dablink}}", False)],
)
def test_disambiguation_templates(markup, expected):
    assert wikitext.is_disambiguation(wikitext.parse("'''X''' may refer to:\n* [[X (a)]]\n" + markup)) == expected


def test_the_output_does_not_depend_on_workers_and_shards_take_units_in_turn(tmp_path):
    run(tmp_path, DUMP, "one.txt")
    config = CorpusConfig(input_file=str(DUMP), output_file=str(tmp_path / "two.txt"), num_workers=2, unit_mb=0.0005)
    prepare_corpus(config)
    assert (tmp_path / "two.txt").read_bytes() == (tmp_path / "one.txt").read_bytes()
    sharded = prepare_corpus(dataclasses.replace(config, output_file=str(tmp_path / "shard.txt@2")))
    shards = [pathlib.Path(p).read_text(encoding="utf-8") for p in sharded.output_files]
    documents = (tmp_path / "one.txt").read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    # units of 0.0005 MB (524 characters of wikitext) hold one article each here: articles alternate
    assert shards[0].rstrip("\n").split("\n\n") == documents[0::2]
    assert shards[1].rstrip("\n").split("\n\n") == documents[1::2]


def test_a_dump_on_another_filesystem_and_uncompressed(tmp_path):
    """Read through the file layer (ram:// stands for gs://), and as plain .xml."""
    tf.io.gfile.makedirs("ram://dump43")
    tf.io.gfile.copy(str(DUMP), "ram://dump43/enwiki-pages-articles1.xml-p1p41242.bz2", overwrite=True)
    run(tmp_path, "ram://dump43/enwiki-*.bz2", "ram.txt")
    (tmp_path / "dump.xml").write_bytes(bz2.decompress(DUMP.read_bytes()))
    run(tmp_path, tmp_path / "dump.xml", "xml.txt")
    expected = EXPECTED.read_text(encoding="utf-8")
    assert (tmp_path / "ram.txt").read_text(encoding="utf-8") == (tmp_path / "xml.txt").read_text() == expected


def _write_bz2(path, text: str):
    path.write_bytes(bz2.compress(text.encode("utf-8")))
    return path


def test_a_truncated_bz2_is_one_line(tmp_path):
    # blocks of 100 kB of text (level 1): the cut is past the first block
    text = bz2.decompress(DUMP.read_bytes()).decode("utf-8")
    pages = text[text.index("  <page>") : text.index("</mediawiki>")]
    data = bz2.compress(text.replace(pages, pages * 40).encode("utf-8"), compresslevel=1)
    cut = tmp_path / "cut.xml.bz2"
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(
        InputError,
        match=r"cut\.xml\.bz2: the compressed file ends before its bzip2 stream does "
        r"\(after page \d+ \('.*'\)\); the file is cut short: download it again",
    ):
        run(tmp_path, cut)
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "stats").exists()
    (tmp_path / "tiny.xml.bz2").write_bytes(DUMP.read_bytes()[:200])
    with pytest.raises(InputError, match="ends inside its first bzip2 block; the file is cut short"):
        run(tmp_path, tmp_path / "tiny.xml.bz2")


def test_damaged_bz2_data_is_one_line(tmp_path):
    data = bytearray(DUMP.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    (tmp_path / "bad.xml.bz2").write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"bad\.xml\.bz2: .*bzip2 .*download (it|the file) again"):
        run(tmp_path, tmp_path / "bad.xml.bz2")


def test_malformed_xml_is_one_line_with_its_position(tmp_path):
    text = bz2.decompress(DUMP.read_bytes()).decode("utf-8")
    broken = text.replace("<title>Gennady Leonov</title>", "<title>Gennady Leonov</titel>")
    path = _write_bz2(tmp_path / "broken.xml.bz2", broken)
    line = broken[: broken.index("</titel>")].count("\n") + 1
    with pytest.raises(
        InputError,
        match=rf"broken\.xml\.bz2: malformed XML at line {line}, column \d+ .*"
        r"after page 7 \('Harrow International School Shanghai'\).*mismatched tag",
    ):
        run(tmp_path, path)


def test_pages_without_text_and_of_other_namespaces_are_counted(tmp_path):
    text = bz2.decompress(DUMP.read_bytes()).decode("utf-8")
    page = text[text.index("  <page>") : text.index("</page>") + len("</page>\n")]
    extra = page.replace("<ns>0</ns>", "<ns>4</ns>") + re.sub(
        r"<text [^>]*>.*?</text>", '<text deleted="deleted" />', page, flags=re.S
    )
    path = _write_bz2(tmp_path / "extra.xml.bz2", text.replace("</mediawiki>", extra + "</mediawiki>"))
    c = run(tmp_path, path).counts
    assert (c.documents, c.other_namespaces, c.stubs) == (4, 3, 2)


def test_what_is_not_a_dump_is_refused(tmp_path, shared_data):
    wiki = shared_data / "wikipedia" / "wiki_00"
    with pytest.raises(InputError, match="is a Wikipedia XML dump but .*wiki_00 is not; prepare dumps and"):
        run(tmp_path, f"{DUMP},{wiki}")
    compressed = tmp_path / "wiki_00.bz2"
    compressed.write_bytes(bz2.compress(wiki.read_bytes()[:5000]))
    with pytest.raises(InputError, match="bzip2 data that is not a Wikipedia XML dump"):
        run(tmp_path, compressed)
    with pytest.raises(InputError, match="--input_format=dump, but the file is not a Wikipedia XML dump"):
        run(tmp_path, wiki, input_format="dump")
    (tmp_path / "other.xml").write_text("<feed><entry/></feed>\n")
    with pytest.raises(InputError, match="--input_format=dump, but"):
        run(tmp_path, tmp_path / "other.xml", input_format="dump")


def test_a_stopped_run_resumes_from_the_units_it_kept(tmp_path, monkeypatch):
    """Four units (one article each, the disambiguation page with the second); a stop in the fourth keeps three,
    the same command parses only the fourth and writes what one uninterrupted run writes; a run of other settings
    starts over; the parts go once the output is in place."""
    from official.nlp.data.corpus import dump as dump_lib

    whole = run(tmp_path, DUMP, "whole.txt", unit_mb=0.0005)
    original, parsed = dump_lib.prepare_pages, []

    def parse(pages, keep_headings, stop_at=None):
        if len(parsed) == stop_at:
            raise KeyboardInterrupt
        parsed.append(pages[-1][0])
        return original(pages, keep_headings)

    monkeypatch.setattr(dump_lib, "prepare_pages", lambda pages, keep: parse(pages, keep, stop_at=3))
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, DUMP, unit_mb=0.0005)
    parts = tmp_path / "stats" / "out.txt.parts"
    kept = [f"unit-{i:08d}.{kind}" for i in range(3) for kind in ("json", "txt")]
    assert sorted(p.name for p in parts.iterdir()) == ["resume.json", *kept]
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "stats" / "out.txt.json").exists()
    monkeypatch.setattr(dump_lib, "prepare_pages", parse)
    parsed.clear()
    summary = run(tmp_path, DUMP, unit_mb=0.0005)
    assert parsed == ["Woolundunga, South Australia"]  # the units kept were not parsed again
    assert (tmp_path / "out.txt").read_bytes() == (tmp_path / "whole.txt").read_bytes()
    assert dataclasses.asdict(summary.counts) == dataclasses.asdict(whole.counts)
    assert not parts.exists()
    # Units kept by a run of other settings are not taken: the run starts over.
    parsed.clear()
    monkeypatch.setattr(dump_lib, "prepare_pages", lambda pages, keep: parse(pages, keep, stop_at=2))
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, DUMP, unit_mb=0.0005)
    monkeypatch.setattr(dump_lib, "prepare_pages", parse)
    parsed.clear()
    run(tmp_path, DUMP, unit_mb=0.0005, keep_headings=True)
    assert len(parsed) == 4 and not parts.exists()
