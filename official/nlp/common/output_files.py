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

**Object stores.** A bucket renames one object by copying it whole and deleting the source, so a file's commit
above holds there too: its final name appears complete or not at all. A *folder* has no atomic rename there
(object by object, and a reader can see half of it). So an artifact made of several files counts only once its
marker is written, and the marker is written last (`commit_folder`): an export's `saved_model.pb`, a model
directory's `checkpoint`, a feature cache's key file, a record shard's final name after its statistics. A job
killed between two writes leaves parts without a marker, which every reader takes as absent.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from typing import IO

from official.nlp.common import input_files
from official.nlp.common.errors import InputError, OutputExistsError
from official.nlp.common.full_disk import FULL_DISK_ERRNOS, full_disk_reason, naming_full_disk
from official.nlp.common.input_files import is_remote as _is_remote
from official.nlp.common.input_files import user_path
from official.nlp.common.processes import owners


def _gfile():
    return input_files.gfile()  # looked up at each call, so that a test can put a fake store behind it


def _clear_for_writing(path: str) -> None:
    """Deletes an earlier `path` on ``ram://``, whose files opened for writing keep their old bytes and append
    (a bucket's object write replaces the object, and so does local `open(..., "w")`)."""
    if input_files.is_process_local(path) and input_files.exists(path):
        import tensorflow as tf  # the real filesystem, not a test's stand-in: this is ram://'s own quirk

        tf.io.gfile.remove(path)


_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


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
    if folder and kind == "a regular file":
        raise InputError(
            f"{where} is a regular file, not a folder: a file is in the way where a folder is needed; remove it or "
            "choose another path"
        )
    raise InputError(
        f"{where} is {kind}, not {wanted}: writing the output would replace it. Name a new "
        f"{'folder' if folder else 'file'} or {wanted} to overwrite."
    )


def temporary_name(path: str) -> str:
    """The name `path` is written under until it is complete: in the same folder, so that the rename stays on one
    filesystem, and tagged with this process and host (`owners`), so that two jobs writing one output never share
    it and a later job can tell a dead job's leftover from a live job's file."""
    return owners.tagged(path, "tmp")


def remove_leftovers(paths) -> None:
    """Deletes the temporary files of `paths` that a killed job left (one listing per folder): only those whose
    writer is proven gone (`owners.Leftover.stale`); another live job's are left alone. On a bucket a leftover
    ``train.tfrecord-00000-of-00002.tmp-123-host`` would match a glob of the records; on a disk it takes space."""
    for leftover in owners.leftovers([os.fspath(p) for p in paths], "tmp"):
        if leftover.stale:
            with contextlib.suppress(OSError, InputError):  # another job removed it first
                (rmtree if input_files.isdir(leftover.path) else remove)(leftover.path)


def commit(tmp: str, path: str, *, name: str | None = None) -> None:
    """Renames the complete file `tmp` to `path`, replacing an earlier regular file (and nothing else)."""
    check_target(path, name=name)
    with user_path(path):
        if _is_remote(path):
            # One object: a store's rename copies it whole and deletes the source, so the final name appears
            # complete or not at all (a folder's rename is not atomic there; see `commit_folder`).
            _gfile().rename(tmp, path, overwrite=True)
        else:
            os.replace(tmp, path)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        if _is_remote(path):
            if input_files.exists(path):
                _gfile().remove(path)
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
    remove_leftovers([path])
    tmp = temporary_name(path)
    try:
        with user_path(path):
            if _is_remote(path):
                _clear_for_writing(tmp)
                f = _Writer(_gfile().GFile(tmp, mode))
            else:
                f = open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""}))
        with naming_full_disk(path), f:
            yield f
        commit(tmp, path, name=name)
    except BaseException:
        _remove(tmp)
        raise


class _Writer:
    """A `tf.io.gfile.GFile` opened for writing, with what Python's files have and it lacks (`writelines`)."""

    def __init__(self, f):
        self._f = f

    def write(self, data) -> int:
        self._f.write(data)
        return len(data)

    def writelines(self, lines) -> None:
        for line in lines:
            self._f.write(line)

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.__exit__(*exc)


def open_for_writing(path: str, mode: str = "wb") -> IO:
    """Opens `path` for writing as it is (no temporary name: for a temporary file that `commit` then renames)."""
    path = os.fspath(path)
    with user_path(path):
        if _is_remote(path):
            _clear_for_writing(path)
            return _Writer(_gfile().GFile(path, mode))
        return open(path, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""}))


def check_writable(path: str, *, name: str | None = None) -> None:
    """Refuses, before a long job, an output file `path` that could not be written: something other than a file
    in its place, a parent that is a file, no permission. Creates its folder and an empty temporary file, which it
    deletes again (a full disk shows only once the bytes are written)."""
    path = os.fspath(path)
    check_target(path, name=name)
    makedirs_for(path)
    probe = temporary_name(path)
    with user_path(path):
        open_for_writing(probe).close()
    remove(probe)


def write_text(path: str, text: str, *, name: str | None = None) -> None:
    """Writes `text` (UTF-8) to `path` through `write_atomically`."""
    with write_atomically(path, "w", name=name) as f:
        f.write(text)


def write_bytes(path: str, data: bytes, *, name: str | None = None) -> None:
    with write_atomically(path, "wb", name=name) as f:
        f.write(data)


def makedirs(path: str, *, name: str | None = None) -> None:
    """Creates folder `path` (and its parents), refusing a file or device in its place with one line."""
    path = os.fspath(path)
    check_target(path, folder=True, name=name)
    with user_path(path):
        if _is_remote(path):
            _gfile().makedirs(path)
        else:
            os.makedirs(path, exist_ok=True)


def makedirs_for(path: str) -> None:
    """Creates the folder that will hold file `path`."""
    folder = os.path.dirname(os.fspath(path))
    if folder:
        makedirs(folder)


def remove(path: str) -> None:
    """Deletes file `path` if it is there."""
    path = os.fspath(path)
    with user_path(path):
        if _is_remote(path):
            if input_files.exists(path):
                _gfile().remove(path)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


def rmtree(path: str) -> None:
    """Deletes folder `path` and everything in it, if it is there."""
    path = os.fspath(path)
    with user_path(path):
        if _is_remote(path):
            if input_files.exists(path):
                _gfile().rmtree(path)
        else:
            import shutil

            shutil.rmtree(path, ignore_errors=True)


def copy(source: str, target: str) -> None:
    """Copies file `source` to `target` (either may be on any filesystem), replacing an earlier `target`. A full disk
    names `target`, the file being written (Python's copy names the source)."""
    try:
        with user_path(source):
            if not (_is_remote(source) or _is_remote(target)):
                import shutil

                if os.path.exists(target) and os.path.samefile(source, target):
                    return
                shutil.copyfile(source, target)
            else:
                _clear_for_writing(target)
                _gfile().copy(source, target, overwrite=True)
    except Exception as e:
        reason = full_disk_reason(e)
        if reason is None:
            raise
        code = e.errno if isinstance(e, OSError) and e.errno in FULL_DISK_ERRNOS else errno.ENOSPC
        raise OSError(code, reason, os.fspath(target)) from None


def files_under(folder: str) -> list[str]:
    """The files under `folder`, as paths relative to it."""
    found = []
    if _is_remote(folder):
        for directory, _, names in _gfile().walk(folder):
            found += [os.path.relpath(os.path.join(directory, n), folder) for n in names]
    else:
        for directory, _, names in os.walk(folder):
            found += [os.path.relpath(os.path.join(directory, n), folder) for n in names]
    return sorted(found)


def commit_folder(
    staging: str, target: str, *, marker: str, replace: bool = False, identity: str | None = None
) -> None:
    """Puts the complete folder `staging` in place as `target`, with `marker` last.

    Readers take `target` as complete once its file `marker` is there (TF Serving's `saved_model.pb`, a model
    directory's `checkpoint`). `target` must be new or empty, and a job that finds files there at the commit is
    refused (`OutputExistsError`): another job wrote it meanwhile. With `replace`, an earlier `target` is replaced
    instead; only a caller that has proved the earlier folder its own passes it (see `output_folders`), and
    `identity` names the file that proves it.

    On local disk a folder's rename is atomic, and that is what this does; onto a folder that holds files it
    fails, so two jobs cannot both put a new folder in place. A store has no atomic rename of a folder (it copies
    and deletes object by object, and a reader can see half of it), so there the files are copied one by one with
    the marker after all the others, and an earlier `target` loses its marker before anything else: a job killed
    on the way leaves a `target` without its marker, which counts as absent. Its `identity` file is deleted last
    and copied first, so that such a leftover still says whose it is. `staging` may be on another filesystem (a
    local temporary folder for an export into a bucket); it is deleted.
    """
    staging, target = os.fspath(staging), os.fspath(target)
    names = files_under(staging)
    if marker not in names:
        raise ValueError(f"{staging} has no {marker}")
    if not replace and input_files.isdir(target) and files_under(target):
        raise _written_meanwhile(target)
    if not (_is_remote(staging) or _is_remote(target)):
        check_target(target, folder=True)
        if replace:
            rmtree(target)
        try:
            with user_path(target):
                os.replace(staging, target)
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise _written_meanwhile(target) from None
            raise
        return
    if replace and input_files.isdir(target):
        remove(os.path.join(target, marker))  # first: the earlier folder stops counting before it changes
        for relative in files_under(target):
            if relative != identity:
                remove(os.path.join(target, relative))
    for relative in sorted(names, key=lambda n: (n != identity, n == marker)):  # the identity first, the marker last
        destination = os.path.join(target, relative)
        makedirs(os.path.dirname(destination))
        copy(os.path.join(staging, relative), destination)
    rmtree(staging)


def _written_meanwhile(target: str) -> OutputExistsError:
    return OutputExistsError(
        f"{target} holds files that another job wrote while this one ran; nothing of this job was put there. "
        "Choose another output folder"
    )
