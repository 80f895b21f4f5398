"""Which job a temporary name belongs to, and whether a later job may delete it.

A job writes each output under a temporary name beside it and gives it its final name once complete
(`output_files`). A job that is killed (SIGKILL, an out-of-memory kill, a preemption) leaves its temporary names
behind, and a second job on the same output (a scheduler's retry while the first attempt still runs, two people
in one bucket) may be writing its own at the same moment. So every temporary name carries its writer,
``<name>.<kind>-<pid>-<host>`` (`tagged`):

- two jobs never share a temporary name, on one host or on two hosts writing one bucket;
- a later job deletes a leftover only when it can prove its writer is gone (`Leftover.stale`): written on this host
  by a process id that no longer runs. A leftover of a live process, or of another host, is left alone
  (`create_pretraining_data` reports another job's staging folders, so that the user knows it is there).

This needs no lock and no atomic create, which a bucket (``gs://``) does not have. A pid that the system has
given to a new process since keeps its leftover until that process ends: the cost of never deleting what another
job may still be writing.
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
from collections.abc import Iterable

from official.nlp.common import input_files
from official.nlp.common.errors import InputError

_UNSAFE = re.compile(r"[^A-Za-z0-9.-]")


def this_host() -> str:
    """This machine's name as it appears in a tag (characters outside ``[A-Za-z0-9.-]`` become ``_``)."""
    return _UNSAFE.sub("_", socket.gethostname()) or "localhost"


def owner_tag() -> str:
    """``<pid>-<host>`` of this process."""
    return f"{os.getpid()}-{this_host()}"


def tagged(path: str, kind: str) -> str:
    """The temporary name of this process for `path`: ``<path>.<kind>-<pid>-<host>`` (`kind`: "tmp", "incomplete")."""
    return f"{os.fspath(path)}.{kind}-{owner_tag()}"


def is_running(pid: int) -> bool:
    """Whether a process with id `pid` runs on this host (one of another user counts: it runs)."""
    if pid <= 0:
        return True  # not a process id: nothing is proven
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # no permission to signal it: it runs, as another user's process
        return True
    return True


@dataclasses.dataclass(frozen=True)
class Leftover:
    """A temporary name of `path`: its writer's pid and host (None for the ``.tmp-<pid>`` names of older versions,
    which named no host)."""

    path: str
    pid: int
    host: str | None

    @property
    def stale(self) -> bool:
        """Its writer is proven gone: a process of this host (an untagged name counts as this host's only on a
        local path) that no longer runs, or this process itself (an earlier call that failed: a call writing the
        same output now would be using the same name)."""
        on_this_host = self.host == this_host() or (self.host is None and not input_files.is_remote(self.path))
        return on_this_host and (self.pid == os.getpid() or not is_running(self.pid))

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host or 'an unnamed host'}"


def _parse(tag: str) -> tuple[int, str | None] | None:
    match = re.fullmatch(r"(\d+)(?:-([A-Za-z0-9._-]+))?", tag)
    if not match:
        return None
    return int(match.group(1)), match.group(2)


def leftovers(paths: str | Iterable[str], kind: str) -> list[Leftover]:
    """The temporary names ``<path>.<kind>-<pid>[-<host>]`` beside each of `paths`.

    One listing per folder (no glob: a path may hold ``[`` or ``*``)."""
    wanted: dict[str, set[str]] = {}
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        folder, name = os.path.split(os.fspath(path))
        wanted.setdefault(folder, set()).add(name)
    found = []
    for folder, names in wanted.items():
        try:
            entries = input_files.listdir(folder or ".")
        except InputError:  # no folder (yet), or none that can be listed: nothing left there to clean
            continue
        for entry in entries:
            name, dot_kind, tag = entry.rpartition(f".{kind}-")
            owner = _parse(tag) if dot_kind and name in names else None
            if owner is not None:
                found.append(Leftover(os.path.join(folder, entry), *owner))
    return found
