"""The left-to-right attention kind (the paper's LTR baseline): a config field that `bert_config.json` carries only
when it is set, and an encoder whose outputs at position i do not depend on any token after i, in inference and in
training (dropout on), with the task models built on it."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import configs, losses
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertPretrainer, BertTokenClassifier
from tests.nlp.modeling import causality, reference

CONFIG = BertConfig(
    vocab_size=60,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=32,
    max_position_embeddings=16,
    attention="left_to_right",
)
SEQ = 9


def _inputs():
    """Three rows: full length, padded after 6 tokens, padded after 4; two segments each."""
    rng = np.random.default_rng(0)
    lengths = np.array([SEQ, 6, 4])
    mask = (np.arange(SEQ)[None] < lengths[:, None]).astype("int32")
    ids = (rng.integers(5, 60, (3, SEQ)) * mask).astype("int32")
    types = ((np.arange(SEQ)[None] >= 2) * mask).astype("int32")
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def _changed_at(inputs, j):
    return {**inputs, "input_word_ids": causality.change_token(inputs["input_word_ids"], j)}


def _real_rows(inputs, j):
    return inputs["input_mask"][:, j] == 1  # rows where position j is a real token


def test_the_config_field_is_written_only_for_a_left_to_right_model(tmp_path):
    bidirectional = BertConfig.preset("tiny", vocab_size=100)
    assert "attention" not in bidirectional.to_dict()  # bert_config.json keeps the original keys
    assert "attention" not in json.loads(bidirectional.to_json_string())
    path = tmp_path / "bert_config.json"
    CONFIG.to_json_file(path)
    assert json.loads(path.read_text())["attention"] == "left_to_right"
    assert BertConfig.from_json_file(path) == CONFIG and CONFIG.left_to_right
    with pytest.raises(ValueError, match="BertConfig.attention 'causal' is not one of bidirectional, left_to_right"):
        BertConfig(attention="causal")
    # transformers' BertModel is causal with is_decoder (BertLMHeadModel); cross-attention is no encoder's.
    hf = {"model_type": "bert", **{k: v for k, v in CONFIG.to_dict().items() if k != "attention"}}
    assert BertConfig.from_dict({**hf, "is_decoder": True}).attention == "left_to_right"
    assert not BertConfig.from_dict({**hf, "is_decoder": False}).left_to_right
    with pytest.raises(ValueError, match="add_cross_attention"):
        BertConfig.from_dict({**hf, "is_decoder": True, "add_cross_attention": True})


def test_encoder_matches_the_numpy_reference_with_a_causal_mask():
    encoder = BertEncoder.from_bert_config(CONFIG)
    assert encoder.get_config()["attention"] == "left_to_right"
    assert BertEncoder.from_config(encoder.get_config()).config == CONFIG
    inputs = _inputs()
    out = encoder(inputs)
    layers, pooled = reference.encoder(
        encoder, inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"]
    )
    for ours, expected in zip(out["encoder_outputs"], layers):
        np.testing.assert_allclose(ours, expected, atol=5e-5)
    # The pooler reads the last real token, the one position that has seen the whole input.
    np.testing.assert_allclose(out["pooled_output"], pooled, atol=5e-5)


@pytest.mark.parametrize("j", [1, 3, 5])
def test_a_token_changes_the_outputs_from_its_position_on_only(j):
    encoder = BertEncoder.from_bert_config(CONFIG)
    inputs = _inputs()
    rows = _real_rows(inputs, j)
    before, after = (np.asarray(encoder(x)["sequence_output"])[rows] for x in (inputs, _changed_at(inputs, j)))
    causality.assert_left_to_right(before, after, j, inputs["input_mask"][rows])
    # The control: BERT's outputs before j see the change.
    bidirectional = BertEncoder.from_bert_config(BertConfig(**{**CONFIG.to_dict(), "attention": "bidirectional"}))
    before, after = (np.asarray(bidirectional(x)["sequence_output"])[rows] for x in (inputs, _changed_at(inputs, j)))
    assert (np.abs(after - before)[:, :j].max(-1) > 1e-5).all()


def test_causal_in_training_mode_with_dropout_on():
    """With dropout on, two calls differ anyway; given the same dropout masks (the seed-generator states put back),
    the positions before the changed token are exactly equal, for the encoder and for a tagger built on it."""
    keras.utils.set_random_seed(1)
    config = BertConfig(**{**CONFIG.to_dict(), "hidden_dropout_prob": 0.3, "attention_probs_dropout_prob": 0.3})
    tagger = BertTokenClassifier(BertEncoder.from_bert_config(config), num_classes=5, dropout_rate=0.3)
    inputs, j = _inputs(), 4
    rows = _real_rows(inputs, j)
    for forward in (
        lambda x: tagger.encoder(x, training=True)["sequence_output"],
        lambda x: tagger(x, training=True),
    ):
        first, changed = causality.with_the_same_dropout(tagger, forward, inputs, _changed_at(inputs, j))
        again = np.asarray(forward(inputs))  # the next dropout masks
        assert np.abs(again[rows][:, :j] - first[rows][:, :j]).max() > 1e-3  # dropout is live
        causality.assert_left_to_right(first[rows], changed[rows], j, inputs["input_mask"][rows])


def test_the_left_to_right_pretrainer_predicts_every_next_token():
    keras.utils.set_random_seed(0)
    model = BertPretrainer(BertEncoder.from_bert_config(CONFIG))
    assert model.objective == "ltr" and not model.use_next_sentence_label and model.next_sentence is None
    assert sorted(model.input) == ["input_mask", "input_type_ids", "input_word_ids"]
    inputs = _inputs()
    logits = np.asarray(model(inputs)["ltr_logits"])
    assert logits.shape == (3, SEQ, CONFIG.vocab_size)
    # The same head as the masked LM's: transform, the word embeddings tied as the decoder, the bias.
    encoded = model.encoder(inputs)["sequence_output"]
    positions = np.tile(np.arange(SEQ, dtype="int32"), (3, 1))
    np.testing.assert_allclose(logits, model.masked_lm(encoded, positions), atol=1e-5)
    # fit trains it on `next_token_labels` and reports the LTR metrics.
    labels = {
        k: np.asarray(v) for k, v in losses.next_token_labels(inputs["input_word_ids"], inputs["input_mask"]).items()
    }
    np.testing.assert_array_equal(labels["next_token_ids"][:, :-1], inputs["input_word_ids"][:, 1:])
    np.testing.assert_array_equal(labels["next_token_weights"].sum(1), inputs["input_mask"].sum(1) - 1)
    model.compile(keras.optimizers.Adam(1e-2), run_eagerly=True)  # eager: a tiny model, no 20 s trace
    history = model.fit(inputs, labels, epochs=3, verbose=0).history
    assert sorted(history) == ["loss", "ltr_accuracy", "ltr_loss"]
    assert history["ltr_loss"][-1] < history["ltr_loss"][0]
    rebuilt = BertPretrainer.from_config(model.get_config())
    assert rebuilt.objective == "ltr" and rebuilt.encoder.config == CONFIG


def test_an_objective_that_contradicts_the_attention_is_refused():
    with pytest.raises(ValueError, match="objective='mlm' needs a bidirectional encoder"):
        BertPretrainer(BertEncoder.from_bert_config(CONFIG), objective="mlm")
    with pytest.raises(ValueError, match="no next-sentence head"):
        BertPretrainer(BertEncoder.from_bert_config(CONFIG), use_next_sentence_label=True)
    bidirectional = BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=60))
    with pytest.raises(ValueError, match="objective='ltr' needs a left_to_right encoder"):
        BertPretrainer(bidirectional, objective="ltr")
    assert BertPretrainer(bidirectional).objective == "mlm"


def test_the_left_to_right_rules_are_one_function():
    """Each objective goes with one attention kind, and the left-to-right LM takes neither NSP nor dynamic masking;
    the pretraining job, the pretraining loader and `BertPretrainer` all ask `left_to_right_conflicts`."""
    assert [configs.objective_for(kind) for kind in configs.ATTENTION_KINDS] == [configs.MLM, configs.LTR]
    assert [configs.attention_for(o) for o in configs.OBJECTIVES] == list(configs.ATTENTION_KINDS)
    assert configs.left_to_right_conflicts("ltr", use_next_sentence_label=True, dynamic_masking=True) == [
        "use_next_sentence_label",
        "dynamic_masking",
    ]
    assert configs.left_to_right_conflicts("ltr", use_next_sentence_label=False, dynamic_masking=True) == [
        "dynamic_masking"
    ]
    assert configs.left_to_right_conflicts("ltr", use_next_sentence_label=False, dynamic_masking=False) == []
    assert configs.left_to_right_conflicts("mlm", use_next_sentence_label=True, dynamic_masking=True) == []
    with pytest.raises(ValueError, match="objective must be one of mlm, ltr, got 'gpt'"):
        configs.left_to_right_conflicts("gpt", use_next_sentence_label=False, dynamic_masking=False)


def test_mixed_precision_keeps_the_mask_exact():
    """bfloat16 compute: the future keys still get exactly zero weight (the mask is added to float32 scores)."""
    encoder = BertEncoder.from_bert_config(CONFIG, dtype="mixed_bfloat16")
    inputs, j = _inputs(), 3
    rows = _real_rows(inputs, j)
    before, after = (np.asarray(encoder(x)["sequence_output"])[rows] for x in (inputs, _changed_at(inputs, j)))
    causality.assert_left_to_right(before, after, j, inputs["input_mask"][rows])
    assert tf.as_dtype(encoder(inputs)["sequence_output"].dtype) == tf.float32
