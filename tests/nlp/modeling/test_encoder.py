import keras
import numpy as np
import pytest

from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from tests.keras_checks import check_model
from tests.nlp.modeling import reference

CONFIG = BertConfig(
    vocab_size=50,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=32,
    max_position_embeddings=16,
)


def _inputs(batch=3, seq=7, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, seq + 1, batch)
    lengths[0] = seq
    mask = (np.arange(seq)[None] < lengths[:, None]).astype("int32")
    ids = (rng.integers(1, 50, (batch, seq)) * mask).astype("int32")
    types = ((np.arange(seq)[None] >= (lengths[:, None] // 2)) * mask).astype("int32")
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def test_encoder_standard_checks(tmp_path):
    inputs = _inputs()
    shapes = {"sequence_output": (3, 7, 16), "pooled_output": (3, 16), "encoder_outputs": [(3, 7, 16)] * 2}
    check_model(
        lambda dtype=None: BertEncoder.from_bert_config(CONFIG, dtype=dtype),
        inputs,
        expected_output_shape=shapes,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("act", ["gelu", "gelu_exact"])
def test_encoder_matches_numpy_reference(act):
    config = BertConfig(**{**CONFIG.to_dict(), "hidden_act": act})
    encoder = BertEncoder.from_bert_config(config)
    inputs = _inputs()
    out = encoder(inputs)
    layers, pooled = reference.encoder(
        encoder, inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"]
    )
    for ours, expected in zip(out["encoder_outputs"], layers):
        np.testing.assert_allclose(ours, expected, atol=5e-5)
    np.testing.assert_allclose(out["sequence_output"], layers[-1], atol=5e-5)
    np.testing.assert_allclose(out["pooled_output"], pooled, atol=5e-5)


def test_sequence_length_is_dynamic_and_padding_is_invisible():
    encoder = BertEncoder.from_bert_config(CONFIG)
    assert encoder.input["input_word_ids"].shape == (None, None)
    inputs = _inputs(seq=5)
    padded = {k: np.pad(v, ((0, 0), (0, 4))) for k, v in inputs.items()}
    short, longer = encoder(inputs), encoder(padded)
    mask = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(
        np.asarray(longer["sequence_output"])[:, :5][mask], np.asarray(short["sequence_output"])[mask], atol=1e-5
    )
    np.testing.assert_allclose(longer["pooled_output"], short["pooled_output"], atol=1e-5)


def test_config_and_weight_names():
    encoder = BertEncoder.from_bert_config(CONFIG, name="bert")
    assert encoder.config == CONFIG
    assert BertEncoder(**CONFIG.to_dict()).count_params() == encoder.count_params()
    assert encoder.get_embedding_table().shape == (50, 16)
    # Stable, readable variable paths: conversion maps roles to them.
    paths = {w.path for w in encoder.weights}
    assert "transformer_layer_1/attention/query/kernel" in paths and "pooler/kernel" in paths
    expected_params = (
        (50 + 16 + 2) * 16 + 2 * 16 + 2 * (4 * (16 * 16 + 16) + 2 * 16 * 32 + 32 + 16 + 4 * 16) + 16 * 16 + 16
    )
    assert encoder.count_params() == expected_params


def test_global_mixed_policy_is_followed():
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        encoder = BertEncoder.from_bert_config(CONFIG)
    finally:
        keras.config.set_dtype_policy("float32")
    assert encoder.dtype_policy.name == "mixed_bfloat16"
    assert encoder.transformer_layers[0].attention.query.compute_dtype == "bfloat16"
    assert encoder.transformer_layers[0].attention_layer_norm.compute_dtype == "float32"
    out = encoder(_inputs())
    assert all(np.asarray(t).dtype == np.float32 for t in keras.tree.flatten(out))
