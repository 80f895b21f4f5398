from benchmarks import step


def test_breakdown_times_every_variant_and_attributes_the_parts(capsys):
    config = step.StepConfig(
        num_layers=1, hidden=32, heads=2, batch=2, seq=8, vocab_size=1100, rounds=1, steps_per_execution=1
    )
    ms = step.breakdown(config)
    assert set(ms) == {
        "train step",
        "without the optimizer update",
        "without dropout",
        "forward, training mode",
        "forward, inference mode",
        "optimizer update alone",
    }
    assert all(value > 0 for value in ms.values())
    out = capsys.readouterr().out
    for part in ("= optimizer update", "= dropout (forward and backward)", "= backward", "matmuls at the limit"):
        assert part in out
