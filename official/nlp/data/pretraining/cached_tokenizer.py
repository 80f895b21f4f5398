"""An exact, fast front end to the original WordPiece tokenizer for bulk text: a cache per whitespace piece.

The original `FullTokenizer` walks every word's characters in Python loops. Its output for a line is the
concatenation of its outputs for the line's whitespace-separated pieces (cleaning, CJK spacing, lower-casing,
accent stripping, punctuation splitting and WordPiece all act inside a piece), so a line can be tokenized piece by
piece from a dictionary, and natural text repeats most pieces (Zipf). The one exception: seven characters that
Python's ``str.split`` treats as whitespace but BERT deletes as control characters (so they *join* their
neighbours); lines holding one of them go to the wrapped tokenizer whole. Output is equal to the wrapped tokenizer
by construction; the tests check it on the tokenizer golden strings and on real text.

Example:

  >>> from official.nlp.tokenizers import tokenization
  >>> tok = CachedTokenizer(tokenization.FullTokenizer("vocab.txt", do_lower_case=True))  # doctest: +SKIP
  >>> tok.ids("Hello, world!")  # doctest: +SKIP
  [7592, 1010, 2088, 999]
"""

from __future__ import annotations

import array
import re
from itertools import chain

# Whitespace to str.split(), control characters to BERT's cleaner (categories Cc): these join their neighbours in
# the original instead of separating them.
_JOINING_CONTROLS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x1f\x85]")


class CachedTokenizer:
    """Token ids of a line, equal to ``convert_tokens_to_ids(tokenize(line))`` of the wrapped tokenizer.

    Args:
      tokenizer: an object with the original `FullTokenizer` API (``tokenize``, ``convert_tokens_to_ids``).
      max_entries: the cache is emptied when it reaches this many pieces (~150 bytes each), bounding memory on
        corpora with huge vocabularies of pieces.
    """

    def __init__(self, tokenizer, max_entries: int = 300_000):
        self.tokenizer = tokenizer
        self.max_entries = max_entries
        self._cache: dict[str, tuple[int, ...]] = {}
        self.lookups = 0
        self.misses = 0

    def _piece(self, piece: str) -> tuple[int, ...]:
        t = self.tokenizer
        ids = tuple(t.convert_tokens_to_ids(t.tokenize(piece)))
        if len(self._cache) >= self.max_entries:
            self._cache.clear()
        self._cache[piece] = ids
        return ids

    def ids(self, line: str) -> list[int]:
        """Token ids of one line of text."""
        if _JOINING_CONTROLS.search(line):
            t = self.tokenizer
            return list(t.convert_tokens_to_ids(t.tokenize(line)))
        pieces = line.split()
        self.lookups += len(pieces)
        try:  # All pieces known (the common case): one C-level pass.
            return list(chain.from_iterable(map(self._cache.__getitem__, pieces)))
        except KeyError:
            pass
        out: list[int] = []
        cache = self._cache
        for piece in pieces:
            ids = cache.get(piece)
            if ids is None:
                ids = self._piece(piece)
                self.misses += 1
            out.extend(ids)
        return out


class LineCache:
    """Token ids of whole input lines, keyed by the line's raw bytes as read (newline included), for text whose lines
    repeat (boilerplate, or a corpus of repeated documents): a hit skips decoding, cleaning and the piece lookups.

    Only lines that were valid UTF-8, within the length limit and gave at least one token are stored, and the ids
    of a line depend on its bytes alone, so a hit gives exactly what the tokenizer would. Emptied when it holds
    ``max_bytes`` of lines and ids, which bounds a worker's memory on text that never repeats (where it only costs
    a dictionary insert per line).
    """

    def __init__(self, max_bytes: int = 64 << 20):
        self.max_bytes = max_bytes
        self._lines: dict[bytes, array.array] = {}
        self._bytes = 0
        self.get = self._lines.get

    def __len__(self) -> int:
        return len(self._lines)

    def put(self, raw: bytes, ids) -> array.array:
        """Stores the ids of ``raw``; returns them as an int32 array (what the token buffer extends by)."""
        ids = array.array("i", ids)
        size = len(raw) + 4 * len(ids) + 150  # plus the dictionary entry and the two objects' headers
        if self._bytes + size > self.max_bytes:
            self._lines.clear()
            self._bytes = 0
        self._lines[raw] = ids
        self._bytes += size
        return ids
