"""Pure-Python BERT tokenization, exactly the algorithm of google-research/bert `tokenization.py`.

`FullTokenizer` = `BasicTokenizer` (cleaning, CJK splitting, lower-casing and accent stripping, punctuation
splitting) + `WordpieceTokenizer` (greedy longest-match-first over the vocabulary). The rules, in the order the
original applies them:

1. Drop U+0000, U+FFFD and every control/format character (categories Cc and Cf, except tab, newline and
   carriage return); every space separator (category Zs) and tab/newline/CR becomes a space.
2. Surround each CJK ideograph (the original's eight code-point ranges) with spaces.
3. Split on whitespace (`str.split`, so U+2028/U+2029 separate too).
4. Uncased only, per whitespace token: Python's `str.lower()` (full Unicode mappings, Greek final sigma decided in
   the context of the whole token), then NFD, then removal of category-Mn marks.
5. Split off every punctuation character (Unicode category P* and every non-alphanumeric printable ASCII
   character, so `$`, `^`, `` ` `` split too).
6. WordPiece: greedy longest match first with `##` continuations; a word that cannot be covered, or that has more
   than `max_input_chars_per_word` (200) characters, becomes `[UNK]`.

Strings such as `[MASK]` in raw text are ordinary text (`[`, `mask`, `]`) as in the original;
`FullTokenizer(..., keep_special_tokens=True)` keeps them whole instead.

Offsets: `tokenize_with_offsets` returns, for every token, `(start, end)` character offsets into the original
string. `text[start:end]` is the token's text (without `##`); for an uncased tokenizer it is the original
characters the token came from (`"Café"` for `cafe`). When one original character expands into several (an
uncased tokenizer decomposes the Hangul syllable `"강"` into three jamo) and word piece boundaries fall inside it,
every such piece points at that character.

Example:

>>> tok = FullTokenizer("vocab.txt", do_lower_case=True)      # doctest: +SKIP
>>> tok.tokenize("Unaffable café!")                            # doctest: +SKIP
['una', '##ffa', '##ble', 'cafe', '!']
>>> tok.convert_tokens_to_ids(["cafe", "!"])                   # doctest: +SKIP
[7668, 999]
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Mapping

# The character rules live in char_rules.py, shared with the vocabulary checks and the in-graph tokenizer
# (`convert_to_unicode` is re-exported from there); the vocabulary file API lives in vocabulary.py and is
# re-exported too, where the original module had it.
from official.nlp.tokenizers.char_rules import (
    CLEAN_TABLE,
    IS_PUNCT,
    convert_to_unicode,
    lower_aligned,
    split_on_punctuation,
    strip_accents,
    uncased,
)
from official.nlp.tokenizers.vocabulary import (  # noqa: F401  (re-exported)
    CLS_TOKEN,
    MASK_TOKEN,
    PAD_TOKEN,
    SEP_TOKEN,
    SPECIAL_TOKENS,
    UNK_TOKEN,
    VocabularyError,
    load_vocab,
    validate_vocab,
    vocab_case_stats,
)

MAX_INPUT_CHARS_PER_WORD = 200

Offsets = list[tuple[int, int]]


def printable_text(text: str | bytes) -> str:
    """Returns `text` as a `str` suitable for printing or logging."""
    return convert_to_unicode(text)


def whitespace_tokenize(text: str) -> list[str]:
    """Splits on whitespace (`str.split`), as the original's `whitespace_tokenize`."""
    return text.split()


# ----------------------------------------------------------------------------------------------------------------
# Tokenizers.


class BasicTokenizer:
    """Cleaning, CJK splitting, optional lower-casing/accent stripping and punctuation splitting (steps 1-5).

    Example:

    >>> BasicTokenizer(do_lower_case=True).tokenize("Héllo, WORLD!")
    ['hello', ',', 'world', '!']
    """

    def __init__(self, do_lower_case: bool = True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text: str | bytes) -> list[str]:
        """Returns the basic tokens of `text`."""
        text = convert_to_unicode(text).translate(CLEAN_TABLE)
        output: list[str] = []
        for token in text.split():
            if self.do_lower_case:
                token = uncased(token)
            output.extend(split_on_punctuation(token))
        # The original re-splits on whitespace here. Lower-casing and NFD never produce whitespace from a
        # non-whitespace character (checked over all code points in the tests), so that step is a no-op.
        return output

    def tokenize_with_offsets(self, text: str | bytes) -> list[tuple[str, list[tuple[int, int]]]]:
        """Returns `(token, char_spans)` pairs: `char_spans[i]` is the `(start, end)` span in `text` of the
        original character that produced the token's `i`-th character."""
        text = convert_to_unicode(text)
        output = []
        for word, starts in self._whitespace_tokens(text):
            if self.do_lower_case:
                chars, spans = self._normalize_with_spans(word, starts)
            else:
                chars, spans = list(word), [(s, s + 1) for s in starts]
            current: list[str] = []
            current_spans: list[tuple[int, int]] = []
            for char, span in zip(chars, spans):
                if IS_PUNCT[char]:
                    if current:
                        output.append(("".join(current), current_spans))
                        current, current_spans = [], []
                    output.append((char, [span]))
                else:
                    current.append(char)
                    current_spans.append(span)
            if current:
                output.append(("".join(current), current_spans))
        return output

    @staticmethod
    def _whitespace_tokens(text: str):
        """Steps 1-3 with the original index of every kept character."""
        word: list[str] = []
        starts: list[int] = []
        for i, char in enumerate(text):
            mapped = CLEAN_TABLE[ord(char)]
            if mapped is None:
                continue
            if isinstance(mapped, str):  # whitespace or a CJK character: both end the current word
                if word:
                    yield "".join(word), starts
                    word, starts = [], []
                if not mapped.isspace():
                    yield char, [i]
                continue
            if char.isspace():  # separators that are not Zs (U+2028, U+2029) split via str.split
                if word:
                    yield "".join(word), starts
                    word, starts = [], []
                continue
            word.append(char)
            starts.append(i)
        if word:
            yield "".join(word), starts

    @staticmethod
    def _normalize_with_spans(word: str, starts: list[int]):
        """Lower-case + NFD + Mn removal of `word`, keeping the source span of every output character.

        NFD is done character by character followed by canonical ordering (a stable sort by combining class inside
        each run of combining characters), which is what `unicodedata.normalize("NFD", ...)` computes.
        """
        pieces, lowered = lower_aligned(word)
        items: list[tuple[str, int]] = []
        for piece, start in zip(pieces, starts):
            if piece.isascii():
                items.extend((c, start) for c in piece)
            else:
                items.extend((c, start) for c in unicodedata.normalize("NFD", piece))
        if not lowered.isascii():
            i = 0
            while i < len(items):
                if unicodedata.combining(items[i][0]) == 0:
                    i += 1
                    continue
                j = i
                while j < len(items) and unicodedata.combining(items[j][0]) != 0:
                    j += 1
                if j - i > 1:
                    items[i:j] = sorted(items[i:j], key=lambda item: unicodedata.combining(item[0]))
                i = j
        chars = [c for c, _ in items if unicodedata.category(c) != "Mn"]
        spans = [(s, s + 1) for c, s in items if unicodedata.category(c) != "Mn"]
        assert "".join(chars) == strip_accents(lowered), word
        return chars, spans


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece over a vocabulary (step 6).

    Example:

    >>> vocab = {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3}
    >>> WordpieceTokenizer(vocab).tokenize("unaffable")
    ['un', '##aff', '##able']
    """

    _CACHE_SIZE = 1 << 16

    def __init__(
        self,
        vocab: Mapping[str, int],
        unk_token: str = UNK_TOKEN,
        max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD,
    ):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self._cache: dict = {}

    def tokenize(self, text: str | bytes) -> list[str]:
        """Word pieces of each whitespace-separated word of `text`."""
        output: list[str] = []
        for word in convert_to_unicode(text).split():
            output.extend(piece for piece, _, _ in self.tokenize_word(word))
        return output

    def tokenize_word(self, word: str) -> list[tuple[str, int, int]]:
        """`(piece, start, end)` for one word; start/end index characters of `word`. `[UNK]` covers the word."""
        result = self._cache.get(word)
        if result is None:
            result = self._tokenize_word(word)
            if len(self._cache) >= self._CACHE_SIZE:
                self._cache.clear()
            self._cache[word] = result
        return result

    def _tokenize_word(self, word: str) -> list[tuple[str, int, int]]:
        n = len(word)
        if n > self.max_input_chars_per_word:
            return [(self.unk_token, 0, n)]
        pieces = []
        start = 0
        vocab = self.vocab
        while start < n:
            end = n
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    break
                end -= 1
            else:
                return [(self.unk_token, 0, n)]
            pieces.append((piece, start, end))
            start = end
        return pieces


class FullTokenizer:
    """The original end-to-end tokenizer: `BasicTokenizer` then `WordpieceTokenizer`, with the original API.

    The vocabulary is checked at construction (`validate_vocab`): the special tokens must be present, and an
    uncased vocabulary with `do_lower_case=False` (or a cased one with `True`) is refused.

    Args:
      vocab_file: path of `vocab.txt` (one token per line; local path or any `tf.io.gfile` URL).
      do_lower_case: lower-case and strip accents (uncased models).
      keep_special_tokens: keep `[CLS]`, `[SEP]`, `[MASK]`, `[PAD]` and `[UNK]` in raw text as single tokens
        (the text between them is tokenized as usual). Off by default: the original treats them as plain text.
      max_input_chars_per_word: longer words become `[UNK]`.
      vocab_size: if given, the vocabulary must have exactly this many entries (e.g. `bert_config.vocab_size`).

    Example:

    >>> tok = FullTokenizer("vocab.txt", do_lower_case=True)       # doctest: +SKIP
    >>> tokens = tok.tokenize("Héllo, world!")                      # doctest: +SKIP
    >>> tok.convert_tokens_to_ids(tokens)                           # doctest: +SKIP
    [7592, 1010, 2088, 999]
    >>> tok.tokenize_with_offsets("Héllo, world!")                  # doctest: +SKIP
    (['hello', ',', 'world', '!'], [(0, 5), (5, 6), (7, 12), (12, 13)])
    """

    def __init__(
        self,
        vocab_file: str | os.PathLike,
        do_lower_case: bool = True,
        *,
        keep_special_tokens: bool = False,
        max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD,
        vocab_size: int | None = None,
    ):
        self.vocab_file = os.fspath(vocab_file)
        self.vocab = load_vocab(self.vocab_file)
        validate_vocab(self.vocab, vocab_size=vocab_size, do_lower_case=do_lower_case, source=self.vocab_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.do_lower_case = do_lower_case
        self.keep_special_tokens = keep_special_tokens
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
        self.wordpiece_tokenizer = WordpieceTokenizer(
            vocab=self.vocab, max_input_chars_per_word=max_input_chars_per_word
        )
        self._special_re = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")

    def _segments(self, text: str):
        """`(segment, offset, is_special)` pieces of `text`."""
        if not self.keep_special_tokens:
            yield text, 0, False
            return
        pos = 0
        for match in self._special_re.finditer(text):
            if match.start() > pos:
                yield text[pos : match.start()], pos, False
            yield match.group(), match.start(), True
            pos = match.end()
        if pos < len(text):
            yield text[pos:], pos, False

    def tokenize(self, text: str | bytes) -> list[str]:
        """Returns the word pieces of `text`."""
        text = convert_to_unicode(text)
        output: list[str] = []
        for segment, _, special in self._segments(text):
            if special:
                output.append(segment)
                continue
            for token in self.basic_tokenizer.tokenize(segment):
                output.extend(piece for piece, _, _ in self.wordpiece_tokenizer.tokenize_word(token))
        return output

    def tokenize_with_offsets(self, text: str | bytes) -> tuple[list[str], Offsets]:
        """Returns `(tokens, offsets)`; `offsets[i] = (start, end)` are character offsets into `text`.

        `text[start:end]` is the original text of token `i` (its `##` prefix aside): equal to the token for a cased
        tokenizer, the same after lower-casing and accent stripping for an uncased one. `[UNK]` spans its word.
        """
        text = convert_to_unicode(text)
        tokens: list[str] = []
        offsets: Offsets = []
        for segment, base, special in self._segments(text):
            if special:
                tokens.append(segment)
                offsets.append((base, base + len(segment)))
                continue
            for word, spans in self.basic_tokenizer.tokenize_with_offsets(segment):
                for piece, start, end in self.wordpiece_tokenizer.tokenize_word(word):
                    tokens.append(piece)
                    # Canonical reordering can move a character before one from an earlier source, so take the
                    # span covering all sources (the first and last character's, in every other case).
                    piece_spans = spans[start:end]
                    first = min(s for s, _ in piece_spans)
                    last = max(e for _, e in piece_spans)
                    offsets.append((base + first, base + last))
        return tokens, offsets

    def convert_tokens_to_ids(self, tokens: Iterable[str]) -> list[int]:
        """Ids of `tokens`; a token outside the vocabulary raises `KeyError` (as in the original)."""
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        """Tokens of `ids`; an id outside the vocabulary raises `KeyError`."""
        return convert_by_vocab(self.inv_vocab, (int(i) for i in ids))


def convert_by_vocab(vocab: Mapping, items: Iterable) -> list:
    """Maps every item through `vocab`; a missing item raises `KeyError` naming it."""
    output = []
    for item in items:
        try:
            output.append(vocab[item])
        except KeyError:
            raise KeyError(f"{item!r} is not in the vocabulary ({len(vocab)} entries)") from None
    return output


def convert_tokens_to_ids(vocab: Mapping[str, int], tokens: Iterable[str]) -> list[int]:
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab: Mapping[int, str], ids: Iterable[int]) -> list[str]:
    return convert_by_vocab(inv_vocab, ids)
