"""The settings of a `create_pretraining_data` run: the flags, their checks, and what they derive (vocabulary,
masking). The generator, the writer, the output bookkeeping and the reference order all read them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from official.nlp.common.config_flags import CheckedConfig, field
from official.nlp.common.errors import InputError
from official.nlp.data.pretraining.masking import config as masking_config_lib
from official.nlp.modeling.configs import DEFAULT_SEQ_LENGTH


@dataclasses.dataclass
class PretrainingDataConfig(CheckedConfig, masking_config_lib.MaskingFlags):
    """Flags of `create_pretraining_data` (the original script's, plus the ones below the line; the masking flags,
    the original's `masked_lm_prob` and `do_whole_word_mask` among them, are `masking.config.MaskingFlags`).

    ``output_file`` is a comma-separated list of shard paths, or ``PATH@N`` for the N shards
    ``PATH-00000-of-0000N`` ... ``PATH-0000{N-1}-of-0000N``.
    """

    input_file: str | Sequence[str] = field(
        path="patterns", help="Input text files: a comma-separated list of paths and glob patterns."
    )
    output_file: str | Sequence[str] = field(
        path="paths", help="Output TFRecord files: a comma-separated list, or PATH@N for N shards PATH-0000i-of-0000N."
    )
    vocab_file: str = field(path="path", help="The vocabulary file that the BERT model was trained on.")
    do_lower_case: bool = field(True, help="Lower-case the input (True for uncased models, False for cased).")
    max_seq_length: int = field(
        DEFAULT_SEQ_LENGTH, minimum=5, help="Maximum sequence length ([CLS] A [SEP] B [SEP] at least)."
    )
    max_predictions_per_seq: int = field(20, minimum=1, help="Maximum number of masked-LM predictions per sequence.")
    random_seed: int = field(12345, help="Random seed for data generation.")
    dupe_factor: int = field(10, minimum=1, help="Number of passes over the input (each with different masks).")
    short_seq_prob: float = field(
        0.1, minimum=0, maximum=1, help="Probability of a shorter target length for a document."
    )
    # ---
    max_ngram_size: int = field(
        1, minimum=1, help="Mask spans of up to this many words (ALBERT n-gram masking, P(n) ~ 1/n)."
    )
    use_next_sentence_label: bool = field(
        True,
        help=(
            "Write next_sentence_labels. False gives MLM-only records of contiguous text: B always continues A (no "
            "random next segments)."
        ),
    )
    static_masking: bool = field(
        True, help="Mask here. False writes unmasked records for on-the-fly masking (masking.rule.dynamic_masking)."
    )
    gzip: bool = field(False, help="Write gzip-compressed TFRecords (read with compression_type='GZIP').")
    num_workers: int = field(0, minimum=0, help="Worker processes (0: all cores). The output does not depend on it.")
    unit_mb: float = field(
        4.0,
        exclusive_minimum=0,
        help=(
            "Size of the independent work units (at least two documents each; the shard count does not change them); "
            "the random next document and the instance shuffle are drawn within a unit, and a worker holds one unit in "
            "memory."
        ),
    )
    max_line_bytes: int = field(
        1 << 20, minimum=1, help="Longer lines are an error (or skipped with --skip_bad_lines)."
    )
    skip_bad_lines: bool = field(False, help="Count and skip lines that are not UTF-8 or too long, instead of failing.")
    stats_file: str | None = field(None, path="path", help="Statistics JSON (default: next to the output).")
    reference_order: bool = field(
        False,
        help=(
            "Single process, whole corpus in memory, the original script's exact random stream (slow; for comparisons "
            "with the original)."
        ),
    )


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(PretrainingDataConfig)}


def setting_default(name: str):
    """The default of field `name` (``dataclasses.MISSING`` for a required one or a name that is not a field).

    An output written before a flag existed was written with that flag's default: every new flag defaults to the
    earlier behaviour, so the shards of an older version still count as complete (`outputs.shard_state`)."""
    return _DEFAULTS.get(name, dataclasses.MISSING)


def validate_config(config: PretrainingDataConfig) -> None:
    """Refuses flags that cannot give correct records together, naming each; runs before any file or folder is made.
    Each field's own range is checked when the config is made (`config_flags.CheckedConfig`)."""
    c = config
    problems = []

    def check(ok: bool, flag: str, value, why: str) -> None:
        if not ok:
            problems.append(f"--{flag}={value}: {why}")

    problems.extend(masking_config_lib.action_rate_problems(c.mask_token_prob, c.random_token_prob))
    for name in ("mask_token_prob", "random_token_prob"):
        check(
            c.static_masking or getattr(c, name) == _DEFAULTS[name],
            name,
            getattr(c, name),
            "--static_masking=false writes records without masks; choose the rates of on-the-fly masking with "
            "run_pretraining's --dynamic_masking",
        )
    if c.reference_order:
        check(
            c.max_ngram_size == 1,
            "max_ngram_size",
            c.max_ngram_size,
            "--reference_order reproduces the original script, which has no n-gram masking; use 1",
        )
    else:
        check(c.random_seed >= 0, "random_seed", c.random_seed, "must be >= 0 (it seeds numpy's SeedSequence)")
    if problems:
        raise InputError("; ".join(problems))


def load_checked_vocab(config: PretrainingDataConfig) -> dict:
    from official.nlp.tokenizers import tokenization

    vocab = tokenization.load_vocab(config.vocab_file)
    tokenization.validate_vocab(vocab, do_lower_case=config.do_lower_case, source=config.vocab_file)
    return vocab


def masking_config(config: PretrainingDataConfig, vocab: dict) -> masking_config_lib.MaskingConfig:
    return config.masking_config(
        vocab, max_predictions_per_seq=config.max_predictions_per_seq, max_ngram_size=config.max_ngram_size
    )
