"""The input files of `prepare_corpus`: each file's format, and work units cut at document boundaries.

A file's format is ``--input_format``, or with ``auto`` read from its start: a Wikipedia XML dump (`dump`) starts
as bzip2 data that decompresses to ``<mediawiki ...>``, or as that XML itself; otherwise the first line that is not
blank decides: a ``<doc ...>`` tag means WikiExtractor output, anything else plain text. A dump is not cut into
byte ranges (its pages are read as a stream: `dump.page_units`). The start of each file (64 KiB) is checked here, before
any work, so that a binary file or a file in another encoding is refused at once (`text_files.decode_text` names
the line and the encoding it seems to be in).

A work unit is a byte range of one file that starts and ends at a document boundary: after a ``</doc>`` line in
WikiExtractor output, after a blank line in plain text. Units are about ``unit_bytes`` long (a unit grows to the
next boundary), so a worker holds one unit in memory whatever the file size, and the cut points depend only on the
file and ``unit_bytes``: the output is the same for any number of workers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from official.nlp.common import input_files
from official.nlp.common.errors import InputError
from official.nlp.common.text_files import decode_text
from official.nlp.data.corpus.documents import TEXT, WIKIEXTRACTOR, is_doc_tag
from official.nlp.data.corpus.dump import DUMP, decompressed_start, is_bzip2, is_dump_start

AUTO = "auto"
FORMATS = (AUTO, WIKIEXTRACTOR, TEXT, DUMP)
_SAMPLE_BYTES = 1 << 16
_LINE_PIECE = 1 << 20  # a longer line is read in pieces, so that no line is held whole while looking for a cut


@dataclasses.dataclass(frozen=True)
class CorpusUnit:
    index: int
    path: str
    start: int
    end: int
    input_format: str

    @property
    def num_bytes(self) -> int:
        return self.end - self.start


def file_format(path: str, requested: str) -> str | None:
    """The format of file `path` (`requested`, or read from its start for ``auto``); None for a file with no text.
    Refuses a file whose start is not UTF-8 text, and WikiExtractor asked of a file that does not start as such."""
    with input_files.open_file(path, "rb") as f:
        sample = f.read(_SAMPLE_BYTES)
    compressed = is_bzip2(sample)
    if compressed:
        sample = decompressed_start(path)
    if requested in (AUTO, DUMP) and is_dump_start(sample[:4096].decode("utf-8", "replace")):
        return DUMP
    if compressed:
        raise InputError(
            f"{path}: bzip2 data that is not a Wikipedia XML dump (it does not start with <mediawiki>); "
            "prepare_corpus reads .bz2 files only for dumps: decompress other text first (bunzip2)"
        )
    if requested == DUMP:
        raise InputError(
            f"{path}: --input_format=dump, but the file is not a Wikipedia XML dump (no <mediawiki> at its start); "
            "pass a pages-articles .xml.bz2 file, or --input_format=auto"
        )
    text = decode_text(sample if len(sample) < _SAMPLE_BYTES else _whole_characters(sample), path)
    first = next((line.strip() for line in text.split("\n") if line.strip()), None)
    if first is None:
        if len(sample) == _SAMPLE_BYTES:  # 64 KiB of blank lines: look no further, read it as text
            return TEXT if requested == AUTO else requested
        return None
    starts_as_wikiextractor = is_doc_tag(first)
    if requested == AUTO:
        return WIKIEXTRACTOR if starts_as_wikiextractor else TEXT
    if requested == WIKIEXTRACTOR and not starts_as_wikiextractor:
        raise InputError(
            f"{path}: --input_format=wikiextractor, but the file does not start with a <doc ...> tag (its first line "
            f"is {first[:60]!r}); pass --input_format=text (or auto) for plain text"
        )
    return requested


def _whole_characters(sample: bytes) -> bytes:
    """`sample` without the UTF-8 character that its end may cut (lead byte and continuation bytes)."""
    cut = len(sample)
    while cut > 0 and len(sample) - cut < 3 and sample[cut - 1] & 0xC0 == 0x80:
        cut -= 1
    if cut > 0 and sample[cut - 1] >= 0xC0:
        return sample[: cut - 1]
    return sample


def _wikiextractor_boundary(piece: bytes) -> bool:
    return piece.strip() == b"</doc>"


def _text_boundary(piece: bytes) -> bool:
    return not piece.strip()


BOUNDARIES: dict[str, Callable[[bytes], bool]] = {WIKIEXTRACTOR: _wikiextractor_boundary, TEXT: _text_boundary}


def next_cut(f, position: int, end: int, boundary: Callable[[bytes], bool]) -> int:
    """The first offset >= `position` that follows a boundary line (``end`` if there is none before it)."""
    if position >= end:
        return end
    f.seek(position - 1)
    at_line_start = f.read(1) == b"\n"
    pos = position
    while pos < end:
        piece = f.readline(_LINE_PIECE)
        if not piece:
            return end
        pos += len(piece)
        whole_line = at_line_start and piece.endswith(b"\n")
        at_line_start = piece.endswith(b"\n")
        if whole_line and boundary(piece):
            return min(pos, end)
    return end


def plan_corpus_units(files: list[str], formats: list[str | None], unit_bytes: int) -> list[CorpusUnit]:
    """The work units of the files (a file with no text gives none); see the module docstring."""
    units: list[CorpusUnit] = []
    for path, input_format in zip(files, formats):
        if input_format is None:
            continue
        size = input_files.getsize(path)
        start = 0
        with input_files.open_file(path, "rb") as f:
            while start < size:
                cut = next_cut(f, start + unit_bytes, size, BOUNDARIES[input_format])
                units.append(CorpusUnit(len(units), path, start, cut, input_format))
                start = cut
    return units
