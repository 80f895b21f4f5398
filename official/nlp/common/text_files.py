"""Text input is UTF-8: a line that is not is refused with its file, its line and the encoding it seems to be in.

Decoding with ``errors="ignore"`` (as the original BERT code does) turns Latin-1 "Café" into "caf" and random bytes
into a vocabulary of junk, without a word. Every reader of user text (pretraining corpora, vocabulary corpora,
`vocab.txt`, feature-extraction input) decodes with `decode_line`, or builds its message with `not_utf8` where it
can skip such lines instead. Whole files (GLUE and other classification files, CoNLL, SWAG, SQuAD, and the JSON
files of model directories, caches and runs) are read with `read_text`, whose message also names the line.
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


def is_encoded_surrogate(raw: bytes, start: int) -> bool:
    """Whether the bytes at `start` are a UTF-16 surrogate encoded as UTF-8 (ED A0..BF xx), which UTF-8 forbids:
    CESU-8 (Java's "modified UTF-8", Oracle's UTF8) or WTF-8 (a lone surrogate from a Windows or JavaScript
    string). The rest of such a file is UTF-8, so it is not the 8-bit encoding `guess_encoding` would name."""
    return raw[start : start + 1] == b"\xed" and raw[start + 1 : start + 2] in {bytes([b]) for b in range(0xA0, 0xC0)}


def surrogate_hint(path: str) -> str:
    """The command that rewrites a CESU-8 / WTF-8 file as UTF-8 (pairs joined; a lone surrogate becomes U+FFFD)."""
    return (
        "Re-encode the file as UTF-8, e.g. python3 -c \"import sys; sys.stdout.write(open(sys.argv[1], 'rb')"
        ".read().decode('utf-8', 'surrogatepass').encode('utf-16', 'surrogatepass').decode('utf-16', 'replace'))\" "
        f"{path} > {path}.utf8"
    )


def _surrogate_message(where: str, column: int) -> str:
    return (
        f"{where}: not valid UTF-8 (a UTF-16 surrogate encoded as UTF-8, bytes ED A0..BF, at byte {column} of the "
        "line); the file seems to be CESU-8 or WTF-8 (Java's modified UTF-8, or a lone surrogate)"
    )


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
    if is_encoded_surrogate(raw, error.start):
        return _surrogate_message(where, error.start)
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
        if is_encoded_surrogate(raw, e.start):
            raise InputError(f"{not_utf8(where, raw, e, path)}. {surrogate_hint(path)}") from None
        raise InputError(
            f"{not_utf8(where, raw, e, path)}. Re-encode the file as UTF-8 (for Latin-1: iconv -f "
            f"LATIN1 -t UTF-8 {path})"
        ) from None


def _reencode_hint(encoding: str, path: str) -> str:
    """The command that fixes a file of `encoding` (as `guess_encoding` words it)."""
    source = {"UTF-16": "UTF-16", "Latin-1 (ISO-8859-1) or Windows-1252": "CP1252"}.get(encoding)
    if encoding.startswith("binary"):
        return "Pass a text file (UTF-8)"
    if source is None:
        return f"Re-encode the file as UTF-8 (iconv -f <its encoding> -t UTF-8 {path} > {path}.utf8)"
    return f"Re-encode the file as UTF-8, e.g. iconv -f {source} -t UTF-8 {path} > {path}.utf8"


def decode_text(raw: bytes, path: str, first_line: int = 1) -> str:
    """A whole file's bytes as UTF-8 text (a UTF-8 byte-order mark dropped), or an `InputError` naming the file,
    the first line that is not UTF-8, the encoding the file seems to be in and how to re-encode it. `raw` may be
    a part of the file that starts at line `first_line` (for the message).

    UTF-16 text without a byte-order mark can be valid UTF-8 (ASCII with a NUL after each character); a NUL is
    never in text a user means, so it is refused the same way.
    """
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    nul = raw.find(b"\x00")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        start, reason = e.start, f"not valid UTF-8 ({e.reason}"
    else:
        if nul < 0:
            return text
        start = len(raw)
    if 0 <= nul < start:
        start, reason = nul, "not UTF-8 text (a NUL byte"
    line = first_line + raw.count(b"\n", 0, start)
    column = start - (raw.rfind(b"\n", 0, start) + 1)
    if reason.startswith("not valid") and is_encoded_surrogate(raw, start):
        raise InputError(f"{_surrogate_message(f'{path}:{line}', column)}. {surrogate_hint(path)}")
    encoding = guess_encoding(raw[: 1 << 16])
    raise InputError(
        f"{path}:{line}: {reason} at byte {column} of the line); the file seems to be {encoding}. "
        f"{_reencode_hint(encoding, path)}"
    )


def read_text(path: str) -> str:
    """The whole of a text file (any filesystem) decoded with `decode_text`: the one way the library reads a file
    as text, a user's data or a JSON file it wrote itself.

    A missing or unreadable file is the file layer's `InputError` naming the path (`MissingInputError` when it does
    not exist). Wrap the result in `io.StringIO(text, newline=...)` to read it line by line as a file object would.
    """
    return decode_text(input_files.read_bytes(path), path)


def line_number(path: str, offset: int) -> int:
    """1-based number of the line that starts at byte ``offset``."""
    count = 0
    with input_files.open_file(path, "rb") as f:
        remaining = offset
        while remaining > 0:
            chunk = f.read(min(remaining, 1 << 20))
            if not chunk:
                break
            count += chunk.count(b"\n")
            remaining -= len(chunk)
    return count + 1
