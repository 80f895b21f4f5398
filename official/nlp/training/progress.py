"""Progress lines of the training loop between its per-loop lines: when to log one, the speed and the time left.

`Trainer` runs a loop of `steps_per_loop` steps as calls sized to take about `progress_seconds` each and asks
`Progress.maybe_log` after each call; a line goes out once `progress_seconds` have passed since the last one.
The clock is the trainer's (tests pass their own), so nothing here depends on real time.
"""

from __future__ import annotations

from collections.abc import Callable

from absl import logging


class Progress:
    """When to log a progress line between the loop's own lines, and the time left, from the speed since the
    last line (the first call of a run traces the loop, so its speed is not the run's)."""

    def __init__(self, clock: Callable[[], float], interval: float, total_steps: int, batch: int, step: int):
        self.clock, self.interval, self.total_steps, self.batch = clock, interval, total_steps, batch
        self.since, self.since_step = clock(), step
        self.rate: float | None = None  # steps per second

    def _measure(self, step: int) -> float:
        now = self.clock()
        if step > self.since_step and now > self.since:
            self.rate = (step - self.since_step) / (now - self.since)
        return now

    def time_left(self, step: int) -> str:
        if step >= self.total_steps or not self.rate:
            return ""
        return f", {duration((self.total_steps - step) / self.rate)} left"

    def maybe_log(self, step: int) -> None:
        if self.clock() - self.since < self.interval:
            return
        now = self._measure(step)
        logging.info(
            "step %d/%d | %.1f examples/s%s",
            step,
            self.total_steps,
            (self.rate or 0.0) * self.batch,
            self.time_left(step),
        )
        self.since, self.since_step = now, step

    def logged(self, step: int) -> None:
        """The loop logs its own line at `step` (with `time_left`): the speed is measured, the next interval starts."""
        self.since, self.since_step = self._measure(step), step


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
