"""What a fine-tuning run keeps in its `--output_dir` besides checkpoints, and how it reads them back.

- `finetuning_settings.json`: the settings the run trains with (`training.run_settings` records them and refuses to
  resume with others, naming the flags), carried into `best_model/` for serving;
- `eval_history.json` and `eval_results.txt`: the evaluations, the latter in the original's `key = value` lines;
- `best_model/`: the best evaluation's weights as a model directory with `finetuning.json`
  (`checkpoints.fine_tuned.save_fine_tuned`, called after each epoch by `BestModelKeeper`), and the model of the
  run (`restore_best`): `best_model/` when there is one, else the last step's weights.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping

import keras
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import fine_tuned, our_checkpoints
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.common import input_files, output_files, text_files
from official.nlp.common.errors import InputError
from official.nlp.training import summaries

EVAL_RESULTS_FILE = "eval_results.txt"
EVAL_HISTORY_FILE = "eval_history.json"


def read_history(output_dir: str) -> list[dict]:
    """The evaluations of the run in `output_dir` (`eval_history.json`); one that is not a list of evaluations
    (a file of the same name put there by hand, or cut) is refused as one line."""
    path = os.path.join(output_dir, EVAL_HISTORY_FILE)
    if not input_files.exists(path):
        return []
    try:
        history = json.loads(text_files.read_text(path))
    except ValueError:
        history = None
    if not (isinstance(history, list) and all(isinstance(e, dict) and "step" in e for e in history)):
        raise InputError(
            f"{path} is not an evaluation history that a fine-tuning run wrote (a JSON list of evaluations, each "
            "with its step); move it away, or choose another --output_dir"
        )
    return history


def write_eval(output_dir: str, history: list[dict]) -> None:
    """`eval_history.json` and `eval_results.txt` (the original's `key = value` lines, one block per epoch)."""
    with output_files.write_atomically(os.path.join(output_dir, EVAL_HISTORY_FILE)) as f:
        json.dump(history, f, indent=1)
    write_eval_results(output_dir, history)


def write_eval_results(output_dir: str, history: list[dict]) -> None:
    """`eval_results.txt`; an evaluation without training (`epoch` None) is written like the others, after them."""
    lines = []
    for entry in history:
        lines.append(f"***** Eval results: epoch {entry['epoch']}, global_step {entry['step']} *****")
        lines += [f"{k} = {v}" for k, v in sorted(entry.items())]
    output_files.makedirs(output_dir, name="--output_dir")
    with output_files.write_atomically(os.path.join(output_dir, EVAL_RESULTS_FILE)) as f:
        f.write("\n".join(lines) + "\n")


def restore_best(model: keras.Model, best_dir: str, final_step: int) -> dict | None:
    """Makes `model` the model of the run: the weights of `best_dir` (`best_model/`) when they are from an earlier
    step than `final_step`, the weights training ended with. Returns `best_model/`'s evaluation (None without one)
    and logs which weights the model holds."""
    record = model_dir_lib.read_task_file(best_dir) if input_files.isdir(best_dir) else None
    checkpoint = tf.train.latest_checkpoint(best_dir) if record else None
    if checkpoint is None:
        logging.info("The model of this run is its last checkpoint (step %d): no %s", final_step, best_dir)
        return None
    evaluation = dict(record.get("evaluation") or {})
    metric = record.get("metric")
    described = f"epoch {evaluation.get('epoch')}, step {evaluation.get('step')}, {metric}={evaluation.get(metric)}"
    if evaluation.get("step") == final_step:
        logging.info("The model of this run is %s (%s): the weights training ended with", best_dir, described)
    else:
        our_checkpoints.restore_checkpoint(model, checkpoint)
        logging.info(
            "The model of this run is %s (%s), not the last step's (%d): its weights are restored for what "
            "follows (--do_predict, the returned model), as an export or a later --init_checkpoint would load them",
            best_dir,
            described,
            final_step,
        )
    return evaluation


def serving_settings(settings: Mapping, task) -> dict:
    """What a fine-tuned model directory records: the job's training settings plus what the task's predictions
    also depend on (`task.serving_settings()`, e.g. SQuAD's answer post-processing), where it has such. `task` is
    a `tasks.finetuning.FineTuningTask`, not imported here: that module imports this one."""
    extra = task.serving_settings() if hasattr(task, "serving_settings") else {}
    return json.loads(json.dumps({**settings, **extra}))


class BestModelKeeper:
    """The per-epoch step of a training run: evaluates `model`, records the evaluation (`eval_history.json`,
    `eval_results.txt`, TensorBoard's `summaries/eval`) and keeps the best one so far by the task's metric as the
    model directory `best_model/` (`fine_tuned.save_fine_tuned`). Only the chief writes. `history` holds the run's
    evaluations, those of the runs it resumes included; `task` is a `tasks.finetuning.FineTuningTask` and `head`
    its kind."""

    def __init__(
        self,
        output_dir: str,
        task,
        model: keras.Model,
        files: model_dir_lib.ModelFiles,
        *,
        head: str,
        settings: Mapping,
        is_chief: bool,
        do_eval: bool,
    ):
        self.output_dir = output_dir
        self.task = task
        self.model = model
        self.files = files
        self.head = head
        self.settings = settings
        self.is_chief = is_chief
        self.history = read_history(output_dir)
        self.directory = os.path.join(output_dir, model_dir_lib.BEST_MODEL_DIR)
        self.writer = summaries.summary_writer(
            os.path.join(output_dir, "summaries", "eval") if do_eval and is_chief else None
        )

    def after_epoch(self, epoch: int, step: int) -> None:
        """Evaluates the model of training step `step`, the end of `epoch`, and keeps it when it is the best."""
        task = self.task
        metrics = task.evaluate(self.model)
        if task.metric_name not in metrics:
            raise KeyError(f"{type(task).__name__}.evaluate returned no {task.metric_name!r}: {sorted(metrics)}")
        entry = {"epoch": epoch, "step": step, **{k: float(v) for k, v in metrics.items()}}
        logging.info(
            "Evaluation after epoch %d (step %d): %s",
            epoch,
            step,
            # Per-label scores (`f1/<label>`, ...) stay in eval_results.txt: a log line of 28 labels is unreadable.
            ", ".join(f"{k}={v:.4f}" for k, v in metrics.items() if "/" not in k),
        )
        best = max((e[task.metric_name] for e in self.history), default=-math.inf)
        self.history.append(entry)
        if not self.is_chief:
            return
        summaries.write_scalars(self.writer, step, metrics)
        self.writer.flush()
        if entry[task.metric_name] > best or not input_files.exists(self.directory):
            fine_tuned.save_fine_tuned(
                self.model,
                self.directory,
                self.files,
                task_name=task.name,
                head=self.head,
                labels=task.labels,
                metric=task.metric_name,
                evaluation=entry,
                settings=serving_settings(self.settings, task),
                owner=self.output_dir,
            )
            logging.info(
                "Best %s so far (%.4f): kept as the model directory %s",
                task.metric_name,
                entry[task.metric_name],
                self.directory,
            )
        write_eval(self.output_dir, self.history)
