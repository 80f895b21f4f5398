"""A write that ran out of space, reported as the user's output and what to change.

A full disk (or quota, or file size limit) fails a write at `write` or `close`, from Python without a file name and
from TensorFlow in a message of its own, and often while a staging or temporary file is written, a name the user
never gave. `naming_full_disk` puts the path back on Python's error; `naming_output_when_full` turns any such failure
inside it into one `InputError` naming the output (and its flag); `full_disk_reason` says whether an error is one.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

from official.nlp.common.errors import InputError

# The errors of a write that ran out of space: the disk, the quota, the file size limit.
FULL_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


@contextlib.contextmanager
def naming_full_disk(path: str) -> Iterator[None]:
    """A full disk raises at write or close without a file name; inside the block it names `path`, so that the
    script reports it as one line (`cli`)."""
    try:
        yield
    except OSError as e:
        if e.filename or isinstance(e, InputError) or e.errno not in FULL_DISK_ERRNOS:
            raise
        raise OSError(e.errno, e.strerror or str(e), os.fspath(path)) from None


def full_disk_reason(e: BaseException) -> str | None:
    """What filled up when `e` is a write that failed for want of space (a full disk, a quota, the file size limit),
    from Python or TensorFlow, or an `InputError` made of one; else None."""
    while e is not None:
        if isinstance(e, OSError) and e.errno in FULL_DISK_ERRNOS:
            return e.strerror or os.strerror(e.errno)
        if type(e).__module__.startswith("tensorflow"):
            message = (getattr(e, "message", "") or str(e)).lower()
            for marker, reason in (
                ("no space left", "No space left on device"),
                ("quota", "Disk quota exceeded"),
                ("file too large", "File too large"),
            ):
                if marker in message:
                    return reason
        e = e.__cause__ or e.__context__ if isinstance(e, InputError) else None
    return None


@contextlib.contextmanager
def naming_output_when_full(path: str, *, name: str | None = None) -> Iterator[None]:
    """A write inside the block that fails for want of space is reported as one `InputError` naming the output
    `path` (`name`: its flag) and what to change, not the staging or temporary file that was being written (a
    name the user never gave) nor an input the bytes came from. Use it around an output's staging and commit,
    so that the message comes once the staging is cleaned up."""
    try:
        yield
    except Exception as e:
        reason = full_disk_reason(e)
        if reason is None:
            raise
        where = f"{name}={path}" if name and name.startswith("--") else f"{name or 'output'} {path}"
        fix = (
            "raise the file size limit (ulimit -f) or choose another disk"
            if reason == "File too large"
            else "free some space or choose another disk"
        )
        raise InputError(f"{where}: cannot be written ({reason}), and nothing of it was kept; {fix}") from None
