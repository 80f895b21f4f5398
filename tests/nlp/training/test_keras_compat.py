"""The Keras internal the training loop relies on (`training.keras_compat`): these fail first, naming it, when a Keras
upgrade changes it. The loop's numbers under MirroredStrategy are checked in test_trainer.py."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from official.nlp.training import keras_compat, optimization
from tests.conftest import REPO_ROOT

HOOK = f"{keras_compat.KERAS_OPTIMIZER}.{keras_compat.REDUCE_HOOK}"
CHANGED = f"Keras {keras.__version__} changed {HOOK}; update official/nlp/training/keras_compat.py"


def _tf_optimizer_class():
    from keras.src.backend.tensorflow.optimizer import TFOptimizer

    return TFOptimizer


def test_keras_tf_optimizer_has_the_hook():
    hook = getattr(_tf_optimizer_class(), keras_compat.REDUCE_HOOK, None)
    assert callable(hook), CHANGED
    assert list(inspect.signature(hook).parameters) == ["self", "grads_and_vars"], CHANGED


@pytest.mark.parametrize("name, mixed_precision", [("adamw", "float32"), ("lamb", "float32"), ("adamw", "float16")])
def test_our_optimizers_are_keras_tf_optimizers(name, mixed_precision):
    optimizer = optimization.create_optimizer(
        name, learning_rate=1e-3, num_train_steps=10, mixed_precision=mixed_precision
    )
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    assert isinstance(inner, _tf_optimizer_class()), CHANGED


def test_apply_passes_the_gradients_through_the_hook():
    """What the adapter shadows is on `apply`'s path: a hook that doubles the gradients doubles the update."""
    optimizer = keras.optimizers.SGD(learning_rate=1.0)
    w = keras.Variable([1.0, 1.0])
    setattr(optimizer, keras_compat.REDUCE_HOOK, lambda pairs: [(2.0 * g, v) for g, v in pairs])
    optimizer.apply([keras.ops.convert_to_tensor([0.5, 0.25])], [w])
    np.testing.assert_allclose(w.numpy(), [0.0, 0.5], err_msg=CHANGED)


def test_adapter_shadows_the_hook_only_while_active():
    optimizer = optimization.create_optimizer(learning_rate=1e-3, num_train_steps=10, mixed_precision="float16")
    inner = optimizer.inner_optimizer
    pairs = [("g", "v")]
    with keras_compat.gradients_already_reduced(optimizer):
        assert getattr(inner, keras_compat.REDUCE_HOOK)(iter(pairs)) == pairs
    assert keras_compat.REDUCE_HOOK not in vars(inner)


def test_adapter_refuses_an_optimizer_without_the_hook():
    class Plain:
        pass

    with pytest.raises(RuntimeError, match=f"no {HOOK}"):
        keras_compat.gradients_already_reduced(Plain())


_MIRRORED_CHILD = """
import json
from official.nlp.training import distribution, keras_compat
distribution.set_logical_cpu_devices(2)
import keras, tensorflow as tf
strategy = distribution.get_distribution_strategy("mirrored")
result = {}
for adapted in (False, True):
    with strategy.scope():
        w = keras.Variable([0.0])
        optimizer = keras.optimizers.SGD(learning_rate=1.0)
        optimizer.build([w])

    @tf.function
    def step():
        # As the loop does: around `strategy.run`, whose replicas share the optimizer.
        if adapted:
            with keras_compat.gradients_already_reduced(optimizer):
                strategy.run(lambda: optimizer.apply([tf.ones([1])], [w]))
        else:
            strategy.run(lambda: optimizer.apply([tf.ones([1])], [w]))

    step()
    result[str(adapted)] = float(w.numpy()[0])
print("RESULT " + json.dumps(result))
"""


@pytest.mark.slow
def test_under_mirrored_keras_sums_inside_apply_and_the_adapter_stops_it():
    """Two replicas each apply a gradient of 1: Keras sums them (the update is 2), the adapter leaves it at 1."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", _MIRRORED_CHILD], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[0][len("RESULT ") :])
    assert result["False"] == -2.0, CHANGED
    assert result["True"] == -1.0, CHANGED
