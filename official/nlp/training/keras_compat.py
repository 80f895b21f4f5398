"""The one Keras internal the training loop relies on: handing the optimizer gradients already summed over replicas.

Keras 3's TensorFlow optimizer sums gradients over replicas inside `apply`, after clipping them:
`keras.src.backend.tensorflow.optimizer.TFOptimizer._backend_update_step` passes them through the method
`_all_reduce_sum_gradients(grads_and_vars)` before updating the variables. The loop sums them itself first, because
clipping must use the norm of the global gradient (Keras would clip each replica's share) and the skipped-step check
must see the sum; so the optimizer's own sum has to be a no-op. Keras 3 offers no public way to say so (tf.keras had
`apply_gradients(..., experimental_aggregate_gradients=False)`; keras-team/keras#19308 asks for it back), its own
gradient accumulation fails inside MirroredStrategy, and the other public paths clip before summing. So
`gradients_already_reduced` shadows that method on the optimizer instance while the loop traces its step.

`tests/nlp/training/test_keras_compat.py` names the Keras API this relies on and fails first, with a message that
points here, when a Keras upgrade changes it.
"""

from __future__ import annotations

import keras

KERAS_OPTIMIZER = "keras.src.backend.tensorflow.optimizer.TFOptimizer"
REDUCE_HOOK = "_all_reduce_sum_gradients"


class gradients_already_reduced:  # noqa: N801 (a context manager, used like a function)
    """While active, `optimizer.apply` (in a replica context) takes its gradients as already summed over replicas.

    Enter it around `strategy.run` (the replicas share the optimizer), not inside the replica function. Follows a
    `LossScaleOptimizer` to the optimizer it wraps. Raises `RuntimeError` when Keras has no such hook, rather than
    letting the optimizer sum the gradients a second time.
    """

    def __init__(self, optimizer: keras.optimizers.Optimizer):
        self.inner = getattr(optimizer, "inner_optimizer", optimizer)
        if not callable(getattr(type(self.inner), REDUCE_HOOK, None)):
            raise RuntimeError(
                f"This Keras version ({keras.__version__}) has no {KERAS_OPTIMIZER}.{REDUCE_HOOK}; the training "
                "loop needs updating for it (gradients would be summed over replicas twice): see "
                "official/nlp/training/keras_compat.py"
            )

    def __enter__(self):
        setattr(self.inner, REDUCE_HOOK, lambda grads_and_vars: list(grads_and_vars))
        return self

    def __exit__(self, *exc):
        delattr(self.inner, REDUCE_HOOK)
