"""SQuAD v1.1 / v2.0 question answering: fine-tune a `BertSpanLabeler`, predict, post-process, evaluate.

`run_squad(SquadConfig(...))` is everything `run_scripts/run_squad.py` does, on the shared fine-tuning base
(`tasks.finetuning`: model loading, optimizer, training loop with resume, per-epoch evaluation, best model):

- both files are read and checked before anything is built (`official.nlp.data.squad.examples`);
- `do_train`: windowed features of `train_file` are cached as `output_dir/train.tf_record` (rebuilt only when
  a setting they depend on changes) and the span labeler is trained from `init_checkpoint` for
  `num_train_epochs` passes over the features (one epoch = every window once; the original counted examples);
  `span_head` is its head, dense or a BiLSTM (recorded with the run; `span_head_settings`);
- `do_predict`: the model of the run (after training its `best_model/`, the best evaluation's weights; without
  training the same from `output_dir`, else its newest checkpoint, else an `init_checkpoint` fine-tuned for SQuAD)
  predicts `predict_file`; `predictions.json`, `nbest_predictions.json` and, for v2.0,
  `null_odds.json` are written. When the file has answers it is also evaluated as the official scripts do
  (`official.nlp.metrics.squad`): `eval_results.json`, plus the base's `eval_results.txt` and TensorBoard scalars
  (`summaries/eval`).

From Python, `model.fit` works on the same cached features (with `training.objectives`' span losses), and
`answer_questions` turns strings into answers:

    files = model_loading.read_model_files("models/minilm")
    model = BertSpanLabeler(files.build_encoder())         # encoder weights restored, fresh span head
    model.compile(keras.optimizers.Adam(5e-5), loss=span_losses(), loss_weights=SPAN_LOSS_WEIGHTS)
    model.fit(squad_records.training_dataset("out/train.tf_record", max_seq_length=384, batch_size=16),
              steps_per_epoch=100)
    answer_questions(model, files.tokenizer(), [("Who wrote it?", "It was written by Ann Smith in 1900.")])
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterable, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import head_kinds, model_dir
from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.common import input_files, output_files, text_files
from official.nlp.common.config_flags import field, override
from official.nlp.common.errors import InputError
from official.nlp.data import feature_cache
from official.nlp.data.squad import examples as squad_examples
from official.nlp.data.squad import features as squad_features
from official.nlp.data.squad import records as squad_records
from official.nlp.data.squad.postprocessing import AnswerSettings, SquadPredictions, postprocess
from official.nlp.metrics import squad as squad_metrics
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import SPAN_HEADS, BertSpanLabeler
from official.nlp.tasks import finetuning, finetuning_config
from official.nlp.training import summaries
from official.nlp.training.objectives import SpanObjective


@dataclasses.dataclass
class SquadConfig(finetuning_config.FineTuningConfig, AnswerSettings):
    """The shared fine-tuning settings plus the original `run_squad.py` flags (the window and answer settings are
    `AnswerSettings`'). There is no `do_eval`: with `do_predict`, a predict file that has answers is evaluated."""

    max_seq_length: int = override(finetuning_config.FineTuningConfig, "max_seq_length", 384)
    train_file: str | None = field(None, path="path", help="SQuAD JSON for training.")
    predict_file: str | None = field(
        None, path="path", help="SQuAD JSON to predict (and evaluate, when it has answers)."
    )
    do_train: bool = field(False, help="Fine-tune on --train_file.")
    do_predict: bool = field(False, help="Predict --predict_file.")
    span_head: str | None = field(
        None,
        enum=SPAN_HEADS,
        help="Between the encoder and the start/end logits: dense (nothing, the original) or bilstm (a fresh "
        "bidirectional LSTM, the paper's LTR + BiLSTM row). Default: what the model being loaded was fine-tuned "
        "with (--output_dir's run, else a SQuAD --init_checkpoint), else dense.",
    )
    span_lstm_units: int | None = field(
        None,
        minimum=1,
        help="--span_head=bilstm: units per LSTM direction (default: as recorded, else the model's hidden_size).",
    )


def _check_config(config: SquadConfig) -> None:
    if not (config.do_train or config.do_predict):
        raise InputError("nothing to do: pass --do_train and/or --do_predict")
    if config.do_train and not config.train_file:
        raise InputError("--do_train needs --train_file")
    if config.do_predict and not config.predict_file:
        raise InputError("--do_predict needs --predict_file")
    squad_features.check_window_settings(config.max_seq_length, config.doc_stride, config.max_query_length)


def span_head_settings(config: SquadConfig, hidden_size: int) -> tuple[str, int | None]:
    """`(span_head, lstm units)` of the job: the flags, else what the model it loads was fine-tuned with (the run in
    `--output_dir`, else a SQuAD `--init_checkpoint`; a record without `span_head` is the dense head), else dense
    with no LSTM. A flag that contradicts that record is refused: the checkpoint holds the other head."""
    own_run = model_dir.read_settings_file(config.output_dir) if input_files.isdir(config.output_dir) else None
    recorded, where = {}, None
    for name, found in (
        ("output_dir", own_run),
        ("init_checkpoint", init_checkpoint_lib.read_record(config.init_checkpoint)),
    ):
        if found and str(found.get("task", "")).startswith("squad"):
            recorded, where = found, f"--{name}={getattr(config, name)}"
            break
    head = config.span_head or recorded.get("span_head", "dense")
    units = config.span_lstm_units or recorded.get("span_lstm_units") or (hidden_size if head == "bilstm" else None)
    for flag, value, kept in (
        ("span_head", config.span_head, recorded.get("span_head", "dense")),
        ("span_lstm_units", config.span_lstm_units, recorded.get("span_lstm_units")),
    ):
        if where and value is not None and kept is not None and value != kept:
            raise InputError(
                f"--{flag}={value}: {where} was fine-tuned with --{flag}={kept}; leave --{flag} out (it follows "
                "the model), or fine-tune another --output_dir from the pretrained model"
            )
    if head == "dense" and config.span_lstm_units is not None:
        raise InputError(f"--span_lstm_units={config.span_lstm_units} is for --span_head=bilstm, not {head}")
    return head, units


class SquadTask:
    """SQuAD as a `finetuning.FineTuningTask`; reads and checks both files when made."""

    labels: Sequence[str] = ()
    metric_name = "f1"

    def __init__(self, config: SquadConfig, files):
        """`files`: the `ModelFiles` of `config.init_checkpoint` (the tokenizer and its case; the span head follows
        the model being loaded: `span_head_settings`)."""
        files.check_text_pairs("SQuAD inputs (question, context)")
        self.config = config
        self.files = files
        self.span_head, self.lstm_units = span_head_settings(config, files.config.hidden_size)
        self.tokenizer = files.tokenizer()
        self.name = "squad_v2.0" if config.version_2_with_negative else "squad_v1.1"
        self.answer_settings = config.answer_settings()
        v2 = config.version_2_with_negative
        self.train_examples = None
        if config.do_train:
            self.train_examples, report = squad_examples.read_squad_examples(
                config.train_file, is_training=True, version_2_with_negative=v2
            )
            if not self.train_examples:
                raise InputError(report.why_none_left(config.train_file) + "; fix the answers' answer_start and text")
        self.predict_examples = (
            squad_examples.read_squad_examples(config.predict_file, is_training=False, version_2_with_negative=v2)[0]
            if config.do_predict
            else None
        )
        self.has_answers = bool(self.predict_examples) and any(e.answers for e in self.predict_examples)
        self.record_file = os.path.join(config.output_dir, feature_cache.TRAIN_RECORDS)
        self.info: dict = {}

    @property
    def head(self) -> str:
        return head_kinds.SPAN_LABELER if self.span_head == "dense" else head_kinds.SPAN_BILSTM

    # ---- FineTuningTask ----
    def build_model(self, encoder: BertEncoder) -> keras.Model:
        return BertSpanLabeler(encoder, span_head=self.span_head, lstm_units=self.lstm_units)

    def objective(self) -> SpanObjective:
        return SpanObjective()

    def settings(self) -> dict:
        # The dense head records nothing of its own: the settings of runs from before the choice stay the same.
        head = {"span_head": self.span_head, "span_lstm_units": self.lstm_units} if self.span_head != "dense" else {}
        return {**self._feature_settings(), **head}

    def _feature_settings(self) -> dict:
        c = self.config
        return {
            "train_file_sha256": feature_cache.file_digest([c.train_file]) if c.train_file else None,
            "doc_stride": c.doc_stride,
            "max_query_length": c.max_query_length,
            "version_2_with_negative": c.version_2_with_negative,
        }

    def serving_settings(self) -> dict:
        """Recorded with a fine-tuned model directory: the answer post-processing its exports use."""
        c = self.config
        return {
            "n_best_size": c.n_best_size,
            "max_answer_length": c.max_answer_length,
            "null_score_diff_threshold": c.null_score_diff_threshold,
        }

    def num_train_examples(self) -> int:
        """Training features (windows), built and cached on first use."""
        c = self.config
        key = {
            "task": self.name,
            "vocab_sha256": feature_cache.file_digest([self.tokenizer.vocab_file]),
            "do_lower_case": self.tokenizer.do_lower_case,
            "max_seq_length": c.max_seq_length,
            **self._feature_settings(),
        }

        def build():
            started = time.monotonic()
            features, stats = squad_features.convert_examples_to_features(
                self.train_examples,
                self.tokenizer,
                max_seq_length=c.max_seq_length,
                doc_stride=c.doc_stride,
                max_query_length=c.max_query_length,
                is_training=True,
            )
            logging.info(
                "%d training examples -> %d features in %.1fs (%d windows without the answer point at [CLS])",
                len(self.train_examples),
                len(features),
                time.monotonic() - started,
                stats.out_of_window,
            )
            return squad_records.records(features)

        count = feature_cache.cached_records(self.record_file, key, build)
        self.info.update(train_examples=len(self.train_examples), train_features=count)
        return count

    def train_dataset(self, input_context: tf.distribute.InputContext, batch_size: int, seed: int) -> tf.data.Dataset:
        return squad_records.training_dataset(
            self.record_file,
            max_seq_length=self.config.max_seq_length,
            batch_size=batch_size,
            seed=seed,
            input_context=input_context,
        )

    def evaluate(self, model: keras.Model) -> dict[str, float]:
        """Predicts, writes the prediction files and returns the official metrics (plus features/s)."""
        result, info = self.predict(model)
        dataset = json.loads(text_files.read_text(self.config.predict_file))["data"]
        metrics = squad_metrics.evaluate_squad(
            dataset,
            result.predictions,
            result.null_odds or None,
            version_2_with_negative=self.config.version_2_with_negative,
        )
        metrics.update(info)
        with output_files.write_atomically(os.path.join(self.config.output_dir, "eval_results.json")) as f:
            f.write(json.dumps(metrics, indent=2) + "\n")
        return metrics

    # ---- prediction ----
    def predict(self, model: keras.Model) -> tuple[SquadPredictions, dict]:
        """Answers for `predict_file`, written to `output_dir`; and the prediction statistics."""
        c = self.config
        features, stats = squad_features.convert_examples_to_features(
            self.predict_examples,
            self.tokenizer,
            max_seq_length=c.max_seq_length,
            doc_stride=c.doc_stride,
            max_query_length=c.max_query_length,
            is_training=False,
        )
        started = time.monotonic()
        starts, ends = predict_logits(model, features, c.predict_batch_size)
        elapsed = max(time.monotonic() - started, 1e-9)
        result = postprocess(
            self.predict_examples, features, starts, ends, self.answer_settings, self.files.do_lower_case
        )
        write_squad_predictions(result, c.output_dir, c.version_2_with_negative)
        info = {
            "predict_examples": len(self.predict_examples),
            "predict_features": len(features),
            "predict_features_per_second": len(features) / elapsed,
            "predict_truncated_questions": len(stats.truncated_questions),
        }
        logging.info(
            "Predicted %d features at %.1f features/s -> %s",
            len(features),
            info["predict_features_per_second"],
            c.output_dir,
        )
        return result, info


def predict_logits(
    model: keras.Model, features: Sequence[squad_features.SquadFeature], batch_size: int = 8
) -> tuple[np.ndarray, np.ndarray]:
    """Start and end logits `[num_features, seq]`, in feature order."""
    if not features:
        return np.zeros((0, 0), np.float32), np.zeros((0, 0), np.float32)

    @tf.function
    def step(x):
        return model(x, training=False)

    starts, ends = [], []
    for x in squad_records.prediction_dataset(features, batch_size):
        out = step(x)
        starts.append(out["start_logits"].numpy())
        ends.append(out["end_logits"].numpy())
    return np.concatenate(starts), np.concatenate(ends)


def answer_questions(
    model: keras.Model,
    tokenizer,
    pairs: Iterable[tuple[str, str]],
    *,
    max_seq_length: int = 384,
    settings: AnswerSettings | None = None,
    batch_size: int = 8,
) -> list[str]:
    """Answers for `(question, context)` strings with a trained span labeler ("" = no answer, v2.0 settings), with
    the windows and answers of `settings` (default: the original's).

    >>> answer_questions(model, tokenizer, [("Who wrote it?", "It was written by Ann Smith.")])  # doctest: +SKIP
    ['Ann Smith']
    """
    settings = settings or AnswerSettings()
    examples = squad_examples.examples_from_strings(pairs)
    features, _ = squad_features.convert_examples_to_features(
        examples,
        tokenizer,
        max_seq_length=max_seq_length,
        doc_stride=settings.doc_stride,
        max_query_length=settings.max_query_length,
        is_training=False,
    )
    starts, ends = predict_logits(model, features, batch_size)
    predictions = postprocess(examples, features, starts, ends, settings, tokenizer.do_lower_case).predictions
    return [predictions[e.qas_id] for e in examples]


def write_squad_predictions(result: SquadPredictions, output_dir: str, version_2_with_negative: bool) -> None:
    """predictions.json, nbest_predictions.json and (v2.0) null_odds.json, as the original writes them."""
    output_files.makedirs(output_dir, name="--output_dir")
    outputs = {"predictions.json": result.predictions, "nbest_predictions.json": result.nbest}
    if version_2_with_negative:
        outputs["null_odds.json"] = result.null_odds
    for name, value in outputs.items():
        with output_files.write_atomically(os.path.join(output_dir, name)) as f:
            f.write(json.dumps(value, indent=4) + "\n")


@dataclasses.dataclass
class SquadResult:
    """What `run_squad` returns: the fine-tuning result, the evaluations, `predictions.json` (None without
    `do_predict`), and `metrics`, what `run_squad.py` logs: the example and feature counts, the training metrics
    (`train_*`, `step`, `seconds`), and the official `exact_match` and `f1` of the predictions when the file has
    answers (else the prediction statistics)."""

    finetuning: finetuning.FineTuningResult
    eval_history: list[dict]
    predictions_file: str | None
    metrics: dict


def run_squad(config: SquadConfig, *, strategy: tf.distribute.Strategy | None = None) -> SquadResult:
    """Trains and/or predicts as `config` says (see the module docstring)."""
    _check_config(config)

    started = None

    def make_task(files) -> SquadTask:
        nonlocal started
        task = SquadTask(config, files)
        started = time.monotonic()  # the files are read: what follows is the work
        return task

    def evaluates(task: SquadTask) -> bool:
        return config.do_predict and task.has_answers

    run = finetuning.run_task(config, make_task, evaluate=evaluates, strategy=strategy)
    task, result = run.task, run.result
    evaluate = evaluates(task)
    info = dict(task.info)
    if config.do_train:
        info.update(
            seconds=time.monotonic() - started,
            step=result.step,
            **{f"train_{k}": v for k, v in result.train_metrics.items()},
        )
    if evaluate:
        # The metrics of the model of the run (best_model/'s evaluation after training), whose answers were written.
        evaluation = result.model_evaluation or result.eval_history[-1]
        info.update({k: v for k, v in evaluation.items() if k not in ("epoch", "step")})
        if not config.do_train:
            writer = summaries.summary_writer(os.path.join(config.output_dir, "summaries", "eval"))
            summaries.write_scalars(writer, 0, {k: v for k, v in info.items() if isinstance(v, float)})
            writer.flush()
    elif config.do_predict:
        info.update(run.predictions[1])
    predictions_file = os.path.join(config.output_dir, "predictions.json") if config.do_predict else None
    return SquadResult(result, result.eval_history, predictions_file, info)
