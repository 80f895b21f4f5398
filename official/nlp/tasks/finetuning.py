"""The fine-tuning base shared by every task (classification, tagging, multiple choice, question answering).

A task (`FineTuningTask`) says how to build its model on an encoder, what to minimize (an `objectives.Objective`),
how to read its training data and how to evaluate; `run_finetuning` does the rest on the shared training loop
(`training.trainer.Trainer`):

- the encoder from `--init_checkpoint`: one of our model directories, an original TF1 checkpoint or a Hugging
  Face folder (`checkpoints.init_checkpoint.resolve_model_files`), config, vocabulary and case with it; which weights
  the model starts from (a resumed run, a fine-tuned head, the encoder alone) is `checkpoints.restore_plan`'s
  decision;
- the optimizer and schedule of the paper, sized from the number of training examples
  (`num_train_epochs * examples / train_batch_size` steps, `warmup_proportion` of them warming up);
- training with resume: rerunning with the same `output_dir` continues from the last checkpoint; a rerun with
  settings that change the training is refused, naming the flags that differ (`finetuning_settings.json`);
- evaluation after each epoch: the metrics go to `eval_results.txt` and TensorBoard (`summaries/eval`), and the
  best checkpoint by the task's metric is kept as a model directory (`best_model/`, with `finetuning.json`
  naming the task and its labels, so that a later job refuses a head of another label set).

The files a run keeps in `output_dir` (settings, evaluations, `best_model/`) are written and read by
`tasks.finetuning_outputs`. The model of a run is one thing wherever it is used: its `best_model/` when it has one,
else its latest checkpoint. Training ends with the best weights restored into the model (as Keras'
`restore_best_weights` does), so `--do_predict` in the same job, the returned model, a later job's
`--init_checkpoint=<output_dir>`, a job without `--do_train` on the same `--output_dir` and `export_model.py` all
use the same weights. (The original google-research/bert predicts with the last checkpoint.)

A job's settings are a `tasks.finetuning_config.FineTuningConfig` (a task's config extends it with its data fields
and `do_train`, `do_eval`, `do_predict`), whose inputs are checked there before any work; `run_task` runs the jobs
it asks for.

Example (see `tasks.classification` for a complete task):

    config = FineTuningConfig(output_dir="/tmp/mrpc", init_checkpoint="models/minilm", num_train_epochs=3)
    result = run_finetuning(config, task)
    result.eval_history[-1]   # {"epoch": 3, "step": ..., "accuracy": ..., "f1": ...}
    result.best_model_dir     # "/tmp/mrpc/best_model"
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Sequence
from typing import Protocol

import keras
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.checkpoints import restore_plan
from official.nlp.common import input_files, output_folders
from official.nlp.common.errors import InputError
from official.nlp.common.processes import interruption
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.tasks import finetuning_outputs as outputs
from official.nlp.tasks.finetuning_config import (
    FineTuningConfig,
    check_job_inputs,
    init_checkpoint_files,
    num_train_steps,
    output_related,
)
from official.nlp.training import distribution, optimization, precision, run_settings
from official.nlp.training.config import check_training_settings
from official.nlp.training.objectives import Objective
from official.nlp.training.trainer import Trainer, TrainerConfig


class FineTuningTask(Protocol):
    """What `run_finetuning` needs from a task."""

    name: str  # e.g. "mrpc"; recorded with checkpoints and features
    labels: Sequence[str]  # the head's label set (empty for heads without labels, e.g. span prediction)
    metric_name: str  # the evaluation metric that picks the best checkpoint (higher is better)
    head: str  # the kind of head (e.g. "classifier"), recorded with fine-tuned model directories

    def build_model(self, encoder: BertEncoder) -> keras.Model:
        """The task model on `encoder` (made inside the strategy's scope)."""

    def objective(self) -> Objective:
        """What the loop minimizes and reports."""

    def num_train_examples(self) -> int:
        """Training examples per epoch (builds the training features if needed)."""

    def train_dataset(self, input_context: tf.distribute.InputContext, batch_size: int, seed: int) -> tf.data.Dataset:
        """Endless, shuffled `(x, y)` batches of `batch_size` (per replica), remainder dropped."""

    def evaluate(self, model: keras.Model) -> dict[str, float]:
        """Metrics of `model` on the evaluation data (must include `metric_name`)."""

    def settings(self) -> dict:
        """What the training depends on besides `FineTuningConfig` (data files' hashes, options), JSON-able."""

    def predict(self, model: keras.Model):
        """Writes the predictions of `model` on the prediction data (for `do_predict`); returns what it wrote."""


@dataclasses.dataclass
class FineTuningResult:
    """What `run_finetuning` returns: the model of the run (the weights of `best_model/` when it has one, else the
    last step's), its files, and the evaluations. `model_evaluation` is the evaluation of `model` (the entry of
    `eval_history` that `best_model/` holds), None without one."""

    model: keras.Model
    files: model_dir_lib.ModelFiles
    step: int
    train_metrics: dict[str, float]
    eval_history: list[dict]
    best_model_dir: str | None
    model_evaluation: dict | None = None

    @property
    def restored_best(self) -> bool:
        """Whether `model` holds an earlier epoch's weights than the ones training ended with."""
        return self.model_evaluation is not None and self.model_evaluation.get("step") != self.step


JOBS = ("do_train", "do_eval", "do_predict")  # the fields of a task's config that say what to run


@dataclasses.dataclass
class TaskRun:
    """What `run_task` returns: the task, the fine-tuning result, and what `task.predict` returned (None when
    nothing was predicted)."""

    task: FineTuningTask
    result: FineTuningResult
    predictions: object | None


def run_task(
    config: FineTuningConfig,
    make_task: Callable[[model_dir_lib.ModelFiles], FineTuningTask],
    *,
    evaluate: Callable[[FineTuningTask], bool] | None = None,
    strategy: tf.distribute.Strategy | None = None,
) -> TaskRun:
    """Runs the jobs a task's config asks for (its `do_train`, `do_eval`, `do_predict` fields): fine-tunes (or
    resumes) with an evaluation after each epoch, then predicts with `task.predict(model)`.

    `make_task(files)` builds the task on the resolved `--init_checkpoint`; a task with a `check_inputs()` method
    reads there, before training, the evaluation and prediction files its jobs ask for. `evaluate(task)` is for a
    task whose evaluation is its prediction, without a `do_eval` of its own (SQuAD evaluates `--predict_file` when
    it has answers): whether to evaluate; it then predicts only when it did not evaluate.
    """
    jobs = [name for name in JOBS if hasattr(config, name)]
    if not any(getattr(config, name) for name in jobs):
        raise InputError(f"Nothing to do: give at least one of {', '.join('--' + name for name in jobs)}")
    strategy = strategy or config.make_strategy()  # first (see `TrainingConfig.make_strategy`)
    with output_folders.run_folder(
        config.output_dir,
        flag="--output_dir",
        job=type(config).__name__.removesuffix("Config").lower() + " fine-tuning",  # "classifier fine-tuning"
        markers=(model_dir_lib.SETTINGS_FILE,),
        related=output_related(config),
        writer=distribution.worker_info(strategy).is_chief,
    ):
        return _run_task(config, make_task, evaluate=evaluate, strategy=strategy)


def _run_task(config, make_task, *, evaluate, strategy) -> TaskRun:
    check_job_inputs(config)
    files = init_checkpoint_files(config)
    task = make_task(files)
    if config.do_train and hasattr(task, "check_inputs"):
        task.check_inputs()  # a bad row in a dev or test file is found now, not after training
    do_eval = evaluate(task) if evaluate else config.do_eval
    result = run_finetuning(
        config.finetuning_config(), task, do_train=config.do_train, do_eval=do_eval, strategy=strategy, files=files
    )
    if evaluate and do_eval and result.restored_best:
        # The files the evaluations wrote (SQuAD's predictions) are the last epoch's: write the best model's.
        task.evaluate(result.model)
    predict = config.do_predict and not (evaluate and do_eval)
    return TaskRun(task, result, task.predict(result.model) if predict else None)


def task_head(task: FineTuningTask) -> restore_plan.Head:
    """The head `task` builds, as fine-tuned model directories record it."""
    return restore_plan.Head(getattr(task, "head", type(task).__name__), tuple(task.labels), task.name)


def warn_if_other_task(init_checkpoint: str | None, task: FineTuningTask) -> None:
    """Warns when `init_checkpoint` was fine-tuned for another task: the restore plan accepts any head whose labels
    match (an MRPC model's 0/1 evaluated on SST-2), so this is the only notice of the mix-up."""
    found = init_checkpoint_lib.fine_tuned_head(init_checkpoint)
    if found and found.get("task") not in (None, task.name):
        logging.warning(
            "--init_checkpoint=%s was fine-tuned for the task %r, and this run is %r: its head is used "
            "because the labels match (%s). If that is not meant, start from the pretrained model "
            "directory.",
            init_checkpoint,
            found["task"],
            task.name,
            list(task.labels),
        )


def _validate(config: FineTuningConfig, strategy: tf.distribute.Strategy) -> None:
    check_training_settings(config, strategy.num_replicas_in_sync)
    # The number of steps is known once the examples are read; the rest of the schedule is checked now.
    optimization.check_schedule(
        learning_rate=config.learning_rate,
        num_train_steps=1,
        weight_decay=config.weight_decay,
        clip_norm=config.clip_norm,
    )


def finetuning_settings(config: FineTuningConfig, files: model_dir_lib.ModelFiles, task: FineTuningTask) -> dict:
    """What a resumed run must share with the run that wrote `output_dir`: `run_settings.training_settings`, the
    model's config and case, and the task's settings."""
    settings = {
        **run_settings.training_settings(config),
        "do_lower_case": files.do_lower_case,
        "bert_config": files.config.to_dict(),
        "task": task.name,
        "labels": list(task.labels),
        **task.settings(),
    }
    return json.loads(json.dumps(settings))


def build_model(
    config: FineTuningConfig, files: model_dir_lib.ModelFiles, task: FineTuningTask, strategy: tf.distribute.Strategy
) -> keras.Model:
    """The task model with fresh weights, in `strategy.scope()`, computing in `--mixed_precision`."""
    with strategy.scope():
        encoder = BertEncoder.from_bert_config(files.config, dtype=precision.dtype_policy(config.mixed_precision))
        return task.build_model(encoder)


def eval_points(train_steps: int, steps_per_epoch: int) -> list[int]:
    """The steps after which to evaluate: the end of each epoch, the last one at the last step.

    `int(examples / batch * epochs)` can put the last step a little past the last whole epoch; a leftover of
    less than a tenth of an epoch is rounding, not an epoch of its own.
    """
    epochs = max(1, math.ceil(train_steps / steps_per_epoch - 0.1))
    return [e * steps_per_epoch for e in range(1, epochs)] + [train_steps]


def _checkpoint_step(plan: restore_plan.RestorePlan) -> int | None:
    """The training step of the checkpoint an evaluation without training restores (`ckpt-<step>`), if known."""
    if plan.source not in (restore_plan.RESUME, restore_plan.BEST) or not plan.checkpoint:
        return None
    suffix = plan.checkpoint.rsplit("-", 1)[-1]
    return int(suffix) if suffix.isdigit() else None


def run_finetuning(
    config: FineTuningConfig,
    task: FineTuningTask,
    *,
    do_train: bool = True,
    do_eval: bool = True,
    strategy: tf.distribute.Strategy | None = None,
    files: model_dir_lib.ModelFiles | None = None,
) -> FineTuningResult:
    """Fine-tunes `task` (or resumes doing so), evaluating after each epoch; see the module docstring.

    With `do_train=False` the model comes from the last checkpoint in `output_dir`, else from an
    `--init_checkpoint` that holds a fine-tuned head for the task's labels. `files`: the resolved
    `--init_checkpoint` when the caller has it already.
    """
    strategy = strategy or config.make_strategy()
    if config.deterministic:
        tf.config.experimental.enable_op_determinism()
    keras.utils.set_random_seed(config.seed)
    _validate(config, strategy)
    files = files or init_checkpoint_files(config, do_train=do_train)
    head = task_head(task)
    plan = restore_plan.plan_restore(
        files, init_checkpoint=config.init_checkpoint, output_dir=config.output_dir, head=head, inference=not do_train
    )
    warn_if_other_task(config.init_checkpoint, task)
    model = build_model(config, files, task, strategy)
    if not do_train:
        return _evaluate_without_training(config, task, model, files, plan, do_eval=do_eval, strategy=strategy)

    if do_eval:  # before any training: a best_model/ that is not this run's would be replaced at the first evaluation
        output_folders.check_export(
            os.path.join(config.output_dir, model_dir_lib.BEST_MODEL_DIR),
            flag="best model folder",
            owner=config.output_dir,
        )
    trainer, settings, schedule = _set_up_trainer(config, task, model, files, plan, strategy)
    train_steps, warmup_steps, per_epoch = schedule
    per_replica = config.train_batch_size // strategy.num_replicas_in_sync

    def dataset_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
        return task.train_dataset(ctx, per_replica, config.seed)

    best = outputs.BestModelKeeper(
        config.output_dir,
        task,
        model,
        files,
        head=head.kind,
        settings=settings,
        is_chief=distribution.worker_info(strategy).is_chief,
        do_eval=do_eval,
    )
    done = {entry["step"] for entry in best.history}
    logging.info(
        "Fine-tuning %s: %d steps (%d per epoch, %d warming up), global batch %d",
        task.name,
        train_steps,
        per_epoch,
        warmup_steps,
        config.train_batch_size,
    )
    result = None
    # Between the epochs too (evaluation, the best model), a Ctrl-C names the checkpoint the same command resumes.
    with interruption.resumable(trainer.interrupted_note):
        for epoch, point in enumerate(eval_points(train_steps, per_epoch), start=1):
            result = trainer.train(dataset_fn, stop_at_step=point)
            if do_eval and point not in done:
                best.after_epoch(epoch, point)
    evaluation = outputs.restore_best(model, best.directory, result.step)
    return FineTuningResult(
        model,
        files,
        result.step,
        result.metrics,
        best.history,
        best.directory if input_files.exists(best.directory) else None,
        evaluation,
    )


def _evaluate_without_training(
    config: FineTuningConfig,
    task: FineTuningTask,
    model: keras.Model,
    files: model_dir_lib.ModelFiles,
    plan: restore_plan.RestorePlan,
    *,
    do_eval: bool,
    strategy: tf.distribute.Strategy,
) -> FineTuningResult:
    """`run_finetuning` without `do_train`: the planned weights, and with `do_eval` one evaluation appended to the
    run's history (`epoch` None) and written to `eval_results.txt`."""
    plan.apply(model)
    history = outputs.read_history(config.output_dir)
    if do_eval:
        history = history + [
            {
                "epoch": None,
                "step": _checkpoint_step(plan),
                **{k: float(v) for k, v in task.evaluate(model).items()},
            }
        ]
        if distribution.worker_info(strategy).is_chief:
            outputs.write_eval_results(config.output_dir, history)
    return FineTuningResult(model, files, 0, {}, history, None)


def _set_up_trainer(
    config: FineTuningConfig,
    task: FineTuningTask,
    model: keras.Model,
    files: model_dir_lib.ModelFiles,
    plan: restore_plan.RestorePlan,
    strategy: tf.distribute.Strategy,
) -> tuple[Trainer, dict, tuple[int, int, int]]:
    """The training loop of a run: `(trainer, settings, (train steps, warmup steps, steps per epoch))`.

    Refuses to resume `output_dir` with other settings, sizes the schedule from the training examples, records the
    settings (once the training data is ready: a run refused for its data has trained nothing) and builds the
    optimizer; the trainer starts from `plan` unless it resumes its own checkpoint."""
    settings = finetuning_settings(config, files, task)
    recorded = run_settings.check_resume(
        config.output_dir,
        model_dir_lib.SETTINGS_FILE,
        settings,
        flag="--output_dir",
        defaults=run_settings.field_defaults(config),
    )
    train_steps, warmup_steps, per_epoch = num_train_steps(task.num_train_examples(), config)
    if not recorded and distribution.worker_info(strategy).is_chief:
        run_settings.record_settings(config.output_dir, model_dir_lib.SETTINGS_FILE, settings, flag="--output_dir")
    with strategy.scope():
        optimizer = config.build_optimizer(train_steps, warmup_steps)
    trainer = Trainer(
        model,
        optimizer,
        task.objective(),
        strategy,
        TrainerConfig.from_training_config(config, model_dir=config.output_dir, num_train_steps=train_steps),
        global_batch_size=config.train_batch_size,
        init_fn=lambda: plan.apply(model),
    )
    return trainer, settings, (train_steps, warmup_steps, per_epoch)
