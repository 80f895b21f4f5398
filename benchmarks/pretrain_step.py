"""`--what=pretrain`: one fixed-shape pretraining step, ours (MLM + NSP, and MLM only) against keras-hub's
`BertMaskedLM` (MLM only), for each size.

All three get the same encoder config, vocabulary size, batch, sequence length, number of masked positions, dtype
policy and AdamW hyperparameters (Keras' defaults at learning rate 1e-5: ours `BertAdamW`, keras-hub
`keras.optimizers.AdamW`), and run on one constant batch through Keras' compiled train function
(`steps_per_execution` steps per call), in interleaved rounds, as `--what=step` does.

What differs: keras-hub's `BertMaskedLM` has no next-sentence head, so "ours, MLM only" (`BertPretrainer(...,
use_next_sentence_label=False)`) is the like-for-like row; "ours, MLM + NSP" adds the pooler, the NSP classifier and
its loss, as `run_pretraining` trains by default. The MLM heads are the same computation (dense + GELU + layer norm
on the gathered positions, then the word embeddings transposed, plus a bias). The losses are the same weighted
mean of the masked positions' cross entropies (ours computes it itself; keras-hub's through `compile`'s loss with
the weights as sample weights), and both track the masked-LM accuracy. Our library's training loop
(`training.trainer`) is not what is timed here: this compares the models' steps, not the loops.

The matmul limit is `--what=step`'s: TensorFlow's own matmul on exactly this step's matmul shapes (the encoder's and
the MLM head's, forward and backward), and each row says what fraction of it the step reaches.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from benchmarks import step, timing


@dataclasses.dataclass(frozen=True)
class PretrainStepConfig:
    num_layers: int
    hidden: int
    heads: int
    vocab_size: int = 30522
    batch: int = 32
    seq: int = 128
    predictions: int = 20  # masked positions per sequence (max_predictions_per_seq)
    precision: str = "float32"
    steps_per_execution: int = 2
    rounds: int = 3
    jit_compile: bool = False

    @property
    def intermediate(self) -> int:
        return 4 * self.hidden

    def describe(self) -> str:
        return (
            f"L{self.num_layers}-H{self.hidden}-A{self.heads}, vocabulary {self.vocab_size}, batch {self.batch}, "
            f"seq {self.seq}, {self.predictions} masked positions, {self.precision}, jit_compile={self.jit_compile}"
        )


def _batch(config: PretrainStepConfig, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    b, s, p = config.batch, config.seq, config.predictions
    positions = np.sort(np.stack([rng.choice(np.arange(1, s), p, replace=False) for _ in range(b)]), axis=1)
    return {
        "ids": rng.integers(1000, config.vocab_size, (b, s)).astype("int32"),
        "segments": (np.arange(s)[None, :] >= s // 2).astype("int32").repeat(b, 0),
        "positions": positions.astype("int32"),
        "labels": rng.integers(1000, config.vocab_size, (b, p)).astype("int32"),
        "weights": np.ones((b, p), "float32"),
        "next_sentence": rng.integers(0, 2, (b, 1)).astype("int32"),
    }


def build_ours(config: PretrainStepConfig, nsp: bool):
    """`BertPretrainer` and its `(x, y)` batch."""
    from official.nlp.modeling.encoder import BertEncoder
    from official.nlp.modeling.models import BertPretrainer

    encoder = BertEncoder(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.heads,
        intermediate_size=config.intermediate,
    )
    data = _batch(config)
    x = {
        "input_word_ids": data["ids"],
        "input_mask": np.ones_like(data["ids"]),
        "input_type_ids": data["segments"],
        "masked_lm_positions": data["positions"],
    }
    y = {"masked_lm_ids": data["labels"], "masked_lm_weights": data["weights"]}
    if nsp:
        y["next_sentence_labels"] = data["next_sentence"]
    return BertPretrainer(encoder, use_next_sentence_label=nsp), (x, y)


def build_keras_hub(config: PretrainStepConfig):
    """keras-hub's `BertMaskedLM` (no preprocessor) and its `(x, y, sample_weight)` batch."""
    import keras_hub

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_layers,
        num_heads=config.heads,
        hidden_dim=config.hidden,
        intermediate_dim=config.intermediate,
    )
    data = _batch(config)
    x = {
        "token_ids": data["ids"],
        "padding_mask": np.ones_like(data["ids"]),
        "segment_ids": data["segments"],
        "mask_positions": data["positions"],
    }
    return keras_hub.models.BertMaskedLM(backbone, preprocessor=None), (x, data["labels"], data["weights"])


def _train_function(model, element, config: PretrainStepConfig, **compile_args):
    """train() -> sequences, traced and warmed up: `steps_per_execution` steps on the constant batch per call."""
    import tensorflow as tf

    model.compile(steps_per_execution=config.steps_per_execution, jit_compile=config.jit_compile, **compile_args)
    iterator = iter(tf.data.Dataset.from_tensors(element).repeat())
    model.make_train_function()
    train_function = model.train_function

    def train():
        float(train_function(iterator)["loss"])  # reading the loss waits for the steps
        return config.batch * config.steps_per_execution

    train(), train()  # trace, warm up
    return train


def head_shapes(config: PretrainStepConfig) -> list:
    """The MLM head's matmuls, forward and backward, as `timing.matmul_shapes` writes them: the transform
    `[B*P, H] x [H, H]` and the tied output layer `[B*P, H] x [H, V]`."""
    rows = config.batch * config.predictions
    dense = [(rows, config.hidden, config.hidden, 1), (rows, config.hidden, config.vocab_size, 1)]
    shapes = [(m, k, n, c, False, False) for m, k, n, c in dense]
    shapes += [(m, n, k, c, False, True) for m, k, n, c in dense]
    shapes += [(k, m, n, c, True, False) for m, k, n, c in dense]
    return shapes


def run(config: PretrainStepConfig) -> dict[str, timing.Rate]:
    """Measures and prints the pretraining step's sequences/s of the three, ratios, and the matmul-limit fraction."""
    import keras

    with step._dtype_policy(config.precision):
        keras.utils.set_random_seed(0)
        functions = {}
        for name, nsp in (("ours, MLM + NSP", True), ("ours, MLM only", False)):
            model, element = build_ours(config, nsp)
            functions[name] = _train_function(model, element, config, optimizer=step._our_optimizer())
        model, element = build_keras_hub(config)
        functions["keras-hub BertMaskedLM"] = _train_function(
            model,
            element,
            config,
            optimizer=keras.optimizers.AdamW(1e-5),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()],
        )
    rates = timing.interleaved(functions, config.rounds)
    encoder = timing.matmul_shapes(config.batch, config.seq, config.hidden, config.intermediate, config.heads, True)
    shapes = encoder * config.num_layers + head_shapes(config)
    limit = timing.matmul_limit(encoder + head_shapes(config), config.precision)
    flops_per_sequence = timing.layer_flops(shapes) / config.batch
    notes = {name: f"{100 * r.median * flops_per_sequence / limit:4.0f}% of matmul limit" for name, r in rates.items()}
    timing.print_table(
        f"pretraining step, {config.describe()}", rates, reference="keras-hub BertMaskedLM", unit="seq/s", extra=notes
    )
    print(f"  matmul limit (TF matmul on this step's shapes, {config.precision}): {limit / 1e9:.1f} GFLOP/s")
    return rates
