import random

from official.nlp.data.pretraining import instances as instances
from official.nlp.tasks.feature_extraction import truncate_seq_pair
from official.nlp.tokenizers import packing


def _original_truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """google-research/bert create_pretraining_data.truncate_seq_pair, transcribed as the reference."""
    while True:
        total_length = len(tokens_a) + len(tokens_b)
        if total_length <= max_num_tokens:
            break
        trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        assert len(trunc_tokens) >= 1
        if rng.random() < 0.5:
            del trunc_tokens[0]
        else:
            trunc_tokens.pop()


def test_closed_form_truncation_equals_the_original_loop():
    for len_a in range(0, 24):
        for len_b in range(0, 24):
            for max_num_tokens in range(0, 50):
                a, b = list(range(len_a)), list(range(100, 100 + len_b))
                _original_truncate_seq_pair(a, b, max_num_tokens, random.Random(len_a * 10_000 + len_b))
                want = (a, b)
                # The same random stream through ReferenceDraws gives the same kept ranges.
                draws = instances.ReferenceDraws(random.Random(len_a * 10_000 + len_b))
                cut_a, cut_b = packing.removal_counts(len_a, len_b, max_num_tokens)
                assert (cut_a, cut_b) == (len_a - len(want[0]), len_b - len(want[1]))
                if cut_a + cut_b:
                    front_a, front_b = draws.trim_fronts(len_a, len_b, max_num_tokens)
                    assert list(range(front_a, len_a - (cut_a - front_a))) == want[0]
                    assert list(range(100 + front_b, 100 + len_b - (cut_b - front_b))) == want[1]
                steps = packing.removal_steps(len_a, len_b, max_num_tokens)
                assert len(steps) == cut_a + cut_b and steps.count(0) == cut_a
                # Feature extraction keeps the front of each segment (the original's classifier truncation).
                a, b = list(range(len_a)), list(range(len_b))
                truncate_seq_pair(a, b, max_num_tokens)
                assert (a, b) == (list(range(len_a - cut_a)), list(range(len_b - cut_b)))


def test_fast_draws_take_the_same_number_of_tokens():
    draws = instances.FastDraws(random.Random(0))
    fronts = [draws.trim_fronts(40, 10, 20) for _ in range(2000)]
    assert packing.removal_counts(40, 10, 20) == (30, 0)
    assert all(0 <= a <= 30 and b == 0 for a, b in fronts)
    assert abs(sum(a for a, _ in fronts) / len(fronts) - 15) < 0.5  # Front or back with probability 1/2 each.
