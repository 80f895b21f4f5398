"""The output files of `generator`: shard names, statistics files, and the completion record of a shard.

Statistics live in a ``stats/`` folder next to the records (`stats_path`), so that no glob of record names
(``train.tfrecord-*``, ``*.tfrecord*``) catches them; the pretraining loader skips a folder that ``*`` catches.
A shard's ``stats/<shard>.json`` is its completion record: written just before the shard gets its final name, it
holds the shard's statistics and the settings its bytes depend on (`output_settings`). A rerun skips a shard whose
record matches its own settings and refuses one whose record does not (`is_complete`): keeping it would mix two
datasets in one output and merge statistics of different shapes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from official.nlp.common import input_files
from official.nlp.common.errors import InputError

if TYPE_CHECKING:
    from official.nlp.data.pretraining.settings import PretrainingDataConfig

_SHARD_PATTERN = re.compile(r"^(.*)@(\d+)$")


def output_paths(output_file: str | Sequence[str]) -> list[str]:
    """``a,b,c`` -> [a, b, c]; ``PATH@N`` -> N sharded names."""
    if not isinstance(output_file, str):
        return list(output_file)
    m = _SHARD_PATTERN.match(output_file)
    if m:
        n = int(m.group(2))
        if n < 1:
            raise InputError(f"--output_file {output_file!r}: the shard count must be >= 1")
        return [f"{m.group(1)}-{i:05d}-of-{n:05d}" for i in range(n)]
    paths = [p.strip() for p in output_file.split(",") if p.strip()]
    if not paths:
        raise InputError("--output_file names no file")
    return paths


STATS_DIR = "stats"


def absolute(path: str) -> str:
    """`path` made absolute where that means something (a local path); a path with a scheme is absolute."""
    return path if input_files.is_remote(path) else os.path.abspath(path)


def stats_path(path: str) -> str:
    """The statistics file of the records at ``path``: ``<dir>/stats/<name>.json``."""
    folder, name = os.path.split(path)
    return os.path.join(folder, STATS_DIR, name + ".json")


def default_stats_path(output_file: str | Sequence[str], paths: Sequence[str]) -> str:
    """The job's statistics: ``stats/PATH.json`` for ``PATH@N``, the shard's own file for one output file."""
    if isinstance(output_file, str) and _SHARD_PATTERN.match(output_file):
        return stats_path(_SHARD_PATTERN.match(output_file).group(1))
    return stats_path(paths[0]) if len(paths) == 1 else stats_path(paths[0] + ".all")


# Fields of `PretrainingDataConfig` that do not change the output bytes (the files behind input_file and
# vocab_file do; `output_settings` records those instead of the spelling of their paths).
NOT_OUTPUT_SETTINGS = ("input_file", "output_file", "vocab_file", "num_workers", "stats_file")


def output_settings(config: PretrainingDataConfig, files: Sequence[str], num_shards: int) -> dict:
    """What the output bytes depend on: the config but for the fields that do not shape them, the input files
    (names and sizes, hashed), the vocabulary's content (hashed) and the number of shards."""
    settings = {
        f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name not in NOT_OUTPUT_SETTINGS
    }
    names_and_sizes = hashlib.sha256()
    total = 0
    for path in files:
        size = input_files.getsize(path)
        total += size
        names_and_sizes.update(f"{absolute(path)}\0{size}\0".encode())
    settings["input_files"] = {
        "count": len(files),
        "bytes": total,
        "names_and_sizes_sha256": names_and_sizes.hexdigest(),
    }
    settings["vocab_sha256"] = hashlib.sha256(input_files.read_bytes(config.vocab_file)).hexdigest()
    settings["num_shards"] = num_shards
    return settings


def shard_record(settings: dict, shard_index: int) -> dict:
    """What a shard's statistics file holds besides its statistics."""
    return {"settings": dict(settings, shard_index=shard_index)}


_SETTING_NAMES = {
    "input_files": "--input_file (the files' names or sizes)",
    "vocab_sha256": "--vocab_file (its content)",
    "num_shards": "the number of --output_file shards",
    "shard_index": "the shard's place in --output_file",
}


def is_complete(path: str, settings: dict, shard_index: int) -> bool:
    """True if ``path`` is a complete shard of these settings; raises if it is one of other settings."""
    record_path = stats_path(path)
    # The statistics file is the shard's marker only once the shard is there too (see `generator._finish_shard`).
    if not (input_files.exists(record_path) and input_files.exists(path)):
        return False
    recorded = json.loads(input_files.read_text(record_path)).get("settings")
    how = (
        "A rerun only completes the shards of a run with the same settings: delete the old outputs (the "
        f"shards, their {STATS_DIR}/ folder and .incomplete folders) or choose another --output_file."
    )
    if recorded is None:
        raise InputError(
            f"{path} is a complete shard, but {record_path} does not record the settings it was "
            f"written with (an older version wrote it), so it may not fit this run. {how}"
        )
    wanted = shard_record(settings, shard_index)["settings"]
    differing = [
        f"{_SETTING_NAMES.get(k, '--' + k)}: {recorded.get(k)!r} there, {wanted.get(k)!r} now"
        for k in sorted(set(recorded) | set(wanted))
        if recorded.get(k) != wanted.get(k)
    ]
    if differing:
        raise InputError(f"{path} was written with other settings than this run's ({'; '.join(differing)}). {how}")
    return True
