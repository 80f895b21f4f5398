"""The check that a model is left-to-right, shared by the tests of every job that loads one: change the token at
position j and compare the per-position outputs before and after."""

from __future__ import annotations

import numpy as np

from official.nlp.training import distribution


def change_token(ids: np.ndarray, j: int) -> np.ndarray:
    """`ids` with another token id at position j of every row (5 <-> 6, else 5)."""
    ids = np.array(ids)
    ids[:, j] = np.where(ids[:, j] == 5, 6, 5)
    return ids


def assert_left_to_right(before, after, j: int, real=None) -> None:
    """`before`/`after`: `[batch, seq, ...]` outputs for inputs that differ at position j only. Every position before
    j is exactly unchanged; every position from j on changes (where `real` `[batch, seq]` says it is a real token)."""
    before, after = np.asarray(before, np.float64), np.asarray(after, np.float64)
    change = np.abs(after - before).reshape(before.shape[0], before.shape[1], -1).max(-1)
    assert (change[:, :j] == 0).all(), f"positions before {j} changed by up to {change[:, :j].max()}"
    later = change[:, j:] > 0
    if real is not None:
        later |= ~np.asarray(real, bool)[:, j:]
    assert later.all(), f"positions from {j} on did not all change: {change[:, j:]}"


def with_the_same_dropout(model, forward, *inputs) -> list:
    """`forward(x)` for each x of `inputs`, every call drawing the same dropout masks: the model's seed-generator
    states are put back before each call (after the last one they go on, so the next call draws new masks).
    Dropout must be live in `forward` (training=True)."""
    states = distribution.seed_generator_states(model)
    assert states, "the model has no dropout to hold fixed"
    saved = [state.numpy() for state in states]
    outputs = []
    for x in inputs:
        for state, value in zip(states, saved):
            state.assign(value)
        outputs.append(np.asarray(forward(x)))
    return outputs
