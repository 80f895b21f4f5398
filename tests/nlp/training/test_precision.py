import keras
import pytest
from absl import logging

from official.nlp.training import optimization, precision
from official.nlp.training.precision import Hardware

SAPPHIRE_RAPIDS = frozenset({"avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})
CASCADE_LAKE = frozenset({"avx512f", "avx512_vnni"})


@pytest.mark.parametrize("hardware, expected", [
    (Hardware("tpu"), "bfloat16"),
    (Hardware("gpu", gpu_compute_capability=(9, 0)), "bfloat16"),   # H100
    (Hardware("gpu", gpu_compute_capability=(8, 0)), "bfloat16"),   # A100
    (Hardware("gpu", gpu_compute_capability=(7, 5)), "float16"),    # T4
    (Hardware("gpu", gpu_compute_capability=(6, 0)), "float16"),    # P100
    (Hardware("gpu", gpu_compute_capability=(3, 7)), "float32"),    # K80
    (Hardware("cpu", cpu_flags=SAPPHIRE_RAPIDS), "bfloat16"),
    (Hardware("cpu", cpu_flags=frozenset({"avx512_bf16"})), "bfloat16"),  # Cooper Lake, Zen 4
    (Hardware("cpu", cpu_flags=CASCADE_LAKE), "float32"),
    (Hardware("cpu"), "float32"),
])
def test_auto_fits_the_hardware(hardware, expected):
    assert precision.resolve_mixed_precision("auto", hardware) == expected
    for explicit in ("float32", "float16"):
        assert precision.resolve_mixed_precision(explicit, hardware) == explicit


def test_cpu_flags_come_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 amx_bf16\n\nprocessor\t: 1\n")
    assert precision._cpu_flags(str(cpuinfo)) == {"fpu", "avx512f", "avx512_bf16", "amx_bf16"}
    assert precision._cpu_flags(str(tmp_path / "missing")) == frozenset()


def test_emulated_bfloat16_warns_with_a_measured_slowdown(monkeypatch):
    messages = []
    monkeypatch.setattr(logging, "warning", lambda msg, *args: messages.append(msg % args))
    precision._warn_emulated_bfloat16.cache_clear()
    assert precision.resolve_mixed_precision("bfloat16", Hardware("cpu", cpu_flags=CASCADE_LAKE)) == "bfloat16"
    assert len(messages) == 1 and "emulated" in messages[0] and "x as long as a float32 one" in messages[0]
    assert precision.resolve_mixed_precision("bfloat16", Hardware("cpu", cpu_flags=SAPPHIRE_RAPIDS)) == "bfloat16"
    assert precision.resolve_mixed_precision("bfloat16", Hardware("gpu", gpu_compute_capability=(7, 0)))
    assert len(messages) == 1  # native (or not a CPU): no warning


def test_auto_reaches_the_policy_and_the_loss_scaling(monkeypatch):
    monkeypatch.setattr(precision, "detect_hardware", lambda: Hardware("gpu", gpu_compute_capability=(7, 0)))
    assert optimization.dtype_policy("auto").name == "mixed_float16"
    opt = optimization.create_optimizer("adamw", learning_rate=1e-4, num_train_steps=10, mixed_precision="auto")
    assert isinstance(opt, keras.optimizers.LossScaleOptimizer)
    monkeypatch.setattr(precision, "detect_hardware", lambda: Hardware("tpu"))
    assert optimization.dtype_policy("auto").name == "mixed_bfloat16"
    assert not isinstance(optimization.create_optimizer("adamw", learning_rate=1e-4, num_train_steps=10, mixed_precision="auto"),
                          keras.optimizers.LossScaleOptimizer)


def test_this_machine_is_detected():
    hardware = precision.detect_hardware()
    assert hardware.kind in ("cpu", "gpu", "tpu")
    assert precision.resolve_mixed_precision("auto") in ("float32", "bfloat16", "float16")
