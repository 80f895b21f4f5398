"""How every script in run_scripts/ starts and ends: quiet TensorFlow start-up, and user errors as one clean line.

Import this module before anything that imports TensorFlow (the first `official` import of a script), and end
the script with `run`:

    from official.nlp.common import cli   # first: keeps TensorFlow's C++ start-up noise off the screen
    ...
    if __name__ == "__main__":
        cli.run(main)

**Errors.** `InputError` (see `errors.py`) is printed as ``<script>: <message>`` on stderr with exit status 2, and
no traceback: tracebacks are for bugs, which still get theirs. An `OSError` about a path the user gave (no
permission, a parent that is a file, a full disk) is reported the same way, naming the path, and so is a
TensorFlow error about a path it reads or writes itself (`_describe_tf_error`). So are the command line's own
mistakes, before `main` runs (`_parse_flags`): what absl cannot parse (an unknown flag, a bad value, a flagfile line
``--flag value``) and any positional argument, which no script takes. A Ctrl-C is one line too, saying what was
interrupted and how to go on (`interruption`), with exit status 130, also while the script still imports TensorFlow.

**TensorFlow's start-up noise** is kept off the screen on import (`quiet_start.quiet_tensorflow`: see there);
``--verbosity=1`` shows it.
"""

from __future__ import annotations

import atexit
import errno
import os
import re
import signal
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

from absl import app, flags

from official.nlp.common import quiet_start, text_files
from official.nlp.common.errors import InputError
from official.nlp.common.processes import interruption

USER_ERROR_EXIT = 2
INTERRUPTED_EXIT = 130  # 128 + SIGINT: what a shell reports for a Ctrl-C


def _describe_os_error(e: OSError) -> str | None:
    """A user-facing line for an OSError about a path, or None when it names no path (then it is a bug)."""
    if not e.filename:
        return None
    path = e.filename
    reason = e.strerror or str(e)
    fix = {
        errno.EACCES: "choose a path you can write to, or change its permissions",
        errno.EPERM: "choose a path you can write to, or change its permissions",
        errno.EROFS: "choose a path on a writable file system",
        errno.ENOSPC: "free some space or choose another disk",
        errno.EEXIST: "a file is in the way where a folder is needed: remove it or choose another path",
        errno.ENOTDIR: "a part of the path is a file, not a folder: choose another path",
        errno.EISDIR: "the path is a folder; name a file",
        errno.ENOENT: "check the path",
    }.get(e.errno, "check the path")
    return f"{path}: {reason}; {fix}"


def _describe_tf_error(e: Exception) -> str | None:
    """A user-facing line for a TensorFlow filesystem error that names its path (a missing file or bucket, no
    permission, a full disk, a file where a folder is needed), or None: then it is a bug and keeps its traceback.
    Most user paths are checked by `input_files`/`output_files` first; this catches what TensorFlow itself writes
    (checkpoints, summaries, SavedModels) and reads."""
    if not type(e).__module__.startswith("tensorflow"):
        return None
    name = type(e).__name__
    message = (getattr(e, "message", "") or "").strip().splitlines()
    message = message[0] if message else ""
    if not ("/" in message or "://" in message):
        return None  # names no path: not something the user can find and fix
    if name == "ResourceExhaustedError" and ("space" in message.lower() or "quota" in message.lower()):
        return f"{message}; free some space or choose another disk"
    if name == "FailedPreconditionError" and "not a directory" in message:
        return f"{message}: a file is in the way where a folder is needed; remove it or choose another path"
    if name == "NotFoundError":
        return f"{message}; check the path (and, for gs://, that the bucket exists)"
    if name in ("PermissionDeniedError", "UnauthenticatedError"):
        if "://" in message:
            return f"{message}; check the credentials and the bucket's access"
        return f"{message}; choose a path you can write to, or change its permissions"
    return None


def _guarded(main: Callable, script: str) -> Callable:
    def wrapped(argv):
        quiet_start.one_line_per_event()
        try:
            with interruption.no_ctrl_c_lost():  # a Ctrl-C landing in a finalizer is not swallowed
                status = main(argv)
            if _is_the_program(main):  # not a harness running scripts in its own process (runpy.run_path)
                _end_now(status)
            return status
        except InputError as e:
            message = str(e)
        except OSError as e:
            message = _describe_os_error(e)
            if message is None:
                raise
        except Exception as e:
            message = _describe_tf_error(e)
            if message is None:
                raise
        except KeyboardInterrupt as e:  # Ctrl-C: what was left and how to go on, not a traceback
            print(f"{script}: {interruption.note_of(e)}", file=sys.stderr, flush=True)
            _exit_soon(main, INTERRUPTED_EXIT)
        print(f"{script}: {message}", file=sys.stderr, flush=True)
        _exit_soon(main, USER_ERROR_EXIT)

    return wrapped


def _exit_soon(main: Callable, status: int) -> NoReturn:
    """Exits with `status` after a one-line message. The job's frames have unwound by now, so what it cleans up on
    the way out (temporary names removed, claims released, the interrupted run's last checkpoint) is done: the
    same shortcut as a normal end (`_end_now`), which a resumed curve sitting waited 45-70 s for after its Ctrl-C."""
    if _is_the_program(main):
        _end_now(status)
    sys.exit(status)


def _is_the_program(main: Callable) -> bool:
    """Whether `main`'s file is the program this process runs (``python script.py`` or ``python -m``), rather
    than a script that a harness runs inside its own process, which must go on after it."""
    frame, outermost = sys._getframe(), None
    while frame is not None:
        if "runpy" not in frame.f_code.co_filename:  # `python -m` starts in runpy's frames
            outermost = frame
        frame = frame.f_back
    code = getattr(main, "__code__", None)
    return outermost is not None and code is not None and outermost.f_code.co_filename == code.co_filename


def _end_now(status: object) -> None:
    """Ends the process as soon as `main` has returned normally with `status` (None or an exit status), without
    Python's interpreter shutdown; returns, for the ordinary exit, when that is not safe.

    Why: the shutdown's last garbage collection frees what the job left in reference cycles, among them traced
    training loops holding `tf.data` iterators. Each such iterator waits for its autotuning thread
    (`RootDataset::Iterator::~Iterator`, seen with py-spy and gdb under `finalize_modules`), and one after another
    they kept reproduce_paper.py alive up to 12 minutes after it wrote its report (issue 40).

    Why nothing is lost: every file a job writes goes through the commit layer (`output_files`), which commits it
    before `main` returns, and the TensorBoard writers are flushed where they write. What Python's exit would still
    run first is run here: the `atexit` functions (logging's flush and close, the stderr filter's last lines,
    multiprocessing's cleanup), then stdout and stderr are flushed. Only the freeing of memory is skipped. A thread
    that is not a daemon would be joined by Python's exit: with one still running, this returns instead.
    """
    if status is not None and not isinstance(status, int):
        return  # absl prints a non-integer status: leave that to the ordinary exit
    if any(t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing more can reach it
            pass
    os._exit(status or 0)


def _flagfile_line(argv: list[str], text: str) -> str | None:
    """``<flagfile>:<line>`` of the first line `text` of a ``--flagfile`` named in `argv` (or in one of those)."""
    names = [a.split("=", 1)[1] for a in argv if a.startswith(("--flagfile=", "-flagfile="))]
    names += [b for a, b in zip(argv, argv[1:]) if a in ("--flagfile", "-flagfile")]
    seen = set()
    while names:
        name = os.path.expanduser(names.pop(0))
        if name in seen:
            continue
        seen.add(name)
        try:
            lines = text_files.read_text(name).splitlines()
        except (OSError, InputError):
            continue
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if line == text:
                return f"{name}:{number}"
            if line.startswith(("--flagfile=", "-flagfile=")):
                names.append(line.split("=", 1)[1])
    return None


def _describe_flag_error(e: Exception, argv: list[str]) -> str:
    """One line for a command line that absl cannot parse: what is wrong, where, and what to change."""
    if isinstance(e, flags.UnrecognizedFlagError) and len(str(e.flagvalue).split()) > 1:
        # `--init_checkpoint /path` on a flagfile line: absl reads each line as one argument (`flagvalue`), so the
        # flag's name swallows its value.
        text = str(e.flagvalue).strip()
        name, value = text.lstrip("-").split(None, 1)
        where = _flagfile_line(argv, text)
        return (
            f"{where + ': ' if where else ''}{text!r} is not a flag: a flag and its value are one argument (one "
            f"line of a flagfile), written --{name}={value}"
        )
    message = " ".join(str(e).replace("ERROR:: ", "").split())
    if isinstance(e, flags.UnrecognizedFlagError):
        suggested = re.search(r"Did you mean: (.*) \?", message)
        guess = f"; did you mean --{suggested.group(1).replace(', ', ' or --')}?" if suggested else ""
        return f"unknown flag --{e.flagname}{guess} (--helpshort lists this script's flags)"
    required = re.findall(r"Flag (--\w+) must have a value other than None", message)
    if required:  # absl's `mark_flag_as_required`
        return f"{', '.join(required)} {'is' if len(required) == 1 else 'are'} required (see --helpshort)"
    if isinstance(e, flags.CantOpenFlagFileError):
        return f"{message}; check the --flagfile path"
    return f"{message}; see --helpshort for the flags and their values"


def _boolean_flag(arg: str) -> str | None:
    """The name of the boolean flag that `arg` sets (``--do_train``, ``--nodo_train``), else None."""
    name = arg.lstrip("-")
    for candidate in (name, name[2:] if name.startswith("no") else None):
        if candidate and candidate in flags.FLAGS and flags.FLAGS[candidate].boolean:
            return candidate
    return None


def _describe_stray_arguments(stray: list[str], argv: list[str]) -> str:
    """One line for positional arguments, which no script takes. A value after a space behind a boolean flag
    (`--do_train True`) is the usual cause: a boolean flag takes no separate value."""
    first = stray[0]
    index = len(argv) - len(stray)
    before = argv[index - 1] if index > 1 else ""
    boolean = _boolean_flag(before) if before.startswith("-") and "=" not in before else None
    if boolean:
        return (
            f"unexpected argument {first!r} after {before}: a boolean flag takes its value with '=' "
            f"(--{boolean}={first}); every other argument must be a flag"
        )
    return f"unexpected argument {first!r}: this script takes flags only (--name=value); see --helpshort"


def _parse_flags(script: str) -> Callable[[list[str]], list[str]]:
    """absl's flag parsing, with its errors and stray arguments reported as one line and exit status 2, as every
    other user error (absl prints ``FATAL Flags parsing error`` with status 1, or a usage dump)."""

    def parse(argv: list[str]) -> list[str]:
        try:
            remaining = flags.FLAGS(argv)
        except flags.Error as e:
            _exit_with(script, _describe_flag_error(e, argv))
        if len(remaining) > 1:
            _exit_with(script, _describe_stray_arguments(remaining[1:], argv))
        return remaining

    return parse


def _exit_with(script: str, message: str) -> NoReturn:
    print(f"{script}: {message}", file=sys.stderr, flush=True)
    sys.exit(USER_ERROR_EXIT)


def run(main: Callable, *, script: str | None = None) -> None:
    """`absl.app.run(main)`, with `InputError` reported as one line (``script`` defaults to the file's name).

    A script takes flags only: a positional argument is refused before `main` runs, as are flags absl cannot
    parse, each as one line with exit status 2."""
    script = script or os.path.splitext(os.path.basename(sys.argv[0]))[0]
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # from now on `_guarded` says what was kept
    app.run(_guarded(main, script), flags_parser=_parse_flags(script))


def _interrupted_while_starting(signum, frame) -> None:
    script = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    print(f"{script}: interrupted while starting; nothing was written", file=sys.stderr, flush=True)
    sys.exit(INTERRUPTED_EXIT)


def _imported_by_main_script() -> bool:
    """Whether the module importing this one is the program's ``__main__`` (a script run as such), not a module a
    program imports (a script imported from Python, which keeps its own Ctrl-C)."""
    try:
        frame = sys._getframe(3)  # above this, `_quiet_ctrl_c_while_starting` and this module's own top level
    except ValueError:  # this module is the program itself: no script imported it
        return False
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame = frame.f_back
    return frame is not None and frame.f_globals.get("__name__") == "__main__"


def _quiet_ctrl_c_while_starting() -> None:
    """A Ctrl-C while a script imports TensorFlow (seconds) is one line too, not a traceback from inside the import.
    Scripts only (not a test runner, a notebook, a program that imports a script, or a worker, whose SIGINT is
    ignored), until `run` starts."""
    if (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        or threading.current_thread() is not threading.main_thread()
        or "pytest" in sys.modules
        or "IPython" in sys.modules
        or hasattr(sys, "ps1")
        or not _imported_by_main_script()
    ):
        return
    signal.signal(signal.SIGINT, _interrupted_while_starting)


quiet_start.quiet_tensorflow()
_quiet_ctrl_c_while_starting()
