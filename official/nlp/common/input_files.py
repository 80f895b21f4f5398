"""Reading the files a user names, on any filesystem: local disk, ``gs://`` on TPU VMs, ``ram://`` in tests.

Every read of a user path goes through this module: whether it exists, is a file or a folder, its size, a glob, a
listing, opening it. A path with a scheme (``gs://``, ``ram://``, ...) goes through `tf.io.gfile`; a local path
goes through Python's own functions, so that processes without TensorFlow (the pretraining-data workers) read local
files as before and import TensorFlow only when a path needs it.

A missing object, a bucket that does not exist, no permission or a store that cannot be reached is one
`InputError` naming the path (`tf.io.gfile` raises `NotFoundError` with an empty message on some filesystems).

Comma-separated paths and glob patterns (``--input_file``) are expanded the same way by every job
(`expand_input_files`); each pattern is listed once, so a bucket is never listed per record.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import io
import os
from collections.abc import Iterator, Sequence
from typing import IO

from official.nlp.common.errors import InputError, MissingInputError


def is_remote(path: str) -> bool:
    """Whether `path` names a filesystem other than the local one (``gs://``, ``ram://``, ...)."""
    return "://" in os.fspath(path)


# Filesystems whose files live in this process alone: another process (a data worker) cannot see them.
PROCESS_LOCAL_SCHEMES = ("ram://",)


def is_process_local(path: str) -> bool:
    """Whether `path` lives in this process's memory (``ram://``): a worker process cannot read or write it."""
    return os.fspath(path).startswith(PROCESS_LOCAL_SCHEMES)


# The characters TensorFlow's file matching reads as a pattern (`GetMatchingPaths`, which its checkpoint readers,
# `tf.train.latest_checkpoint`, CheckpointManager's clean-up and SavedModel loading call on a literal path).
GLOB_CHARACTERS = "*?[\\"


def expand_user(path: str) -> str:
    """`path` with a leading ``~`` or ``~user`` replaced by that home folder, as a shell would; a path with a scheme
    is left as it is. Bash expands ``~`` in ``--flag ~/x`` but not in ``--flag=~/x``, which would otherwise name a
    folder called ``~`` in the working directory."""
    path = os.fspath(path)
    return path if is_remote(path) else os.path.expanduser(path)


def relative_path(path: str) -> str:
    """`path` as a report names it: a local path relative to the current folder (``../shared/data/glue``), so that
    a report shipped with a repository names no folder of the machine it ran on; a remote path as it is. The
    command a report quotes still runs from the folder it was run in."""
    path = os.fspath(path)
    if is_remote(path) or not os.path.isabs(path):
        return path
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows): no relative form
        return path


def check_no_glob(path: str, *, name: str) -> None:
    """Refuses a path that holds a character TensorFlow reads as a glob pattern (`GLOB_CHARACTERS`): a checkpoint
    or SavedModel there is written but not found again (``out [9]/ckpt-1`` matches ``out 9/ckpt-1``), and a
    checkpoint clean-up could delete another folder's files (``a*b`` matches ``aXb``). `name`: the flag."""
    found = [c for c in GLOB_CHARACTERS if c in os.fspath(path)]
    if found:
        raise InputError(
            f"{name}={path!r}: TensorFlow reads {found[0]!r} in a path as a glob pattern (its checkpoint and "
            "SavedModel readers match files by pattern: what is written there is not found again, or another "
            f"folder's files are matched); choose a path without any of {' '.join(GLOB_CHARACTERS)}"
        )


def gfile():
    """`tf.io.gfile`, imported only when a path needs it: local readers stay free of TensorFlow."""
    import tensorflow as tf

    return tf.io.gfile


def _tf_errors():
    import tensorflow as tf

    return tf.errors


def describe_error(e: BaseException, path: str) -> InputError | None:
    """A user-facing error naming `path` for a filesystem error about it, or None when `e` is not one."""
    if isinstance(e, InputError):
        return e
    if isinstance(e, FileNotFoundError):
        return MissingInputError(f"{path} does not exist; check the path")
    if isinstance(e, (PermissionError, IsADirectoryError, NotADirectoryError)):
        reason = e.strerror or type(e).__name__
        return InputError(f"{path}: {reason}; choose a path you can read and write, or change its permissions")
    if type(e).__module__.startswith("tensorflow"):
        errors = _tf_errors()
        detail = (getattr(e, "message", "") or "").strip().splitlines()
        detail = f" ({detail[0]})" if detail and path not in detail[0] else ""
        if isinstance(e, errors.NotFoundError):
            return MissingInputError(
                f"{path} does not exist{detail}; check the path (and, for gs://, that the bucket exists)"
            )
        if isinstance(e, (errors.PermissionDeniedError, errors.UnauthenticatedError)):
            fix = (
                "check the credentials and the bucket's access"
                if is_remote(path)
                else "choose a path you can read and write, or change its permissions"
            )
            return InputError(f"{path}: permission denied{detail}; {fix}")
        if isinstance(e, errors.FailedPreconditionError):
            fix = (
                "check the network, the credentials and that the bucket exists"
                if is_remote(path)
                else "check the path (a file where a folder is needed?)"
            )
            return InputError(f"{path}: cannot be read or written{detail}; {fix}")

        if isinstance(e, errors.ResourceExhaustedError):
            return InputError(f"{path}: no space left{detail}; free some space or choose another disk")
    return None


@contextlib.contextmanager
def user_path(path: str) -> Iterator[None]:
    """Turns a filesystem error about `path` inside the block into one `InputError` naming it."""
    try:
        yield
    except Exception as e:
        error = describe_error(e, os.fspath(path))
        if error is None or error is e:
            raise
        raise error from None


def _listed(path: str) -> bool:
    """Whether `path` is an entry of its folder's listing. `ram://` answers `exists` and `isdir` for any prefix
    of a name ("a" exists where only "a.tmp" does), which a bucket does not; its listing is exact."""
    parent, name = os.path.split(path.rstrip("/"))
    try:
        return name in {n.rstrip("/") for n in gfile().listdir(parent)}
    except Exception as e:  # a parent that is not there
        if describe_error(e, path) is None:
            raise
        return False


def exists(path: str) -> bool:
    path = os.fspath(path)
    if not is_remote(path):
        return os.path.exists(path)
    with user_path(path):
        return gfile().exists(path) and (not is_process_local(path) or _listed(path))


def isdir(path: str) -> bool:
    path = os.fspath(path)
    if not is_remote(path):
        return os.path.isdir(path)
    with user_path(path):
        return gfile().isdir(path) and (not is_process_local(path) or _listed(path))


def isfile(path: str) -> bool:
    path = os.fspath(path)
    if not is_remote(path):
        return os.path.isfile(path)
    with user_path(path):
        return exists(path) and not gfile().isdir(path)


def getsize(path: str) -> int:
    path = os.fspath(path)
    with user_path(path):
        return os.path.getsize(path) if not is_remote(path) else gfile().stat(path).length


def glob(pattern: str) -> list[str]:
    """The files and folders matching `pattern`, sorted."""
    pattern = os.fspath(pattern)
    if not is_remote(pattern):
        return sorted(_glob.glob(pattern))
    with user_path(pattern):
        return sorted(gfile().glob(pattern))


def listdir(path: str) -> list[str]:
    """The names in folder `path`, sorted."""
    path = os.fspath(path)
    with user_path(path):
        return sorted(n.rstrip("/") for n in (os.listdir(path) if not is_remote(path) else gfile().listdir(path)))


class _GFileReader(io.RawIOBase):
    """A `tf.io.gfile.GFile` opened for reading, as a raw stream: so that Python's buffered readers and text
    decoding (encodings, newline handling, `readline(limit)`, `seek`) work the same on every filesystem."""

    def __init__(self, f):
        super().__init__()
        self._f = f

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._f.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        self._f.seek(offset, whence)
        return self._f.tell()

    def tell(self) -> int:
        return self._f.tell()

    def close(self) -> None:
        if not self.closed:
            self._f.close()
        super().close()


def open_file(path: str, mode: str = "r", *, encoding: str = "utf-8", newline: str | None = "") -> IO:
    """Opens `path` for reading, in binary ("rb") or text mode ("r": `encoding`, and `newline` as `open` takes it;
    by default line ends are kept as they are)."""
    path = os.fspath(path)
    if mode not in ("r", "rb"):
        raise ValueError(f"open_file reads only: mode {mode!r}")
    with user_path(path):
        if not is_remote(path):
            return open(path, mode, **({} if "b" in mode else {"encoding": encoding, "newline": newline}))
        if not exists(path):  # some filesystems only fail at the first read, with an empty message
            raise MissingInputError(f"{path} does not exist; check the path")
        if isdir(path):
            raise InputError(f"{path} is a folder; name a file")
        binary = io.BufferedReader(_GFileReader(gfile().GFile(path, "rb")), 1 << 20)
        return binary if "b" in mode else io.TextIOWrapper(binary, encoding=encoding, newline=newline)


def read_bytes(path: str) -> bytes:
    with open_file(path, "rb") as f, user_path(path):
        return f.read()


def _bracket_hint(pattern: str) -> str:
    """How to name a file whose name holds "[" (a pattern's character class otherwise), for a pattern that holds one."""
    if "[" not in pattern:
        return ""
    return (
        " (a [...] in a pattern is a set of characters; to match a literal [ write [[], "
        f"e.g. {pattern.replace('[', '[[]')!r})"
    )


def expand_input_files(input_file: str | Sequence[str]) -> list[str]:
    """A comma-separated list (or a sequence) of paths and glob patterns -> the files, each pattern's matches sorted;
    a path or pattern that names no file is a `MissingInputError` (a `FileNotFoundError`)."""
    patterns = input_file.split(",") if isinstance(input_file, str) else list(input_file)
    files = []
    for pattern in (os.fspath(p).strip() for p in patterns):
        if not pattern:
            continue
        if _glob.has_magic(pattern):
            # On an object store the listing holds objects only (a "folder" marker ends with "/"): one call.
            matches = [p for p in glob(pattern) if (not p.endswith("/") if is_remote(p) else os.path.isfile(p))]
            if not matches and "[" in pattern and isfile(pattern):
                matches = [pattern]  # a file whose name holds "[": the user meant the file, not a pattern
            if not matches:
                raise MissingInputError(f"--input_file pattern {pattern!r} matches no file{_bracket_hint(pattern)}")
            files.extend(matches)
        elif not isfile(pattern):
            raise MissingInputError(f"input file {pattern!r} does not exist (or is not a file)")
        else:
            files.append(pattern)
    if not files:
        raise InputError("--input_file names no file")
    return files


def absolute(path: str) -> str:
    """`path` made absolute where that means something (a local path); a path with a scheme is absolute."""
    return path if is_remote(path) else os.path.abspath(path)
