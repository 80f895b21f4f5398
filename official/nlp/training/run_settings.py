"""The settings a training run records in its directory, and the refusal to resume it with others.

Pretraining (`--model_dir`, `pretraining_settings.json`) and every fine-tuning job (`--output_dir`,
`finetuning_settings.json`) record what they train with once their data is checked (`record_settings`). A rerun
on the same directory resumes from its last checkpoint, so it must train the same thing: `check_resume` refuses
one whose settings differ, naming each flag (`--train_batch_size: 32 there, 64 now`), before any work. Settings
that do not change what is trained (where things go, how the loop is run and saved, the devices: a config's
`NOT_TRAINING_SETTINGS`) may change on resume.

Example:

    settings = training_settings(config)                     # every field but NOT_TRAINING_SETTINGS
    recorded = check_resume(config.model_dir, "pretraining_settings.json", settings, flag="--model_dir")
    ...                                                      # the data is checked
    if not recorded:
        record_settings(config.model_dir, "pretraining_settings.json", settings, flag="--model_dir")
"""

from __future__ import annotations

import dataclasses
import json
import os

import tensorflow as tf
from absl import logging

from official.nlp.common import input_files, output_files, text_files
from official.nlp.common.errors import InputError


def training_settings(config) -> dict:
    """What a resumed run must share with the run that wrote its directory: every field of `config` (a dataclass
    such as `TrainingConfig`) but its `NOT_TRAINING_SETTINGS`, JSON-able."""
    fields = (f.name for f in dataclasses.fields(config) if f.name not in config.NOT_TRAINING_SETTINGS)
    return json.loads(json.dumps({name: getattr(config, name) for name in fields}))


def field_defaults(config) -> dict:
    """The JSON-able defaults of `config`'s fields that have one: what a setting recorded before its flag existed
    stands for (`check_resume`'s `defaults`)."""
    return json.loads(
        json.dumps({f.name: f.default for f in dataclasses.fields(config) if f.default is not dataclasses.MISSING})
    )


def settings_differences(recorded: dict, current: dict) -> list[str]:
    """``--flag: <recorded> there, <current> now`` for each setting that differs between a run's recorded settings
    and this job's: what a refusal to resume names, so the user sees which flags to change back."""
    return [
        f"--{k}: {recorded.get(k)!r} there, {current.get(k)!r} now"
        for k in sorted(set(recorded) | set(current))
        if recorded.get(k) != current.get(k)
    ]


def check_resume(
    directory: str,
    settings_file: str,
    settings: dict,
    *,
    flag: str,
    hint: str = "",
    unrecorded: str = "refuse",
    defaults: dict | None = None,
    renamed: dict | None = None,
) -> bool:
    """Refuses to resume `directory` when its checkpoints were trained with other `settings` (as recorded in its
    `settings_file`), naming the flags that differ; returns whether it records them already (else the job calls
    `record_settings` once its data is checked).

    A directory without a checkpoint trained nothing (a run stopped or refused before its first checkpoint): this
    run's settings replace any recorded there. Checkpoints without `settings_file` are refused
    (`unrecorded="refuse"`: they may belong to anything), or resumed with a warning (`unrecorded="warn"`: a
    directory an older version wrote without the file). `flag` names the directory in messages (`--model_dir`) and
    `hint` is added to the refusal (where else the user may start from). A setting the record lacks is a flag added
    after the version that wrote it, which worked as its default in `defaults` (`field_defaults`) does; a setting
    recorded under an earlier name is read under its name of today (`renamed`: earlier name -> name).
    """
    if not (input_files.isdir(directory) and tf.train.latest_checkpoint(directory)):
        return False
    path = os.path.join(directory, settings_file)
    if not input_files.exists(path):
        if unrecorded == "warn":
            logging.warning(
                "%s holds checkpoints but no %s (written by an older version): its settings cannot be checked; "
                "they are recorded now as this run's",
                directory,
                settings_file,
            )
            return False
        raise InputError(
            f"{flag}={directory} holds checkpoints but no {settings_file}, so they may belong to other settings; "
            f"choose another {flag}"
        )
    recorded = json.loads(text_files.read_text(path))
    for old, new in (renamed or {}).items():
        if old in recorded and new not in recorded:
            recorded[new] = recorded.pop(old)
    recorded.update({name: defaults[name] for name in settings.keys() - recorded.keys() if name in (defaults or {})})
    differing = settings_differences(recorded, settings)
    if differing:
        raise InputError(
            f"{flag}={directory} holds a run with other settings ({'; '.join(differing)}). Rerun with the same "
            f"flags to resume it, or choose another {flag}{hint}."
        )
    return True


def record_settings(directory: str, settings_file: str, settings: dict, *, flag: str) -> None:
    """Writes `settings` to `directory/settings_file` (atomically), which `check_resume` reads on the next run;
    `flag` names the directory in messages."""
    output_files.makedirs(directory, name=flag)
    with output_files.write_atomically(os.path.join(directory, settings_file)) as f:
        json.dump(settings, f, indent=1, sort_keys=True)
