"""Reading pretraining text: input files, work units (byte ranges cut at blank lines), documents of token ids.

Input format (the original one): one sentence per line, a blank line between documents. A line that is empty
after ``strip()`` ends a document; a line that tokenizes to nothing is ignored; a file's end also ends a document.

The corpus is cut into *work units* of about ``unit_bytes`` each, at empty lines, so a unit always starts at a
document start and units can be read independently by different processes (seek, then read lines up to the end
offset). A unit holds at least two documents (it grows past ``unit_bytes`` until it does, and a last unit of one
document joins the unit before it), so that a "random next" segment can always come from another document, unless
the whole corpus is one document. Cut points depend only on the files and ``unit_bytes``, never on the number of
workers or of output shards.

Bad input is reported with file and line: a missing file or a pattern matching nothing is an error; an empty file is
a counted skip; a line that is not UTF-8 or is longer than ``max_line_bytes`` is an error, or a counted skip with
``skip_bad_lines``. Line numbers are 1-based and computed only when needed.
"""

from __future__ import annotations

import array
import dataclasses
import logging
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from official.nlp.common import input_files
from official.nlp.common.errors import InputError
from official.nlp.common.text_files import line_number, not_utf8

_SCAN_BYTES = 1 << 16
# The counts `read_documents` keeps (the "input" part of the statistics).
INPUT_COUNTERS = (
    "lines",
    "bytes",
    "documents",
    "sentences",
    "tokens",
    "single_sentence_documents",
    "empty_token_lines",
    "skipped_invalid_utf8",
    "skipped_long_lines",
    "empty_files",
)


@dataclasses.dataclass(frozen=True)
class WorkUnit:
    """Byte ranges ``(path, start, end)`` of one or more files; ``start`` is always a document start."""

    index: int
    pieces: tuple[tuple[str, int, int], ...]

    @property
    def num_bytes(self) -> int:
        return sum(end - start for _, start, end in self.pieces)


@dataclasses.dataclass
class Documents:
    """Token ids of a set of documents, flat: sentence ``s`` is ``tokens[sentence_offsets[s]:sentence_offsets[s+1]]``
    and document ``d`` holds sentences ``document_offsets[d]`` to ``document_offsets[d+1]``."""

    tokens: np.ndarray
    sentence_offsets: np.ndarray
    document_offsets: np.ndarray
    first_lines: list = dataclasses.field(default_factory=list)  # (path, byte offset) of each document's first line.

    @property
    def num_documents(self) -> int:
        return len(self.document_offsets) - 1

    def single_sentence_documents(self) -> np.ndarray:
        """Indexes of the documents of one sentence (their chunk always takes a random next segment)."""
        return np.nonzero(np.diff(self.document_offsets) == 1)[0]


def _next_cut(f, position: int, end: int) -> int:
    """First offset >= position that starts a line following an empty line (or ``end`` if there is none)."""
    f.seek(max(position - 2, 0))
    base = f.tell()
    carry = b""
    while base < end:
        chunk = f.read(_SCAN_BYTES)
        if not chunk:
            return end
        data = carry + chunk
        offset = base - len(carry)
        found = [i for i in (data.find(b"\n\n"), data.find(b"\n\r\n")) if i >= 0]
        while found:
            i = min(found)
            cut = offset + i + (2 if data[i + 1 : i + 2] == b"\n" else 3)
            if cut >= position:
                return min(cut, end)
            found = [j for j in (data.find(b"\n\n", i + 1), data.find(b"\n\r\n", i + 1)) if j >= 0]
        carry = data[-2:]
        base += len(chunk)
    return end


def _count_documents(f, start: int, end: int, enough: int) -> int:
    """Documents (runs of non-blank lines) that start in ``[start, end)``, counted up to ``enough``."""
    f.seek(start)
    pos, count, in_document = start, 0, False
    while pos < end and count < enough:
        line = f.readline(_SCAN_BYTES)  # A longer line comes in several pieces; each is non-blank or whitespace.
        if not line:
            break
        pos += len(line)
        if line.strip():
            count += not in_document
            in_document = True
        elif line.endswith(b"\n"):
            in_document = False
    return count


def plan_units(files: Sequence[str], unit_bytes: int) -> list[WorkUnit]:
    """Cuts the files into work units of at least ``unit_bytes`` and two documents (a unit may span several small
    files); see the module docstring."""
    if unit_bytes < 1:
        raise InputError(f"unit_bytes must be positive, got {unit_bytes}")
    units: list[WorkUnit] = []
    pieces: list[tuple[str, int, int]] = []
    size = documents = 0  # Of the unit being gathered; documents counted up to 2.
    for path in files:
        file_size = input_files.getsize(path)
        start = 0
        with input_files.open_file(path, "rb") as f:
            while start < file_size:
                want = start + max(unit_bytes - size, 1)
                cut = file_size if want >= file_size else _next_cut(f, want, file_size)
                if documents < 2:
                    documents += _count_documents(f, start, cut, 2 - documents)
                if pieces and pieces[-1][0] == path and pieces[-1][2] == start:
                    pieces[-1] = (path, pieces[-1][1], cut)
                else:
                    pieces.append((path, start, cut))
                size += cut - start
                start = cut
                if size >= unit_bytes and documents >= 2:
                    units.append(WorkUnit(len(units), tuple(pieces)))
                    pieces, size, documents = [], 0, 0
        if file_size == 0:
            pieces.append((path, 0, 0))  # Kept so that reading reports the empty file.
    if pieces:
        if documents < 2 and units:  # One document alone would draw its random next segments from itself.
            units[-1] = WorkUnit(units[-1].index, units[-1].pieces + tuple(pieces))
        else:
            units.append(WorkUnit(len(units), tuple(pieces)))
    return units


@dataclasses.dataclass(frozen=True)
class ReadOptions:
    max_line_bytes: int = 1 << 20
    skip_bad_lines: bool = False


def read_documents(
    pieces: Iterable[tuple[str, int, int]],
    tokenize: Callable[[str], list],
    options: ReadOptions | None = None,
    counters: dict | None = None,
    files_break_documents: bool = True,
    line_cache=None,
) -> Documents:
    """Reads and tokenizes the documents of some byte ranges.

    Args:
      pieces: ``(path, start, end)`` ranges; each start must be a document start.
      tokenize: line (str) -> list of token ids.
      options: limits and the bad-line policy.
      counters: dict of counts to add to (the names in `INPUT_COUNTERS`).
      files_break_documents: False reproduces the original, where a document runs on into the next file when a
        file does not end with a blank line.
      line_cache: a `cached_tokenizer.LineCache` (ids of raw lines seen before), or None to tokenize every line.
    """
    c = counters if counters is not None else {}
    for key in INPUT_COUNTERS:
        c.setdefault(key, 0)
    tokens = array.array("i")
    sentence_offsets = [0]
    document_offsets = [0]
    first_lines = []
    current_doc_start = None  # (path, offset) of the first line of the open document, if it has a sentence.

    def close_document():
        nonlocal current_doc_start
        if len(sentence_offsets) - 1 > document_offsets[-1]:
            document_offsets.append(len(sentence_offsets) - 1)
            first_lines.append(current_doc_start)
        current_doc_start = None

    options = options or ReadOptions()
    limit = options.max_line_bytes
    for path, start, end in pieces:
        if start == 0 and end == 0 and input_files.getsize(path) == 0:
            logging.warning("input file %s is empty; skipped", path)
            c["empty_files"] += 1
            continue
        with input_files.open_file(path, "rb") as f:
            f.seek(start)
            pos = start
            while pos < end:
                raw = f.readline(limit + 1)
                if not raw:
                    break
                line_start = pos
                pos += len(raw)
                c["lines"] += 1
                if line_cache is not None and (cached := line_cache.get(raw)) is not None:
                    if current_doc_start is None:
                        current_doc_start = (path, line_start)
                    tokens.extend(cached)
                    sentence_offsets.append(len(tokens))
                    continue
                if len(raw) > limit and not raw.endswith(b"\n"):
                    while True:  # Skip the rest of the over-long line without holding it in memory.
                        more = f.readline(limit + 1)
                        pos += len(more)
                        if not more or more.endswith(b"\n"):
                            break
                    where = f"{path}:{line_number(path, line_start)}"
                    if not options.skip_bad_lines:
                        raise InputError(
                            f"{where}: line longer than max_line_bytes={limit} bytes "
                            f"({pos - line_start} bytes). Put one sentence per line, raise "
                            f"--max_line_bytes, or pass --skip_bad_lines to count and skip such lines."
                        )
                    logging.warning("%s: skipped a line of %d bytes (over max_line_bytes)", where, pos - line_start)
                    c["skipped_long_lines"] += 1
                    continue
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    where = f"{path}:{line_number(path, line_start)}"
                    if not options.skip_bad_lines:
                        raise InputError(
                            f"{not_utf8(where, raw, e, path)}. Re-encode the file as UTF-8, or pass "
                            f"--skip_bad_lines to count and skip such lines."
                        ) from None
                    logging.warning("%s: skipped a line that is not valid UTF-8", where)
                    c["skipped_invalid_utf8"] += 1
                    continue
                if not line:
                    close_document()
                    continue
                ids = tokenize(line)
                if not ids:
                    c["empty_token_lines"] += 1
                    continue
                if current_doc_start is None:
                    current_doc_start = (path, line_start)
                if line_cache is not None:
                    ids = line_cache.put(raw, ids)
                tokens.extend(ids)
                sentence_offsets.append(len(tokens))
            c["bytes"] += pos - start
        if files_break_documents:
            close_document()
    close_document()
    token_array = np.frombuffer(tokens, dtype=np.int32) if tokens else np.zeros(0, np.int32)
    docs = Documents(
        tokens=token_array,
        sentence_offsets=np.asarray(sentence_offsets),
        document_offsets=np.asarray(document_offsets),
        first_lines=first_lines,
    )
    c["documents"] += docs.num_documents
    c["sentences"] += len(sentence_offsets) - 1
    c["tokens"] += len(tokens)
    c["single_sentence_documents"] += len(docs.single_sentence_documents())
    return docs
