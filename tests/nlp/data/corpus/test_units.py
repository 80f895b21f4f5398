"""Work units cut at document boundaries, and each file's format read from its first line."""

from __future__ import annotations

import pytest

from official.nlp.common.errors import InputError
from official.nlp.data.corpus.units import file_format, plan_corpus_units


def test_wikiextractor_units_cut_after_a_closing_tag_and_cover_the_file(shared_data):
    path = str(shared_data / "wikipedia" / "wiki_00")
    data = (shared_data / "wikipedia" / "wiki_00").read_bytes()
    units = plan_corpus_units([path], ["wikiextractor"], 20_000)
    assert len(units) > 40
    assert [u.start for u in units[1:]] == [u.end for u in units[:-1]] and units[-1].end == len(data)
    for unit in units:
        piece = data[unit.start : unit.end]
        assert piece.lstrip().startswith(b"<doc ") and piece.endswith(b"</doc>\n"), piece[-40:]
        assert unit.num_bytes >= 20_000 or unit is units[-1]


def test_text_units_cut_after_a_blank_line(tmp_path):
    text = b"".join(b"Sentence %d of a document.\nAnd another.\n\n" % i for i in range(200))
    path = tmp_path / "corpus.txt"
    path.write_bytes(text + b"A last line without its line end")
    units = plan_corpus_units([str(path)], ["text"], 500)
    assert len(units) > 10
    for unit in units[:-1]:
        assert path.read_bytes()[unit.start : unit.end].endswith(b".\n\n")


def test_file_format_reads_the_first_line(tmp_path, shared_data):
    assert file_format(str(shared_data / "wikipedia" / "wiki_01"), "auto") == "wikiextractor"
    assert file_format(str(shared_data / "bert_sample_text.txt"), "auto") == "text"
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n")
    assert file_format(str(blank), "auto") is None
    with pytest.raises(InputError, match=r"bert_sample_text.txt: --input_format=wikiextractor, but the file does not"):
        file_format(str(shared_data / "bert_sample_text.txt"), "wikiextractor")


def test_a_cut_utf8_character_at_the_end_of_the_sample_is_not_an_error(tmp_path):
    path = tmp_path / "long.txt"
    path.write_bytes(("a" + "é" * 40_000 + "\n").encode())  # the 64 KiB sample ends inside a character
    assert file_format(str(path), "auto") == "text"
