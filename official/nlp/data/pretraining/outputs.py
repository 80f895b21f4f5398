"""The output files of `generator`: shard names, statistics files, the completion record of a shard, and how a shard
is put together from the parts its units' workers write.

Statistics live in a ``stats/`` folder next to the records (`stats_path`), so that no glob of record names
(``train.tfrecord-*``, ``*.tfrecord*``) catches them; the pretraining loader skips a folder that ``*`` catches.
A shard's ``stats/<shard>.json`` is its completion record: written just before the shard gets its final name, it
holds the shard's statistics, the settings its bytes depend on (`output_settings`) and the shard's size and SHA-256
(`file_content`). A rerun skips a shard only when its record matches its own settings *and* the shard's bytes
(`shard_state`), redoes one whose bytes do not match (a torn or replaced shard), and refuses one of other settings:
keeping it would mix two datasets in one output and merge statistics of different shapes.

**Two jobs on one output.** Each job stages under names of its own (`owners`: ``<shard>.incomplete-<pid>-<host>/``
beside a local shard, a local temporary folder for a shard in a bucket, ``.tmp-<pid>-<host>`` for each file it
uploads or renames), so neither deletes or appends to the other's parts, and a shard reaches its final name only
whole, by a rename (one object written whole, on a bucket). Two jobs of the same settings write the same bytes, so
whichever finishes last leaves whole shards whose records match; a job that finds its shards rewritten with other
settings when it ends fails instead of reporting success (`check_written`). No lock or atomic create is needed,
which a bucket does not have. A job's staging folders are deleted by a later job only once their writer is proven
gone (`remove_stale_staging`).
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from official.nlp.common import full_disk, input_files, output_files, text_files
from official.nlp.common.errors import InputError
from official.nlp.common.input_files import absolute
from official.nlp.common.output_names import STATS_DIR, stats_path
from official.nlp.common.processes import owners
from official.nlp.data.pretraining.settings import setting_default

if TYPE_CHECKING:
    from official.nlp.data.pretraining.settings import PretrainingDataConfig
    from official.nlp.data.pretraining.statistics import PretrainingStatistics

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


def file_content(path: str) -> dict:
    """The size and SHA-256 of file `path` (on any filesystem), as a completion record holds them."""
    digest = hashlib.sha256()
    size = 0
    with input_files.open_file(path, "rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
            size += len(chunk)
    return {"bytes": size, "sha256": digest.hexdigest()}


def _read_record(path: str) -> dict | None:
    record_path = stats_path(path)
    return json.loads(text_files.read_text(record_path)) if input_files.exists(record_path) else None


def _with_later_defaults(recorded: dict, wanted: dict) -> dict:
    """`recorded` with the settings it lacks at their defaults: a setting the record lacks came after the version
    that wrote it, which worked as the setting's default does."""
    later = {name: setting_default(name) for name in wanted.keys() - recorded.keys()}
    return {**recorded, **{name: value for name, value in later.items() if value is not dataclasses.MISSING}}


def _check_settings(path: str, recorded: dict | None, settings: dict, shard_index: int) -> None:
    record_path = stats_path(path)
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
    recorded = _with_later_defaults(recorded, wanted)
    differing = [
        f"{_SETTING_NAMES.get(k, '--' + k)}: {recorded.get(k)!r} there, {wanted.get(k)!r} now"
        for k in sorted(set(recorded) | set(wanted))
        if recorded.get(k) != wanted.get(k)
    ]
    if differing:
        raise InputError(f"{path} was written with other settings than this run's ({'; '.join(differing)}). {how}")


def shard_state(path: str, settings: dict, shard_index: int) -> str:
    """The state of shard ``path``: "complete" if it is a whole shard of these settings (its record's settings
    match, and its size and SHA-256 are the record's); "missing" if no shard is there; "unverified" if a file is
    there but not the one its record describes (a torn or replaced shard, a file without a record, or a record of
    a version that kept no digest), to be deleted before it is written again. Raises if the record is one of other
    settings."""
    # The statistics file is the shard's marker only once the shard is there too (see `finish_shard`), and a job
    # writes the record before the shard: a shard without one was not put there by a job of this library.
    if not input_files.exists(path):
        return "missing"
    record = _read_record(path)
    if record is None:
        logging.info("%s has no record in %s: written again", path, stats_path(path))
        return "unverified"
    _check_settings(path, record.get("settings"), settings, shard_index)
    recorded = record.get("content")
    if recorded is None:
        logging.info("%s: its record keeps no size and digest (an older version wrote it); written again", path)
        return "unverified"
    found = file_content(path)
    if found != recorded:
        logging.warning(
            "%s does not hold the bytes its record %s describes (%d bytes there, %d recorded; another job or a "
            "copy changed it): written again",
            path,
            stats_path(path),
            found["bytes"],
            recorded["bytes"],
        )
        return "unverified"
    return "complete"


def check_written(paths: Sequence[str], settings: dict) -> None:
    """Before a job reports success: every shard is there, with a record of this job's settings and the size that
    record holds. Fails when another job of other settings wrote the same --output_file meanwhile."""
    for s, path in enumerate(paths):
        record = _read_record(path)
        content = (record or {}).get("content")
        wanted = shard_record(settings, s)["settings"]
        if (
            record is None
            or _with_later_defaults(record.get("settings") or {}, wanted) != wanted
            or not input_files.exists(path)
            or content is None
            or input_files.getsize(path) != content["bytes"]
        ):
            raise InputError(
                f"{path} was removed or rewritten with other settings while this job ran: another job writes the "
                "same --output_file. Give each job its own --output_file (only jobs of the same settings may share "
                "one), then run again"
            )


def remove_stale_staging(paths: Sequence[str]) -> None:
    """Deletes the staging folders beside local shards `paths` whose writer is proven gone (`owners`), and the
    untagged ``<shard>.incomplete`` of older versions; logs those of other jobs, which are left alone."""
    local = [p for p in paths if not input_files.is_remote(p)]
    for path in local:
        shutil.rmtree(path + ".incomplete", ignore_errors=True)
    others = []
    for leftover in owners.leftovers(local, "incomplete"):
        if leftover.stale:
            shutil.rmtree(leftover.path, ignore_errors=True)
        else:
            others.append(leftover)
    if others:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(min(_mtime(o.path) for o in others)))
        logging.warning(
            "another job writes this --output_file too (%s, staging %d shard(s) since %s): each job writes whole "
            "shards under names of its own, the same bytes for the same settings, and the last to finish leaves "
            "them. End one of them to save the work; once it is gone, a rerun deletes what it left",
            ", ".join(sorted({o.describe() for o in others})),
            len(others),
            since,
        )


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:
        return time.time()


def finish_shard(path: str, joined: str, stats: PretrainingStatistics, record: dict) -> None:
    """Puts the joined parts (local file `joined` in the shard's parts folder) in place as shard `path`:
    its record (statistics, settings, size and SHA-256) first, the shard's final name last."""
    if not stats.instances:
        raise InputError(
            f"{path} would hold no instance: the input gives too few instances for this many output shards. Write "
            f"fewer shards (a smaller N in --output_file=PATH@N), or give more text."
        )
    record = dict(record, content=file_content(joined))
    if input_files.is_remote(path):  # one object, copied whole under a temporary name of this job, then renamed
        output_files.copy(joined, output_files.temporary_name(path))
        joined = output_files.temporary_name(path)
    stats.write(stats_path(path), record)
    output_files.commit(joined, path, name="--output_file")  # The shard gets its final name only now, complete.


class ShardJoiner:
    """Appends each unit's part to its shard as the unit's result arrives (in unit order), while the workers go
    on: joining them all at the end kept both cores idle for the copy."""

    def __init__(self, parts: dict):
        self.parts = parts  # shard -> its local parts folder
        self.files: dict = {}

    def path(self, s: int) -> str:
        return os.path.join(self.parts[s], "shard")

    def append(self, s: int, part: str) -> None:
        if s not in self.files:
            self.files[s] = open(self.path(s), "wb")
        with full_disk.naming_full_disk(self.path(s)), open(part, "rb") as f:
            append_file(f, self.files[s])
        os.remove(part)

    def close(self, s: int) -> str:
        with full_disk.naming_full_disk(self.path(s)):
            self.files.pop(s).close()
        return self.path(s)

    def close_all(self) -> None:
        for f in self.files.values():
            f.close()
        self.files.clear()


def append_file(source, out) -> None:
    """Appends local file ``source`` to ``out``: in the kernel where it can (copy_file_range: 0.2 s instead of
    1.9 s through Python's buffers for 800 MB of parts), else by copying."""
    if hasattr(os, "copy_file_range"):
        remaining = os.fstat(source.fileno()).st_size
        out.flush()
        try:
            while remaining > 0:
                copied = os.copy_file_range(source.fileno(), out.fileno(), remaining)
                if copied == 0:
                    break
                remaining -= copied
            if remaining == 0:
                return
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                raise
        # The file positions moved with the bytes copied, so the copy goes on where the kernel stopped.
    shutil.copyfileobj(source, out, 1 << 22)


def parts_dir(path: str, index: int, parts_root: str | None) -> str:
    """Where the workers of this job write the parts of shard `path`: beside it on local disk, so that a local job
    needs no other space, under a name of this job's own (`owners.tagged`: a second job on the same output keeps
    its own parts); for a shard on another filesystem, a local temporary folder of this job (`parts_root`), so that
    the parts are written and joined at local speed and only the finished shard travels."""
    if parts_root is None:
        return owners.tagged(path, "incomplete")
    return os.path.join(parts_root, f"{index:05d}.incomplete")


def part_path(parts_dir: str, unit: int) -> str:
    return os.path.join(parts_dir, f"unit-{unit:06d}.part")
