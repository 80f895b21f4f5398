"""The training stages' measurements: the held-out masked-LM loss of a model, against numpy on its own logits."""

from __future__ import annotations

import keras
import numpy as np

from official.nlp.paper import budgets, training_jobs
from official.nlp.tasks.pretraining import build_pretrainer
from tests.pretraining_records import parse_records, write_records


def test_the_heldout_loss_is_the_weighted_mean_cross_entropy_of_every_real_prediction(tmp_path):
    vocab, seq, preds = 100, 32, 5
    # 70 records: one batch of 64 and a partial one, each record with 2-5 real predictions.
    paths = write_records(tmp_path, num_files=1, per_file=70, vocab_size=vocab, seq_length=seq, max_predictions=preds)
    keras.utils.set_random_seed(0)
    config = budgets.parse_size("L1-H32-A2").bert_config(vocab, max_position_embeddings=seq)
    model = build_pretrainer(config)
    loss = training_jobs.mlm_loss(model, paths[0], max_seq_length=seq, max_predictions_per_seq=preds, vocab_size=vocab)

    records = parse_records(paths[0], seq=seq, preds=preds)
    x = {
        "input_word_ids": records["input_ids"].astype("int32"),
        "input_mask": records["input_mask"].astype("int32"),
        "input_type_ids": records["segment_ids"].astype("int32"),
        "masked_lm_positions": records["masked_lm_positions"].astype("int32"),
    }
    logits = np.asarray(model(x, training=False)["mlm_logits"], np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, records["masked_lm_ids"][..., None], -1)[..., 0]
    weights = records["masked_lm_weights"]
    assert 0 < weights.sum() < weights.size  # padding predictions are there, and left out
    np.testing.assert_allclose(loss, -(picked * weights).sum() / weights.sum(), rtol=1e-5)
