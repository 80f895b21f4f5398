"""A checkpoint whose files are cut short or corrupt is a user's problem to fix, not a bug: one message naming it.

TensorFlow reports a `.data` file shorter than its `.index` says as ``IndexError: Read less bytes than
requested`` (from the C++ reader, naming no file), a corrupt one as `DataLossError`, and a missing one as an
`OpError` traceback. Everything that reads a
checkpoint turns these into `DamagedCheckpointError`, naming the checkpoint and what to do: copy it again (a
download or copy that stopped early is the usual cause), or use another one. Resuming a training run says which
earlier checkpoint is left (`training.checkpointing`).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable

import tensorflow as tf

from official.nlp.common.errors import InputError

# What TensorFlow raises for files shorter than the index says, for bytes that fail their checksum, and (a plain
# `OpError`, or `NotFoundError`) for a .data file that is not there.
READ_ERRORS = (IndexError, tf.errors.OpError)


class DamagedCheckpointError(InputError):
    """The files of a checkpoint are truncated or corrupt."""


def damage(prefix: str, error: BaseException) -> str | None:
    """What is wrong with `prefix`, in words, when `error` (raised reading it) means its files are damaged; else
    None (the error is something else: a bug, or a mismatch that has its own message)."""
    if isinstance(error, IndexError):
        if "Read less bytes than requested" not in str(error):
            return None
        return f"{prefix} is truncated: its .data file is shorter than its .index says"
    if isinstance(error, (tf.errors.DataLossError, tf.errors.OutOfRangeError)):
        first_line = (error.message or str(error)).strip().splitlines()[0] if str(error).strip() else ""
        return f"{prefix} is damaged ({first_line})"
    if isinstance(error, tf.errors.OpError):
        # "<prefix>.data-00000-of-00001; No such file or directory": the index is there, a data shard is not.
        missing = re.search(r"(\S*\.data-\d+-of-\d+)[;:]? No such file or directory", error.message or "")
        if missing:
            return f"{prefix} is incomplete: {missing.group(1)} is missing"
    return None


def error_for(prefix: str, error: BaseException) -> DamagedCheckpointError | None:
    """The user-facing error for `error` raised reading `prefix`, or None when it is not about damaged files."""
    what = damage(prefix, error)
    if what is None:
        return None
    return DamagedCheckpointError(
        f"{what}; it was not copied or written completely. Copy the checkpoint again (all of its .index and "
        ".data-* files), or use another one"
    )


def names_damage(fn: Callable) -> Callable:
    """Decorates a function with a `prefix` argument that reads that checkpoint: damaged files raise
    `DamagedCheckpointError` naming it instead of TensorFlow's message without a file name."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except READ_ERRORS as e:
            prefix = signature.bind(*args, **kwargs).arguments["prefix"]
            damaged = error_for(prefix, e)
            if damaged is None:
                raise
            raise damaged from None

    return wrapper
