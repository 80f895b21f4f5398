"""TensorFlow's start-up noise, kept off the screen of a script (`official.nlp.common.cli` calls `quiet_tensorflow` on
import, before anything imports TensorFlow).

On TF 2.21 each process prints about 9 lines from C++ before any of ours (`oneDNN custom operations are on`,
`Could not find cuda drivers`, `failed call to cuInit`, CPU instructions ...). `TF_CPP_MIN_LOG_LEVEL` alone does not
remove them: most are written by Abseil's C++ logging *before* `absl::InitializeLog()`, which writes every severity
to stderr whatever the level (measured; the level only drops the cuInit line). So, unless ``--verbosity`` (``-v``) is
1 or more, `quiet_tensorflow` sets ``TF_CPP_MIN_LOG_LEVEL=2`` (if the environment does not set it) and routes file
descriptor 2 through a filter that drops C++ INFO/WARNING log lines and the known harmless ERROR lines; everything
else, Python logging and tracebacks included, passes unchanged. ``--verbosity=1`` shows everything. Inside the
script, `one_line_per_event` keeps each of TensorFlow's Python log lines to one line.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import select
import sys
import threading

# C++ (Abseil/TSL) log lines: severity, date (0000 00:00 before absl::InitializeLog), time, thread, source.cc:line.
_CPP_LOG = re.compile(rb"^([IWEF])\d{4} [\d:.]+\s+\d+ [\w./+-]+\.(?:cc|cpp|c|h|hpp):\d+\] ")
_NOISE = (
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    b"To enable the following instructions:",  # second line of cpu_feature_guard's INFO
)
# ERROR lines that TensorFlow prints on a healthy machine (no GPU, oneDNN's int64 fallback, plugin registration).
_HARMLESS_ERRORS = (
    b"failed call to cuInit",
    b"oneDNN supports DT_",
    b"Unable to register cu",
    b"computation placer already registered",
    b"Attempting to register factory for plugin",
)


def _is_noise(line: bytes) -> bool:
    if line.startswith(_NOISE):
        return True
    m = _CPP_LOG.match(line)
    if not m:
        return False
    return m.group(1) in (b"I", b"W") or any(s in line for s in _HARMLESS_ERRORS)


def _verbosity(argv: list[str]) -> int:
    """The --verbosity / -v the command line asks for (absl's flag, read before absl parses it)."""
    for i, arg in enumerate(argv[1:], 1):
        for name in ("--verbosity", "-v"):
            value = None
            if arg.startswith(name + "="):
                value = arg[len(name) + 1 :]
            elif arg == name and i + 1 < len(argv):
                value = argv[i + 1]
            if value is not None:
                try:
                    return int(value)
                except ValueError:
                    return 0
    return 0


class _StderrFilter:
    """File descriptor 2 becomes a pipe; a thread copies every line that is not noise to the real stderr.

    At the fd level because the noise comes from C++, which never passes through `sys.stderr`. A line without a
    newline (a prompt, a progress bar's \\r) is passed on after 50 ms of quiet, so nothing waits for a newline.
    """

    def __init__(self):
        sys.stderr.flush()
        self.real = os.dup(2)
        read, write = os.pipe()
        os.dup2(write, 2)
        os.close(write)
        self.read = read
        # close() cannot wait for the pipe's end: a process that outlives this one's atexit (multiprocessing's
        # resource tracker, started by any spawned pool) holds the write end, and the exit then stalled for the
        # whole join timeout. It wakes the thread through this second pipe instead.
        self.wake_read, self.wake_write = os.pipe()
        self.thread = threading.Thread(target=self._pump, name="stderr-filter", daemon=True)
        self.thread.start()
        atexit.register(self.close)

    def _write(self, data: bytes) -> None:
        try:
            while data:
                data = data[os.write(self.real, data) :]
        except OSError:  # the reader went away (a closed pipe): nothing left to show it to
            pass

    def _pump(self) -> None:
        pending = b""
        closing = False
        while True:
            if closing:  # pass on what is already in the pipe, then stop
                ready, _, _ = select.select([self.read], [], [], 0)
                if not ready:
                    break
            else:
                ready, _, _ = select.select([self.read, self.wake_read], [], [], 0.05 if pending else None)
                if self.wake_read in ready:
                    closing = True
                    continue
                if not ready:  # quiet with a partial line: show it
                    self._write(pending)
                    pending = b""
                    continue
            chunk = os.read(self.read, 65536)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            self._write(b"".join(line + b"\n" for line in lines if not _is_noise(line)))
        if pending and not _is_noise(pending):
            self._write(pending)
        os.close(self.read)

    def close(self) -> None:
        """Puts the real stderr back and lets the thread pass on what is left in the pipe."""
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(self.real, 2)  # closes this process's write end: what it wrote is all in the pipe now
        os.write(self.wake_write, b"x")
        self.thread.join(timeout=2)


_filter: _StderrFilter | None = None


def quiet_tensorflow(argv: list[str] | None = None) -> None:
    """Keeps TensorFlow's C++ start-up noise off stderr unless ``--verbosity`` asks (see the module docstring).

    Called on import; must run before TensorFlow is imported to catch its first lines. Idempotent.
    """
    global _filter
    if _verbosity(sys.argv if argv is None else argv) >= 1 or _filter is not None:
        return
    if argv is None and ("pytest" in sys.modules or "IPython" in sys.modules or hasattr(sys, "ps1")):
        return  # not a script: a test runner or a notebook owns stderr
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return  # a worker (spawned, so it re-imports the script): its stderr is already the parent's filter
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        _filter = _StderrFilter()
    except OSError:  # no usable fd 2 (a daemon): nothing to keep quiet
        pass


class _DropTensorFlowChatter(logging.Filter):
    """TensorFlow's Python INFO lines that report internals, not events of the job."""

    PREFIXES = ("Sharding callback duration",)

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno <= logging.INFO and str(record.msg).startswith(self.PREFIXES))


def one_line_per_event() -> None:
    """Inside `app.run`: TensorFlow's own stderr handler (added when it was imported before absl set up logging)
    printed each of its lines a second time (``INFO:tensorflow:Using MirroredStrategy`` and the absl line);
    absl's handler on the root logger shows them once."""
    tf_logger = logging.getLogger("tensorflow")
    for handler in list(tf_logger.handlers):
        if type(handler) is logging.StreamHandler:
            tf_logger.removeHandler(handler)
    if _filter is not None:
        for name in ("tensorflow", "absl"):  # TF logs through both
            logging.getLogger(name).addFilter(_DropTensorFlowChatter())
