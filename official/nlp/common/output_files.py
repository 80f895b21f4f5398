"""Writing an output so that its final name only ever holds a complete file, and never replaces what is not a file.

Every output the library writes (records, vocabularies, statistics, features, predictions, evaluation results) is
written under a temporary name in the same folder and renamed to its final name once complete (`write_atomically`,
or `commit` for writers that produce the temporary file themselves). A job that dies half-way, a full disk
included, leaves the previous file or none under the final name, never a truncated one.

A rename replaces whatever has the target's name: run as root with ``--output_file=/dev/full``, it would replace
the device with a regular file. So a target that exists and is not a regular file (a device, a FIFO, a socket, a
folder where a file is meant) is refused with `check_target` before any work, and again at the commit. On an
object store (a path with a scheme) writing an object replaces only that object, so there is nothing to check.

Local paths use Python's own file functions, so that processes without TensorFlow (the pretraining-data workers)
can use this module; a path with a scheme (``gs://``, ``ram://``) goes through `tf.io.gfile`.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import IO

from official.nlp.common.errors import InputError

_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def _is_remote(path: str) -> bool:
    return "://" in path


def _gfile():
    import tensorflow as tf  # only for paths with a scheme: local writers stay free of TensorFlow

    return tf.io.gfile


def _kind(path: str) -> str | None:
    """What `path` is ("a regular file", "a FIFO", ...), or None if nothing has that name."""
    if _is_remote(path):
        return None  # object stores hold neither devices nor FIFOs, and an object and a "folder" prefix coexist
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # a file among the folders is reported where they are made
        return None
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def check_target(path: str, *, folder: bool = False, name: str | None = None) -> None:
    """Refuses `path` as an output when something other than a regular file (or, with `folder`, a folder) has
    that name: writing would replace a device, a FIFO or a folder. `name`: the flag the path comes from."""
    kind = _kind(os.fspath(path))
    wanted = "a folder" if folder else "a regular file"
    if kind is None or kind == wanted:
        return
    where = f"{name}={path}" if name and name.startswith("--") else f"{name or 'output'} {path}"
    raise InputError(
        f"{where} is {kind}, not {wanted}: writing the output would replace it. Name a new "
        f"{'folder' if folder else 'file'} or {wanted} to overwrite."
    )


def temporary_name(path: str) -> str:
    """The name `path` is written under until it is complete: in the same folder, so that the rename stays on one
    filesystem."""
    return f"{path}.tmp-{os.getpid()}"


def commit(tmp: str, path: str, *, name: str | None = None) -> None:
    """Renames the complete file `tmp` to `path`, replacing an earlier regular file (and nothing else)."""
    check_target(path, name=name)
    if _is_remote(path):
        _gfile().rename(tmp, path, overwrite=True)
    else:
        os.replace(tmp, path)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        if _is_remote(path):
            gfile = _gfile()
            if gfile.exists(path):
                gfile.remove(path)
        else:
            os.remove(path)


@contextlib.contextmanager
def write_atomically(path: str, mode: str = "w", *, name: str | None = None) -> Iterator[IO]:
    """Opens a temporary file for `path` (text modes write UTF-8 with "\\n" line ends); on a clean exit it gets
    the final name, on an exception it is removed and `path` is left as it was.

    >>> with write_atomically("/tmp/results.txt") as f:   # doctest: +SKIP
    ...     f.write("accuracy 0.84\\n")
    """
    path = os.fspath(path)
    check_target(path, name=name)
    tmp = temporary_name(path)
    try:
        if _is_remote(path):
            f = _gfile().GFile(tmp, mode)
        else:
            f = open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""}))
        with f:
            yield f
        commit(tmp, path, name=name)
    except BaseException:
        _remove(tmp)
        raise
