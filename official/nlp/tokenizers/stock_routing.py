"""The fast path of the in-graph tokenizer: strings on which stock tf-text `FastBertTokenizer` is exact go there.

Stock `FastBertTokenizer` differs from the original BERT tokenizer on some characters (see
`graph_basic_tokenizer`), but on most text it gives the same ids, several times faster than the exact path.
`stock_safe_codepoints` finds the code points on which it provably does what the original does, by running the stock
normalizer and pre-tokenizer on every BMP code point and comparing with `graph_basic_tokenizer.unicode_tables`.
A string made only of such characters, with no run of more than `max_chars` non-space characters, is tokenized
identically by the stock tokenizer (its normalizer maps code point by code point, and its splitter decides word
boundaries character by character). `StockRouter` checks every string against precompiled regular expressions
(`routing_patterns`) and sends those strings through the stock op and only the rest through the exact path
(above, "½ price" takes the exact path: stock would make "½" into "1⁄2").

Example:

>>> exact = graph_basic_tokenizer.ExactBasicTokenizer(vocab, True, 200, "[UNK]")         # doctest: +SKIP
>>> router = StockRouter(vocab, do_lower_case=True, max_chars=200, unk_token="[UNK]")   # doctest: +SKIP
>>> router.tokenize(tf.constant(["plain text", "½ price"]), exact.tokenize)  # doctest: +SKIP
<tf.RaggedTensor [[5236, 3793], [1092, 3976]]>
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, List, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from official.nlp.tokenizers import char_rules
from official.nlp.tokenizers import graph_basic_tokenizer as exact_lib

# RE2 allows counted repetition up to 1000 (the long-word pattern counts max_chars + 1); longer word limits turn
# the fast path off.
MAX_ROUTABLE_WORD = 998


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
    ranges: List[Tuple[int, int]] = []
    for cp in codepoints:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))

    def esc(cp):
        return "\\x{%x}" % cp

    return "[" + "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in ranges) + "]"


@dataclasses.dataclass(frozen=True)
class RoutingPatterns:
    """RE2 patterns (for `tf.strings.regex_full_match`) that pick the strings stock tokenizes exactly."""

    safe: str  # every character is stock-safe
    safe_offsets: str  # ... and none normalizes to nothing (stock end offsets stretch over those)
    long_word: str  # a run of more than max_chars non-space characters (stock would cut by bytes, not characters)

    def stock_is_exact(self, texts: tf.Tensor, with_offsets: bool = False) -> tf.Tensor:
        """bool `[batch]`: whether stock gives exactly the original's ids (and offsets) for each string."""
        safe = tf.strings.regex_full_match(texts, self.safe_offsets if with_offsets else self.safe)
        return safe & ~tf.strings.regex_full_match(texts, self.long_word)


@functools.lru_cache(maxsize=8)
def routing_patterns(do_lower_case: bool, max_chars: int) -> RoutingPatterns:
    """The routing patterns for a case setting and word limit (at most `MAX_ROUTABLE_WORD` characters)."""
    if max_chars > MAX_ROUTABLE_WORD:
        raise ValueError(f"max_chars={max_chars} is over {MAX_ROUTABLE_WORD}, which RE2 patterns cannot count")
    safe = stock_safe_codepoints(do_lower_case)
    tables = exact_lib.unicode_tables(do_lower_case)
    if do_lower_case:
        vanishing = tables.norm_len[safe] == 0  # dropped characters and (uncased) nonspacing marks
    else:
        vanishing = (tables.flags[safe] & exact_lib.DROP) != 0
    # Stock end offsets of a token stretch over characters that normalize to nothing right after it, so offsets
    # take the fast path only for strings without such characters.
    return RoutingPatterns(
        safe=char_class_regex(safe) + "*",
        safe_offsets=char_class_regex(safe[~vanishing]) + "*",
        long_word="(?s).*[^ \\t\\n\\r]{%d}.*" % (max_chars + 1),
    )


class StockRouter:
    """Stock `FastBertTokenizer` for the strings it tokenizes exactly; a given exact tokenizer for the others.

    Args:
      vocab: the tokens in id order.
      do_lower_case: lower-case and strip accents (uncased models).
      max_chars: the word limit in characters (at most `MAX_ROUTABLE_WORD`).
      unk_token: the unknown token (in `vocab`).
    """

    def __init__(self, vocab: Sequence[str], do_lower_case: bool, max_chars: int, unk_token: str):
        self.patterns = routing_patterns(do_lower_case, max_chars)
        self.stock = tf_text.FastBertTokenizer(
            list(vocab),
            token_out_type=tf.int32,
            unknown_token=unk_token,
            max_bytes_per_word=exact_lib.max_bytes_per_word(max_chars, unk_token),
            lower_case_nfd_strip_accents=do_lower_case,
        )

    def tokenize(self, texts: tf.Tensor, exact: Callable, with_offsets: bool = False):
        """Tokenizes a 1-D string tensor: the rows stock handles exactly by stock, the others by `exact` (a
        tokenizer with the same outputs: ids, or ids and start/end offsets with `with_offsets`), in input order."""
        stock = self.stock.tokenize_with_offsets if with_offsets else self.stock.tokenize
        safe = self.patterns.stock_is_exact(texts, with_offsets)

        def fast_only():
            return stock(texts)

        def mixed():
            fast_rows = tf.where(safe)[:, 0]
            exact_rows = tf.where(~safe)[:, 0]
            fast = stock(tf.gather(texts, fast_rows))
            slow = exact(tf.gather(texts, exact_rows))
            inverse = tf.math.invert_permutation(tf.concat([fast_rows, exact_rows], 0))
            if with_offsets:
                return tuple(tf.gather(tf.concat([f, s], 0), inverse) for f, s in zip(fast, slow))
            return tf.gather(tf.concat([fast, slow], 0), inverse)

        return tf.cond(tf.reduce_all(safe), fast_only, mixed)
