"""How two jobs on one output keep apart: names of their own, and claims on names both could take.

**Two jobs on one output.** Each job writes under names of its own (`staging_name`) and puts a whole artifact in
place at the end (`output_files.commit_folder`, marker last). A name that two jobs could both take (an export
version, a new folder) is claimed first (`claim`): the job writes the claim file ``.<name>.<job>.claim`` beside it,
then lists the claims of that name. Seeing another job's claim, it withdraws its own and, after a random pause,
tries again: an export takes the next version; a new folder that another job still claims is refused, naming that
job (host, process, since when). Two jobs may both withdraw, but never both keep a claim: each lists only after its
own claim is written, so whichever lists second sees the first's. That needs neither a lock nor an atomic rename,
only a listing that shows every file written before it began: local disks have that, and so does Cloud Storage,
whose listings are strongly consistent (`tf.io.gfile` caches no listing). A claim is deleted once the artifact is in
place. A job killed with SIGKILL leaves its claim and staging behind; the next job on the same host removes them
once their process is gone, and a claim of a job on another host stays until a person deletes it (the refusal
names the file), since only that host could tell whether the job still runs.

A file this module names (`is_job_file`) carries its job; everything else in an output folder is the user's or the
job's output (`output_folders`).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import random
import re
import secrets
import socket
import time
from collections.abc import Iterator, Mapping

from official.nlp.common import input_files, output_files, text_files
from official.nlp.common.errors import InputError, OutputExistsError
from official.nlp.common.processes import owners

_STAGING, _CLAIM = "incomplete", "claim"
_TOKEN = {}  # pid -> this process's random part of the job id (a forked worker gets its own)
_HELD: set[str] = set()  # the claim files this process holds: claiming a held name again is a no-op
_TRIES = 8


def host() -> str:
    """This host's name as the names of staging folders and claims carry it."""
    # Not `owners.this_host()`: dots separate the parts of these names, so the host here has none.
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"


def job_id() -> str:
    """``<pid>-<random>-<host>``: the id in the names of this process's staging folders and claims."""
    pid = os.getpid()
    if pid not in _TOKEN:
        _TOKEN[pid] = secrets.token_hex(4)
    return f"{pid}-{_TOKEN[pid]}-{host()}"


# .<name>.<pid>-<random>-<host>.<incomplete|claim>[<suffix>]
_OWN_NAME = re.compile(
    r"^\.(?P<name>.+?)\.(?P<pid>\d+)-[0-9a-f]{8}-(?P<host>[A-Za-z0-9-]+)\.(?P<kind>incomplete|claim)"
)


def staging_name(name: str, suffix: str = "") -> str:
    """The name this job writes `name` under until it is whole, in the same folder (a local rename then puts it
    in place atomically). `suffix` keeps an extension a writer insists on (``.keras``)."""
    return f".{name}.{job_id()}.{_STAGING}{suffix}"


def _claim_name(name: str) -> str:
    return f".{name}.{job_id()}.{_CLAIM}"


def is_job_file(name: str) -> bool:
    """Whether `name` is a staging folder or claim of some job (not an output, not a user's file)."""
    return _OWN_NAME.match(name) is not None


def remove_leftovers_of_gone_jobs(folder: str) -> None:
    """Deletes the staging folders and claims in `folder` of jobs that ran on this host and whose process is gone
    (killed before their clean-up). A job on another host may still run: its leftovers stay."""
    if not input_files.isdir(folder):
        return
    for name in input_files.listdir(folder):
        m = _OWN_NAME.match(name)
        if m and m["host"] == host() and int(m["pid"]) != os.getpid() and not owners.is_running(int(m["pid"])):
            path = os.path.join(folder, name)
            if input_files.isdir(path):
                output_files.rmtree(path)
            else:
                output_files.remove(path)


def claims(folder: str, name: str) -> dict[str, dict]:
    """The claims on `name` in `folder`: {claim file: its record (host, pid, since)}."""
    if not input_files.isdir(folder):
        return {}
    found = {}
    for entry in input_files.listdir(folder):
        m = _OWN_NAME.match(entry)
        if m and m["name"] == name and entry.endswith(f".{_CLAIM}"):  # not the temporary file of one being written
            path = os.path.join(folder, entry)
            try:
                found[path] = json.loads(text_files.read_text(path))
            except (ValueError, InputError):  # withdrawn while listed, or cut by a kill: still a claim
                found[path] = {}
    return found


def claimed_names(folder: str) -> set[str]:
    """The names that claims in `folder` are on."""
    if not input_files.isdir(folder):
        return set()
    entries = [n for n in input_files.listdir(folder) if n.endswith(f".{_CLAIM}")]
    return {m["name"] for m in map(_OWN_NAME.match, entries) if m}


def describe_claim(path: str, record: Mapping) -> str:
    since = record.get("since", "an unknown time")
    return f"process {record.get('pid', '?')} on host {record.get('host', '?')} since {since} (claim file {path})"


def _try_claim(folder: str, name: str) -> dict[str, dict]:
    """Writes this job's claim on `name` and lists the claims; keeps it and returns {} when it is alone, else
    withdraws it and returns the others."""
    mine = os.path.join(folder, _claim_name(name))
    record = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "since": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }
    output_files.write_text(mine, json.dumps(record) + "\n")
    others = {path: r for path, r in claims(folder, name).items() if path != mine}
    if others:
        output_files.remove(mine)
    return others


@contextlib.contextmanager
def claim(folder: str, name: str, *, what: str) -> Iterator[None]:
    """Holds the claim on `name` in `folder` for the block (see the module docstring); refuses, naming the other
    job, a name another job holds. `what`: the output, for the message. Reentrant within a job."""
    mine = os.path.join(folder, _claim_name(name))
    if mine in _HELD:
        yield
        return
    output_files.makedirs(folder)
    remove_leftovers_of_gone_jobs(folder)
    for attempt in range(_TRIES):
        others = _try_claim(folder, name)
        if not others:
            break
        pause()  # both may have withdrawn: a random pause breaks the tie
        still = {p: r for p, r in claims(folder, name).items() if p in others}
        if still or attempt == _TRIES - 1:
            path, record = next(iter((still or others).items()))
            raise OutputExistsError(
                f"{what} is being written by another job: {describe_claim(path, record)}. Wait for it to finish "
                "and choose another output, or, if that job is gone, delete the claim file and rerun"
            )
    _HELD.add(mine)
    try:
        yield
    finally:
        _HELD.discard(mine)
        output_files.remove(mine)


def holds(folder: str, name: str) -> bool:
    """Whether this job holds the claim on `name` in `folder`."""
    return os.path.join(folder, _claim_name(name)) in _HELD


def try_claim(folder: str, name: str) -> bool:
    """One attempt at `claim`: True (and the claim held until `release`) when no other job claims `name`."""
    output_files.makedirs(folder)
    if _try_claim(folder, name):
        return False
    _HELD.add(os.path.join(folder, _claim_name(name)))
    return True


def release(folder: str, name: str) -> None:
    """Withdraws this job's claim on `name` (taken with `try_claim`)."""
    mine = os.path.join(folder, _claim_name(name))
    _HELD.discard(mine)
    output_files.remove(mine)


def pause() -> None:
    """The random pause before another attempt at a claim."""
    time.sleep(random.uniform(0.05, 0.3))
