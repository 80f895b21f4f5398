"""The training GELUs (hand-written gradients) against Keras' GELU and TensorFlow's autodiff of it."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import activations


@pytest.mark.parametrize("name, approximate", [("gelu", True), ("gelu_exact", False)])
def test_training_gelu_equals_keras_gelu_and_its_autodiff_gradient(name, approximate):
    x = tf.constant(np.linspace(-9.0, 9.0, 40001, dtype="float32"))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        reference = keras.activations.gelu(x, approximate=approximate)
        ours = activations.get_activation(name, training=True)(x)
    np.testing.assert_allclose(ours.numpy(), reference.numpy(), atol=2e-6)
    np.testing.assert_allclose(tape.gradient(ours, x).numpy(), tape.gradient(reference, x).numpy(), atol=1e-5)
    # A hand-worked point: GELU'(0) = 1/2 in both forms.
    assert tape.gradient(ours, x).numpy()[20000] == pytest.approx(0.5)


@pytest.mark.parametrize("name", ["gelu", "gelu_exact"])
def test_training_gelu_keeps_the_compute_dtype(name):
    x = tf.constant([-1.0, 0.5, 2.0], tf.bfloat16)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = activations.get_activation(name, training=True)(x)
    assert y.dtype == tf.bfloat16 and tape.gradient(y, x).dtype == tf.bfloat16
    np.testing.assert_allclose(
        tf.cast(y, tf.float32).numpy(),
        keras.activations.gelu(tf.cast(x, tf.float32), approximate=name == "gelu").numpy(),
        rtol=2e-2,
    )
