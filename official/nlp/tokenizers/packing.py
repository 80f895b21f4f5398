"""The original's rule for cutting a pair of segments to fit a sequence, in Python: `truncate_seq_pair` removes one
token at a time from the longer segment (B on ties). Every packer of a pair uses it: the pretraining-data generator,
classification, SWAG and feature extraction features (the in-graph packer has its tensor form,
`text_layers.truncated_pair_lengths`).
"""

from __future__ import annotations


def removal_counts(len_a: int, len_b: int, max_num_tokens: int) -> tuple[int, int]:
    """How many tokens the original's ``truncate_seq_pair`` removes from A and from B to fit ``max_num_tokens``.

    It removes one token at a time from the longer segment (B on ties): first the longer one alone until the two
    are equal, then B and A in turn. Closed form, because the planning loop calls it for every long instance.
    """
    excess = len_a + len_b - max_num_tokens
    if excess <= 0:
        return 0, 0
    first = min(excess, abs(len_a - len_b))
    rest = excess - first
    from_a = (first if len_a > len_b else 0) + rest // 2
    return from_a, excess - from_a


def removal_steps(len_a: int, len_b: int, max_num_tokens: int) -> list[int]:
    """The segment of each removal of ``truncate_seq_pair``, in order (0: A, 1: B); see `removal_counts`."""
    excess = max(len_a + len_b - max_num_tokens, 0)
    first = min(excess, abs(len_a - len_b))
    rest = excess - first
    return [0 if len_a > len_b else 1] * first + [1, 0] * (rest // 2) + [1] * (rest % 2)
