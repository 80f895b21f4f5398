import numpy as np
import pytest

from official.nlp.modeling.activations import get_activation
from official.nlp.modeling.transformer import BertSelfAttention, TransformerBlock
from tests.keras_checks import check_layer
from tests.nlp.modeling import reference


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    mask = np.array([[1] * 6, [1, 1, 1, 0, 0, 0]], "int32")
    return x, mask


def test_activations_match_their_formulas():
    x = np.linspace(-6, 6, 101).astype("float32")
    np.testing.assert_allclose(get_activation("gelu")(x), reference.gelu_tanh(x.astype(np.float64)), atol=1e-6)
    np.testing.assert_allclose(get_activation("gelu_exact")(x), reference.gelu_erf(x.astype(np.float64)), atol=1e-6)
    # The two GELUs differ enough to matter for float32 parity, which is why the config keeps them apart.
    assert np.abs(reference.gelu_tanh(x) - reference.gelu_erf(x)).max() > 1e-4
    with pytest.raises(ValueError, match="Unknown activation"):
        get_activation("swish")


def test_self_attention_standard_checks(tmp_path):
    x, mask = _inputs()
    check_layer(
        BertSelfAttention,
        dict(num_attention_heads=4),
        (x,),
        {"attention_mask": mask},
        expected_output_shape=(2, 6, 16),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("act", ["gelu", "gelu_exact"])
def test_block_standard_checks_and_reference(act, tmp_path):
    x, mask = _inputs()
    kwargs = dict(num_attention_heads=4, intermediate_size=32, hidden_act=act)
    check_layer(
        TransformerBlock,
        kwargs,
        (x,),
        {"attention_mask": mask},
        expected_output_shape=(2, 6, 16),
        float32_output_under_mixed=True,
        tmp_path=tmp_path,
    )
    block = TransformerBlock(**kwargs)
    out = np.asarray(block(x, attention_mask=mask))
    expected = reference.block(x.astype(np.float64), mask.astype(np.float64), block, 4, act, 1e-12)
    np.testing.assert_allclose(out, expected, atol=2e-5)


def test_padding_does_not_leak_into_real_positions():
    x, mask = _inputs()
    block = TransformerBlock(num_attention_heads=4, intermediate_size=32)
    base = np.asarray(block(x, attention_mask=mask))
    noisy = x.copy()
    noisy[1, 3:] = 100.0  # change only the padded positions of example 1
    np.testing.assert_allclose(np.asarray(block(noisy, attention_mask=mask))[1, :3], base[1, :3], atol=1e-6)


def test_three_dimensional_mask_equals_padding_mask():
    x, mask = _inputs()
    block = TransformerBlock(num_attention_heads=4, intermediate_size=32)
    mask3 = np.repeat(mask[:, None, :], 6, axis=1)
    np.testing.assert_allclose(block(x, attention_mask=mask), block(x, attention_mask=mask3), atol=1e-6)


def test_head_size_comes_from_the_input_width():
    # The scale 1/sqrt(head_size) itself is checked by the reference comparison above.
    layer = BertSelfAttention(num_attention_heads=4)
    layer(np.zeros((1, 2, 16), "float32"))
    assert layer.head_size == 4
    with pytest.raises(ValueError, match="hidden size 18 is not divisible by 4 heads"):
        BertSelfAttention(num_attention_heads=4)(np.zeros((1, 2, 18), "float32"))


def test_int8_quantized_dense_layers_still_run():
    """The block applies its dense layers' variables directly (fusable MatMul + BiasAdd); Keras-quantized layers
    go through their own call instead."""
    block = TransformerBlock(num_attention_heads=2, intermediate_size=16)
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    before = np.asarray(block(x))
    for layer in (
        block.attention.query,
        block.attention.key,
        block.attention.value,
        block.attention_output_dense,
        block.intermediate_dense,
        block.output_dense,
    ):
        layer.quantize("int8")
    np.testing.assert_allclose(np.asarray(block(x)), before, atol=1e-3)
