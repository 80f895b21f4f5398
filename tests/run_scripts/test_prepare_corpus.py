"""The absl script as a user runs it: the summary it prints, and bad input as one line with exit status 2."""

from __future__ import annotations

import bz2
import json

import pytest

from tests.conftest import REPO_ROOT
from tests.run_scripts.script_runs import assert_quiet, assert_user_error, run_script


def test_the_script_prints_what_it_counted(shared_data, tmp_path):
    result = run_script(
        "prepare_corpus.py",
        f"--input_file={shared_data / 'wikipedia' / 'wiki_04'}",
        f"--output_file={tmp_path / 'wiki.txt'}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((tmp_path / "stats" / "wiki.txt.json").read_text())
    line = next(line for line in result.stderr.splitlines() if "wrote " in line)
    assert (
        f"{summary['documents']} documents, {summary['sentences']} sentences, {summary['words']} words from 1 files"
    ) in line
    assert f"dropped {summary['stubs']} stubs without text; {summary['headings']} section headings" in line
    assert summary["documents"] > 100 and summary["sentence_splitter"].startswith("sentencex ")
    assert_quiet(result)


def _cut_wikiextractor_file(shared_data, tmp_path):
    data = (shared_data / "wikipedia" / "wiki_05").read_bytes()
    last = data.rindex(b"<doc ")
    path = tmp_path / "wiki_cut"
    path.write_bytes(data[: data.rindex(b"</doc>")])  # the last article loses its closing tag
    line = data[:last].count(b"\n") + 1
    return path, f"{path}:{line}: <doc id=", "is never closed"


def _binary_file(shared_data, tmp_path):
    path = tmp_path / "records.tfrecord"
    path.write_bytes(bytes(range(256)) * 64)
    return path, f"{path}:1: not UTF-8 text", "binary data, not text"


def _empty_folder(shared_data, tmp_path):
    (tmp_path / "wiki").mkdir()
    return tmp_path / "wiki" / "*", "--input_file pattern", "matches no file"


@pytest.mark.parametrize("bad_input", [_cut_wikiextractor_file, _binary_file, _empty_folder])
def test_bad_input_is_one_line_and_exit_2(shared_data, tmp_path, bad_input):
    path, *fragments = bad_input(shared_data, tmp_path)
    result = run_script("prepare_corpus.py", f"--input_file={path}", f"--output_file={tmp_path / 'out' / 'x.txt'}")
    assert_user_error(result, *fragments)
    assert not (tmp_path / "out" / "x.txt").exists() and not (tmp_path / "out" / "stats").exists()


DUMP = REPO_ROOT / "tests" / "nlp" / "data" / "corpus" / "data" / "wiki_dump.xml.bz2"


def test_a_wikipedia_dump_prints_what_it_dropped(tmp_path):
    result = run_script("prepare_corpus.py", f"--input_file={DUMP}", f"--output_file={tmp_path / 'wiki.txt'}")
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(line for line in result.stderr.splitlines() if "wrote " in line)
    assert (
        "4 documents" in line and "dropped 1 redirects, 1 disambiguation pages and 2 pages of other namespaces" in line
    )
    assert_quiet(result)


def test_a_truncated_dump_is_one_line_and_exit_2(tmp_path):
    data = bz2.decompress(DUMP.read_bytes())
    pages = data[data.index(b"  <page>") : data.index(b"</mediawiki>")]
    compressed = bz2.compress(data.replace(pages, pages * 40), compresslevel=1)
    path = tmp_path / "enwiki-pages-articles.xml.bz2"
    path.write_bytes(compressed[: len(compressed) // 2])
    result = run_script("prepare_corpus.py", f"--input_file={path}", f"--output_file={tmp_path / 'out' / 'x.txt'}")
    assert_user_error(result, f"{path}: the compressed file ends before its bzip2 stream does", "download it again")
    assert not (tmp_path / "out" / "x.txt").exists() and not (tmp_path / "out" / "stats").exists()
