"""BERT WordPiece vocabulary files: loading, and the checks that refuse a vocabulary the model cannot use.

`load_vocab` reads `vocab.txt` (one token per line, id = line number) as the original does, but refuses duplicate
tokens; `validate_vocab` checks the special tokens, the size against `bert_config.json` and the case against
`do_lower_case`. `official.nlp.tokenizers.tokenization` re-exports both, where the original module had them.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterable, Mapping, Sequence

from official.nlp.common import input_files
from official.nlp.common.errors import InputError
from official.nlp.common.text_files import decode_line
from official.nlp.tokenizers.char_rules import uncased

UNK_TOKEN = "[UNK]"
PAD_TOKEN = "[PAD]"
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)


class VocabularyError(InputError):
    """A vocabulary file that cannot be used as given (missing special tokens, wrong size or case, duplicates)."""


def _read_lines(vocab_file: str) -> list[str]:
    data = input_files.read_bytes(vocab_file)  # TensorFlow is imported only for a path with a scheme
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        # The original drops such bytes: a Latin-1 "caf\xe9" would silently become the token "caf".
        start = data.rfind(b"\n", 0, e.start) + 1
        end = data.find(b"\n", e.start)
        decode_line(data[start : end if end >= 0 else len(data)], vocab_file, data.count(b"\n", 0, start) + 1)
        raise  # not reached: that line holds the byte that failed, so decode_line raises
    # A UTF-8 byte-order mark (what Windows editors put first) is no part of the first token. The original keeps
    # it, as `str.strip` does not remove it: its "\ufeff[PAD]" is no [PAD]. The ids stay the line numbers.
    text = text.removeprefix("\ufeff")
    # The original reads line by line with readline(), which splits only at "\n".
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def load_vocab(vocab_file: str | os.PathLike) -> collections.OrderedDict[str, int]:
    """Reads `vocab.txt` (one token per line, id = line number, surrounding whitespace and a leading UTF-8
    byte-order mark stripped).

    Raises `VocabularyError` if a token occurs twice: the original silently kept the later id, which makes the
    earlier id unreachable.
    """
    vocab_file = os.fspath(vocab_file)
    vocab: collections.OrderedDict[str, int] = collections.OrderedDict()
    for index, line in enumerate(_read_lines(vocab_file)):
        token = line.strip()
        if token in vocab:
            raise VocabularyError(
                f"{vocab_file}: token {token!r} occurs twice (lines {vocab[token] + 1} and {index + 1}); "
                "every line of a vocabulary must be a distinct token. Remove the duplicate line."
            )
        vocab[token] = index
    return vocab


def vocab_case_stats(vocab: Iterable[str]) -> tuple[int, int, list[str]]:
    """`(n_cased, n_unreachable_uncased, examples)` over the vocabulary's word pieces (`##` removed, `[...]` skipped).

    `n_cased` counts pieces with at least one cased letter; `n_unreachable_uncased` counts pieces that an uncased
    tokenizer can never produce (lower-casing or accent stripping changes them).
    """
    n_cased = 0
    unreachable = []
    for token in vocab:
        if len(token) > 2 and token.startswith("[") and token.endswith("]"):
            continue
        piece = token[2:] if token.startswith("##") else token
        if any(c.lower() != c or c.upper() != c for c in piece):
            n_cased += 1
            if uncased(piece) != piece:
                unreachable.append(token)
    return n_cased, len(unreachable), unreachable[:5]


# Case rule: an uncased vocabulary holds only pieces an uncased tokenizer can produce, so a share of pieces that
# lower-casing/accent stripping would change says "cased". Real vocabularies are far from the thresholds (BERT-Base
# uncased: 0 of 26,930 cased-letter pieces; cased: 8,826 of 26,955, 33%). Vocabularies with few letters (CJK-only)
# are not judged.
_MIN_CASED_PIECES = 200
_CASED_SHARE = 0.02
_UNCASED_SHARE = 0.002


def validate_vocab(
    vocab: Mapping[str, int] | Sequence[str],
    *,
    vocab_size: int | None = None,
    do_lower_case: bool | None = None,
    source: str = "vocabulary",
) -> None:
    """Refuses a vocabulary that BERT cannot use as configured, with a message saying what to change.

    Checks: the special tokens `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]` are present; no token occurs twice and
    ids are `0..n-1`; `len(vocab) == vocab_size` when given; and, when `do_lower_case` is given, the vocabulary's
    case agrees with it: with `do_lower_case=True`, more than 2% of the pieces with letters would be unreachable
    (they contain upper-case letters or accents), so the vocabulary is cased; with `do_lower_case=False`, fewer
    than 0.2% have upper case or accents, so it is uncased. Vocabularies with fewer than 200 pieces with cased
    letters are not judged on case.

    Args:
      vocab: token -> id mapping (as `load_vocab` returns) or the tokens in id order.
      vocab_size: expected size, e.g. `vocab_size` of `bert_config.json`.
      do_lower_case: the tokenizer's setting, or None to skip the case check.
      source: name used in messages (the file path).

    Raises:
      VocabularyError: with a message naming `source` and the problem.
    """
    if isinstance(vocab, Mapping):
        tokens = list(vocab.keys())
        ids = sorted(vocab.values())
        if ids != list(range(len(ids))):
            missing = sorted(set(range(len(ids))) - set(ids))[:5]
            raise VocabularyError(
                f"{source}: ids are not 0..{len(ids) - 1} (missing e.g. {missing}); a token probably occurs twice "
                "in the file. Remove duplicate lines."
            )
    else:
        tokens = list(vocab)
        seen = {}
        for i, token in enumerate(tokens):
            if token in seen:
                raise VocabularyError(
                    f"{source}: token {token!r} occurs twice (ids {seen[token]} and {i}). Remove the duplicate."
                )
            seen[token] = i
    present = set(tokens)
    missing_special = [t for t in SPECIAL_TOKENS if t not in present]
    if missing_special:
        raise VocabularyError(
            f"{source}: missing special token(s) {', '.join(missing_special)}; BERT needs "
            f"{', '.join(SPECIAL_TOKENS)} in the vocabulary. Is this a BERT WordPiece vocab.txt?"
        )
    if vocab_size is not None and len(tokens) != vocab_size:
        raise VocabularyError(
            f"{source}: has {len(tokens)} tokens but the model config says vocab_size={vocab_size}. "
            "Use the vocabulary the checkpoint was trained with (or fix vocab_size in the config)."
        )
    if do_lower_case is not None:
        n_cased, n_unreachable, examples = vocab_case_stats(tokens)
        if n_cased >= _MIN_CASED_PIECES:
            share = n_unreachable / n_cased
            if do_lower_case and share > _CASED_SHARE:
                raise VocabularyError(
                    f"{source}: looks cased ({n_unreachable} of {n_cased} word pieces with letters have upper case "
                    f"or accents, e.g. {examples}), but do_lower_case=True would never produce them. "
                    "Pass do_lower_case=False for a cased model."
                )
            if not do_lower_case and share < _UNCASED_SHARE:
                raise VocabularyError(
                    f"{source}: looks uncased ({n_unreachable} of {n_cased} word pieces with letters have upper "
                    "case or accents), but do_lower_case=False would turn every capitalized word into other pieces "
                    "or [UNK]. Pass do_lower_case=True for an uncased model."
                )
