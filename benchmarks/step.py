"""`--what=step`: one fixed-shape train and inference step of encoder + classifier, ours against keras-hub.

Both models get the same config, batch, length, dtype policy, loss and `compile` settings, and AdamW with the
same hyperparameters (Keras' defaults, learning rate 1e-5): keras-hub trains with `keras.optimizers.AdamW`, ours
with this library's `BertAdamW` (the same update, one fused kernel per variable). They run on the same constant
batch through Keras' own compiled train function (so the input pipeline and `fit`'s Python overhead are out of
the picture). Rounds alternate between the two so that load from other
jobs on the machine hits both alike.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from benchmarks import timing


@dataclasses.dataclass(frozen=True)
class StepConfig:
    num_layers: int = 4
    hidden: int = 256
    heads: int = 4
    intermediate: int | None = None  # 4 * hidden
    vocab_size: int = 30522
    batch: int = 32
    seq: int = 128
    precision: str = "float32"  # a --mixed_precision value: float32, bfloat16, float16
    steps_per_execution: int = 5
    rounds: int = 5
    jit_compile: bool = False

    @property
    def intermediate_size(self) -> int:
        return self.intermediate or 4 * self.hidden

    def describe(self) -> str:
        return (
            f"L{self.num_layers}-H{self.hidden}-A{self.heads}, batch {self.batch}, seq {self.seq}, "
            f"{self.precision}, jit_compile={self.jit_compile}"
        )


def _batch(config: StepConfig, seed: int = 0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, config.vocab_size, (config.batch, config.seq)).astype("int32")
    labels = rng.integers(0, 2, (config.batch,)).astype("int32")
    return ids, labels


def build_ours(config: StepConfig):
    from official.nlp.modeling.encoder import BertEncoder
    from official.nlp.modeling.models import BertClassifier

    encoder = BertEncoder(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.heads,
        intermediate_size=config.intermediate_size,
    )
    ids, _ = _batch(config)
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    return BertClassifier(encoder, num_classes=2), inputs


def build_keras_hub(config: StepConfig):
    import keras_hub

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_layers,
        num_heads=config.heads,
        hidden_dim=config.hidden,
        intermediate_dim=config.intermediate_size,
    )
    ids, _ = _batch(config)
    inputs = {"token_ids": ids, "padding_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    return keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None), inputs


@contextlib.contextmanager
def _dtype_policy(precision: str):
    """Models built inside get the `--mixed_precision` policy; the previous global policy comes back after."""
    import keras

    from official.nlp.training.precision import dtype_policy

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype_policy(precision))
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def _our_optimizer():
    """`BertAdamW` at learning rate 1e-5 with Keras' AdamW defaults (weight decay 0.004, epsilon 1e-7)."""
    from official.nlp.training import optimization

    return optimization.BertAdamW(1e-5, weight_decay=0.004, epsilon=1e-7)


def _step_functions(model, inputs, labels, config: StepConfig, optimizer):
    """(train() -> sequences, infer() -> sequences), both traced and warmed up."""
    import keras
    import tensorflow as tf

    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=config.steps_per_execution,
        jit_compile=config.jit_compile,
    )
    dataset = tf.data.Dataset.from_tensors((inputs, labels)).repeat()
    iterator = iter(dataset)
    model.make_train_function()
    train_function = model.train_function
    forward = tf.function(lambda x: model(x, training=False), jit_compile=config.jit_compile)
    constant = {k: tf.constant(v) for k, v in inputs.items()}

    def train():
        logs = train_function(iterator)
        float(logs["loss"])  # waits for the step
        return config.batch * config.steps_per_execution

    def infer():
        for _ in range(config.steps_per_execution):
            out = forward(constant)
        out.numpy()
        return config.batch * config.steps_per_execution

    train(), infer()  # trace
    train(), infer()  # warm up
    return train, infer


def run(config: StepConfig) -> dict[str, timing.Rate]:
    """Measures and prints train and inference sequences/s of both, ratios, and the matmul-limit fraction."""
    import keras

    with _dtype_policy(config.precision):
        keras.utils.set_random_seed(0)
        _, labels = _batch(config)
        functions = {}
        # The same hyperparameters for both: Keras' AdamW defaults.
        optimizers = {"ours": _our_optimizer, "keras-hub": lambda: keras.optimizers.AdamW(1e-5)}
        for name, build in (("ours", build_ours), ("keras-hub", build_keras_hub)):
            model, inputs = build(config)
            functions[name] = _step_functions(model, inputs, labels, config, optimizers[name]())

    results = {}
    for phase, index in (("train", 0), ("infer", 1)):
        rates = timing.interleaved({name: fns[index] for name, fns in functions.items()}, config.rounds)
        shapes = timing.matmul_shapes(
            config.batch, config.seq, config.hidden, config.intermediate_size, config.heads, train=phase == "train"
        )
        limit = timing.matmul_limit(shapes, config.precision)
        flops_per_seq = timing.layer_flops(shapes) * config.num_layers / config.batch
        notes = {name: f"{100 * r.median * flops_per_seq / limit:4.0f}% of matmul limit" for name, r in rates.items()}
        timing.print_table(
            f"{phase} step, {config.describe()}", rates, reference="keras-hub", unit="seq/s", extra=notes
        )
        print(f"  matmul limit (TF matmul on this step's shapes, {config.precision}): {limit / 1e9:.1f} GFLOP/s")
        results.update({f"{phase}/{name}": rate for name, rate in rates.items()})
    return results


def breakdown(config: StepConfig) -> dict[str, float]:
    """Where our train step's time goes, by wall clock: the step timed whole and with parts left out.

    Each variant is its own `tf.function` on one constant batch, timed in interleaved rounds; differences of
    medians attribute the time (the optimizer update = whole step - step without it; dropout = whole step - the
    same step traced with every dropout rate at 0, still in training mode). Unlike a profile's op times, which add
    up ops that run side by side on the two inter-op threads, these are what the step takes. Returns milliseconds
    per step by variant.
    """
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    with _dtype_policy(config.precision):
        model, inputs = build_ours(config)
    _, labels = _batch(config)
    features, labels = {k: tf.constant(v) for k, v in inputs.items()}, tf.constant(labels)
    optimizer = _our_optimizer()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model(features)
    variables = model.trainable_variables
    optimizer.build(variables)

    def variant(training=True, backward=True, update=True, dropout=True):
        @tf.function(jit_compile=config.jit_compile)
        def run():
            with tf.GradientTape() as tape:
                loss = loss_fn(labels, model(features, training=training))
            if not backward:
                return loss
            grads = tape.gradient(loss, variables)
            if update:
                optimizer.apply(grads, variables)
                return loss
            # Every gradient computed, none applied: one element of each is read (Grappler drops a control
            # dependency on ops without side effects, so a data dependency is needed).
            firsts = [tf.reshape(g.values if isinstance(g, tf.IndexedSlices) else g, [-1])[0] for g in grads]
            return loss + 0.0 * tf.add_n(firsts)

        if not dropout:  # traced now, with the rates at 0 (a Dropout layer reads its rate when traced)
            layers = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.Dropout)]
            rates = [layer.rate for layer in layers]
            for layer in layers:
                layer.rate = 0.0
            try:
                run.get_concrete_function()
            finally:
                for layer, rate in zip(layers, rates):
                    layer.rate = rate
        return run

    dense_grads = [tf.fill(v.shape, 1e-3) for v in variables]
    update_only = tf.function(lambda: optimizer.apply(dense_grads, variables))
    variants = {
        "train step": variant(),
        "without the optimizer update": variant(update=False),
        "without dropout": variant(dropout=False),
        "forward, training mode": variant(backward=False),
        "forward, inference mode": variant(training=False, backward=False),
        "optimizer update alone": update_only,
    }

    def timed(fn):
        def call():
            for _ in range(config.steps_per_execution):
                out = fn()
            if out is not None:
                out.numpy()
            else:
                variables[0].numpy()
            return config.steps_per_execution

        return call

    calls = {name: timed(fn) for name, fn in variants.items()}
    for call in calls.values():
        call(), call()  # trace, warm up
    rates = timing.interleaved(calls, config.rounds)
    ms = {name: 1000 / rate.median for name, rate in rates.items()}
    shapes = timing.matmul_shapes(
        config.batch, config.seq, config.hidden, config.intermediate_size, config.heads, train=True
    )
    limit = timing.matmul_limit(shapes, config.precision)
    train_flops = timing.layer_flops(shapes) * config.num_layers
    print(f"\n## where the train step's time goes, ours, {config.describe()}\n$ {timing.command_line()}")
    for name, value in ms.items():
        print(f"  {name:<32} {value:9.1f} ms")
    parts = {
        "optimizer update": ms["train step"] - ms["without the optimizer update"],
        "dropout (forward and backward)": ms["train step"] - ms["without dropout"],
        "backward": ms["without the optimizer update"] - ms["forward, training mode"],
    }
    for name, value in parts.items():
        print(f"  = {name:<30} {value:9.1f} ms ({100 * value / ms['train step']:.0f}% of the step)")
    matmul_ms = 1000 * train_flops / limit
    print(
        f"  the step's matmuls at the limit ({limit / 1e9:.1f} GFLOP/s) would take {matmul_ms:.1f} ms: "
        f"{100 * matmul_ms / ms['train step']:.0f}% of the step"
    )
    return ms
