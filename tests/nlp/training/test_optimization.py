"""Optimizer factory and schedule, checked against the original BERT formulas written out by hand."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from official.nlp.common.errors import InputError
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertPretrainer
from official.nlp.training import config, optimization


def original_learning_rate(step, init_lr, num_train_steps, num_warmup_steps, end_lr=0.0, power=1.0):
    """google-research/bert optimization.py: polynomial_decay of the global step, linear warmup before."""
    decayed = (init_lr - end_lr) * (1 - min(step, num_train_steps) / num_train_steps) ** power + end_lr
    if step < num_warmup_steps:
        return init_lr * step / num_warmup_steps
    return decayed


@pytest.mark.parametrize("end_lr,power", [(0.0, 1.0), (1e-5, 2.0), (0.0, 0.5)])
def test_schedule_matches_original(end_lr, power):
    schedule = optimization.WarmupPolynomialDecay(
        1e-4, decay_steps=1000, warmup_steps=100, end_learning_rate=end_lr, power=power
    )
    for step in (0, 1, 50, 99, 100, 101, 500, 999, 1000, 1500):
        want = original_learning_rate(step, 1e-4, 1000, 100, end_lr, power)
        assert float(schedule(step)) == pytest.approx(want, rel=1e-4, abs=1e-11), step
    restored = optimization.WarmupPolynomialDecay.from_config(schedule.get_config())
    assert float(restored(300)) == float(schedule(300))


def test_weight_decay_skips_layer_norm_and_bias():
    model = BertPretrainer(BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=50, num_hidden_layers=1)))
    optimizer = optimization.create_optimizer(learning_rate=1e-3, num_train_steps=10)
    optimizer.build(model.trainable_variables)
    decayed = {v.path for v in model.trainable_variables if optimization.uses_weight_decay(optimizer, v)}
    # The original excludes "LayerNorm", "layer_norm" and "bias" (which also matches the MLM output_bias).
    expected = {v.path for v in model.trainable_variables if not any(part in v.path for part in ("layer_norm", "bias"))}
    assert decayed == expected
    assert any("word_embeddings" in p for p in decayed) and any(p.endswith("kernel") for p in decayed)


def test_weight_decay_and_clipping_act_as_documented():
    # One step of plain Adam vs AdamW on the same gradient: the difference is lr * wd * w on decayed variables.
    kernel = keras.Variable(np.full((2, 2), 2.0, "float32"), name="kernel")
    bias = keras.Variable(np.full((2,), 2.0, "float32"), name="bias")
    grads = [np.full((2, 2), 30.0, "float32"), np.full((2,), 40.0, "float32")]
    global_norm = np.sqrt(4 * 30.0**2 + 2 * 40.0**2)
    # end_learning_rate == learning_rate: a constant rate, which makes the expected values easy to write down.
    optimizer = optimization.create_optimizer(
        learning_rate=0.1,
        end_learning_rate=0.1,
        num_train_steps=10,
        weight_decay=0.5,
        clip_norm=1.0,
        adam_bias_correction=True,
    )
    optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads], [kernel, bias])
    # Adam's first step moves every weight by lr * sign(g) (up to epsilon), whatever the clipping; decay adds
    # lr * wd * w on the kernel only.
    np.testing.assert_allclose(kernel.numpy(), 2.0 - 0.1 - 0.1 * 0.5 * 2.0, rtol=1e-4)
    np.testing.assert_allclose(bias.numpy(), 2.0 - 0.1, rtol=1e-4)
    # Clipping to global norm 1.0 scales the gradients by 1/global_norm before Adam's moments see them.
    np.testing.assert_allclose(optimizer._momentums[0].numpy(), 0.1 * 30.0 / global_norm, rtol=1e-5)


def test_factory_options_and_errors():
    lamb = optimization.create_optimizer("lamb", learning_rate=1e-3, num_train_steps=10)
    assert isinstance(lamb, optimization.BertLamb)
    restored = optimization.BertLamb.from_config(lamb.get_config())
    assert restored.exclude_from_layer_adaptation == list(optimization.DEFAULT_WEIGHT_DECAY_EXCLUSIONS)
    adamw = optimization.create_optimizer(learning_rate=1e-3, num_train_steps=10, weight_decay=0.0)
    assert adamw.bias_correction is False  # the original's optimizer by default
    assert optimization.BertAdamW.from_config(adamw.get_config()).bias_correction is False
    fp16 = optimization.create_optimizer(
        learning_rate=1e-3, num_train_steps=10, num_warmup_steps=5, mixed_precision="float16"
    )
    assert isinstance(fp16, keras.optimizers.LossScaleOptimizer)
    assert isinstance(fp16.inner_optimizer, optimization.BertAdamW)
    assert optimization.current_learning_rate(fp16) == 0.0  # the warmup starts at 0, as in the original
    with pytest.raises(ValueError, match="optimizer_type must be one of"):
        optimization.create_optimizer("sgd", learning_rate=1e-3, num_train_steps=10)
    with pytest.raises(ValueError, match=r"--adam_epsilon=0.0 must be positive"):
        optimization.create_optimizer(learning_rate=1e-3, num_train_steps=10, epsilon=0.0)


def test_a_warmup_longer_than_the_run_warns_and_trains(caplog):
    """A two-step smoke run with the default 10,000 warmup steps trains, at the rate the warmup reaches."""
    with caplog.at_level("WARNING"):
        optimizer = optimization.create_optimizer(learning_rate=1e-3, num_train_steps=10, num_warmup_steps=20)
    assert "--num_warmup_steps=20 is larger than --num_train_steps=10" in caplog.text
    schedule = optimizer._learning_rate  # the schedule object (Keras keeps it there)
    assert float(schedule(9)) == pytest.approx(original_learning_rate(9, 1e-3, 10, 20))


def original_adamw(params, grads_per_step, lr, weight_decay, decayed, beta_1=0.9, beta_2=0.999, epsilon=1e-6):
    """google-research/bert optimization.py AdamWeightDecayOptimizer.apply_gradients, transcribed to numpy."""
    params = [p.astype(np.float64) for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for grads in grads_per_step:
        for i, (param, grad) in enumerate(zip(params, grads)):
            m[i] = beta_1 * m[i] + (1.0 - beta_1) * grad
            v[i] = beta_2 * v[i] + (1.0 - beta_2) * grad**2
            update = m[i] / (np.sqrt(v[i]) + epsilon)
            if decayed[i]:  # _do_use_weight_decay: not LayerNorm, not bias
                update += weight_decay * param
            params[i] = param - lr * update
    return params


def torch_adamw(params, grads_per_step, lr, weight_decay, decayed, epsilon=1e-8):
    """The same steps with `torch.optim.AdamW` (decay off for the excluded variables, as in Hugging Face's recipes)."""
    import torch

    tensors = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in params]
    groups = [{"params": [t], "weight_decay": weight_decay if d else 0.0} for t, d in zip(tensors, decayed)]
    optimizer = torch.optim.AdamW(groups, lr=lr, eps=epsilon)
    for grads in grads_per_step:
        for t, g in zip(tensors, grads):
            t.grad = torch.tensor(g, dtype=torch.float64)
        optimizer.step()
    return [t.detach().numpy() for t in tensors]


def _adamw_run(bias_correction, epsilon, steps, init):
    kernel, bias = keras.Variable(init[0], name="kernel"), keras.Variable(init[1], name="bias")
    optimizer = optimization.create_optimizer(
        learning_rate=0.01,
        end_learning_rate=0.01,
        num_train_steps=10,
        weight_decay=0.1,
        clip_norm=None,
        adam_bias_correction=bias_correction,
        epsilon=epsilon,
    )
    for grads in steps:
        optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads], [kernel, bias])
    return [kernel.numpy(), bias.numpy()]


@pytest.mark.parametrize("bias_correction", [False, True])
def test_adamw_matches_its_reference(bias_correction):
    # False: the original BERT optimizer (1e-6); True: torch.optim.AdamW (1e-8). Each recipe's default epsilon.
    rng = np.random.RandomState(0)
    init = [rng.normal(size=(3, 4)).astype("float32"), rng.normal(size=(4,)).astype("float32")]
    # Gradients as small as a fine-tuned encoder's (clipped to global norm 1 over millions of weights), where
    # epsilon enters decides the step size.
    steps = [[rng.normal(size=p.shape).astype("float32") * 1e-5 for p in init] for _ in range(5)]
    got = _adamw_run(bias_correction, None, steps, init)
    reference = torch_adamw if bias_correction else original_adamw
    want = reference(init, steps, lr=0.01, weight_decay=0.1, decayed=[True, False])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-7)
    # The two recipes really differ: without correction the first step is (1 - b1) / sqrt(1 - b2) = 3.16x larger.
    other = (original_adamw if bias_correction else torch_adamw)(
        init, steps, lr=0.01, weight_decay=0.1, decayed=[True, False]
    )
    assert np.abs(other[1] - got[1]).max() > 1e-3


def test_bias_corrected_epsilon_enters_as_in_pytorch():
    # Keras' own AdamW adds epsilon before the bias correction: on 1e-5 gradients with epsilon 1e-6 its first steps
    # are about a quarter of PyTorch's. Ours follows PyTorch for any epsilon.
    rng = np.random.RandomState(1)
    init = [rng.normal(size=(3, 4)).astype("float32"), rng.normal(size=(4,)).astype("float32")]
    steps = [[rng.normal(size=p.shape).astype("float32") * 1e-5 for p in init] for _ in range(3)]
    got = _adamw_run(True, 1e-6, steps, init)
    want = torch_adamw(init, steps, lr=0.01, weight_decay=0.1, decayed=[True, False], epsilon=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-7)
    kernel, bias = keras.Variable(init[0], name="kernel"), keras.Variable(init[1], name="bias")
    stock = keras.optimizers.AdamW(learning_rate=0.01, weight_decay=0.1, epsilon=1e-6)
    stock.exclude_from_weight_decay(var_names=["bias"])
    for grads in steps:
        stock.apply([keras.ops.convert_to_tensor(g) for g in grads], [kernel, bias])
    assert np.abs(bias.numpy() - init[1]).max() < 0.5 * np.abs(want[1] - init[1]).max()


def test_default_epsilon_follows_the_recipe():
    assert optimization.create_optimizer(learning_rate=1e-3, num_train_steps=10).epsilon == 1e-6
    assert (
        optimization.create_optimizer(learning_rate=1e-3, num_train_steps=10, adam_bias_correction=True).epsilon == 1e-8
    )
    assert optimization.create_optimizer("lamb", learning_rate=1e-3, num_train_steps=10).epsilon == 1e-6
    assert (
        optimization.create_optimizer(
            learning_rate=1e-3, num_train_steps=10, adam_bias_correction=True, epsilon=1e-6
        ).epsilon
        == 1e-6
    )


def _train_bias(optimizer, steps=1000):
    """`steps` tiny steps on a zero-initialized 768-wide bias and a kernel, with fixed gradients; returns both."""
    import tensorflow as tf

    rng = np.random.RandomState(0)
    kernel = keras.Variable(rng.normal(size=(8, 768)).astype("float32") * 0.02, name="kernel")
    bias = keras.Variable(np.zeros(768, "float32"), name="bias")
    grads = [
        tf.constant(rng.normal(size=(8, 768)).astype("float32")),
        tf.constant(rng.normal(size=(768,)).astype("float32")),
    ]
    optimizer.build([kernel, bias])

    @tf.function
    def run():
        for _ in tf.range(steps):
            optimizer.apply(grads, [kernel, bias])

    run()
    return kernel.numpy(), bias.numpy()


def test_lamb_updates_zero_initialized_biases():
    kwargs = dict(learning_rate=1e-4, end_learning_rate=1e-4, num_train_steps=1000, clip_norm=None)
    _, lamb_bias = _train_bias(optimization.create_optimizer("lamb", **kwargs))
    _, adamw_bias = _train_bias(optimization.create_optimizer("adamw", adam_bias_correction=True, **kwargs))
    # The bias is out of the layer adaptation (and of the weight decay): it moves as with Adam, about 1e-4 per
    # element and step in the direction of its fixed gradient.
    assert np.linalg.norm(adamw_bias) > 2.0
    np.testing.assert_allclose(lamb_bias, adamw_bias, rtol=1e-3, atol=1e-6)
    # With the trust ratio on every variable (Keras' own Lamb), the same bias stays frozen near 0.
    _, stock_bias = _train_bias(keras.optimizers.Lamb(learning_rate=1e-4))
    assert np.linalg.norm(stock_bias) < 0.01


def test_lamb_trust_ratio_and_weight_decay_on_kernels():
    rng = np.random.RandomState(1)
    w0 = rng.normal(size=(4, 5)).astype("float32")
    g = rng.normal(size=(4, 5)).astype("float32")
    kernel = keras.Variable(w0, name="kernel")
    optimizer = optimization.create_optimizer(
        "lamb", learning_rate=0.01, end_learning_rate=0.01, num_train_steps=10, weight_decay=0.1, clip_norm=None
    )
    optimizer.apply([keras.ops.convert_to_tensor(g)], [kernel])
    # LAMB (You et al. 2019, Algorithm 2) at step 1: m_hat = g, v_hat = g^2; the decay is inside the ratio.
    update = g / (np.abs(g) + 1e-6) + 0.1 * w0
    ratio = np.linalg.norm(w0) / np.linalg.norm(update)
    np.testing.assert_allclose(kernel.numpy(), w0 - 0.01 * ratio * update, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "setting, message",
    [
        (dict(learning_rate=-1e-3), r"--learning_rate must not be negative, got -0.001"),
        (dict(learning_rate=float("nan")), r"--learning_rate must not be negative, got nan"),
        (dict(num_train_steps=0), r"--num_train_steps must be positive, got 0"),
        (dict(num_warmup_steps=-1), r"--num_warmup_steps must be >= 0, got -1"),
        (dict(end_learning_rate=-1e-5), r"--end_learning_rate must be >= 0"),
        (dict(weight_decay=-0.01), r"--weight_decay must be >= 0"),
        (dict(clip_norm=-1.0), r"--clip_norm must be >= 0"),
    ],
)
def test_the_shared_factory_refuses_settings_that_train_wrongly(setting, message):
    """Pretraining and fine-tuning both build their optimizer here, so both refuse these."""
    kwargs = {"learning_rate": 1e-3, "num_train_steps": 10, **setting}
    with pytest.raises(InputError, match=message):
        optimization.create_optimizer(**kwargs)


def test_batch_sizes_must_be_positive_and_split_evenly():
    config.check_batch_size(32, 2, 4)
    with pytest.raises(InputError, match="--train_batch_size must be positive, got 0"):
        config.check_batch_size(0, 1)
    with pytest.raises(
        InputError,
        match=r"--train_batch_size=31 must divide by replicas \(2\) x "
        r"--gradient_accumulation_steps \(1\) = 2",
    ):
        config.check_batch_size(31, 2)
