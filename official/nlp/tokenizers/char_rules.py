"""The character rules of the original BERT tokenizer, in one place (pure Python, no TensorFlow).

`tokenization` (the Python tokenizer), `vocabulary` (the case check of a vocabulary) and `graph_basic_tokenizer`
(the in-graph tables) all read these, so the three agree by construction:

- cleaning: NUL, U+FFFD and control/format characters (Cc, Cf except tab/LF/CR) are dropped; whitespace (Zs and
  tab/LF/CR) becomes a space (`is_control`, `is_whitespace`, `CLEAN_TABLE`);
- CJK ideographs in the original's eight code-point ranges are split off (`CJK_RANGES`, `is_chinese_char`);
- punctuation (Unicode P* and every non-alphanumeric printable ASCII character) is split off (`is_punctuation`,
  `split_on_punctuation`);
- uncased models: `str.lower()`, then NFD, then removal of nonspacing marks (Mn) (`uncased`, `strip_accents`).

Example:

>>> uncased("Ångström")
'angstrom'
>>> split_on_punctuation("can't$")
['can', "'", 't', '$']
>>> "a\\u200bb\\u3000中".translate(CLEAN_TABLE)
'ab  中 '
"""

from __future__ import annotations

import re
import unicodedata

# The CJK Unified Ideographs blocks the original lists (not Hangul, Hiragana or Katakana, which separate words with
# spaces), inclusive. Extensions added to Unicode later (G, H, ...) are deliberately not here: the original lacks
# them. Unassigned code points inside the ranges count too, as in the original.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def convert_to_unicode(text: str | bytes) -> str:
    """Returns `text` as `str`; bytes are decoded as UTF-8, dropping invalid bytes (as the original does)."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise ValueError(f"Unsupported string type: {type(text)}")


# ----------------------------------------------------------------------------------------------------------------
# Character classes: the original definitions, unchanged.


def is_whitespace(char: str) -> bool:
    """Space, tab, newline, CR or a space separator (Zs)."""
    # Tab, newline and CR are control characters in Unicode but the original treats them as whitespace.
    if char in " \t\n\r":
        return True
    return unicodedata.category(char) == "Zs"


def is_separator(char: str) -> bool:
    """Ends a word: `is_whitespace`, or one of the other characters `str.split` splits at (U+2028, U+001C, ...)."""
    return is_whitespace(char) or char.isspace()


def is_control(char: str) -> bool:
    """A control or format character (Cc, Cf) other than tab, newline and CR: the original drops these."""
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char: str) -> bool:
    """Unicode punctuation (P*) or any non-alphanumeric printable ASCII character."""
    cp = ord(char)
    # All non-alphanumeric printable ASCII counts, so `$`, `^`, `` ` `` (symbols in Unicode) split too.
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def is_chinese_char(cp: int) -> bool:
    """Whether code point `cp` is in one of `CJK_RANGES`."""
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


# ----------------------------------------------------------------------------------------------------------------
# Cleaning and CJK spacing.


class _CleanTable(dict):
    """`str.translate` table for cleaning and CJK spacing, filled lazily so that translate runs in C."""

    def __missing__(self, cp: int):
        char = chr(cp)
        if cp == 0 or cp == 0xFFFD or is_control(char):
            value = None
        elif is_whitespace(char):
            value = " "
        elif is_chinese_char(cp):
            value = f" {char} "
        else:
            value = cp
        self[cp] = value
        return value


# `text.translate(CLEAN_TABLE)`: dropped characters removed, whitespace -> " ", each CJK ideograph -> " X ".
CLEAN_TABLE = _CleanTable()


# ----------------------------------------------------------------------------------------------------------------
# Uncased normalization.


def drop_nonspacing_marks(text: str) -> str:
    """Removes the characters of category Mn."""
    return "".join(c for c in text if unicodedata.category(c) != "Mn")


def strip_accents(text: str) -> str:
    """NFD, then removal of nonspacing marks (Mn): the original's `_run_strip_accents`."""
    if text.isascii():  # nothing to decompose or drop
        return text
    return drop_nonspacing_marks(unicodedata.normalize("NFD", text))


def uncased(text: str) -> str:
    """What an uncased tokenizer makes of a whitespace token: `str.lower()`, NFD, nonspacing marks removed."""
    return strip_accents(text.lower())


def lower_aligned(token: str) -> tuple[list[str], str]:
    """Per-character pieces of `token.lower()`, plus the whole result.

    `str.lower` maps each character on its own except capital sigma, whose form depends on its neighbours. The
    length of each character's lower-case form does not depend on context, so the whole-token result can be cut
    back into per-character pieces.
    """
    lowered = token.lower()
    pieces = []
    pos = 0
    for char in token:
        n = len(char.lower())
        pieces.append(lowered[pos : pos + n])
        pos += n
    return pieces, lowered


# ----------------------------------------------------------------------------------------------------------------
# Punctuation splitting.


class _PunctCache(dict):
    def __missing__(self, char: str) -> bool:
        value = is_punctuation(char)
        self[char] = value
        return value


# `IS_PUNCT[char]`: `is_punctuation(char)`, cached.
IS_PUNCT = _PunctCache()
_ASCII_PUNCT = re.compile(r"[!-/:-@\[-`{-~]|[^!-/:-@\[-`{-~]+")


def split_on_punctuation(text: str) -> list[str]:
    """Splits `text` (one whitespace token) into runs of non-punctuation and single punctuation characters."""
    if text.isascii():  # one regex pass in C
        return _ASCII_PUNCT.findall(text)
    output: list[str] = []
    current: list[str] = []
    for char in text:
        if IS_PUNCT[char]:
            if current:
                output.append("".join(current))
                current = []
            output.append(char)
        else:
            current.append(char)
    if current:
        output.append("".join(current))
    return output
