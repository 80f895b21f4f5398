import keras
import pytest
from absl import logging

from official.nlp.training import optimization, precision
from official.nlp.training.precision import Hardware

SAPPHIRE_RAPIDS = frozenset({"avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})
CASCADE_LAKE = frozenset({"avx512f", "avx512_vnni"})


@pytest.mark.parametrize(
    "hardware, expected",
    [
        (Hardware("tpu"), "bfloat16"),
        (Hardware("gpu", gpu_compute_capability=(9, 0)), "bfloat16"),  # H100
        (Hardware("gpu", gpu_compute_capability=(8, 0)), "bfloat16"),  # A100
        (Hardware("gpu", gpu_compute_capability=(7, 5)), "float16"),  # T4
        (Hardware("gpu", gpu_compute_capability=(6, 0)), "float16"),  # P100
        (Hardware("gpu", gpu_compute_capability=(3, 7)), "float32"),  # K80
        (Hardware("cpu", cpu_flags=SAPPHIRE_RAPIDS), "bfloat16"),
        (Hardware("cpu", cpu_flags=frozenset({"avx512_bf16"})), "bfloat16"),  # Cooper Lake, Zen 4
        (Hardware("cpu", cpu_flags=CASCADE_LAKE), "float32"),
        (Hardware("cpu"), "float32"),
    ],
)
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
    assert precision.dtype_policy("auto").name == "mixed_float16"
    opt = optimization.create_optimizer("adamw", learning_rate=1e-4, num_train_steps=10, mixed_precision="auto")
    assert isinstance(opt, keras.optimizers.LossScaleOptimizer)
    monkeypatch.setattr(precision, "detect_hardware", lambda: Hardware("tpu"))
    assert precision.dtype_policy("auto").name == "mixed_bfloat16"
    assert not isinstance(
        optimization.create_optimizer("adamw", learning_rate=1e-4, num_train_steps=10, mixed_precision="auto"),
        keras.optimizers.LossScaleOptimizer,
    )


def test_this_machine_is_detected():
    hardware = precision.detect_hardware()
    assert hardware.kind in ("cpu", "gpu", "tpu")
    assert precision.resolve_mixed_precision("auto") in ("float32", "bfloat16", "float16")


def _counting_task(seed: int, n: int, seq: int = 16):
    """Token ids labelled by whether token 5 occurs more often than token 6 (attention must count), 10% noise."""
    import numpy as np

    rng = np.random.RandomState(seed)
    ids = rng.randint(7, 60, size=(n, seq))
    fives, sixes = rng.randint(0, 5, size=n), rng.randint(0, 5, size=n)
    for row, (a, b) in enumerate(zip(fives, sixes)):
        slots = rng.choice(np.arange(1, seq), size=a + b, replace=False)
        ids[row, slots[:a]], ids[row, slots[a:]] = 5, 6
    ids[:, 0] = 2  # [CLS]
    x = {
        "input_word_ids": ids.astype("int32"),
        "input_mask": np.ones_like(ids, "int32"),
        "input_type_ids": np.zeros_like(ids, "int32"),
    }
    # 10% of the labels flipped: the best loss is then H(0.1) = 0.325, so training converges to a loss that
    # precision could move, not to 0.
    flipped = rng.rand(n) < 0.1
    return x, ((fives > sixes) ^ flipped).astype("int32")


def _train_classifier(mixed_precision: str, steps: int = 300):
    import tensorflow as tf

    from official.nlp.modeling.encoder import BertEncoder
    from official.nlp.modeling.models import BertClassifier

    keras.utils.set_random_seed(0)
    encoder = BertEncoder(
        vocab_size=64,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=16,
        dtype=precision.dtype_policy(mixed_precision),
    )
    model = BertClassifier(encoder, num_classes=2)
    model.compile(
        optimizer=optimization.create_optimizer(
            learning_rate=1e-3, num_train_steps=steps, num_warmup_steps=steps // 10, adam_bias_correction=True
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=50,
    )
    x, y = _counting_task(0, 32 * steps)
    model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(32), epochs=1, verbose=0)
    held_x, held_y = _counting_task(1, 1024)
    return model.evaluate(held_x, held_y, batch_size=256, verbose=0)


@pytest.mark.slow
def test_bfloat16_converges_to_the_float32_loss():
    # Dropout on, the same data and seed: mixed bfloat16 (float32 layer norms, softmax, residual stream and logits;
    # everything else bfloat16) must end where float32 does, on a task the model has to learn to solve.
    float32_loss = _train_classifier("float32")
    bfloat16_loss = _train_classifier("bfloat16")
    assert float32_loss < 0.4  # learned: chance is ln 2 = 0.69, the best possible 0.325
    assert bfloat16_loss == pytest.approx(float32_loss, abs=0.02)
