"""SQuAD v1.1 / v2.0 question answering: fine-tune a `BertSpanLabeler`, predict, post-process, evaluate.

`run_squad(SquadConfig(...))` is everything `run_scripts/run_squad.py` does:

- `do_train`: reads and checks the whole `train_file`, builds windowed features (`official.nlp.data.squad`),
  caches them as `output_dir/train.tf_record`, and trains with the shared loop (`official.nlp.training.trainer`)
  from `init_checkpoint` for `num_train_epochs` passes over the features; checkpoints go to `output_dir`, and a run
  started again resumes from them.
- `do_predict`: predicts `predict_file` with the newest checkpoint in `output_dir` (else `init_checkpoint`) and
  writes `predictions.json`, `nbest_predictions.json` and, for v2.0, `null_odds.json`. When the file has answers,
  it also evaluates (`official.nlp.metrics.squad`, as the official scripts) and writes `eval_results.json` and
  TensorBoard scalars under `output_dir/summaries/eval`.

From Python, `model.fit` works on the same cached features, and `answer_questions` turns strings into answers:

    files = model_dir.resolve_model_files("models/minilm")
    model = build_span_labeler(files)                       # encoder weights restored, fresh span head
    model.compile(keras.optimizers.Adam(5e-5), loss=span_losses(), loss_weights=SPAN_LOSS_WEIGHTS)
    model.fit(squad_records.training_dataset("train.tf_record", seq_length=384, batch_size=16), steps_per_epoch=100)
    answer_questions(model, files.tokenizer(), [("Who wrote it?", "It was written by Ann Smith in 1900.")])

The training loop is the `Trainer` (written so that it can move onto the shared fine-tuning base once that exists).
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Iterable, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.checkpoints import tf_checkpoints
from official.nlp.common.errors import InputError
from official.nlp.data import squad, squad_records
from official.nlp.data.squad_postprocessing import PostprocessSettings, SquadPredictions, postprocess
from official.nlp.metrics import squad as squad_metrics
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.losses import cross_entropy, weighted_accuracy
from official.nlp.modeling.models import BertSpanLabeler
from official.nlp.training import distribution, optimization, summaries
from official.nlp.training.trainer import Trainer, TrainerConfig

SPAN_LOSS_WEIGHTS = {"start_logits": 0.5, "end_logits": 0.5}


def span_losses() -> dict:
    """Keras losses for `BertSpanLabeler.compile`: cross entropy of the start and of the end position."""
    return {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True) for name in SPAN_LOSS_WEIGHTS}


class SpanObjective:
    """The original loss for the training loop: the mean of the start and end cross entropies; and accuracies."""

    def loss_weights(self, labels):
        return {"loss": tf.ones(tf.shape(labels["start_logits"]), tf.float32)}

    def losses(self, labels, outputs):
        return {"loss": 0.5 * (cross_entropy(labels["start_logits"], outputs["start_logits"])
                               + cross_entropy(labels["end_logits"], outputs["end_logits"]))}

    def metrics(self, labels, outputs):
        return {f"{name[:-7]}_accuracy": weighted_accuracy(labels[name], outputs[name]) for name in SPAN_LOSS_WEIGHTS}


@dataclasses.dataclass
class SquadConfig:
    """Every setting of `run_squad`; the names are the script's flags (the original ones first)."""

    output_dir: str
    train_file: str | None = None
    predict_file: str | None = None
    init_checkpoint: str | None = None
    bert_config_file: str | None = None
    vocab_file: str | None = None
    do_lower_case: bool | None = None
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    do_train: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    n_best_size: int = 20
    max_answer_length: int = 30
    version_2_with_negative: bool = False
    null_score_diff_threshold: float = 0.0
    # Training flags shared with run_pretraining.
    optimizer: str = "adamw"
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    steps_per_loop: int = 100
    gradient_accumulation_steps: int = 1
    mixed_precision: str = "float32"
    jit_compile: bool = False
    distribution_strategy: str = "one_device"
    num_gpus: int | None = None
    tpu: str | None = None
    all_reduce_alg: str | None = None
    seed: int = 12345

    def postprocess_settings(self, do_lower_case: bool) -> PostprocessSettings:
        return PostprocessSettings(self.n_best_size, self.max_answer_length, do_lower_case,
                                   self.version_2_with_negative, self.null_score_diff_threshold)


def _check_config(config: SquadConfig) -> None:
    if not (config.do_train or config.do_predict):
        raise InputError("nothing to do: pass --do_train and/or --do_predict")
    if config.do_train and not config.train_file:
        raise InputError("--do_train needs --train_file")
    if config.do_predict and not config.predict_file:
        raise InputError("--do_predict needs --predict_file")
    if config.n_best_size <= 0 or config.max_answer_length <= 0:
        raise InputError("--n_best_size and --max_answer_length must be positive")
    squad.check_settings(config.max_seq_length, config.doc_stride, config.max_query_length)


def build_span_labeler(files: model_dir_lib.ModelFiles, *, mixed_precision: str = "float32",
                       restore: bool = True) -> BertSpanLabeler:
    """A `BertSpanLabeler` for `files.config`; with `restore`, weights from `files.checkpoint` (see `restore_into`)."""
    encoder = BertEncoder.from_bert_config(files.config, dtype=optimization.dtype_policy(mixed_precision))
    model = BertSpanLabeler(encoder)
    if restore and files.checkpoint is not None:
        restore_into(model, files)
    return model


def restore_into(model: BertSpanLabeler, files: model_dir_lib.ModelFiles) -> None:
    """Whole model from a fine-tuned span-labeler checkpoint; else the encoder only (fresh span head)."""
    if files.checkpoint_format == "ours":
        saved = tf_checkpoints._SavedGraph(tf.train.load_checkpoint(files.checkpoint))
        if saved.node(("model", "span_logits")) is not None:
            tf_checkpoints.restore_checkpoint(model, files.checkpoint)
            logging.info("Restored the fine-tuned span labeler from %s", files.checkpoint)
            return
    files.restore(model)


def _latest_training_checkpoint(output_dir: str) -> str | None:
    return tf.train.latest_checkpoint(output_dir) if tf.io.gfile.isdir(output_dir) else None


def train(config: SquadConfig, files: model_dir_lib.ModelFiles, tokenizer,
          strategy: tf.distribute.Strategy) -> tuple[BertSpanLabeler, dict]:
    """Builds (or reuses) the training features and trains; returns the model and training statistics."""
    examples, report = squad.read_squad_examples(config.train_file, is_training=True,
                                                 version_2_with_negative=config.version_2_with_negative)
    started = time.monotonic()
    features, stats = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=config.max_seq_length, doc_stride=config.doc_stride,
        max_query_length=config.max_query_length, is_training=True)
    record_file = os.path.join(config.output_dir, "train.tf_record")
    squad_records.write_features(features, record_file)
    logging.info("%d training examples -> %d features in %.1fs (%d answers outside their window point at [CLS]) "
                 "-> %s", len(examples), len(features), time.monotonic() - started, stats.out_of_window, record_file)
    replicas = strategy.num_replicas_in_sync * config.gradient_accumulation_steps
    if config.train_batch_size % replicas:
        raise InputError(f"--train_batch_size={config.train_batch_size} must divide by replicas x "
                         f"--gradient_accumulation_steps = {replicas}")
    # One epoch is one pass over the features (the original counted examples, a few percent fewer steps).
    num_train_steps = max(1, int(len(features) / config.train_batch_size * config.num_train_epochs))
    num_warmup_steps = int(num_train_steps * config.warmup_proportion)
    with strategy.scope():
        model = build_span_labeler(files, mixed_precision=config.mixed_precision, restore=False)
        optimizer = optimization.create_optimizer(
            config.optimizer, learning_rate=config.learning_rate, num_train_steps=num_train_steps,
            num_warmup_steps=num_warmup_steps, weight_decay=config.weight_decay, clip_norm=config.clip_norm,
            mixed_precision=config.mixed_precision)

    def init_fn():
        if files.checkpoint is not None:
            restore_into(model, files)

    trainer = Trainer(model, optimizer, SpanObjective(), strategy, TrainerConfig(
        model_dir=config.output_dir, num_train_steps=num_train_steps, steps_per_loop=config.steps_per_loop,
        save_checkpoints_steps=config.save_checkpoints_steps, max_checkpoints_to_keep=config.keep_checkpoint_max,
        gradient_accumulation_steps=config.gradient_accumulation_steps, jit_compile=config.jit_compile),
        global_batch_size=config.train_batch_size, init_fn=init_fn)
    per_replica = config.train_batch_size // strategy.num_replicas_in_sync
    started = time.monotonic()
    result = trainer.train(lambda ctx: squad_records.training_dataset(
        record_file, seq_length=config.max_seq_length, batch_size=per_replica, seed=config.seed,
        input_context=ctx))
    elapsed = time.monotonic() - started
    info = {"train_examples": len(examples), "train_features": len(features), "num_train_steps": num_train_steps,
            "answer_mismatch": len(report.answer_mismatch), "truncated_questions": len(stats.truncated_questions),
            "train_seconds": elapsed, **{f"train_{k}": v for k, v in result.metrics.items()}}
    if result.history:
        # The first loop also traces the step function; the later ones measure the steady rate.
        steady = result.history[1:] or result.history
        info["train_features_per_second"] = float(np.mean([h["examples_per_second"] for h in steady]))
    return model, info


def predict_logits(model: keras.Model, features: Sequence[squad.SquadFeature], batch_size: int = 8
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Start and end logits `[num_features, seq]`, in feature order."""
    if not features:
        return np.zeros((0, 0), np.float32), np.zeros((0, 0), np.float32)
    step = tf.function(lambda x: model(x, training=False))
    starts, ends = [], []
    for x in squad_records.prediction_dataset(features, batch_size):
        out = step(x)
        starts.append(out["start_logits"].numpy())
        ends.append(out["end_logits"].numpy())
    return np.concatenate(starts), np.concatenate(ends)


def answer_questions(model: keras.Model, tokenizer, pairs: Iterable[tuple[str, str]], *, max_seq_length: int = 384,
                     doc_stride: int = 128, max_query_length: int = 64,
                     settings: PostprocessSettings | None = None, batch_size: int = 8) -> list[str]:
    """Answers for `(question, context)` strings with a trained span labeler ("" = no answer, v2.0 settings).

    >>> answer_questions(model, tokenizer, [("Who wrote it?", "It was written by Ann Smith.")])  # doctest: +SKIP
    ['Ann Smith']
    """
    settings = settings or PostprocessSettings(do_lower_case=tokenizer.do_lower_case)
    examples = squad.examples_from_strings(pairs)
    features, _ = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=max_seq_length, doc_stride=doc_stride,
        max_query_length=max_query_length, is_training=False)
    starts, ends = predict_logits(model, features, batch_size)
    predictions = postprocess(examples, features, starts, ends, settings).predictions
    return [predictions[e.qas_id] for e in examples]


def write_predictions(result: SquadPredictions, output_dir: str, version_2_with_negative: bool) -> None:
    """predictions.json, nbest_predictions.json and (v2.0) null_odds.json, as the original writes them."""
    tf.io.gfile.makedirs(output_dir)
    outputs = {"predictions.json": result.predictions, "nbest_predictions.json": result.nbest}
    if version_2_with_negative:
        outputs["null_odds.json"] = result.null_odds
    for name, value in outputs.items():
        with tf.io.gfile.GFile(os.path.join(output_dir, name), "w") as f:
            f.write(json.dumps(value, indent=4) + "\n")


def predict(config: SquadConfig, model: keras.Model, tokenizer, do_lower_case: bool, step: int = 0) -> dict:
    """Predicts `config.predict_file`, writes the prediction files and, when it has answers, evaluates."""
    examples, report = squad.read_squad_examples(config.predict_file, is_training=False,
                                                 version_2_with_negative=config.version_2_with_negative)
    features, stats = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=config.max_seq_length, doc_stride=config.doc_stride,
        max_query_length=config.max_query_length, is_training=False)
    started = time.monotonic()
    starts, ends = predict_logits(model, features, config.predict_batch_size)
    elapsed = time.monotonic() - started
    result = postprocess(examples, features, starts, ends, config.postprocess_settings(do_lower_case))
    write_predictions(result, config.output_dir, config.version_2_with_negative)
    info = {"predict_examples": len(examples), "predict_features": len(features),
            "predict_features_per_second": len(features) / elapsed if elapsed else 0.0,
            "predict_truncated_questions": len(stats.truncated_questions),
            "predict_empty_context": len(report.empty_context)}
    with tf.io.gfile.GFile(config.predict_file) as f:
        dataset = json.load(f)["data"]
    if any(e.answers for e in examples):
        na_probs = result.null_odds if config.version_2_with_negative else None
        metrics = squad_metrics.evaluate(dataset, result.predictions, na_probs,
                                         version_2_with_negative=config.version_2_with_negative)
        info.update(metrics)
        with tf.io.gfile.GFile(os.path.join(config.output_dir, "eval_results.json"), "w") as f:
            f.write(json.dumps(info, indent=2) + "\n")
        writer = summaries.summary_writer(os.path.join(config.output_dir, "summaries", "eval"))
        summaries.write_scalars(writer, step, {k: v for k, v in metrics.items()
                                               if isinstance(v, (int, float)) and not k.endswith("total")})
        writer.flush()
        logging.info("Evaluation of %s: %s", config.predict_file,
                     ", ".join(f"{k}={v:.4g}" for k, v in metrics.items()))
    return info


def run_squad(config: SquadConfig, *, strategy: tf.distribute.Strategy | None = None) -> dict:
    """Trains and/or predicts as `config` says (see the module docstring); returns the statistics and metrics."""
    _check_config(config)
    if strategy is None:
        strategy = distribution.get_distribution_strategy(
            config.distribution_strategy, num_gpus=config.num_gpus, tpu=config.tpu,
            all_reduce_alg=config.all_reduce_alg)
    keras.utils.set_random_seed(config.seed)
    files = model_dir_lib.resolve_model_files(
        config.init_checkpoint, bert_config_file=config.bert_config_file, vocab_file=config.vocab_file,
        do_lower_case=config.do_lower_case)
    if files.config.max_position_embeddings < config.max_seq_length:
        raise InputError(f"--max_seq_length={config.max_seq_length} exceeds the model's max_position_embeddings="
                         f"{files.config.max_position_embeddings}")
    tokenizer = files.tokenizer()
    tf.io.gfile.makedirs(config.output_dir)
    model_dir_lib.write_model_files(config.output_dir, files.config, files.vocab_file, files.do_lower_case)
    info: dict = {}
    model, step = None, 0
    if config.do_train:
        model, train_info = train(config, files, tokenizer, strategy)
        info.update(train_info)
    if config.do_predict:
        if model is None:
            latest = _latest_training_checkpoint(config.output_dir)
            model = build_span_labeler(files, mixed_precision=config.mixed_precision, restore=latest is None)
            if latest is not None:
                tf_checkpoints.restore_checkpoint(model, latest)
                step = int(latest.rsplit("-", 1)[-1]) if latest.rsplit("-", 1)[-1].isdigit() else 0
                logging.info("Predicting with %s", latest)
            elif files.checkpoint is None:
                logging.warning("No checkpoint in --output_dir or --init_checkpoint: predicting with random weights")
        else:
            step = info.get("num_train_steps", 0)
        info.update(predict(config, model, tokenizer, files.do_lower_case, step))
    return info
