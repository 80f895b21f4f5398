"""The masking settings: the flags of the jobs that mask (`MaskingFlags`), and what the rule needs to know
(`MaskingConfig`), with the rates of its three actions checked.

The rule itself is `masking.rule`'s (see there): both the offline generator and on-the-fly masking take a
`MaskingConfig`. ``mask_token_prob`` and ``random_token_prob`` change the original's 0.8 and 0.1 for the paper's
ablation of the rule (Appendix C.2, Table 8).

Example:

  >>> cfg = MaskingConfig.from_vocab({"[CLS]": 0, "[SEP]": 1, "[MASK]": 2, "a": 3, "##b": 4},
  ...                                max_predictions_per_seq=2, whole_word_mask=True)
  >>> cfg.mask_token_id, cfg.special_token_ids, cfg.continuation.tolist()
  (2, (0, 1), [False, False, False, False, True])
  >>> cfg.keep_given_not_masked   # P(keep | not [MASK]) with the default 80/10/10
  0.5
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np

from official.nlp.common.config_flags import field
from official.nlp.common.errors import InputError


@dataclasses.dataclass(kw_only=True)
class MaskingFlags:
    """The masking flags, defined once: `create_pretraining_data` masks with them, `run_pretraining` with
    `--dynamic_masking` (the names are the original script's: `--masked_lm_prob`, `--do_whole_word_mask`). A job's
    config dataclass inherits them; `masking_config` turns them into the `MaskingConfig` the masker takes."""

    masked_lm_prob: float = field(
        0.15,
        exclusive_minimum=0,
        maximum=1,
        help="Masked-LM probability: the share of the tokens predicted (run_pretraining: with --dynamic_masking).",
    )
    do_whole_word_mask: bool = field(
        False, help="Mask whole words rather than single WordPiece tokens (run_pretraining: with --dynamic_masking)."
    )
    mask_token_prob: float = field(
        0.8,
        minimum=0,
        maximum=1,
        help="Share of the masked-LM targets replaced by [MASK] (the paper's MASK column of Table 8).",
    )
    random_token_prob: float = field(
        0.1,
        minimum=0,
        maximum=1,
        help=(
            "Share of the masked-LM targets replaced by a random token (RND); the rest, 1 - mask_token_prob - "
            "random_token_prob, keep their token (SAME)."
        ),
    )

    def masking_config(
        self, vocab: Mapping[str, int], *, max_predictions_per_seq: int, max_ngram_size: int = 1
    ) -> MaskingConfig:
        """The `MaskingConfig` of these flags over a token -> id vocabulary."""
        return MaskingConfig.from_vocab(
            vocab,
            max_predictions_per_seq=max_predictions_per_seq,
            masked_lm_prob=self.masked_lm_prob,
            whole_word_mask=self.do_whole_word_mask,
            max_ngram_size=max_ngram_size,
            mask_token_prob=self.mask_token_prob,
            random_token_prob=self.random_token_prob,
        )


@dataclasses.dataclass(frozen=True)
class MaskingConfig:
    """What the masking rule needs to know.

    Attributes:
      vocab_size: random replacements are drawn uniformly from ``[0, vocab_size)`` (as the original does, over the
        whole vocabulary).
      mask_token_id: id of ``[MASK]``.
      special_token_ids: ids never masked (``[CLS]``, ``[SEP]``); padding is excluded through ``input_mask``.
      max_predictions_per_seq: the cap on predictions per sequence and the length of the ``masked_lm_*`` features.
      masked_lm_prob: target share of tokens to predict.
      whole_word_mask: mask whole words (a ``##`` piece joins the unit before it).
      continuation: bool table over the vocabulary, True for ``##`` pieces; needed for whole-word masking.
      max_ngram_size: 1 for the BERT rule; larger for ALBERT-style n-gram masking.
      mask_token_prob: share of the taken tokens replaced by ``[MASK]`` (0.8 in the original).
      random_token_prob: share replaced by a random id (0.1); the rest, ``1 - mask - random``, stays as it is.
    """

    vocab_size: int
    mask_token_id: int
    special_token_ids: Sequence[int]
    max_predictions_per_seq: int
    masked_lm_prob: float = 0.15
    whole_word_mask: bool = False
    continuation: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)
    max_ngram_size: int = 1
    mask_token_prob: float = 0.8
    random_token_prob: float = 0.1

    def __post_init__(self):
        problems = action_rate_problems(self.mask_token_prob, self.random_token_prob)
        if problems:
            raise InputError("; ".join(problems))
        if not 0.0 <= self.masked_lm_prob <= 1.0:
            raise InputError(f"masked_lm_prob must be in [0, 1], got {self.masked_lm_prob}")
        if self.max_predictions_per_seq < 1:
            raise InputError(f"max_predictions_per_seq must be >= 1, got {self.max_predictions_per_seq}")
        if self.max_ngram_size < 1:
            raise InputError(f"max_ngram_size must be >= 1, got {self.max_ngram_size}")
        if self.whole_word_mask and self.continuation is None:
            raise InputError("whole_word_mask needs the `continuation` table; build the config with from_vocab()")

    @classmethod
    def from_vocab(
        cls,
        vocab: Mapping[str, int],
        *,
        max_predictions_per_seq: int,
        masked_lm_prob: float = 0.15,
        whole_word_mask: bool = False,
        max_ngram_size: int = 1,
        mask_token_prob: float = 0.8,
        random_token_prob: float = 0.1,
    ) -> MaskingConfig:
        """Builds the config from a token -> id vocabulary (e.g. `tokenization.load_vocab(path)`)."""
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
        if missing:
            raise InputError(f"the vocabulary lacks {missing}; masking needs [CLS], [SEP] and [MASK]")
        size = max(vocab.values()) + 1
        continuation = np.zeros(size, dtype=bool)
        for token, i in vocab.items():
            if token.startswith("##"):
                continuation[i] = True
        return cls(
            vocab_size=len(vocab),
            mask_token_id=vocab["[MASK]"],
            special_token_ids=(vocab["[CLS]"], vocab["[SEP]"]),
            max_predictions_per_seq=max_predictions_per_seq,
            masked_lm_prob=masked_lm_prob,
            whole_word_mask=whole_word_mask,
            continuation=continuation,
            max_ngram_size=max_ngram_size,
            mask_token_prob=mask_token_prob,
            random_token_prob=random_token_prob,
        )

    @property
    def keep_given_not_masked(self) -> float:
        """P(keep | not [MASK]): the second draw's threshold (KEEP below it, RANDOM above), 0.5 by default."""
        return keep_share(self.mask_token_prob, self.random_token_prob)


def action_rate_problems(mask_token_prob: float, random_token_prob: float) -> list[str]:
    """What is wrong with the two rates, one ``--flag=value: why`` each (empty when they are fine)."""
    problems = [
        f"--{name}={value}: must be a probability in [0, 1]"
        for name, value in (("mask_token_prob", mask_token_prob), ("random_token_prob", random_token_prob))
        if not (isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= 1.0)
    ]
    if not problems and Fraction(repr(float(mask_token_prob))) + Fraction(repr(float(random_token_prob))) > 1:
        problems.append(
            f"--mask_token_prob={mask_token_prob} and --random_token_prob={random_token_prob} add up to more than 1 "
            "(the rest, 1 minus both, is the share kept as it is); lower one of them"
        )
    return problems


def keep_share(mask_token_prob: float, random_token_prob: float) -> float:
    """keep / (keep + random), with the rates taken as the decimals they print as: in floats, 0.1 / (1 - 0.8) is
    0.49999999999999983, and the default rule's threshold must be exactly the original's 0.5."""
    mask, random_ = Fraction(repr(float(mask_token_prob))), Fraction(repr(float(random_token_prob)))
    not_masked = 1 - mask
    return float((not_masked - random_) / not_masked) if not_masked > 0 else 0.0
