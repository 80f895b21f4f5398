"""A tiny classifier and dataset for testing the generic training loop (what fine-tuning tasks look like).

Also runnable as a child process (`python -m tests.nlp.training.tiny DIR`) that splits the CPU into two logical
devices, which must happen before TensorFlow starts: it trains the same model on the same global batches with
one_device, mirrored (2 replicas), gradient accumulation and both, and prints the losses and weights as JSON; and
mirrored with dropout on, uninterrupted and resumed, probing whether the two replicas draw different masks.
"""

from __future__ import annotations

import json
import sys

import numpy as np

GLOBAL_BATCH = 16
FEATURES = 6


def make_dataset(batch_size: int, *, nan_from_batch: int | None = None, seed: int = 0):
    """An endless dataset of ({"x": float [b, 6]}, {"label": int [b]}) with a learnable label."""
    import tensorflow as tf

    rng = np.random.RandomState(seed)
    x = rng.normal(size=(1024, FEATURES)).astype("float32")
    label = (x[:, 0] + 0.5 * x[:, 1] > 0).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, {"label": label}))
    dataset = dataset.shuffle(256, seed=seed).repeat().batch(batch_size, drop_remainder=True)
    if nan_from_batch is not None:
        dataset = dataset.enumerate().map(
            lambda i, xy: ({"x": tf.where(i >= nan_from_batch, np.float32(np.nan), xy[0]["x"])}, xy[1])
        )
    return dataset


def build(
    strategy,
    *,
    learning_rate: float = 1e-2,
    num_train_steps: int = 20,
    dropout: float = 0.0,
    mixed_precision: str = "float32",
    initial_loss_scale: float = 2.0**15,
    seed: int = 0,
):
    """A small MLP classifier (float32 logits) and its optimizer, made in `strategy.scope()`."""
    import keras

    from official.nlp.training import optimization, precision

    keras.utils.set_random_seed(seed)
    policy = precision.dtype_policy(mixed_precision)
    with strategy.scope():
        inputs = keras.Input((FEATURES,), name="x")
        h = keras.layers.Dense(32, activation="gelu", dtype=policy)(inputs)
        h = keras.layers.LayerNormalization(dtype=policy)(h)
        h = keras.layers.Dropout(dropout, dtype=policy)(h)
        logits = keras.layers.Dense(2, dtype="float32")(h)
        model = keras.Model({"x": inputs}, logits)
        optimizer = optimization.create_optimizer(
            learning_rate=learning_rate,
            num_train_steps=num_train_steps,
            num_warmup_steps=2,
            mixed_precision=mixed_precision,
            initial_loss_scale=initial_loss_scale,
        )
    return model, optimizer


def train(
    strategy,
    model_dir: str,
    *,
    accumulation: int = 1,
    checkpoint_input: bool = True,
    num_train_steps: int = 20,
    steps_per_loop: int = 5,
    dataset_kwargs=None,
    stop_at_step=None,
    **build_kwargs,
):
    from official.nlp.training.objectives import SparseCategoricalObjective
    from official.nlp.training.trainer import Trainer, TrainerConfig

    model, optimizer = build(strategy, num_train_steps=num_train_steps, **build_kwargs)
    trainer = Trainer(
        model,
        optimizer,
        SparseCategoricalObjective(label_key="label"),
        strategy,
        TrainerConfig(
            model_dir=model_dir,
            num_train_steps=num_train_steps,
            steps_per_loop=steps_per_loop,
            save_checkpoints_steps=10,
            gradient_accumulation_steps=accumulation,
            checkpoint_input=checkpoint_input,
        ),
        global_batch_size=GLOBAL_BATCH,
    )
    result = trainer.train(
        lambda ctx: make_dataset(ctx.get_per_replica_batch_size(GLOBAL_BATCH), **(dataset_kwargs or {})),
        stop_at_step=stop_at_step,
    )
    return result, model, optimizer


def replica_outputs(strategy, model) -> list:
    """The model's outputs on each replica for the same input, with dropout on (`training=True`)."""
    import tensorflow as tf

    x = {"x": tf.ones([4, FEATURES])}
    outputs = strategy.run(lambda: model(x, training=True))
    return [o.numpy() for o in strategy.experimental_local_results(outputs)]


def _dropout_scenario(strategy, out_dir: str) -> dict:
    """Mirrored training with dropout: uninterrupted, and stopped at step 10 then resumed by fresh objects."""
    full, full_model, _ = train(strategy, f"{out_dir}/full", dropout=0.3)
    train(strategy, f"{out_dir}/split", dropout=0.3, stop_at_step=10)
    resumed, resumed_model, _ = train(strategy, f"{out_dir}/split", dropout=0.3)
    result = {
        "resume_bitwise": all(
            np.array_equal(a, b) for a, b in zip(full_model.get_weights(), resumed_model.get_weights())
        ),
        "resumed_steps": [h["step"] for h in resumed.history],
    }
    for name, model in (("full", full_model), ("resumed", resumed_model)):
        outputs = replica_outputs(strategy, model)
        result[f"{name}_replica_max_diff"] = float(np.abs(outputs[0] - outputs[1]).max())
        # Each replica's stream still moves from call to call.
        result[f"{name}_calls_max_diff"] = float(np.abs(outputs[0] - replica_outputs(strategy, model)[0]).max())
    return result


def _distributed_scenarios(out_dir: str) -> dict:
    from official.nlp.training import distribution

    distribution.set_logical_cpu_devices(2)
    one = distribution.get_distribution_strategy("one_device")
    mirrored = distribution.get_distribution_strategy("mirrored")
    results = {}
    for name, strategy, kwargs in [
        ("one_device", one, {}),
        ("mirrored", mirrored, {}),
        ("accumulate4", one, {"accumulation": 4}),
        ("mirrored_accumulate2", mirrored, {"accumulation": 2}),
        ("mirrored_distributed_dataset", mirrored, {"checkpoint_input": False}),
    ]:
        result, model, _ = train(strategy, f"{out_dir}/{name}", **kwargs)
        results[name] = {
            "replicas": strategy.num_replicas_in_sync,
            "losses": [h["loss"] for h in result.history],
            "weights": [w.tolist() for w in model.get_weights()],
        }
    results["mirrored_dropout"] = _dropout_scenario(mirrored, f"{out_dir}/mirrored_dropout")
    return results


if __name__ == "__main__":
    print("RESULTS " + json.dumps(_distributed_scenarios(sys.argv[1])))
