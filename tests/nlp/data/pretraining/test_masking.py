import random

import numpy as np
import pytest

from official.nlp.data.pretraining.masking import rule as masking
from official.nlp.data.pretraining.masking.config import MaskingConfig
from official.nlp.tokenizers import tokenization

VOCAB = {
    t: i
    for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "##x", "##y", "d", "##z", "e"])
}


def _original_selection(tokens, order_of_units, k, whole_word):
    """The original loop over string tokens (google-research/bert create_masked_lm_predictions), given the
    shuffled candidate order; returns the taken indexes in taking order."""
    cand = []
    for i, t in enumerate(tokens):
        if t in ("[CLS]", "[SEP]"):
            continue
        if whole_word and cand and t.startswith("##"):
            cand[-1].append(i)
        else:
            cand.append([i])
    cand = [cand[u] for u in order_of_units]
    taken, covered = [], set()
    for index_set in cand:
        if len(taken) >= k:
            break
        if len(taken) + len(index_set) > k:
            continue
        if any(i in covered for i in index_set):
            continue
        for i in index_set:
            covered.add(i)
            taken.append(i)
    return taken


@pytest.mark.parametrize("whole_word", [False, True])
def test_selection_matches_the_original_loop(whole_word):
    cfg = MaskingConfig.from_vocab(VOCAB, max_predictions_per_seq=7, masked_lm_prob=0.3, whole_word_mask=whole_word)
    rng = random.Random(0)
    words = [t for t in VOCAB if not t.startswith("[")]
    for _ in range(300):
        n_a, n_b = rng.randint(1, 12), rng.randint(1, 12)
        tokens = (
            ["[CLS]"]
            + [rng.choice(words) for _ in range(n_a)]
            + ["[SEP]"]
            + [rng.choice(words) for _ in range(n_b)]
            + ["[SEP]"]
        )
        ids = np.array([[VOCAB[t] for t in tokens] + [0] * 5])
        mask = (np.arange(ids.shape[1]) < len(tokens)).astype(np.int64)[None]
        unit = masking.candidate_units(ids, mask, cfg)
        num_units = unit.max() + 1
        shuffled = list(range(num_units))
        rng.shuffle(shuffled)
        priorities = np.zeros(ids.shape)
        priorities[0, shuffled] = np.arange(num_units)
        k = masking.num_to_predict(mask.sum(1), cfg)
        step = masking.select_positions(unit, k, priorities, cfg, need_order=True)[0]
        fast = masking.select_positions(unit, k, priorities, cfg)[0]
        np.testing.assert_array_equal(fast >= 0, step >= 0)
        ours = sorted(np.nonzero(step >= 0)[0].tolist(), key=lambda p: (step[p], p))
        assert ours == _original_selection(tokens, shuffled, int(k[0]), whole_word)


def test_num_to_predict_rounds_half_to_even_and_caps():
    cfg = MaskingConfig(vocab_size=10, mask_token_id=4, special_token_ids=(2, 3), max_predictions_per_seq=20)
    lengths = np.array([1, 3, 10, 30, 50, 128, 512])
    expected = [min(20, max(1, int(round(n * 0.15)))) for n in lengths]
    assert masking.num_to_predict(lengths, cfg).tolist() == expected == [1, 1, 2, 4, 8, 19, 20]


def _real_ids(shared_data, vocab, n=2000, length=128):
    tok = tokenization.FullTokenizer(str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"))
    lines = (shared_data / "pretraining_golden" / "squad_contexts.txt").read_text().split("\n")[:800]
    flat = [i for line in lines for i in tok.convert_tokens_to_ids(tok.tokenize(line))]
    rng = np.random.default_rng(0)
    starts = rng.integers(0, len(flat) - length, n)
    ids = np.array([[vocab["[CLS]"]] + flat[s : s + length - 2] + [vocab["[SEP]"]] for s in starts])
    lengths = rng.integers(5, length + 1, n)
    mask = (np.arange(length)[None] < lengths[:, None]).astype(np.int64)
    ids = np.where(mask == 1, ids, 0)
    ids[np.arange(n), lengths - 1] = vocab["[SEP]"]
    return ids, mask, tok


@pytest.mark.parametrize("max_ngram_size", [1, 3])
def test_whole_word_masking_never_masks_part_of_a_word(shared_data, uncased_vocab, max_ngram_size):
    vocab = tokenization.load_vocab(str(uncased_vocab))
    ids, mask, tok = _real_ids(shared_data, vocab)
    cfg = MaskingConfig.from_vocab(
        vocab, max_predictions_per_seq=20, whole_word_mask=True, max_ngram_size=max_ngram_size
    )
    out = masking.mask_batch(ids, mask, np.random.default_rng(1), cfg)
    selected = np.zeros(ids.shape, bool)
    rows = np.repeat(np.arange(len(ids)), 20)
    valid = out["masked_lm_weights"].ravel() > 0
    selected[rows[valid], out["masked_lm_positions"].ravel()[valid]] = True
    multi_piece_words = 0
    for r in range(len(ids)):
        tokens = tok.convert_ids_to_tokens(ids[r, : mask[r].sum()].tolist())
        # Words: a piece not starting with ## and the ## pieces after it (special tokens excluded).
        word = []
        for i, t in enumerate(tokens + ["[SEP]"]):
            if t.startswith("##") and word:
                word.append(i)
                continue
            if word:
                flags = selected[r, word]
                assert flags.all() or not flags.any(), (tokens, word)
                multi_piece_words += len(word) > 1 and flags.all()
            word = [] if t in ("[CLS]", "[SEP]") else [i]
    assert multi_piece_words > 50  # The test saw whole multi-piece words being masked.
    assert (out["masked_lm_weights"].sum(1) <= masking.num_to_predict(mask.sum(1), cfg)).all()


def test_ngram_masking_takes_spans_and_respects_the_budget(shared_data, uncased_vocab):
    vocab = tokenization.load_vocab(str(uncased_vocab))
    ids, mask, _ = _real_ids(shared_data, vocab)
    cfg = MaskingConfig.from_vocab(vocab, max_predictions_per_seq=20, max_ngram_size=3)
    out = masking.mask_batch(ids, mask, np.random.default_rng(2), cfg)
    k = masking.num_to_predict(mask.sum(1), cfg)
    got = out["masked_lm_weights"].sum(1)
    assert (got <= k).all() and (got >= k - 2).mean() > 0.95
    pos = np.where(out["masked_lm_weights"] > 0, out["masked_lm_positions"], -10)
    adjacent = ((np.diff(np.sort(pos, 1), axis=1) == 1) & (np.sort(pos, 1)[:, 1:] >= 0)).sum()
    baseline = masking.mask_batch(
        ids, mask, np.random.default_rng(2), MaskingConfig.from_vocab(vocab, max_predictions_per_seq=20)
    )
    pos1 = np.where(baseline["masked_lm_weights"] > 0, baseline["masked_lm_positions"], -10)
    adjacent1 = ((np.diff(np.sort(pos1, 1), axis=1) == 1) & (np.sort(pos1, 1)[:, 1:] >= 0)).sum()
    assert adjacent > 2 * adjacent1  # Spans make neighbours masked together far more often.


def test_80_10_10_and_labels():
    cfg = MaskingConfig(vocab_size=1000, mask_token_id=4, special_token_ids=(2, 3), max_predictions_per_seq=20)
    rng = np.random.default_rng(3)
    ids = rng.integers(10, 1000, (20000, 64))
    ids[:, 0], ids[:, -1] = 2, 3
    mask = np.ones_like(ids)
    out = masking.mask_batch(ids, mask, rng, cfg)
    acts = out["actions"]
    split = np.bincount(acts, minlength=3) / len(acts)
    np.testing.assert_allclose(split, [0.8, 0.1, 0.1], atol=0.01)
    pos, lab, w = out["masked_lm_positions"], out["masked_lm_ids"], out["masked_lm_weights"]
    rows = np.arange(len(ids))[:, None]
    valid = w > 0
    assert (valid.sum(1) == 10).all()  # round(64 * 0.15) = 10
    np.testing.assert_array_equal(lab[valid], ids[rows, pos][valid])
    assert ((pos[valid] > 0) & (pos[valid] < 63)).all()  # Never [CLS] or [SEP].
    assert (np.diff(pos, axis=1)[valid[:, 1:]] > 0).all()  # Ascending positions, padding after.
    assert (pos[~valid] == 0).all() and (lab[~valid] == 0).all()
    changed = out["input_ids"] != ids
    unselected = np.ones(ids.shape, bool)
    unselected[rows.repeat(20, 1)[valid], pos[valid]] = False
    assert not changed[unselected].any()
