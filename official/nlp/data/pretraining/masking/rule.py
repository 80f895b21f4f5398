"""Masked-LM masking: one numpy implementation for the offline generator and for on-the-fly (dynamic) masking.

The rule is the original google-research/bert one (`create_masked_lm_predictions`):

* Candidates are the real tokens (``input_mask == 1``) other than the special ids (``[CLS]``, ``[SEP]``).
  With whole-word masking a ``##`` piece joins the unit of the candidate before it, so a word is masked
  entirely or not at all.
* ``num_to_predict = min(max_predictions_per_seq, max(1, round(len(tokens) * masked_lm_prob)))`` where
  ``len(tokens)`` counts every real token, special ones included, and ``round`` is round-half-even.
* Units are visited in random order. A unit is taken if it still fits in the budget and overlaps nothing taken;
  otherwise it is skipped (a whole word is never cut to fit).
* Each taken token becomes ``[MASK]`` with probability 0.8, stays as it is with 0.1 and becomes a uniformly random
  vocabulary id with 0.1 (the model cannot rely on ``[MASK]`` being present at fine-tuning time, and must keep a
  representation of every input token because any of them may be a target). ``mask_token_prob`` and
  ``random_token_prob`` (`masking.config.MaskingConfig`) change the 0.8 and the second 0.1 (the rest keeps the
  token), for the paper's ablation of this rule (Appendix C.2, Table 8); the draws stay the same, so the default
  rates give the original's masks.
* ``max_ngram_size > 1`` adds n-gram masking as in ALBERT: from each visited start unit, a span of ``n`` units with
  ``P(n) ~ 1/n`` is tried, falling back to shorter spans when the budget is nearly spent.

Why numpy and not TF ops: the offline generator's worker processes must stay TensorFlow-free (an import costs
~600 MB and 5 s per process, and TF threads make forking unsafe), and a rule written twice drifts. numpy over a
whole batch is also fast (a few microseconds per sequence). The dynamic path calls the same function through
`tf.numpy_function`, once per batch when applied after `batch()`.

Example:

  >>> import numpy as np
  >>> cfg = MaskingConfig(vocab_size=100, mask_token_id=4, special_token_ids=(2, 3), max_predictions_per_seq=3)
  >>> ids = np.array([[2, 10, 11, 12, 13, 3, 0, 0]])
  >>> out = mask_batch(ids, (ids != 0).astype(np.int64), np.random.default_rng(0), cfg)
  >>> int(out["masked_lm_weights"].sum())   # round(6 * 0.15) = 1
  1
"""

from __future__ import annotations

import numpy as np

from official.nlp.data.pretraining.masking.config import MaskingConfig

MASK, KEEP, RANDOM = 0, 1, 2  # The three actions on a selected token.


def num_to_predict(lengths: np.ndarray, config: MaskingConfig) -> np.ndarray:
    """``min(max_predictions_per_seq, max(1, round(length * masked_lm_prob)))``, round-half-even as in Python."""
    k = np.rint(np.asarray(lengths, dtype=np.float64) * config.masked_lm_prob).astype(np.int64)
    return np.minimum(config.max_predictions_per_seq, np.maximum(1, k))


def candidates(ids: np.ndarray, input_mask: np.ndarray, config: MaskingConfig) -> np.ndarray:
    """[N, L] bool: the positions that may be masked (real tokens other than the special ids)."""
    cand = np.asarray(input_mask) != 0
    for special in config.special_token_ids:  # Two ids: comparisons beat np.isin's sort.
        cand &= ids != special
    return cand


def candidate_units(ids: np.ndarray, input_mask: np.ndarray, config: MaskingConfig) -> np.ndarray:
    """Unit index of each position ([N, L], -1 where not a candidate); units are numbered 0.. left to right."""
    cand = candidates(ids, input_mask, config)
    start = cand
    if config.whole_word_mask:
        cont = config.continuation[np.clip(ids, 0, len(config.continuation) - 1)] & (ids < len(config.continuation))
        # A ## piece opens a new unit only when it is the row's first candidate (as in the original).
        seen_before = (np.cumsum(cand, axis=1) - cand) > 0
        start = cand & ~(cont & seen_before)
    unit = np.cumsum(start, axis=1) - 1
    return np.where(cand, unit, -1)


def ngram_probabilities(max_ngram_size: int) -> np.ndarray:
    p = 1.0 / np.arange(1, max_ngram_size + 1)
    return p / p.sum()


def select_positions(
    unit: np.ndarray,
    k: np.ndarray,
    priorities: np.ndarray,
    config: MaskingConfig,
    ngram_sizes: np.ndarray | None = None,
    need_order: bool = False,
) -> np.ndarray:
    """Runs the greedy selection; returns each position's selection step ([N, L], -1 if not selected).

    Args:
      unit: [N, L] from `candidate_units`.
      k: [N] budget from `num_to_predict`.
      priorities: [N, L] visiting order keys; unit ``u`` of row ``r`` is visited in the order of
        ``priorities[r, u]`` (ascending; only the first ``num_units`` columns are read).
      config: the masking config.
      ngram_sizes: [N, L] the n drawn for the unit visited at each step (n-gram masking only).
      need_order: compute the taking steps even where the set alone is defined without them (single-token
        units); otherwise every taken position may report step 0.

    Returns:
      [N, L] int: the step at which each position's unit was taken (tokens taken in one step are masked in
      position order), -1 if not taken. Taking order matters only for reproducing the original's random draws.
    """
    n, length = unit.shape
    num_units = unit.max(axis=1, initial=-1) + 1
    width = int(num_units.max(initial=0))
    if width == 0:
        return np.full(unit.shape, -1, dtype=np.int64)
    rows = np.arange(n)
    exists = np.arange(width)[None, :] < num_units[:, None]
    keys = np.where(exists, priorities[:, :width], np.inf)
    cand = unit >= 0
    single_token_units = not config.whole_word_mask and config.max_ngram_size == 1
    if single_token_units and not need_order:
        step = np.full(unit.shape, -1, dtype=np.int64)
        step.reshape(-1)[select_single_tokens(cand, k, priorities)[0]] = 0
        return step
    order = np.argsort(keys, axis=1, kind="stable")
    if single_token_units:
        # Every unit is one token and units never overlap: the first k visited units are taken.
        step = np.empty_like(order)
        step[rows[:, None], order] = np.arange(width)[None, :]
        taken = step < k[:, None]
        unit_step = np.where(taken & exists, step, -1)
    else:
        sizes = np.zeros((n, width + 1), dtype=np.int64)
        np.add.at(sizes, (np.repeat(rows, cand.sum(axis=1)), unit[cand]), 1)
        csum = np.concatenate([np.zeros((n, 1), dtype=np.int64), np.cumsum(sizes[:, :width], axis=1)], axis=1)
        unit_step = np.full((n, width + 1), -1, dtype=np.int64)  # Column `width` is a sentinel, never taken.
        count = np.zeros(n, dtype=np.int64)
        max_n = config.max_ngram_size
        for r in range(width):
            active = (count < k) & (r < num_units)
            if not active.any():
                break
            u = order[:, r]
            n_drawn = ngram_sizes[:, r] if ngram_sizes is not None and max_n > 1 else np.ones(n, dtype=np.int64)
            chosen = np.zeros(n, dtype=np.int64)  # Span length in units, 0 = skip.
            for span in range(1, max_n + 1):
                end = np.minimum(u + span, num_units)
                fits = (count + csum[rows, end] - csum[rows, u]) <= k
                chosen = np.where((span <= n_drawn) & fits, span, chosen)
            ok = active & (chosen > 0)
            for off in range(max_n):
                col = np.minimum(u + off, width)
                inside = (off < chosen) & (u + off < num_units)
                ok &= ~(inside & (unit_step[rows, col] >= 0))
            for off in range(max_n):
                inside = ok & (off < chosen) & (u + off < num_units)
                unit_step[rows[inside], (u + off)[inside]] = r
            end = np.minimum(u + chosen, num_units)
            count += np.where(ok, csum[rows, end] - csum[rows, u], 0)
        unit_step = unit_step[:, :width]
    return np.where(cand, unit_step[rows[:, None], np.maximum(unit, 0)], -1)


def select_single_tokens(cand: np.ndarray, k: np.ndarray, priorities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`select_positions` for the BERT rule (one token per unit, no order needed), from the candidates alone.

    Candidate ``j`` of a row (left to right) is visited in the order of ``priorities[r, j]``, and the first ``k``
    visited are taken: the ``k`` smallest keys, found by a partition. Works on the candidates' flat positions
    throughout, without the [N, L] unit numbering (a quarter of the masking's time went to building and reading it).

    Returns (the flat positions taken, ascending, [S]; how many in each row, [N]).
    """
    num_units = cand.sum(axis=1)
    width = int(num_units.max(initial=0))
    if width == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(len(cand), dtype=np.int64)
    exists = np.arange(width)[None, :] < num_units[:, None]
    own = priorities[:, :width]
    kmax = int(min(k.max(initial=1), width))
    smallest = np.sort(np.partition(np.where(exists, own, np.inf), kmax - 1, axis=1)[:, :kmax], axis=1)
    threshold = smallest[np.arange(len(cand)), np.minimum(k, kmax) - 1]
    taken = (own <= threshold[:, None]) & exists
    # Row-major, the existing units are the candidates in order: compacting both lines them up.
    return np.flatnonzero(cand)[taken[exists]], taken.sum(axis=1)


def draw_actions(
    rng: np.random.Generator, count: int, vocab_size: int, mask_token_prob: float = 0.8, keep_given_not_masked=0.5
) -> tuple[np.ndarray, np.ndarray]:
    """Actions (80/10/10 by default) and replacement ids for ``count`` selected tokens: the same draws whatever
    the rates, so the default rates give the records of the original rule."""
    u = rng.random((2, count))
    actions = np.where(u[0] < mask_token_prob, MASK, np.where(u[1] < keep_given_not_masked, KEEP, RANDOM))
    return actions.astype(np.int8), rng.integers(0, vocab_size, count)


def apply_masking(
    ids: np.ndarray, selected: np.ndarray, actions: np.ndarray, replacement: np.ndarray, config: MaskingConfig
) -> dict:
    """Applies the actions to the selected tokens and builds the ``masked_lm_*`` features.

    Args:
      ids: [N, L] token ids.
      selected: [N, L] bool, the positions to predict (at most `max_predictions_per_seq` per row).
      actions: [S] MASK/KEEP/RANDOM for the selected positions in row-major order.
      replacement: [S] the random ids used where the action is RANDOM.
      config: the masking config.
    """
    return apply_at(ids, np.flatnonzero(selected), selected.sum(axis=1), actions, replacement, config)


def apply_at(
    ids: np.ndarray,
    flat: np.ndarray,
    counts: np.ndarray,
    actions: np.ndarray,
    replacement: np.ndarray,
    config: MaskingConfig,
) -> dict:
    """`apply_masking` with the selected positions given as flat indices into ``ids`` (ascending, [S]) and their
    count per row ([N])."""
    n = len(ids)
    p = config.max_predictions_per_seq
    # Flat indices throughout: a take or put on a flat index is much cheaper than indexing by a pair of arrays.
    rows, cols = np.divmod(flat, max(ids.shape[1], 1))
    masked = np.array(ids, copy=True, order="C")  # C order: the flat view below must be a view
    labels = ids.reshape(-1).take(flat)
    masked.reshape(-1)[flat] = np.where(
        actions == MASK, config.mask_token_id, np.where(actions == RANDOM, replacement, labels)
    )
    if counts.size and int(counts.max()) > p:
        raise ValueError(f"{int(counts.max())} positions selected, more than max_predictions_per_seq={p}")
    slot = rows * p + (np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts))
    positions = np.zeros((n, p), dtype=ids.dtype)
    label_ids = np.zeros((n, p), dtype=ids.dtype)
    weights = np.zeros((n, p), dtype=np.float32)
    positions.reshape(-1)[slot] = cols
    label_ids.reshape(-1)[slot] = labels
    weights.reshape(-1)[slot] = 1.0
    return {
        "input_ids": masked,
        "masked_lm_positions": positions,
        "masked_lm_ids": label_ids,
        "masked_lm_weights": weights,
        "actions": actions,
    }


def mask_batch(ids: np.ndarray, input_mask: np.ndarray, rng: np.random.Generator, config: MaskingConfig) -> dict:
    """Masks a batch ([N, L] ids and mask) with fresh draws from ``rng``.

    Returns a dict with the masked ``input_ids`` and ``masked_lm_positions``, ``masked_lm_ids``,
    ``masked_lm_weights`` ([N, max_predictions_per_seq]), plus ``actions`` ([S] int8, the action per prediction in
    row-major order) for statistics.
    """
    ids = np.asarray(ids)
    k = num_to_predict(np.asarray(input_mask).sum(axis=1), config)
    if not config.whole_word_mask and config.max_ngram_size == 1:
        priorities = rng.random(ids.shape)
        flat, counts = select_single_tokens(candidates(ids, input_mask, config), k, priorities)
        actions, replacement = draw_actions(
            rng, len(flat), config.vocab_size, config.mask_token_prob, config.keep_given_not_masked
        )
        return apply_at(ids, flat, counts, actions, replacement, config)
    unit = candidate_units(ids, input_mask, config)
    priorities = rng.random(ids.shape)
    ngram_sizes = None
    if config.max_ngram_size > 1:
        ngram_sizes = rng.choice(
            np.arange(1, config.max_ngram_size + 1), size=ids.shape, p=ngram_probabilities(config.max_ngram_size)
        )
    selected = select_positions(unit, k, priorities, config, ngram_sizes) >= 0
    actions, replacement = draw_actions(
        rng, int(selected.sum()), config.vocab_size, config.mask_token_prob, config.keep_given_not_masked
    )
    return apply_masking(ids, selected, actions, replacement, config)


def dynamic_masking(dataset, config: MaskingConfig, seed: int | None = None):
    """Masks a `tf.data.Dataset` on the fly, with new masks on every pass over it (RoBERTa-style).

    Args:
      dataset: elements are dicts with ``input_ids``, ``input_mask``, ``segment_ids`` (and optionally
        ``next_sentence_labels`` or anything else, passed through), either single sequences ``[L]`` or batches
        ``[B, L]``. Apply it after ``batch()``: the numpy work then runs once per batch.
      config: the masking rule (`MaskingConfig.from_vocab(vocab, max_predictions_per_seq=...)`).
      seed: with a seed the masks are reproducible: pass ``e`` of a fresh iteration gets the same masks as pass
        ``e`` of any other run, and each pass differs from the previous one. None draws a random seed.

    Returns:
      A dataset whose elements hold the original feature set: ``input_ids`` (masked), ``input_mask``,
      ``segment_ids``, ``masked_lm_positions``, ``masked_lm_ids`` (same dtype as ``input_ids``),
      ``masked_lm_weights`` (float32), plus the passed-through features.

    Example:

      >>> import tensorflow as tf
      >>> cfg = MaskingConfig(vocab_size=100, mask_token_id=4, special_token_ids=(2, 3), max_predictions_per_seq=2)
      >>> ds = tf.data.Dataset.from_tensors({"input_ids": tf.constant([[2, 10, 11, 12, 3]]),
      ...                                     "input_mask": tf.ones([1, 5], tf.int32),
      ...                                     "segment_ids": tf.zeros([1, 5], tf.int32)})
      >>> sorted(next(iter(dynamic_masking(ds, cfg, seed=1))))
      ['input_ids', 'input_mask', 'masked_lm_ids', 'masked_lm_positions', 'masked_lm_weights', 'segment_ids']
    """
    import tensorflow as tf  # Local import: the rest of this module serves TensorFlow-free worker processes.

    p = config.max_predictions_per_seq

    def _mask(ids, input_mask, element_seed):
        rng = np.random.default_rng(np.uint64(element_seed))
        squeeze = ids.ndim == 1
        if squeeze:
            ids, input_mask = ids[None], input_mask[None]
        out = mask_batch(ids, input_mask, rng, config)
        res = (
            out["input_ids"],
            out["masked_lm_positions"].astype(ids.dtype),
            out["masked_lm_ids"].astype(ids.dtype),
            out["masked_lm_weights"],
        )
        return tuple(x[0] for x in res) if squeeze else res

    def _fn(element, element_seed):
        ids = element["input_ids"]
        masked, positions, label_ids, weights = tf.numpy_function(
            _mask,
            [ids, element["input_mask"], element_seed],
            [ids.dtype, ids.dtype, ids.dtype, tf.float32],
            stateful=False,
        )
        lead = ids.shape[:-1]
        out = dict(element)
        out["input_ids"] = tf.ensure_shape(masked, ids.shape)
        out["masked_lm_positions"] = tf.ensure_shape(positions, lead + [p])
        out["masked_lm_ids"] = tf.ensure_shape(label_ids, lead + [p])
        out["masked_lm_weights"] = tf.ensure_shape(weights, lead + [p])
        return out

    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
    return tf.data.Dataset.zip((dataset, seeds)).map(_fn, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
