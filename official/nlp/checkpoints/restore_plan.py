"""What a job starts from: one decision (`plan_restore`), applied once to the built model (`RestorePlan.apply`).

A training or inference job asks one question before it touches weights: which checkpoint does the model come
from, and which of its parts start fresh? The answer, in order:

1. the job's own last checkpoint (`output_dir` / `model_dir`): a rerun resumes it ("resume");
2. a fine-tuned model directory for the same head and labels (a `best_model/` with its `finetuning.json`): every
   weight, head included ("fine_tuned"); one for another head or label set is refused;
3. any other `--init_checkpoint` (our model directory, an original TF1 prefix, a Hugging Face folder): the encoder,
   plus a pretrainer's heads where the checkpoint has them; a task head starts fresh ("pretrained");
4. nothing: random weights ("scratch").

Evaluation or prediction without training (`inference=True`) needs a whole model: (1) or (2), else it is refused.
There (1) is the model of the run in `output_dir`: its `best_model/` when it has one ("best"), else its last
checkpoint, the rule `tasks.finetuning` applies at the end of training and the `--init_checkpoint` resolver applies
to an output directory.
A training job resumes through the training loop, which restores the optimizer and input position too; `apply`
is its `init_fn`, called only when there is nothing to resume.

Example:

    files = model_loading.read_model_files("/tmp/mrpc/best_model")
    plan = plan_restore(files, init_checkpoint="/tmp/mrpc/best_model", output_dir="/tmp/mrpc_dev",
                        head=Head("classifier", labels=("0", "1"), task="mrpc"))
    plan.source, plan.fresh    # ("fine_tuned", ())
    plan.apply(model)
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.checkpoints import our_checkpoints
from official.nlp.common import input_files
from official.nlp.common.errors import InputError

RESUME, BEST, FINE_TUNED, PRETRAINED, SCRATCH = "resume", "best", "fine_tuned", "pretrained", "scratch"
PRETRAINING_HEADS = "pretraining"  # the head kind of a `BertPretrainer`: masked LM (and next sentence)


@dataclasses.dataclass(frozen=True)
class Head:
    """The head a job puts on the encoder, as a fine-tuned model directory records it (`model_dir.TASK_FILE`).

    `kind` is e.g. "classifier" or "token_classifier" (`PRETRAINING_HEADS` for pretraining), `labels` its label
    set in output order, `task` the task's name (for messages).
    """

    kind: str
    labels: tuple[str, ...] = ()
    task: str = ""

    def __post_init__(self):
        object.__setattr__(self, "labels", tuple(self.labels))


PRETRAINING = Head(PRETRAINING_HEADS)


@dataclasses.dataclass(frozen=True)
class RestorePlan:
    """The answer of `plan_restore`.

    Attributes:
      source: RESUME, BEST, FINE_TUNED, PRETRAINED or SCRATCH (see the module docstring).
      checkpoint: the checkpoint prefix read (for "hf" the folder or `.safetensors` file); None from scratch.
      checkpoint_format: "ours", "tf1", "hf", "keras_hub" or "model_garden"; None from scratch.
      head: the head's kind (`Head.kind`).
      head_restored: whether the head comes from `checkpoint`; False: it keeps its fresh initial values.
    """

    source: str
    head: str
    checkpoint: str | None = None
    checkpoint_format: str | None = None
    head_restored: bool = False

    @property
    def fresh(self) -> tuple[str, ...]:
        """The parts that keep their fresh initial values: `()`, `(head,)` or `("encoder", head)`."""
        if self.source == SCRATCH:
            return ("encoder", self.head)
        return () if self.head_restored else (self.head,)

    def describe(self) -> str:
        """One log line: what the model starts from."""
        where = f"{self.checkpoint} ({self.checkpoint_format} format)"
        if self.source == SCRATCH:
            return "No --init_checkpoint: the encoder starts from random weights"
        if self.source == RESUME:
            return f"Restored the model from its own last checkpoint, {self.checkpoint}"
        if self.source == BEST:
            return f"Restored the model of the run: its best evaluation's weights, {self.checkpoint}"
        if self.head == PRETRAINING_HEADS:
            if self.head_restored:
                return f"Restored the pretraining model from {where}"
            return (
                f"Restored the encoder from {where}; it has no pretraining heads, so the masked-LM and "
                "next-sentence heads start from fresh initial values"
            )
        if self.head_restored:
            return f"Restored the encoder and the {self.head} head from {where}"
        return f"Restored the encoder from {where}; the {self.head} head starts from fresh initial values"

    def apply(self, model) -> None:
        """Loads the planned weights into `model` (built for the plan's head) and logs what it did."""
        if self.source == SCRATCH:
            if self.head != PRETRAINING_HEADS:  # pretraining from scratch is the usual case, fine-tuning is not
                logging.warning(self.describe())
            return
        if self.source in (RESUME, BEST, FINE_TUNED):
            our_checkpoints.restore_checkpoint(model, self.checkpoint)
        else:
            model_dir_lib.restore_weights(
                model, self.checkpoint, self.checkpoint_format, whole_model=self.head_restored
            )
        logging.info(self.describe())


def plan_restore(
    files: model_dir_lib.ModelFiles,
    *,
    init_checkpoint: str | None,
    output_dir: str | None,
    head: Head,
    inference: bool = False,
) -> RestorePlan:
    """Which weights a job with `head` starts from (see the module docstring); refuses what cannot work.

    Args:
      files: the resolved `--init_checkpoint` (`init_checkpoint.resolve_model_files`).
      init_checkpoint: the flag as the user gave it (for messages; its folder may hold `finetuning.json`).
      output_dir: the job's own directory (`--output_dir`, pretraining's `--model_dir`); a checkpoint there is
        resumed.
      head: the head the job builds; `PRETRAINING` for a `BertPretrainer`.
      inference: evaluation or prediction without training: the whole model must come from a checkpoint.

    Raises:
      InputError: a fine-tuned `--init_checkpoint` for another head or label set; with `inference`, an
        `output_dir` trained for other labels, or nothing that holds a fine-tuned model.
    """
    latest = tf.train.latest_checkpoint(output_dir) if output_dir and input_files.isdir(output_dir) else None
    if latest is not None:
        if inference:
            labels = (model_dir_lib.read_settings_file(output_dir) or {}).get("labels")
            if labels is not None and list(labels) != list(head.labels):
                raise InputError(
                    f"--output_dir={output_dir} was trained for the labels {labels}, not {list(head.labels)}"
                )
            best = init_checkpoint_lib.locate(output_dir)
            if best != output_dir:
                return RestorePlan(BEST, head.kind, tf.train.latest_checkpoint(best), "ours", head_restored=True)
        return RestorePlan(RESUME, head.kind, latest, "ours", head_restored=True)
    if files.checkpoint is None:
        if inference:
            _refuse_nothing_to_run(output_dir, init_checkpoint, head)
        return RestorePlan(SCRATCH, head.kind)
    if head.kind == PRETRAINING_HEADS:
        return RestorePlan(
            PRETRAINED,
            head.kind,
            files.checkpoint,
            files.checkpoint_format,
            head_restored=model_dir_lib.has_masked_lm_head(files.checkpoint, files.checkpoint_format),
        )
    if _fine_tuned_for(head, init_checkpoint):
        return RestorePlan(FINE_TUNED, head.kind, files.checkpoint, files.checkpoint_format, head_restored=True)
    if inference:
        _refuse_nothing_to_run(output_dir, init_checkpoint, head)
    return RestorePlan(PRETRAINED, head.kind, files.checkpoint, files.checkpoint_format)


def _fine_tuned_for(head: Head, init_checkpoint: str | None) -> bool:
    """Whether `init_checkpoint` is a fine-tuned model directory for `head`; refuses one for another head."""
    found = init_checkpoint_lib.fine_tuned_head(init_checkpoint)
    if found is None:
        return False
    # An output directory without best_model/ names its task, not its head kind: the task's own head.
    same_head = found.get("head") == head.kind if found.get("head") is not None else found.get("task") == head.task
    if list(found.get("labels", [])) != list(head.labels) or not same_head:
        raise InputError(
            f"--init_checkpoint={init_checkpoint} holds a fine-tuned {found.get('head')} head for the labels "
            f"{found.get('labels')} (task {found.get('task')!r}); this task needs a {head.kind} head for "
            f"{list(head.labels)}. Start from the pretrained model directory instead, or fix the label set."
        )
    return True


def _refuse_nothing_to_run(output_dir: str | None, init_checkpoint: str | None, head: Head) -> None:
    raise InputError(
        f"Nothing to evaluate or predict with: --output_dir={output_dir} has no checkpoint "
        f"and --init_checkpoint={init_checkpoint} is not a model fine-tuned for "
        f"{head.task} (no {model_dir_lib.TASK_FILE}). Add --do_train, or point --init_checkpoint at "
        f"a {model_dir_lib.BEST_MODEL_DIR} directory."
    )
