"""The settings every fine-tuning job shares (`FineTuningConfig`), and the inputs they name, checked at start-up.

`FineTuningConfig` is `training.config.TrainingConfig`'s loop plus the model and the schedule in epochs; a task's
config extends it with its data fields and `do_train`, `do_eval`, `do_predict`, and `tasks.finetuning.run_task` runs
what they ask for. The scripts' flags are the fields (`common.config_flags`).

Before any work a job checks what its config names: the input file of each job it asks for (`check_job_inputs`) and
the model of `--init_checkpoint` (`init_checkpoint_files`: one of our model directories, an original TF1 checkpoint or
a Hugging Face folder, config, vocabulary and case with it, checked against `--max_seq_length`); `output_related`
lists the paths that `--output_dir` may neither be nor hold; `num_train_steps` turns the schedule in epochs into
steps.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.common import input_files
from official.nlp.common.config_flags import field, override
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.modeling.configs import DEFAULT_SEQ_LENGTH, check_seq_length
from official.nlp.training.config import TrainingConfig


@dataclasses.dataclass
class FineTuningConfig(TrainingConfig):
    """The settings every fine-tuning job shares: the model to start from, sequence length, batch sizes, the
    schedule in epochs, and `TrainingConfig`'s loop. Field names are the flags; a task's config extends it with
    its data fields and its `do_train`/`do_eval`/`do_predict`."""

    output_dir: str = field(
        path="path",
        help="Checkpoints, cached features, eval_results.txt, summaries and best_model/ go "
        "here; rerunning with the same flags resumes.",
    )
    init_checkpoint: str | None = field(
        None,
        path="path",
        help=(
            "A model directory (convert_checkpoint.py or run_pretraining output), an original TF1 checkpoint "
            "prefix, or a Hugging Face folder (config.json + model.safetensors + vocab.txt)."
        ),
    )
    bert_config_file: str | None = field(
        None, path="path", help="bert_config.json (default: the one with --init_checkpoint)."
    )
    vocab_file: str | None = field(None, path="path", help="vocab.txt (default: the one with --init_checkpoint).")
    do_lower_case: bool | None = field(
        None, help="Lower-case the input (default: the case stored with --init_checkpoint)."
    )
    max_seq_length: int = field(
        DEFAULT_SEQ_LENGTH, minimum=3, help="Tokens per sequence after WordPiece, [CLS] and [SEP] included."
    )
    eval_batch_size: int = field(8, minimum=1, help="Batch size for evaluation.")
    predict_batch_size: int = field(8, minimum=1, help="Batch size for prediction.")
    num_train_epochs: float = field(3.0, exclusive_minimum=0, help="Epochs over the training data (may be fractional).")
    warmup_proportion: float = field(0.1, minimum=0, maximum=1, help="Share of the training steps with linear warmup.")
    keep_checkpoint_max: int = override(TrainingConfig, "keep_checkpoint_max", 1)

    # Fields that do not change what is trained: a resumed run may change them. Subclasses add theirs.
    NOT_TRAINING_SETTINGS: ClassVar[tuple[str, ...]] = TrainingConfig.NOT_TRAINING_SETTINGS + (
        "output_dir",
        "eval_batch_size",
        "predict_batch_size",
    )

    def job_inputs(self) -> list[tuple[str, str, str | None]]:
        """`(job flag, input flag, path)` for every file the jobs asked for read (a task's config lists its own),
        so that `run_task` checks them all before the first step: a missing dev file found after an epoch of
        training costs the epoch. By default: `train_file`, `eval_file` and `predict_file` for `do_train`,
        `do_eval` and `do_predict`, where the config has them."""
        return [
            (job, f"--{name}", getattr(self, name))
            for job, name in (("do_train", "train_file"), ("do_eval", "eval_file"), ("do_predict", "predict_file"))
            if getattr(self, job, False) and hasattr(self, name)
        ]

    def finetuning_config(self) -> FineTuningConfig:
        """What `run_task` records and checks when resuming: the shared part alone (a task records its own
        settings through `task.settings()`; a config whose own fields are to be recorded returns itself)."""
        return FineTuningConfig(**{f.name: getattr(self, f.name) for f in dataclasses.fields(FineTuningConfig)})


def output_related(config: FineTuningConfig) -> dict[str, str]:
    """The job's other paths, which `--output_dir` may neither be nor hold (`output_folders.check_location`): every
    path field of `config`. A job without `--do_train` may read its `--init_checkpoint` from its own earlier run
    (`<output_dir>/best_model`, a `ckpt-N` prefix there): it writes only evaluations and predictions beside it."""
    return {
        f"--{f.name}": getattr(config, f.name)
        for f in dataclasses.fields(config)
        if "path" in f.metadata
        and f.name != "output_dir"
        and not (f.name == "init_checkpoint" and not getattr(config, "do_train", True))
    }


def num_train_steps(num_examples: int, config: FineTuningConfig) -> tuple[int, int, int]:
    """`(train steps, warmup steps, steps per epoch)` as in the original: `int(examples / batch * epochs)`."""
    steps = int(num_examples / config.train_batch_size * config.num_train_epochs)
    if steps < 1:
        raise InputError(
            f"{num_examples} training examples, --train_batch_size={config.train_batch_size} and "
            f"--num_train_epochs={config.num_train_epochs} make no training step"
        )
    per_epoch = max(1, num_examples // config.train_batch_size)
    return steps, int(steps * config.warmup_proportion), per_epoch


def check_job_inputs(config: FineTuningConfig) -> None:
    """Refuses a job whose input file is not given or not there, naming the job, the flag and the path, before any
    work (see `FineTuningConfig.job_inputs`)."""
    for job, flag, path in config.job_inputs():
        if not path:
            raise InputError(f"--{job} needs {flag}")
        if not input_files.isfile(path):
            raise MissingInputError(
                f"--{job} needs {path} ({flag}), which does not exist or is not a file; correct {flag}, or leave "
                f"out --{job}"
            )


def init_checkpoint_files(config: FineTuningConfig, *, do_train: bool | None = None) -> model_dir_lib.ModelFiles:
    """Config, vocabulary, case and checkpoint of `--init_checkpoint` (model directory, TF1 prefix or HF folder).

    A job that does not train (`do_train`, default: the config's) and has no `--init_checkpoint` uses the model of
    the run in its `--output_dir` (`--do_predict --output_dir=<a finished run>`), whose folder records the config,
    vocabulary and case: the model `run_finetuning` then restores from there. The files are checked against
    `--max_seq_length` (`check_seq_length`): every fine-tuning job starts here."""
    source = config.init_checkpoint
    if source is None and config.bert_config_file is None:
        trains = getattr(config, "do_train", True) if do_train is None else do_train
        if not trains and init_checkpoint_lib.holds_a_run(config.output_dir):
            source = config.output_dir
        else:
            what = "fine-tune" if trains else f"use (--output_dir={config.output_dir} holds no finished run)"
            rest = " (or --bert_config_file to train from scratch)" if trains else ""
            raise InputError(
                f"--init_checkpoint is required: the model to {what}, a model directory, a fine-tuning run's "
                f"--output_dir, an original TF1 checkpoint or a Hugging Face folder{rest}"
            )
    try:
        files = init_checkpoint_lib.resolve_model_files(
            source,
            bert_config_file=config.bert_config_file,
            vocab_file=config.vocab_file,
            do_lower_case=config.do_lower_case,
        )
    except (FileNotFoundError, ValueError) as e:
        raise InputError(str(e)) from e
    check_seq_length(config.max_seq_length, files.config.max_position_embeddings)
    return files
