"""Work units run on worker processes, their results taken in unit order: how the data jobs use every core.

A data job (`create_pretraining_data`, `prepare_corpus`) cuts its input into independent units, runs each on a worker
and writes the results in unit order, so that its output does not depend on the number of workers. `ordered_results`
keeps at most a few units in flight per worker (the results waiting to be written stay bounded, whatever the corpus
size) and runs everything in this process when there is one worker.

Workers are spawned, never forked: the parent may hold TensorFlow or other threads.

    >>> with ordered_results(len, [("ab",), ("c",)], num_workers=1) as results:   # doctest: +SKIP
    ...     list(results)
    [2, 1]
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable, Iterable, Iterator

from official.nlp.common.processes import interruption

IN_FLIGHT_PER_WORKER = 2  # one unit computing, one waiting, per worker: enough to keep every core busy


@contextlib.contextmanager
def ordered_results(
    function: Callable,
    tasks: Iterable[tuple],
    *,
    num_workers: int,
    initializer: Callable | None = None,
    initargs: tuple = (),
) -> Iterator[Iterator]:
    """An iterator of ``function(*task)`` for each task, in task order; the pool ends with the block.

    `function`, `initializer` and the tasks must be picklable (module-level functions). An exception in a worker is
    raised again here, at its task's turn.
    """
    if num_workers <= 1:
        if initializer is not None:
            initializer(*initargs)
        yield (function(*task) for task in tasks)
        return
    with interruption.children_ignore_ctrl_c():  # a Ctrl-C is the parent's to report, once
        pool = multiprocessing.get_context("spawn").Pool(num_workers, initializer=initializer, initargs=initargs)
    try:
        yield _windowed(pool, function, tasks, IN_FLIGHT_PER_WORKER * num_workers)
    finally:
        pool.terminate()
        pool.join()


def _windowed(pool, function: Callable, tasks: Iterable[tuple], window: int) -> Iterator:
    """`pool.apply_async` over tasks in order, at most ``window`` in flight (bounds buffered results)."""
    in_flight = []
    it = iter(tasks)
    for task in it:
        in_flight.append(pool.apply_async(function, task))
        if len(in_flight) >= window:
            break
    for task in it:
        yield in_flight.pop(0).get()
        in_flight.append(pool.apply_async(function, task))
    while in_flight:
        yield in_flight.pop(0).get()
