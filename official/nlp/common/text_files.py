"""Text input is UTF-8: a line that is not is refused with its file, its line and the encoding it seems to be in.

Decoding with ``errors="ignore"`` (as the original BERT code does) turns Latin-1 "Café" into "caf" and random bytes
into a vocabulary of junk, without a word. Every reader of user text (pretraining corpora, vocabulary corpora,
`vocab.txt`, feature-extraction input) decodes with `decode_line`, or builds its message with `not_utf8` where it
can skip such lines instead.
"""

from __future__ import annotations

from official.nlp.common import input_files
from official.nlp.common.errors import InputError

_CONTROL = frozenset(range(0x00, 0x09)) | frozenset(range(0x0E, 0x20)) | {0x7F}


def guess_encoding(raw: bytes) -> str:
    """What bytes that are not UTF-8 most likely are, in words, for the message."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or raw.count(0) * 3 > len(raw):
        return "UTF-16"
    if 0 in raw or sum(b in _CONTROL for b in raw) * 20 > len(raw):
        return "binary data, not text"
    try:
        raw.decode("cp1252")
        return "Latin-1 (ISO-8859-1) or Windows-1252"
    except UnicodeDecodeError:
        return "Latin-1 (ISO-8859-1) or another 8-bit encoding"


def _sample(path: str | None, raw: bytes) -> bytes:
    """The start of the file (one line is too little to tell binary data from text), else the line."""
    if path:
        try:
            with input_files.open_file(path, "rb") as f:
                return f.read(1 << 16)
        except (OSError, InputError):
            pass
    return raw


def not_utf8(where: str, raw: bytes, error: UnicodeDecodeError, path: str | None = None) -> str:
    """``<where>: not valid UTF-8 (...); the file seems to be <encoding>`` (judged from the start of `path`)."""
    return (
        f"{where}: not valid UTF-8 ({error.reason} at byte {error.start} of the line); the file seems to be "
        f"{guess_encoding(_sample(path, raw))}"
    )


def decode_line(raw: bytes, path: str, line_number: int) -> str:
    """`raw` decoded as UTF-8, or an `InputError` naming the file, the line (1-based) and the likely encoding."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        where = f"{path}:{line_number}"
        raise InputError(
            f"{not_utf8(where, raw, e, path)}. Re-encode the file as UTF-8 (for Latin-1: iconv -f "
            f"LATIN1 -t UTF-8 {path})"
        ) from None
