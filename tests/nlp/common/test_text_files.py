"""`text_files.read_text`: a user's data file that is not UTF-8 is refused with its file, the first line that is
not, the encoding it seems to be in and the command that re-encodes it. The expected line comes from decoding
each line on its own with Python's codecs, the reference for what is and is not UTF-8."""

from __future__ import annotations

import re

import pytest

from official.nlp.common import text_files
from official.nlp.common.errors import InputError, MissingInputError

LINES = ["id\ttext\n", "1\tplain\n", "2\tCafé crème\n", "3\tnaïve\n"]


def first_bad_line(raw: bytes) -> int:
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return number
    raise AssertionError("every line is UTF-8")


def test_utf8_is_read_and_its_byte_order_mark_dropped(tmp_path):
    path = tmp_path / "a.tsv"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(LINES).encode("utf-8"))
    assert text_files.read_text(str(path)) == "".join(LINES)


@pytest.mark.parametrize(
    "codec, named, fix",
    [
        ("latin-1", "Latin-1 (ISO-8859-1) or Windows-1252", "iconv -f CP1252 -t UTF-8"),
        ("cp1252", "Latin-1 (ISO-8859-1) or Windows-1252", "iconv -f CP1252 -t UTF-8"),
        ("utf-16", "UTF-16", "iconv -f UTF-16 -t UTF-8"),  # with a byte-order mark
        ("utf-16-le", "UTF-16", "iconv -f UTF-16 -t UTF-8"),  # without one: valid UTF-8 full of NULs
    ],
)
def test_another_encoding_is_named_with_its_line_and_the_fix(tmp_path, codec, named, fix):
    raw = "".join(LINES).encode(codec)
    path = tmp_path / "a.tsv"
    path.write_bytes(raw)
    with pytest.raises(InputError) as e:
        text_files.read_text(str(path))
    message = str(e.value)
    line = 1 if codec.startswith("utf-16") else first_bad_line(raw)
    assert line == (1 if codec.startswith("utf-16") else 3)
    assert message.startswith(f"{path}:{line}: not ")
    assert f"the file seems to be {named}" in message
    assert f"{fix} {path} > {path}.utf8" in message
    assert "\n" not in message


def test_binary_data_is_not_called_an_encoding(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InputError, match=r"a.bin:1: not UTF-8 text \(a NUL byte at byte 0 .* seems to be binary data"):
        text_files.read_text(str(path))


def test_a_missing_file_or_a_folder_is_the_file_layers_error_naming_the_path(tmp_path):
    missing = str(tmp_path / "nope.tsv")
    with pytest.raises(MissingInputError, match=f"^{re.escape(missing)} does not exist"):
        text_files.read_text(missing)
    with pytest.raises(InputError, match=f"^{re.escape(str(tmp_path))}: "):
        text_files.read_text(str(tmp_path))


def test_utf8_encoded_surrogates_are_named_cesu8_with_the_line_and_a_fix_that_works(tmp_path):
    """ "café 😀" as CESU-8 (the emoji's UTF-16 surrogate pair, each encoded as UTF-8) is UTF-8 but for ED A0..BF:
    not Latin-1. The suggested command (run here) turns it into the UTF-8 text."""
    import subprocess

    path = tmp_path / "corpus.txt"
    path.write_bytes(b"line one\ncaf\xc3\xa9 \xed\xa0\xbd\xed\xb8\x80 ok\n")
    with pytest.raises(InputError) as e:
        text_files.read_text(str(path))
    message = str(e.value)
    assert message.startswith(f"{path}:2: not valid UTF-8 (a UTF-16 surrogate encoded as UTF-8, bytes ED A0..BF, ")
    assert "at byte 6 of the line); the file seems to be CESU-8 or WTF-8" in message
    assert "Latin-1" not in message
    with pytest.raises(InputError) as line_error:
        text_files.decode_line(b"caf\xc3\xa9 \xed\xa0\xbd\xed\xb8\x80 ok\n", str(path), 2)
    assert "CESU-8 or WTF-8" in str(line_error.value) and "Latin-1" not in str(line_error.value)
    command = message.split("e.g. ", 1)[1]
    subprocess.run(command, shell=True, check=True)
    assert (tmp_path / "corpus.txt.utf8").read_text(encoding="utf-8") == "line one\ncafé \U0001f600 ok\n"
    path.write_bytes(b"a lone \xed\xb0\x80 surrogate\n")  # WTF-8
    with pytest.raises(InputError, match=r":1: not valid UTF-8 \(a UTF-16 surrogate .* CESU-8 or WTF-8"):
        text_files.read_text(str(path))
