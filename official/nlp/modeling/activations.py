"""The activation functions that a `BertConfig.hidden_act` can name.

`"gelu"` is the tanh approximation that the original TF1 BERT code uses; `"gelu_exact"` is the erf form, which
Hugging Face calls `"gelu"`. The two differ by up to ~5e-4 per activation, enough to break float32 parity with a
checkpoint trained under the other one, so a converted checkpoint keeps the activation it was trained with.
"""
from typing import Callable

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


def get_activation(name: str) -> Callable:
    """Returns the activation function for a `hidden_act` name (one of `ACTIVATION_NAMES`)."""
    import keras  # here, so that configs (which imports this module) stays importable without TensorFlow

    if name == "gelu":
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name == "gelu_exact":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name in ACTIVATION_NAMES:
        return getattr(keras.activations, name)
    raise ValueError(f"Unknown activation {name!r}; expected one of {', '.join(ACTIVATION_NAMES)}")
