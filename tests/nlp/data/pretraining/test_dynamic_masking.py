import numpy as np
import tensorflow as tf

from official.nlp.data.pretraining.masking import rule as masking
from official.nlp.data.pretraining.masking.config import MaskingConfig

CFG = MaskingConfig(vocab_size=500, mask_token_id=4, special_token_ids=(2, 3), max_predictions_per_seq=6)


def _dataset(n=64, length=32, dtype=tf.int32):
    rng = np.random.default_rng(0)
    ids = rng.integers(10, 500, (n, length))
    lengths = rng.integers(6, length + 1, n)
    mask = (np.arange(length)[None] < lengths[:, None]).astype(np.int64)
    ids = np.where(mask == 1, ids, 0)
    ids[:, 0] = 2
    ids[np.arange(n), lengths - 1] = 3
    return (
        tf.data.Dataset.from_tensor_slices(
            {
                "input_ids": tf.constant(ids, dtype),
                "input_mask": tf.constant(mask, dtype),
                "segment_ids": tf.zeros((n, length), dtype),
                "next_sentence_labels": tf.zeros((n, 1), dtype),
            }
        ),
        ids,
        mask,
    )


def _collect(ds):
    return [{k: v.numpy() for k, v in e.items()} for e in ds]


def test_batched_elements_get_the_original_feature_set():
    ds, ids, mask = _dataset()
    out = _collect(masking.dynamic_masking(ds.batch(16), CFG, seed=7))
    assert set(out[0]) == {
        "input_ids",
        "input_mask",
        "segment_ids",
        "next_sentence_labels",
        "masked_lm_positions",
        "masked_lm_ids",
        "masked_lm_weights",
    }
    masked = np.concatenate([e["input_ids"] for e in out])
    pos = np.concatenate([e["masked_lm_positions"] for e in out])
    lab = np.concatenate([e["masked_lm_ids"] for e in out])
    w = np.concatenate([e["masked_lm_weights"] for e in out])
    assert out[0]["input_ids"].dtype == np.int32 and w.dtype == np.float32 and pos.shape == (64, 6)
    rows = np.arange(64)[:, None]
    valid = w > 0
    np.testing.assert_array_equal(valid.sum(1), masking.num_to_predict(mask.sum(1), CFG))
    np.testing.assert_array_equal(lab[valid], ids[rows, pos][valid])  # Labels are the original tokens.
    untouched = np.ones(ids.shape, bool)
    untouched[np.repeat(rows, 6, 1)[valid], pos[valid]] = False
    np.testing.assert_array_equal(masked[untouched], ids[untouched])
    assert (masked[~untouched] == 4).mean() > 0.5


def test_masks_change_every_epoch_and_repeat_with_the_seed():
    ds, _, _ = _dataset()
    masked = masking.dynamic_masking(ds.batch(16), CFG, seed=3)
    epoch1, epoch2 = _collect(masked), _collect(masked)
    again = _collect(masking.dynamic_masking(ds.batch(16), CFG, seed=3))
    pos = lambda run: np.concatenate([e["masked_lm_positions"] for e in run])  # noqa: E731
    assert not np.array_equal(pos(epoch1), pos(epoch2))
    np.testing.assert_array_equal(pos(epoch1), pos(again))


def test_unbatched_elements_and_int64():
    ds, ids, _ = _dataset(n=8, dtype=tf.int64)
    out = _collect(masking.dynamic_masking(ds, CFG, seed=1))
    assert out[0]["input_ids"].shape == (32,) and out[0]["masked_lm_ids"].dtype == np.int64
    for e, row in zip(out, ids):
        valid = e["masked_lm_weights"] > 0
        np.testing.assert_array_equal(e["masked_lm_ids"][valid], row[e["masked_lm_positions"][valid]])
