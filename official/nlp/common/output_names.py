"""The names of a job's output files: ``PATH@N`` shards (`output_paths`) and the statistics file beside them
(`stats_path`, `default_stats_path`), shared by the pretraining-data generator and `prepare_corpus`.

Statistics live in a ``stats/`` folder next to the records, so that no glob of record names (``train.tfrecord-*``,
``*.tfrecord*``) catches them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from official.nlp.common.errors import InputError

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


def stats_path(path: str) -> str:
    """The statistics file of the records at ``path``: ``<dir>/stats/<name>.json``."""
    folder, name = os.path.split(path)
    return os.path.join(folder, STATS_DIR, name + ".json")


def default_stats_path(output_file: str | Sequence[str], paths: Sequence[str]) -> str:
    """The job's statistics: ``stats/PATH.json`` for ``PATH@N``, the shard's own file for one output file."""
    if isinstance(output_file, str) and _SHARD_PATTERN.match(output_file):
        return stats_path(_SHARD_PATTERN.match(output_file).group(1))
    return stats_path(paths[0]) if len(paths) == 1 else stats_path(paths[0] + ".all")
