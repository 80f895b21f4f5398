"""What a Ctrl-C (SIGINT) leaves behind and how to go on, said in one line instead of a traceback.

A job marks the stretch of work it is in with `resumable`, whose note says what an interruption there leaves
(``interrupted at step 120; the same command resumes from ckpt-100``). A `KeyboardInterrupt` raised inside carries
the note of the innermost stretch, the most precise one (`note_of`); `cli.run` prints it as
``<script>: <note>`` and exits with status 130 (128 + SIGINT, as a shell reports a Ctrl-C). Outside any stretch
the note is `DEFAULT_NOTE`, true of every job of the library: an output gets its final name only once it is whole.

    with interruption.resumable(lambda: f"interrupted after {done} of {total} shards; the same command ..."):
        ...
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator

DEFAULT_NOTE = "interrupted; nothing half-written was kept, and the same command starts over"

_ATTRIBUTE = "bert_resume_note"


@contextlib.contextmanager
def resumable(note: str | Callable[[], str]) -> Iterator[None]:
    """Within the block, a Ctrl-C is reported with `note` (or what `note()` returns at that moment)."""
    try:
        yield
    except KeyboardInterrupt as e:
        if not hasattr(e, _ATTRIBUTE):  # an inner stretch already said it more precisely
            try:
                setattr(e, _ATTRIBUTE, note() if callable(note) else note)
            except Exception:  # a note that cannot be made must not hide the interruption
                pass
        raise


def note_of(e: KeyboardInterrupt) -> str:
    """The note of the innermost `resumable` stretch `e` went through, else `DEFAULT_NOTE`."""
    return getattr(e, _ATTRIBUTE, None) or DEFAULT_NOTE


@contextlib.contextmanager
def children_ignore_ctrl_c() -> Iterator[None]:
    """Processes started inside (a pool's workers) ignore SIGINT from their start on (a spawned process keeps an
    ignored signal ignored): a Ctrl-C reaches the whole process group, and only the main process should report it
    and end them, instead of a traceback from every worker."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may change signal handlers
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


REDELIVERY_SECONDS = 0.05


class _Redelivery:
    """The state of `no_ctrl_c_lost`: whether the last KeyboardInterrupt raised was swallowed, and the timer that
    delivers it again."""

    def __init__(self, previous_hook: Callable):
        self.previous_hook = previous_hook
        self.swallowed = False
        self.timers: list[threading.Timer] = []

    def on_sigint(self, signum, frame) -> None:
        self.swallowed = False  # raised; `unraisable` says so if it is swallowed again
        raise KeyboardInterrupt

    def unraisable(self, unraisable) -> None:
        if unraisable.exc_type is None or not issubclass(unraisable.exc_type, KeyboardInterrupt):
            self.previous_hook(unraisable)
            return
        # Not "Exception ignored in ...": a Ctrl-C is not ignored. The finalizer it landed in ends first; then a
        # SIGINT of our own to the main thread raises it again: its handler runs there at the next instruction, and a
        # blocking call it waits in (a sleep, a wait for a worker) is cut short by the signal, as by a Ctrl-C.
        # (`_thread.interrupt_main` only set the handler's flag: a job waiting for minutes heard it minutes later.)
        self.swallowed = True
        timer = threading.Timer(REDELIVERY_SECONDS, _sigint_to_main_thread)
        timer.daemon = True
        try:
            timer.start()
        except RuntimeError:  # no new thread (the interpreter is ending): the end of the block raises it
            return
        self.timers.append(timer)


def _sigint_to_main_thread() -> None:
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


@contextlib.contextmanager
def no_ctrl_c_lost() -> Iterator[None]:
    """Within the block, a Ctrl-C that Python swallows (it landed in a finalizer, see the module docstring) is
    delivered again `REDELIVERY_SECONDS` later, and again until it is raised where the job runs; one still swallowed
    when the block ends is raised there. Main thread only (elsewhere the block changes nothing): SIGINT's handler
    and `sys.unraisablehook` are the process's, and are put back at the end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state = _Redelivery(sys.unraisablehook)
    previous_handler = signal.signal(signal.SIGINT, state.on_sigint)
    sys.unraisablehook = state.unraisable
    try:
        try:
            yield
        finally:
            for timer in state.timers:  # a timer's SIGINT, if it fired, is raised here at the latest
                timer.cancel()
                timer.join()
            if state.swallowed:
                raise KeyboardInterrupt
    finally:
        sys.unraisablehook = state.previous_hook
        signal.signal(signal.SIGINT, previous_handler)
