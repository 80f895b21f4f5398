"""`--what=input`: does the input pipeline starve the step, and what does `steps_per_execution` buy in `fit`?

One `BertClassifier` (all-MiniLM-L6-v2 sizes, or the config given) compiled as a user would for `fit`, its
compiled train function fed by, in interleaved rounds:

- `constant`: one batch repeated from memory, the step alone (what `--what=step` times);
- `records`: the library's fine-tuning pipeline on real SST-2 rows (`classifier_features.make_dataset`: cached
  TFRecords, shuffled, parsed a batch at a time, prefetched), at the same fixed shape;
- `raw text`: the in-graph tokenizer in `Dataset.map` (`text_layers.BertTokenizer` and its packer, as the `fit`
  notebook does), raw SST-2 sentences in, the same fixed shape.

A ratio of 1.0 against `constant` means the pipeline keeps up: its work overlaps the step. Then the same step with
`steps_per_execution=1` (one Python round trip per step, Keras' default) against the configured value.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile

from benchmarks import timing


@dataclasses.dataclass(frozen=True)
class InputConfig:
    data_dir: str  # GLUE SST-2 folder (train.tsv)
    vocab_file: str
    num_layers: int = 6
    hidden: int = 384
    heads: int = 12
    batch: int = 32
    seq: int = 128
    num_examples: int = 3200
    steps_per_execution: int = 10
    rounds: int = 5
    precision: str = "float32"

    def describe(self) -> str:
        return (
            f"L{self.num_layers}-H{self.hidden}-A{self.heads} classifier, batch {self.batch}, seq {self.seq}, "
            f"{self.precision}, steps_per_execution={self.steps_per_execution}"
        )


def _records(config: InputConfig, work: str) -> str:
    """The first `num_examples` SST-2 training rows as the fine-tuning pipeline's cached records."""
    from official.nlp.data import classifier_examples, classifier_features, feature_cache, glue
    from official.nlp.tokenizers.tokenization import FullTokenizer

    processor = glue.get_processor("sst-2")
    examples = processor.read(os.path.join(config.data_dir, "train.tsv"), classifier_examples.TRAIN).examples[
        : config.num_examples
    ]
    tokenizer = FullTokenizer(config.vocab_file, do_lower_case=True)
    path = os.path.join(work, "train.tf_record")
    feature_cache.cached_records(
        path,
        {"benchmark": "input"},
        lambda: classifier_features.convert_examples(
            examples, tokenizer, labels=processor.labels, max_seq_length=config.seq
        ),
    )
    return path


def _datasets(config: InputConfig, record_file: str):
    import numpy as np
    import tensorflow as tf

    from benchmarks.finetune import read_sst2
    from official.nlp.data import classifier_features
    from official.nlp.tokenizers import text_layers

    records = classifier_features.make_dataset(
        record_file, config.seq, config.batch, regression=False, is_training=True, seed=0
    )
    records = records.map(lambda x, y: (x, y["label"]))

    sentences, labels = read_sst2(config.data_dir, config.num_examples)
    tokenizer = text_layers.BertTokenizer(config.vocab_file, do_lower_case=True)
    packer = tokenizer.packer(seq_length=config.seq)

    def preprocess(texts, y):
        # The packer leaves the batch dimension unknown; the step is traced for the fixed one.
        x = {k: tf.ensure_shape(v, [config.batch, config.seq]) for k, v in packer([tokenizer(texts)]).items()}
        return x, y

    raw = (
        tf.data.Dataset.from_tensor_slices((sentences, np.asarray(labels, np.int32)))
        .shuffle(len(sentences), seed=0)
        .repeat()
        .batch(config.batch, drop_remainder=True)
        .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )

    first = next(iter(records))
    constant = tf.data.Dataset.from_tensors(first).repeat()
    return {"constant": constant, "records": records, "raw text": raw}


def _model(config: InputConfig, steps_per_execution: int):
    import keras

    from official.nlp.modeling.encoder import BertEncoder
    from official.nlp.modeling.models import BertClassifier
    from official.nlp.training import optimization, precision

    keras.utils.set_random_seed(0)
    encoder = BertEncoder(
        vocab_size=30522,
        hidden_size=config.hidden,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.heads,
        intermediate_size=4 * config.hidden,
        dtype=precision.dtype_policy(config.precision),
    )
    model = BertClassifier(encoder, num_classes=2)
    model.compile(
        optimizer=optimization.create_optimizer(learning_rate=1e-5, num_train_steps=10**6),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=steps_per_execution,
    )
    model.make_train_function()
    return model


def _runner(model, dataset, steps_per_execution: int, batch: int, calls: int = 1):
    """`fn() -> examples`: `calls` calls of the model's compiled train function on `dataset` (warmed up)."""
    iterator = iter(dataset)

    def run():
        for _ in range(calls):
            logs = model.train_function(iterator)
        float(logs["loss"])  # waits for the step
        return batch * steps_per_execution * calls

    run(), run()  # trace, warm up
    return run


def run(config: InputConfig) -> dict[str, timing.Rate]:
    results = {}
    with tempfile.TemporaryDirectory() as work:
        datasets = _datasets(config, _records(config, work))
        model = _model(config, config.steps_per_execution)
        runners = {name: _runner(model, ds, config.steps_per_execution, config.batch) for name, ds in datasets.items()}
        rates = timing.interleaved(runners, config.rounds)
        timing.print_table(
            f"input pipeline vs the step alone, {config.describe()}", rates, reference="constant", unit="ex/s"
        )
        results.update({f"input/{name}": rate for name, rate in rates.items()})

        single = _model(config, 1)
        per_call = {
            f"steps_per_execution={config.steps_per_execution}": runners["records"],
            "steps_per_execution=1": _runner(
                single, datasets["records"], 1, config.batch, calls=config.steps_per_execution
            ),
        }
        rates = timing.interleaved(per_call, config.rounds)
        timing.print_table(
            f"fit's steps_per_execution, records pipeline, {config.describe()}",
            rates,
            reference="steps_per_execution=1",
            unit="ex/s",
        )
        results.update({f"steps_per_execution/{name}": rate for name, rate in rates.items()})
    return results
