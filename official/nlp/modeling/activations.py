"""The activation functions that a `BertConfig.hidden_act` can name.

`"gelu"` is the tanh approximation that the original TF1 BERT code uses; `"gelu_exact"` is the erf form, which
Hugging Face calls `"gelu"`. The two differ by up to ~5e-4 per activation, enough to break float32 parity with a
checkpoint trained under the other one, so a converted checkpoint keeps the activation it was trained with.
"""

import math
from collections.abc import Callable

ACTIVATION_NAMES = ("gelu", "gelu_exact", "relu", "tanh", "linear")

# Hugging Face names -> ours. HF's "gelu" is the exact erf form; its tanh forms are "gelu_new" and friends.
HF_ACTIVATIONS = {
    "gelu": "gelu_exact",
    "gelu_python": "gelu_exact",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_fast": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}


def get_activation(name: str, training: bool = False) -> Callable:
    """Returns the activation function for a `hidden_act` name (one of `ACTIVATION_NAMES`).

    `training=True` gives the GELUs with a hand-written gradient (`gelu_for_training`): the same values, fewer
    passes over the activations. The default keeps the graph of `keras.activations.gelu`, which TensorFlow's CPU
    optimizer fuses with the dense layer before it at inference.
    """
    import keras  # here, so that configs (which imports this module) stays importable without TensorFlow

    if name in ("gelu", "gelu_exact"):
        if training:
            return gelu_for_training(approximate=name == "gelu")
        return lambda x: keras.activations.gelu(x, approximate=name == "gelu")
    if name in ACTIVATION_NAMES:
        return getattr(keras.activations, name)
    raise ValueError(f"Unknown activation {name!r}; expected one of {', '.join(ACTIVATION_NAMES)}")


def gelu_for_training(approximate: bool) -> Callable:
    """GELU (tanh approximation, or the exact erf form) with a hand-written gradient.

    Autodiff of the GELU graph takes about twelve element-wise passes over the `[tokens, intermediate]` activations
    in the backward pass and the forward takes eight, a visible share of a small model's train step. The tanh form is
    written as `x * sigmoid(2u)` (equal to `0.5 x (1 + tanh(u))`), and each gradient reuses what the forward pass
    computed, so both passes take about six.
    """
    import tensorflow as tf

    if approximate:
        k1 = 2.0 * math.sqrt(2.0 / math.pi)  # 2u = x (k1 + k2 x^2)
        k2 = k1 * 0.044715

        @tf.custom_gradient
        def gelu(x):
            x2 = tf.square(x)
            s = tf.sigmoid(x * (k1 + k2 * x2))

            def grad(dy):
                # d/dx [x s(2u)] = s + x s (1 - s) d(2u)/dx, d(2u)/dx = k1 + 3 k2 x^2
                return dy * (s + tf.raw_ops.SigmoidGrad(y=s, dy=x * (k1 + (3.0 * k2) * x2)))

            return x * s, grad

        return gelu

    @tf.custom_gradient
    def gelu_exact(x):
        cdf = 0.5 + 0.5 * tf.math.erf(x * (1.0 / math.sqrt(2.0)))

        def grad(dy):
            # d/dx [x cdf(x)] = cdf(x) + x pdf(x), pdf(x) = exp(-x^2 / 2) / sqrt(2 pi)
            return dy * (cdf + x * ((1.0 / math.sqrt(2.0 * math.pi)) * tf.exp(-0.5 * tf.square(x))))

        return x * cdf, grad

    return gelu_exact
