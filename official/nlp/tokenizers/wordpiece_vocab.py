"""Learning a WordPiece vocabulary (`vocab.txt`) from text, consistent with our tokenizers.

Words are counted after our `BasicTokenizer` (the original BERT rules: cleaning, CJK splitting, punctuation
splitting, and lower-casing/accent stripping when uncased), so every learned piece is something the tokenizer can
produce. The pieces are then learned by tensorflow-text's WordPiece learner
(`tensorflow_text.tools.wordpiece_vocab.wordpiece_tokenizer_learner_lib.learn`, the algorithm behind
`bert_vocab_from_dataset`), fed with those word counts instead of tf-text's own (ICU-based) basic tokenizer.

Example:

>>> vocab = build_vocab(["corpus.txt"], vocab_size=8000, do_lower_case=True)   # doctest: +SKIP
>>> write_vocab(vocab, "vocab.txt")                                            # doctest: +SKIP

or, as `run_scripts/build_vocab.py` does, `build_vocab_file(VocabConfig(input_file=..., output_file=...))`.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence

from absl import logging

from official.nlp.common import input_files, output_files, output_folders
from official.nlp.common.config_flags import CheckedConfig, field
from official.nlp.common.errors import InputError
from official.nlp.common.output_files import write_atomically
from official.nlp.common.text_files import decode_line
from official.nlp.tokenizers import tokenization


def reserved_tokens(num_unused: int = 0) -> list[str]:
    """`[PAD]`, `[unused0]`..`[unused{n-1}]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`: the original BERT layout (there
    `[PAD]` is id 0 and the unused slots come before `[UNK]`), so `[PAD]` is always id 0."""
    return ["[PAD]"] + [f"[unused{i}]" for i in range(num_unused)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def iter_lines(files: Sequence[str]) -> Iterable[str]:
    """The lines of the files, split at "\\n" only. A line that is not UTF-8 is refused: dropping its bytes, as the
    tokenizer does, would learn "caf" from Latin-1 "Café", and junk from a binary file."""
    for path in files:
        with input_files.open_file(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                yield decode_line(raw, path, number)


def count_words(lines: Iterable[str], do_lower_case: bool, max_lines: int | None = None) -> collections.Counter:
    """Counts the basic tokens (words and split-off characters) of `lines`."""
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    counts: collections.Counter = collections.Counter()
    for i, line in enumerate(lines):
        if max_lines is not None and i >= max_lines:
            break
        counts.update(basic.tokenize(line))
        if i and i % 1_000_000 == 0:
            logging.info("Counted %d lines, %d distinct words", i, len(counts))
    return counts


def _learn_with_progress(learner, vocab_size: int, kwargs: dict) -> list[str]:
    """`learner.learn(**kwargs)`, logging each step of its binary search over the count threshold (each step
    learns a whole vocabulary, minutes on a large corpus, and the learner itself says nothing)."""
    inner = learner.learn_with_thresh
    step = [0]

    def logged(word_counts, thresh, params):
        start = time.monotonic()
        vocab = inner(word_counts, thresh, params)
        step[0] += 1
        logging.info(
            "Vocabulary search step %d: pieces of words counted >= %d times -> %d tokens (target %d), %.1f s",
            step[0],
            thresh,
            len(vocab),
            vocab_size,
            time.monotonic() - start,
        )
        return vocab

    learner.learn_with_thresh = logged  # the search calls the module's function by name
    try:
        return learner.learn(**kwargs)
    finally:
        learner.learn_with_thresh = inner


def learn_vocab(
    word_counts: Mapping[str, int],
    vocab_size: int,
    *,
    num_unused: int = 0,
    lower_thresh: int = 10,
    max_token_length: int = 50,
    max_unique_chars: int = 1000,
    slack_ratio: float = 0.05,
) -> list[str]:
    """Learns at most `vocab_size` tokens (reserved tokens included) from word counts.

    Args:
      word_counts: basic token -> count (see `count_words`).
      vocab_size: the maximum vocabulary size; the learner aims for `vocab_size * (1 - slack_ratio)` or more.
      num_unused: `[unusedN]` slots to reserve (room for task-specific tokens later).
      lower_thresh, max_token_length, max_unique_chars, slack_ratio: tf-text learner parameters (a word's
        minimum count to be a candidate, the longest token, the alphabet size, the size tolerance).
    """
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    reserved = reserved_tokens(num_unused)
    if vocab_size <= len(reserved):
        raise InputError(f"vocab_size={vocab_size} leaves no room after {len(reserved)} reserved tokens")
    candidates = sum(1 for count in word_counts.values() if count >= lower_thresh)
    if candidates < vocab_size:
        logging.warning(
            "Only %d distinct words occur at least %d times (--min_count): the corpus is probably too "
            "small for vocab_size=%d, and the vocabulary will have fewer tokens",
            candidates,
            lower_thresh,
            vocab_size,
        )
    learned = _learn_with_progress(
        learner,
        vocab_size,
        dict(
            word_counts=dict(word_counts),
            vocab_size=vocab_size,
            reserved_tokens=reserved,
            lower_thresh=lower_thresh,
            max_token_length=max_token_length,
            max_unique_chars=max_unique_chars,
            slack_ratio=slack_ratio,
            include_joiner_token=True,  # learn "##" suffix pieces
        ),
    )
    # Reserved tokens first, in our order, then the learned pieces; the learner may repeat a reserved token.
    seen = set(reserved)
    vocab = list(reserved)
    for token in learned:
        if token not in seen and token.strip() == token and token:
            seen.add(token)
            vocab.append(token)
    return vocab[:vocab_size]


def build_vocab(
    input_files: Sequence[str],
    vocab_size: int,
    do_lower_case: bool,
    *,
    num_unused: int = 0,
    max_lines: int | None = None,
    **learn_params,
) -> list[str]:
    """Counts words in `input_files` and learns a vocabulary; the result passes `validate_vocab`."""
    counts = count_words(iter_lines(input_files), do_lower_case, max_lines=max_lines)
    if not counts:
        raise InputError(f"no words in {', '.join(input_files)}")
    logging.info("%d distinct words, %d in total", len(counts), sum(counts.values()))
    vocab = learn_vocab(counts, vocab_size, num_unused=num_unused, **learn_params)
    tokenization.validate_vocab(vocab, do_lower_case=do_lower_case, source="learned vocabulary")
    if len(vocab) < vocab_size * (1 - learn_params.get("slack_ratio", 0.05)):
        logging.warning(
            "The vocabulary has %d tokens, not the %d asked for: the corpus is too small for that size "
            "(or --min_count too high). A model for it needs vocab_size=%d in bert_config.json; or "
            "learn from more text",
            len(vocab),
            vocab_size,
            len(vocab),
        )
    return vocab


def write_vocab(vocab: Sequence[str], path: str, *, name: str | None = None) -> None:
    """Writes one token per line (the `vocab.txt` format), atomically."""
    with write_atomically(path, name=name) as f:
        f.writelines(token + "\n" for token in vocab)


@dataclasses.dataclass
class VocabConfig(CheckedConfig):
    """The settings of `build_vocab_file`; the field names are the flags of `build_vocab.py`."""

    input_file: str = field(
        path="patterns", help="Input text files: a comma-separated list of paths and glob patterns."
    )
    output_file: str = field(path="path", help="Where to write vocab.txt.")
    vocab_size: int = field(30522, minimum=1, help="Maximum vocabulary size, reserved tokens included.")
    do_lower_case: bool = field(True, help="Lower-case and strip accents before counting (uncased vocabulary).")
    num_unused: int = field(0, minimum=0, help="Number of [unusedN] tokens to reserve after [PAD].")
    min_count: int = field(
        10, minimum=0, help="Minimum count of a word to be a vocabulary candidate (learner lower_thresh; 0 or 1: any)."
    )
    max_token_length: int = field(50, minimum=1, help="Longest token to learn, in characters.")
    max_unique_chars: int = field(1000, minimum=1, help="Alphabet size: words with rarer characters are not counted.")
    max_lines: int | None = field(None, minimum=1, help="Read at most this many lines (all by default).")


@dataclasses.dataclass
class VocabResult:
    """What `build_vocab_file` wrote: the vocabulary file and its tokens, in id order (reserved tokens first)."""

    output_file: str
    tokens: list[str]


def build_vocab_file(config: VocabConfig) -> VocabResult:
    """Learns the vocabulary of `config.input_file` and writes it to `config.output_file` (`build_vocab.py`)."""
    # Before the minutes of learning: an output that cannot be written (a folder or a device in its place, a
    # parent that is a file, no permission, a bucket that is not there) is refused now.
    output_files.check_writable(config.output_file, name="--output_file")
    files = input_files.expand_input_files(config.input_file)
    output_folders.check_output_files(
        [config.output_file], flag="--output_file", inputs={f"--input_file={config.input_file}": files}
    )
    vocab = build_vocab(
        files,
        config.vocab_size,
        config.do_lower_case,
        num_unused=config.num_unused,
        max_lines=config.max_lines,
        lower_thresh=config.min_count,
        max_token_length=config.max_token_length,
        max_unique_chars=config.max_unique_chars,
    )
    write_vocab(vocab, config.output_file, name="--output_file")
    return VocabResult(config.output_file, vocab)
