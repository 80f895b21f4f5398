"""The fast path of the in-graph tokenizer: strings on which stock tf-text `FastBertTokenizer` is exact go there.

Stock `FastBertTokenizer` differs from the original BERT tokenizer on some characters (see
`graph_basic_tokenizer`), but on most text it gives the same ids, several times faster than the exact path.
`stock_safe_codepoints` finds the code points on which it provably does what the original does, by running the stock
normalizer and pre-tokenizer on every BMP code point and comparing with `graph_basic_tokenizer.unicode_tables`.
A string made only of such characters is tokenized identically by the stock tokenizer (its normalizer maps code
point by code point, and its splitter decides word boundaries character by character), except for the word limit:
stock counts it in bytes, the original in characters. Stock is built with a limit of `max_chars` *bytes*, so a word
of more than `max_chars` characters (which has at least as many bytes) is `[UNK]` in both, and the one case where
they can differ, a word within the limit in characters but over it in bytes, makes stock emit `[UNK]`.
`StockRouter` therefore checks each string once against a precompiled regular expression (`routing_patterns`), runs
stock on the batch, and sends only the strings that failed the check, or got an `[UNK]` and have a long enough run
of non-space characters (rare in real text), through the exact path (above, "½ price" takes the exact path: stock
would make "½" into "1⁄2").

Example:

>>> exact = graph_basic_tokenizer.ExactBasicTokenizer(vocab, True, 200, "[UNK]")         # doctest: +SKIP
>>> router = StockRouter(vocab, do_lower_case=True, max_chars=200, unk_token="[UNK]")   # doctest: +SKIP
>>> router.tokenize(tf.constant(["plain text", "½ price"]), exact.tokenize)  # doctest: +SKIP
<tf.RaggedTensor [[5236, 3793], [1092, 3976]]>
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from official.nlp.tokenizers import char_rules
from official.nlp.tokenizers import graph_basic_tokenizer as exact_lib


@functools.lru_cache(maxsize=2)
def stock_safe_codepoints(do_lower_case: bool) -> np.ndarray:
    """Sorted BMP code points on which stock `FastBertTokenizer` agrees with the original, character by character.

    A code point qualifies when (a) the stock normalizer maps it to what the original's cleaning + (uncased)
    lower-casing/NFD/accent stripping gives, with at most one character; and (b) the stock splitter classifies
    that character (separator / split off / part of a word) as the original does. Capital sigma and characters
    that take part in canonical reordering are excluded since their result depends on their neighbours.
    """
    tables = exact_lib.unicode_tables(do_lower_case)
    candidates = np.array([cp for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF], np.int64)
    texts = tf.constant([chr(cp).encode("utf-8") for cp in candidates])
    normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=do_lower_case)
    stock = [s.decode("utf-8") for s in normalizer.normalize(texts).numpy()]
    # Classify every output character with the stock end-to-end splitter: "a d b" with vocab {a, b} gives
    # [a, b] if d separates, [a, ?, b] if it is split off, and one [UNK] if it joins the word.
    outputs = sorted({c for s in stock for c in s})
    probe = tf_text.FastWordpieceTokenizer(["[UNK]", "a", "b"], token_out_type=tf.int32)
    counts = probe.tokenize(tf.constant([("a" + c + "b").encode("utf-8") for c in outputs])).row_lengths().numpy()
    space, isolate = exact_lib.SPACE, exact_lib.ISOLATE
    stock_class = {c: {2: space, 3: isolate, 1: 0}.get(int(n), -1) for c, n in zip(outputs, counts)}
    safe = []
    for cp, out in zip(candidates.tolist(), stock):
        f = int(tables.flags[cp])
        if do_lower_case and (cp == ord("Σ") or f & exact_lib.HAS_REORDER):
            continue
        if f & exact_lib.DROP:
            ok = out == ""
        elif f & space:
            ok = len(out) == 1 and stock_class[out] == space
        else:
            expected = char_rules.uncased(chr(cp)) if do_lower_case else chr(cp)
            ok = (
                out == expected
                and len(out) <= 1
                and all(stock_class[c] == int(tables.flags[ord(c)]) & isolate for c in out)
            )
        if ok:
            safe.append(cp)
    return np.array(safe, np.int64)


def char_class_regex(codepoints: Sequence[int]) -> str:
    """An RE2 character class matching exactly `codepoints` (sorted)."""
    ranges: list[tuple[int, int]] = []
    for cp in codepoints:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))

    def esc(cp):
        return f"\\x{{{cp:x}}}"

    return "[" + "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in ranges) + "]"


@dataclasses.dataclass(frozen=True)
class RoutingPatterns:
    """RE2 patterns (for `tf.strings.regex_full_match`) that pick the strings stock tokenizes exactly."""

    safe: str  # every character is stock-safe
    safe_offsets: str  # ... and none normalizes to nothing (stock end offsets stretch over those)

    def stock_is_safe(self, texts: tf.Tensor, with_offsets: bool = False) -> tf.Tensor:
        """bool `[batch]`: whether every character of each string is one stock handles like the original (a word
        over the limit can still differ: see the module docstring)."""
        return tf.strings.regex_full_match(texts, self.safe_offsets if with_offsets else self.safe)


@functools.lru_cache(maxsize=4)
def routing_patterns(do_lower_case: bool) -> RoutingPatterns:
    """The routing patterns for a case setting."""
    safe = stock_safe_codepoints(do_lower_case)
    tables = exact_lib.unicode_tables(do_lower_case)
    if do_lower_case:
        vanishing = tables.norm_len[safe] == 0  # dropped characters and (uncased) nonspacing marks
    else:
        vanishing = (tables.flags[safe] & exact_lib.DROP) != 0
    # Stock end offsets of a token stretch over characters that normalize to nothing right after it, so offsets
    # take the fast path only for strings without such characters.
    return RoutingPatterns(safe=char_class_regex(safe) + "*", safe_offsets=char_class_regex(safe[~vanishing]) + "*")


class StockRouter:
    """Stock `FastBertTokenizer` for the strings it tokenizes exactly; a given exact tokenizer for the others.

    Args:
      vocab: the tokens in id order.
      do_lower_case: lower-case and strip accents (uncased models).
      max_chars: the word limit in characters.
      unk_token: the unknown token (in `vocab`).
    """

    def __init__(self, vocab: Sequence[str], do_lower_case: bool, max_chars: int, unk_token: str):
        self.patterns = routing_patterns(do_lower_case)
        self.unk_id = list(vocab).index(unk_token)
        # A word over max_chars bytes has more than max_chars // 4 characters (4 UTF-8 bytes at most each), so only
        # a row with such a run of non-space characters can owe an [UNK] to the byte limit (RE2 counts to 1000).
        run = max_chars // 4 + 1
        self.long_word = f"(?s).*[^ \\t\\n\\r]{{{run}}}.*" if run <= 1000 else None
        self.stock = tf_text.FastBertTokenizer(
            list(vocab),
            token_out_type=tf.int32,
            unknown_token=unk_token,
            max_bytes_per_word=max_chars,  # in bytes: see the module docstring
            lower_case_nfd_strip_accents=do_lower_case,
        )

    def stock_with_redo(self, texts: tf.Tensor, with_offsets: bool = False):
        """Stock's output for every string, and bool `[batch]`: the strings whose output may differ from the
        original's (an unsafe character, or an `[UNK]` that may come from the byte limit)."""
        outputs = (self.stock.tokenize_with_offsets if with_offsets else self.stock.tokenize)(texts)
        ids = outputs[0] if with_offsets else outputs
        # Rows holding [UNK], found from the (few) positions of [UNK] in the flat ids: a ragged reduce_any over the
        # whole batch costs a seventh of the tokenization itself.
        positions = tf.where(tf.equal(ids.flat_values, self.unk_id))[:, 0]
        rows = tf.searchsorted(ids.row_splits, positions, side="right") - 1
        has_unk = tf.math.unsorted_segment_max(tf.ones_like(rows, tf.int32), rows, ids.nrows()) > 0
        if self.long_word is not None:  # most [UNK]s are unknown words, on which both agree
            unk_rows = tf.where(has_unk)
            long_word = tf.strings.regex_full_match(tf.gather_nd(texts, unk_rows), self.long_word)
            has_unk = tf.tensor_scatter_nd_update(tf.zeros_like(has_unk), unk_rows, long_word)
        return outputs, has_unk | ~self.patterns.stock_is_safe(texts, with_offsets)

    def tokenize(self, texts: tf.Tensor, exact: Callable, with_offsets: bool = False):
        """Tokenizes a 1-D string tensor: by stock, except the strings it may get wrong, which go through `exact` (a
        tokenizer with the same outputs: ids, or ids and start/end offsets with `with_offsets`), in input order."""
        outputs, redo = self.stock_with_redo(texts, with_offsets)

        def stock_only():
            return outputs

        def mixed():
            exact_rows = tf.where(redo)[:, 0]
            exact_outputs = exact(tf.gather(texts, exact_rows))
            # Row i of the result: row i of stock's output, or (redone) row B + k of the concatenation.
            batch = tf.shape(redo, out_type=tf.int64)[0]
            source = tf.tensor_scatter_nd_update(
                tf.range(batch), exact_rows[:, None], batch + tf.range(tf.size(exact_rows, out_type=tf.int64))
            )
            if with_offsets:
                return tuple(tf.gather(tf.concat([s, e], 0), source) for s, e in zip(outputs, exact_outputs))
            return tf.gather(tf.concat([outputs, exact_outputs], 0), source)

        return tf.cond(tf.reduce_any(redo), mixed, stock_only)
