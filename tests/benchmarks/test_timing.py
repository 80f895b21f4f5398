import pytest

from benchmarks import timing


def test_layer_flops_match_the_transformer_formula():
    # Per layer and token, forward: 2 * (4 H^2 + 2 H I) for the dense layers, 2 * 2 * S * H for QK^T and PV.
    batch, seq, hidden, inter, heads = 8, 128, 768, 3072, 12
    tokens = batch * seq
    forward = tokens * (2 * (4 * hidden**2 + 2 * hidden * inter) + 4 * seq * hidden)
    assert timing.layer_flops(timing.matmul_shapes(batch, seq, hidden, inter, heads, train=False)) == forward
    # Training: every matmul has two gradient matmuls of the same size.
    assert timing.layer_flops(timing.matmul_shapes(batch, seq, hidden, inter, heads, train=True)) == 3 * forward


def test_matmul_limit_is_a_positive_rate():
    shapes = timing.matmul_shapes(2, 8, 16, 32, 2, train=True)
    assert timing.matmul_limit(shapes, "float32", seconds=0.05) > 0


def test_interleaved_alternates_and_rates_items():
    calls = []
    rates = timing.interleaved({"a": lambda: calls.append("a") or 10, "b": lambda: calls.append("b") or 20}, 3)
    assert calls == ["a", "b"] * 3
    assert len(rates["a"].per_round) == 3 and rates["b"].median > 0 and rates["b"].cpu_median > 0
    with pytest.raises(KeyError):
        timing.print_table("t", rates, reference="c", unit="x/s")
