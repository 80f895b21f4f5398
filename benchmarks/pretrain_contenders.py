"""The contenders of the pretraining-speed benchmarks (`pretrain_levers`, `learning_per_cpu`): our real training
step on real records, and transformers' `BertForPreTraining` step at the same sizes, each as a warmed-up
`train() -> examples` for `timing.interleaved`.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time

from benchmarks import timing


@dataclasses.dataclass(frozen=True)
class Data:
    """The records and the model size every contender trains on."""

    input_file: str
    vocab_file: str
    size: str = "tiny"
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20


def pretraining_config(data: Data, batch: int, model_dir: str, jit_compile: bool = False):
    from official.nlp.tasks.pretraining import PretrainingConfig

    return PretrainingConfig(
        input_file=data.input_file,
        model_dir=model_dir,
        max_seq_length=data.max_seq_length,
        max_predictions_per_seq=data.max_predictions_per_seq,
        train_batch_size=batch,
        num_train_steps=100000,
        num_warmup_steps=1000,
        learning_rate=2e-3,
        adam_bias_correction=True,
        jit_compile=jit_compile,
    )


def bert_config(size: str, vocab_file: str):
    """The `BertConfig` of `size` with the vocabulary size of `vocab_file`."""
    from official.nlp.paper import budgets
    from official.nlp.tokenizers import tokenization

    return budgets.parse_size(size).bert_config(len(tokenization.load_vocab(vocab_file)))


def ours(data: Data, batch: int, model_dir: str, examples: int, jit_compile: bool = False):
    """`train() -> examples`: `examples` examples (rounded up to whole steps) of our loop, warmed up."""
    import keras
    import tensorflow as tf

    from official.nlp.tasks.pretraining import PretrainingObjective, build_model_and_optimizer, make_data_loader
    from official.nlp.training import distribution
    from official.nlp.training.train_step import TrainStep

    config = pretraining_config(data, batch, model_dir, jit_compile)
    bert = bert_config(data.size, data.vocab_file)
    strategy = distribution.get_distribution_strategy("one_device")
    keras.utils.set_random_seed(config.seed)
    model, optimizer = build_model_and_optimizer(config, bert, strategy)
    dataset = make_data_loader(config, bert).load()
    with strategy.scope():
        step = tf.Variable(0, dtype=tf.int64, trainable=False)
        nonfinite = tf.Variable(0, dtype=tf.int64, trainable=False)
    train_step = TrainStep(
        model,
        optimizer,
        PretrainingObjective(),
        strategy,
        step=step,
        nonfinite_steps=nonfinite,
        gradient_accumulation_steps=1,
        jit_compile=jit_compile,
    )
    loop = train_step.make_loop(iter(dataset), distributed=False, worker_index=0)
    steps = tf.constant(max(1, -(-examples // batch)))

    def train():
        loop(steps).numpy()  # reading the result waits for the steps
        return int(steps) * batch

    train()  # trace, warm up
    return train


def transformers_step(data: Data, batch: int, examples: int):
    """`train() -> examples` of transformers' BertForPreTraining (torch, CPU) on one constant batch of real records:
    forward with masked-LM labels (-100 off the masked positions) and NSP labels, backward, AdamW."""
    import numpy as np
    import tensorflow as tf
    import torch
    import transformers

    from official.nlp.tasks.pretraining import make_data_loader

    bert = bert_config(data.size, data.vocab_file)
    with tempfile.TemporaryDirectory() as tmp:
        x, y = next(iter(make_data_loader(pretraining_config(data, batch, tmp), bert).load()))
    ids = x["input_word_ids"].numpy()
    labels = np.full_like(ids, -100)
    positions, masked_ids = x["masked_lm_positions"].numpy(), y["masked_lm_ids"].numpy()
    weights = y["masked_lm_weights"].numpy()
    for row in range(ids.shape[0]):
        real = weights[row] > 0
        labels[row, positions[row][real]] = masked_ids[row][real]
    inputs = {
        "input_ids": torch.from_numpy(ids.astype("int64")),
        "attention_mask": torch.from_numpy(x["input_mask"].numpy().astype("int64")),
        "token_type_ids": torch.from_numpy(x["input_type_ids"].numpy().astype("int64")),
        "labels": torch.from_numpy(labels.astype("int64")),
        "next_sentence_label": torch.from_numpy(tf.reshape(y["next_sentence_labels"], [-1]).numpy().astype("int64")),
    }
    torch.manual_seed(0)
    model = transformers.BertForPreTraining(
        transformers.BertConfig(
            vocab_size=bert.vocab_size,
            hidden_size=bert.hidden_size,
            num_hidden_layers=bert.num_hidden_layers,
            num_attention_heads=bert.num_attention_heads,
            intermediate_size=bert.intermediate_size,
            max_position_embeddings=bert.max_position_embeddings,
        )
    )
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    steps = max(1, -(-examples // batch))

    def train():
        for _ in range(steps):
            optimizer.zero_grad(set_to_none=True)
            loss = model(**inputs).loss
            loss.backward()
            optimizer.step()
        float(loss.detach())
        return steps * batch

    train()
    return train


def peer_table(data: Data, batch: int, examples: int = 512, rounds: int = 3, jit: bool = False):
    """Times our step at `batch` (and with `jit_compile` if `jit`) beside transformers' BertForPreTraining, in
    interleaved rounds in this process, and prints the table (ratios to ours)."""
    reference = f"ours, batch {batch}"
    with tempfile.TemporaryDirectory() as tmp:
        functions = {reference: ours(data, batch, os.path.join(tmp, "ours"), examples)}
        if jit:
            functions[f"ours, batch {batch}, jit_compile"] = ours(data, batch, os.path.join(tmp, "jit"), examples, True)
        functions[f"transformers BertForPreTraining, batch {batch}"] = transformers_step(data, batch, examples)
        print_rates(data, timing.interleaved(functions, rounds), reference)


def print_rates(data: Data, rates: dict, reference: str) -> None:
    load = os.getloadavg()
    timing.print_table(
        f"pretraining steps, {data.size}, vocabulary of {data.vocab_file}, seq {data.max_seq_length}, "
        f"{data.max_predictions_per_seq} masked positions, float32 "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {load[0]:.1f})",
        rates,
        reference=reference,
        unit="examples/s",
    )
