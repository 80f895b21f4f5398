"""Optimizer factory and schedule, checked against the original BERT formulas written out by hand."""
from __future__ import annotations

import keras
import numpy as np
import pytest

from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertPretrainer
from official.nlp.training import optimization


def original_learning_rate(step, init_lr, num_train_steps, num_warmup_steps, end_lr=0.0, power=1.0):
    """google-research/bert optimization.py: polynomial_decay of the global step, linear warmup before."""
    decayed = (init_lr - end_lr) * (1 - min(step, num_train_steps) / num_train_steps) ** power + end_lr
    if step < num_warmup_steps:
        return init_lr * step / num_warmup_steps
    return decayed


@pytest.mark.parametrize("end_lr,power", [(0.0, 1.0), (1e-5, 2.0), (0.0, 0.5)])
def test_schedule_matches_original(end_lr, power):
    schedule = optimization.WarmupPolynomialDecay(1e-4, decay_steps=1000, warmup_steps=100,
                                                  end_learning_rate=end_lr, power=power)
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
    expected = {v.path for v in model.trainable_variables
                if not any(part in v.path for part in ("layer_norm", "bias"))}
    assert decayed == expected
    assert any("word_embeddings" in p for p in decayed) and any(p.endswith("kernel") for p in decayed)


def test_weight_decay_and_clipping_act_as_documented():
    # One step of plain Adam vs AdamW on the same gradient: the difference is lr * wd * w on decayed variables.
    kernel = keras.Variable(np.full((2, 2), 2.0, "float32"), name="kernel")
    bias = keras.Variable(np.full((2,), 2.0, "float32"), name="bias")
    grads = [np.full((2, 2), 30.0, "float32"), np.full((2,), 40.0, "float32")]
    global_norm = np.sqrt(4 * 30.0**2 + 2 * 40.0**2)
    # end_learning_rate == learning_rate: a constant rate, which makes the expected values easy to write down.
    optimizer = optimization.create_optimizer(learning_rate=0.1, end_learning_rate=0.1, num_train_steps=10,
                                              weight_decay=0.5, clip_norm=1.0)
    optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads], [kernel, bias])
    # Adam's first step moves every weight by lr * sign(g) (up to epsilon), whatever the clipping; decay adds
    # lr * wd * w on the kernel only.
    np.testing.assert_allclose(kernel.numpy(), 2.0 - 0.1 - 0.1 * 0.5 * 2.0, rtol=1e-4)
    np.testing.assert_allclose(bias.numpy(), 2.0 - 0.1, rtol=1e-4)
    # Clipping to global norm 1.0 scales the gradients by 1/global_norm before Adam's moments see them.
    np.testing.assert_allclose(optimizer._momentums[0].numpy(), 0.1 * 30.0 / global_norm, rtol=1e-5)


def test_factory_options_and_errors():
    lamb = optimization.create_optimizer("lamb", learning_rate=1e-3, num_train_steps=10)
    assert isinstance(lamb, keras.optimizers.Lamb)
    fp16 = optimization.create_optimizer(learning_rate=1e-3, num_train_steps=10, num_warmup_steps=5,
                                         mixed_precision="float16")
    assert isinstance(fp16, keras.optimizers.LossScaleOptimizer)
    assert isinstance(fp16.inner_optimizer, keras.optimizers.AdamW)
    assert optimization.current_learning_rate(fp16) == 0.0  # the warmup starts at 0, as in the original
    with pytest.raises(ValueError, match="optimizer_type must be one of"):
        optimization.create_optimizer("sgd", learning_rate=1e-3, num_train_steps=10)
    with pytest.raises(ValueError, match="num_warmup_steps .* is larger than num_train_steps"):
        optimization.create_optimizer(learning_rate=1e-3, num_train_steps=10, num_warmup_steps=11)
