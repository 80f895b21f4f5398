"""Progress between the loop's log lines, on the tiny classifier with an injected clock (no real time is read).

The simulated clock gives each training step 3 s, so a loop of 10 steps would sit silent for 30 s: the trainer cuts
it into calls of about `progress_seconds` (10 s) and logs the step, examples/s and the time left in between. How a
loop is cut must not change the training: the weights and the logged losses equal those of a run in one call.
"""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

from official.nlp.training import distribution
from official.nlp.training.objectives import SparseCategoricalObjective
from official.nlp.training.progress import duration
from official.nlp.training.trainer import Trainer, TrainerConfig
from tests.nlp.training import tiny

SECONDS_PER_STEP = 3.0


def _train(model_dir, clock_for):
    strategy = distribution.get_distribution_strategy("one_device")
    model, optimizer = tiny.build(strategy, num_train_steps=20, dropout=0.2)
    calls, trainers = [], []

    def clock():
        calls.append(None)
        return clock_for(trainers[0])

    trainer = Trainer(
        model,
        optimizer,
        SparseCategoricalObjective(label_key="label"),
        strategy,
        # The default steps_per_loop (100): only the checkpoints at 10 and 20 end a loop.
        TrainerConfig(model_dir=str(model_dir), num_train_steps=20, save_checkpoints_steps=10),
        global_batch_size=tiny.GLOBAL_BATCH,
        clock=clock,
    )
    trainers.append(trainer)
    result = trainer.train(lambda ctx: tiny.make_dataset(ctx.get_per_replica_batch_size(tiny.GLOBAL_BATCH)))
    return result, model, calls


def test_long_loops_log_progress_without_changing_the_training(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="absl"):
        timed, timed_model, _ = _train(tmp_path / "timed", lambda t: float(t.step.numpy()) * SECONDS_PER_STEP)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step ")]
    # Calls of 1 step (it traces), then 3 (= 10 s / 3 s): at step 4, 12 s have passed since the start.
    examples_per_second = tiny.GLOBAL_BATCH / SECONDS_PER_STEP
    assert f"step 4/20 | {examples_per_second:.1f} examples/s, {duration(16 * SECONDS_PER_STEP)} left" in lines
    loop_ends = [line for line in lines if re.match(r"step \d+/20: ", line)]
    assert [line.split(":")[0] for line in loop_ends] == ["step 10/20", "step 20/20"]
    assert loop_ends[0].endswith(f"examples/s, {duration(10 * SECONDS_PER_STEP)} left")
    assert loop_ends[1].endswith("examples/s")  # nothing left
    progress_steps = [int(m.group(1)) for line in lines if (m := re.match(r"step (\d+)/20 \| ", line))]
    assert progress_steps and all(0 < s < 20 and s % 10 for s in progress_steps)

    # A clock that never moves: each loop runs in as few calls as possible, one sync per call, not per step.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="absl"):
        whole, whole_model, clock_calls = _train(tmp_path / "whole", lambda t: 0.0)
    assert not [r for r in caplog.records if re.match(r"step \d+/20 \| ", r.getMessage())]
    assert len(clock_calls) < 20  # two reads per call of the loop: 3 calls for 20 steps
    assert [h["loss"] for h in timed.history] == [h["loss"] for h in whole.history]
    assert all(np.array_equal(a, b) for a, b in zip(timed_model.get_weights(), whole_model.get_weights()))


@pytest.mark.parametrize("seconds, text", [(7.4, "7s"), (65, "1m05s"), (3725, "1h02m")])
def test_duration(seconds, text):
    assert duration(seconds) == text
