"""In-graph BERT tokenization that reproduces the original Python rules exactly: the exact path.

tensorflow-text's `FastBertTokenizer` normalizes with ICU: Unicode compatibility mappings (`½` -> `1⁄2`),
case folding instead of `str.lower` (`ß` -> `ss`, `ς` -> `σ`), its own control, whitespace, punctuation and CJK
sets (from an older Unicode version than Python's) and a word limit in bytes rather than characters. So it
differs from the original BERT tokenizer on real text.

`ExactBasicTokenizer` does not: every character property the original looks at (`char_rules`) is read from
Python's own `unicodedata` and `str.lower` when the tables are built (`unicode_tables`), and applied with plain
TensorFlow ops (decode to code points, gather, cumsum, mask); then tf-text's WordPiece runs on the resulting words:

- per code point: dropped (NUL, U+FFFD, Cc/Cf except tab/LF/CR), separator (Zs, tab/LF/CR, and the other
  characters `str.split` splits at), split off (CJK ideograph in the original's ranges, or punctuation);
- uncased: the lower-case + NFD + Mn-removal result of every code point (0 to 3 characters: Hangul syllables
  decompose into jamo); Greek capital sigma resolved to final `ς` with Python's context rule (cased /
  case-ignorable neighbours); and, when a batch holds a combining character that survives accent stripping
  (25 Mc characters with a non-zero combining class, e.g. musical stems), full NFD with canonical reordering
  before the marks are dropped;
- the 200-character word limit counted in characters after normalization.

`stock_routing` finds the strings on which stock `FastBertTokenizer` is exact anyway (from these same tables) and
sends only the others here.
"""

from __future__ import annotations

import dataclasses
import functools
import unicodedata
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from official.nlp.tokenizers import char_rules

_N = 0x110000
DROP, SPACE, ISOLATE, IGNORABLE, CASED, HAS_REORDER, NONSPACING = 1, 2, 4, 8, 16, 32, 64
_SIGMA, _FINAL_SIGMA = 0x3A3, 0x3C2
_MAX_EXPANSION = 3


def max_bytes_per_word(max_chars: int, unk_token: str) -> int:
    """tf-text's per-word byte limit that never cuts a word of `max_chars` characters (4 UTF-8 bytes at most
    each) nor the unknown token; the character limit itself is enforced before WordPiece runs."""
    return 4 * max_chars + len(unk_token.encode("utf-8"))


@dataclasses.dataclass(frozen=True)
class UnicodeTables:
    """Per-code-point tables (numpy) derived from Python's Unicode database."""

    flags: np.ndarray  # uint8 [0x110000], the bits above
    norm_len: np.ndarray | None = None  # uint8: characters after lower-case + NFD + Mn removal (uncased)
    norm_first: np.ndarray | None = None  # int32: that result when it is one character (U+0020 for spaces)
    multi_keys: np.ndarray | None = None  # int32 [K] sorted: code points whose result has 2+ characters
    multi_values: np.ndarray | None = None  # int32 [K, 3]
    nfd_keys: np.ndarray | None = None  # int32 [M] sorted: code points changed by lower + NFD (marks kept)
    nfd_len: np.ndarray | None = None  # int32 [M]
    nfd_values: np.ndarray | None = None  # int32 [M, L]
    ccc: np.ndarray | None = None  # uint8 [0x110000]: canonical combining class


@functools.lru_cache(maxsize=2)
def unicode_tables(do_lower_case: bool) -> UnicodeTables:
    """Builds the tables from Python's `unicodedata`/`str.lower`, once per process."""
    flags = np.zeros(_N, np.uint8)
    for lo, hi in char_rules.CJK_RANGES:  # includes code points not assigned yet, as the original does
        flags[lo : hi + 1] |= ISOLATE
    if do_lower_case:
        norm_len = np.ones(_N, np.uint8)
        norm_first = np.arange(_N, dtype=np.int32)
        ccc = np.zeros(_N, np.uint8)
    multi, nfd, reorder_chars = {}, {}, set()
    category = unicodedata.category
    for cp in range(_N):
        char = chr(cp)
        cat = category(char)
        if cat in ("Cn", "Co", "Cs"):  # unassigned / private use: no case, no decomposition, not a separator
            continue
        f = 0
        if cp == 0xFFFD or char_rules.is_control(char):
            f |= DROP | IGNORABLE  # removed before lower-casing, so invisible to the final-sigma context
        elif char_rules.is_separator(char):
            f |= SPACE
        else:
            if char_rules.is_punctuation(char):
                f |= ISOLATE
            # Python's final-sigma context (CPython's handle_capital_sigma), probed rather than re-derived: after
            # a cased letter Σ is final unless the character in between is case-ignorable (then it is skipped).
            if (char + "Σ").lower()[-1] == "ς":
                f |= CASED
            elif ("ΑΣ" + char + "Α").lower()[1] != "ς":
                f |= IGNORABLE
        if cat == "Mn":
            f |= NONSPACING
        flags[cp] |= f
        if not do_lower_case:
            continue
        ccc[cp] = unicodedata.combining(char)
        if ccc[cp] and cat != "Mn":
            reorder_chars.add(cp)
        if f & DROP:
            norm_len[cp] = 0
            continue
        if f & SPACE:
            norm_first[cp] = 0x20
            continue
        lowered = char.lower()
        full = unicodedata.normalize("NFD", lowered)
        if full != char:
            nfd[cp] = [ord(c) for c in full]
        result = char_rules.drop_nonspacing_marks(full)
        norm_len[cp] = len(result)
        if len(result) == 1:
            norm_first[cp] = ord(result)
        elif len(result) > 1:
            assert len(result) <= _MAX_EXPANSION, (hex(cp), result)
            multi[cp] = [ord(c) for c in result]
    flags[0] = DROP | IGNORABLE
    if not do_lower_case:
        return UnicodeTables(flags)
    ccc[0] = 0
    norm_len[0] = 0
    for cp, full in nfd.items():
        if any(c in reorder_chars for c in full):
            flags[cp] |= HAS_REORDER
    for cp in reorder_chars:
        flags[cp] |= HAS_REORDER
    multi_keys = np.array(sorted(multi), np.int32)
    multi_values = np.zeros((len(multi_keys), _MAX_EXPANSION), np.int32)
    for i, cp in enumerate(multi_keys):
        multi_values[i, : len(multi[cp])] = multi[cp]
    nfd_keys = np.array(sorted(nfd), np.int32)
    nfd_len = np.array([len(nfd[cp]) for cp in nfd_keys], np.int32)
    nfd_values = np.zeros((len(nfd_keys), max(nfd_len)), np.int32)
    for i, cp in enumerate(nfd_keys):
        nfd_values[i, : len(nfd[cp])] = nfd[cp]
    return UnicodeTables(flags, norm_len, norm_first, multi_keys, multi_values, nfd_keys, nfd_len, nfd_values, ccc)


# ----------------------------------------------------------------------------------------------------------------
# The exact path.


def _expand(lengths, values_fn):
    """Ragged expansion of a flat sequence: element i becomes `lengths[i]` elements.

    Returns (src, values): the source index of every output element and its value `values_fn(src, k)`, where k is
    the position inside the expansion.
    """
    lengths = tf.cast(lengths, tf.int32)
    src = tf.repeat(tf.range(tf.size(lengths)), lengths)
    starts = tf.cumsum(lengths, exclusive=True)
    k = tf.range(tf.size(src)) - tf.gather(starts, src)
    return src, values_fn(src, k)


def _utf8_length(cps):
    return 1 + tf.cast(cps >= 0x80, tf.int32) + tf.cast(cps >= 0x800, tf.int32) + tf.cast(cps >= 0x10000, tf.int32)


class ExactBasicTokenizer:
    """TensorFlow ops for the original `BasicTokenizer` + `WordpieceTokenizer`, driven by `unicode_tables`."""

    def __init__(self, vocab: Sequence[str], do_lower_case: bool, max_input_chars_per_word: int, unk_token: str):
        self.do_lower_case = do_lower_case
        self.max_chars = max_input_chars_per_word
        self.unk_token = unk_token
        t = unicode_tables(do_lower_case)
        self._flags = tf.constant(t.flags)
        if do_lower_case:
            self._norm_len = tf.constant(t.norm_len)
            self._norm_first = tf.constant(t.norm_first)
            self._multi_keys = tf.constant(t.multi_keys)
            self._multi_values = tf.constant(t.multi_values)
            self._nfd_keys = tf.constant(t.nfd_keys)
            self._nfd_len = tf.constant(t.nfd_len)
            self._nfd_values = tf.constant(t.nfd_values)
            self._ccc = tf.constant(t.ccc)
        # Words arrive pre-split, already cut to `max_chars` characters (longer ones are `[UNK]` by then).
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            list(vocab),
            max_bytes_per_word=max_bytes_per_word(max_input_chars_per_word, unk_token),
            token_out_type=tf.int32,
            unknown_token=unk_token,
            no_pretokenization=True,
        )

    def _has(self, cps, bit):
        return tf.not_equal(tf.bitwise.bitwise_and(tf.gather(self._flags, cps), np.uint8(bit)), 0)

    # -- uncased normalization ------------------------------------------------------------------------------

    def _final_sigma(self, cps, rows):
        """Replaces every capital sigma that Python's `str.lower` would make final by final sigma `ς` itself."""

        def resolve():
            ignorable = self._has(cps, IGNORABLE)
            cased = self._has(cps, CASED)
            anchors = tf.cast(tf.where(~ignorable)[:, 0], tf.int32)  # positions of non-ignorable characters
            n_anchors = tf.size(anchors)
            count_before = tf.cumsum(tf.cast(~ignorable, tf.int32), exclusive=True)
            sigma_pos = tf.cast(tf.where(tf.equal(cps, _SIGMA))[:, 0], tf.int32)
            sigma_rows = tf.gather(rows, sigma_pos)
            # Nearest non-ignorable character before the sigma (Σ itself is not ignorable), in the same string.
            # Separators and CJK characters are neither cased nor ignorable, so whitespace tokens need no special
            # handling: the scan stops at them as it stops at the ends of the token.
            before = tf.gather(count_before, sigma_pos) - 1
            prev = tf.gather(anchors, tf.maximum(before, 0))
            prev_cased = (before >= 0) & tf.equal(tf.gather(rows, prev), sigma_rows) & tf.gather(cased, prev)
            after = tf.gather(count_before, sigma_pos) + 1
            nxt = tf.gather(anchors, tf.minimum(after, n_anchors - 1))
            next_cased = (after < n_anchors) & tf.equal(tf.gather(rows, nxt), sigma_rows) & tf.gather(cased, nxt)
            updates = tf.where(prev_cased & ~next_cased, _FINAL_SIGMA, _SIGMA)
            return tf.tensor_scatter_nd_update(cps, sigma_pos[:, None], updates)

        return tf.cond(tf.reduce_any(tf.equal(cps, _SIGMA)), resolve, lambda: cps)

    def _normalize_per_char(self, cps):
        """Lower + NFD + Mn removal character by character (valid when no surviving mark needs reordering)."""
        lengths = tf.gather(self._norm_len, cps)

        def zero_or_one():
            src = tf.cast(tf.where(tf.equal(lengths, 1))[:, 0], tf.int32)
            return tf.gather(self._norm_first, tf.gather(cps, src)), src

        def general():
            def values(src, k):
                src_cps = tf.gather(cps, src)
                out = tf.gather(self._norm_first, src_cps)
                multi = tf.cast(tf.where(tf.gather(lengths, src) > 1)[:, 0], tf.int32)
                rows = tf.searchsorted(self._multi_keys, tf.gather(src_cps, multi), side="left")
                multi_values = tf.gather_nd(self._multi_values, tf.stack([rows, tf.gather(k, multi)], axis=1))
                return tf.tensor_scatter_nd_update(out, multi[:, None], multi_values)

            src, out = _expand(lengths, values)
            return out, src

        max_len = tf.reduce_max(tf.concat([lengths, tf.zeros([1], lengths.dtype)], 0))
        return tf.cond(max_len <= 1, zero_or_one, general)

    def _normalize_reordering(self, cps, rows):
        """Lower + full NFD with canonical reordering, then Mn removal."""
        src0 = tf.cast(tf.where(~self._has(cps, DROP))[:, 0], tf.int32)
        cps0 = tf.gather(cps, src0)
        idx = tf.minimum(tf.searchsorted(self._nfd_keys, cps0, side="left"), tf.size(self._nfd_keys) - 1)
        found = tf.equal(tf.gather(self._nfd_keys, idx), cps0)
        lengths = tf.where(found, tf.gather(self._nfd_len, idx), 1)

        def values(src, k):
            expanded = tf.gather_nd(self._nfd_values, tf.stack([tf.gather(idx, src), k], axis=1))
            return tf.where(tf.gather(found, src), expanded, tf.gather(cps0, src))

        src1, full = _expand(lengths, values)
        src = tf.gather(src0, src1)
        # Canonical ordering: a stable sort by combining class inside each run of non-starters. Separators are
        # starters, so runs never cross whitespace tokens; a new string always starts a new run.
        out_rows = tf.gather(rows, src)
        row_start = tf.concat([[True], tf.not_equal(out_rows[1:], out_rows[:-1])], 0)
        ccc = tf.cast(tf.gather(self._ccc, full), tf.int64)
        run = tf.cumsum(tf.cast(tf.equal(ccc, 0) | row_start, tf.int64))
        order = tf.argsort(run * 256 + ccc, stable=True)
        full, src = tf.gather(full, order), tf.gather(src, order)
        kept = tf.cast(tf.where(~self._has(full, NONSPACING))[:, 0], tf.int32)
        return tf.gather(full, kept), tf.gather(src, kept)

    def normalize(self, cps, rows):
        """Flat code points -> (normalized code points, index of the source character of each)."""
        if not self.do_lower_case:
            src = tf.cast(tf.where(~self._has(cps, DROP))[:, 0], tf.int32)
            return tf.gather(cps, src), src
        cps = self._final_sigma(cps, rows)
        return tf.cond(
            tf.reduce_any(self._has(cps, HAS_REORDER)),
            lambda: self._normalize_reordering(cps, rows),
            lambda: self._normalize_per_char(cps),
        )

    # -- words and word pieces ------------------------------------------------------------------------------

    def words(self, codepoints: tf.RaggedTensor):
        """Splits decoded text `[batch, (chars)]` into the original's basic tokens.

        Returns:
          words: RaggedTensor `[num_words, (chars)]` of normalized code points, in text order.
          word_rows: int32 `[num_words]`, the batch row of each word.
          char_src: int32 `[total word chars]`, the index into `codepoints.flat_values` of the original character
            each word character came from.
        """
        cps = codepoints.flat_values
        rows = tf.cast(codepoints.value_rowids(), tf.int32)
        out, src = self.normalize(cps, rows)
        out_rows = tf.gather(rows, src)
        flags = tf.gather(self._flags, out)
        space = tf.not_equal(tf.bitwise.bitwise_and(flags, np.uint8(SPACE)), 0)
        isolate = tf.not_equal(tf.bitwise.bitwise_and(flags, np.uint8(ISOLATE)), 0)
        after_break = tf.concat([[True], (space | isolate)[:-1]], 0)
        row_start = tf.concat([[True], tf.not_equal(out_rows[1:], out_rows[:-1])], 0)
        starts = isolate | after_break | row_start
        kept = tf.cast(tf.where(~space)[:, 0], tf.int32)
        word_starts = tf.cast(tf.where(tf.gather(starts, kept))[:, 0], tf.int32)
        words = tf.RaggedTensor.from_row_starts(tf.gather(out, kept), word_starts, validate=False)
        word_rows = tf.gather(tf.gather(out_rows, kept), word_starts)
        return words, word_rows, tf.gather(src, kept)

    def _word_strings(self, words):
        too_long = words.row_lengths() > self.max_chars
        # The unknown token is in the vocabulary, so WordPiece maps the word "[UNK]" to exactly [UNK].
        return tf.where(too_long, self.unk_token, tf.strings.unicode_encode(words, "UTF-8")), too_long

    def tokenize(self, texts):
        """1-D string tensor -> RaggedTensor `[batch, (tokens)]` of int32 ids."""
        codepoints = tf.strings.unicode_decode(texts, "UTF-8", errors="ignore")
        words, word_rows, _ = self.words(codepoints)
        strings, _ = self._word_strings(words)
        pieces = self._wordpiece.tokenize(strings)
        nrows = tf.shape(texts, out_type=tf.int64)[0]
        return tf.RaggedTensor.from_value_rowids(pieces, tf.cast(word_rows, tf.int64), nrows).merge_dims(1, 2)

    def tokenize_with_offsets(self, texts):
        """Like `tokenize`, plus int64 byte offsets `[start, end)` of each token in its input string."""
        codepoints, byte_starts = tf.strings.unicode_decode_with_offsets(texts, "UTF-8", errors="ignore")
        words, word_rows, char_src = self.words(codepoints)
        strings, too_long = self._word_strings(words)
        pieces, piece_starts, piece_ends = self._wordpiece.tokenize_with_offsets(strings)
        # Byte offsets inside each word string -> characters of the word -> original characters -> their bytes.
        char_bytes = tf.cumsum(_utf8_length(words.flat_values), exclusive=True)
        word_first = tf.cast(words.row_starts(), tf.int32)
        word_last = tf.cast(words.row_limits(), tf.int32) - 1
        piece_word = tf.cast(pieces.value_rowids(), tf.int32)
        base = tf.gather(tf.gather(char_bytes, word_first), piece_word)
        first = tf.searchsorted(
            char_bytes[None], (base + tf.cast(piece_starts.flat_values, tf.int32))[None], side="left"
        )[0]
        last = (
            tf.searchsorted(char_bytes[None], (base + tf.cast(piece_ends.flat_values, tf.int32))[None], side="left")[0]
            - 1
        )
        long_piece = tf.gather(too_long, piece_word)
        first = tf.where(long_piece, tf.gather(word_first, piece_word), first)
        last = tf.where(long_piece, tf.gather(word_last, piece_word), last)
        # A piece spans every original character its characters came from: after canonical reordering these need
        # not be in order, so take the minimum start and maximum end over the piece's characters.
        piece_chars = tf.gather(char_src, tf.ragged.range(first, last + 1))
        flat_starts = byte_starts.flat_values
        char_ends = flat_starts + tf.cast(_utf8_length(codepoints.flat_values), tf.int64)
        starts = tf.reduce_min(tf.gather(flat_starts, piece_chars), axis=1)
        ends = tf.reduce_max(tf.gather(char_ends, piece_chars), axis=1)
        nrows = tf.shape(texts, out_type=tf.int64)[0]
        piece_rows = tf.cast(tf.gather(word_rows, piece_word), tf.int64)

        def by_row(values):
            return tf.RaggedTensor.from_value_rowids(values, piece_rows, nrows, validate=False)

        return by_row(pieces.flat_values), by_row(starts), by_row(ends)
