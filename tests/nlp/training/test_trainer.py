"""The generic training loop, on a tiny classifier (the shape of a fine-tuning task)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.common import cli
from official.nlp.training import distribution
from official.nlp.training.objectives import SparseCategoricalObjective
from official.nlp.training.trainer import Trainer, TrainerConfig, TrainingDivergedError
from tests.conftest import REPO_ROOT
from tests.nlp.training import tiny


def _weights_equal(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.fixture(scope="module")
def distributed_results(tmp_path_factory):
    """One child process with two logical CPU devices runs every strategy/accumulation variant."""
    out = tmp_path_factory.mktemp("distributed")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "tests.nlp.training.tiny", str(out)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULTS ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[0][len("RESULTS ") :])


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["mirrored", "accumulate4", "mirrored_accumulate2", "mirrored_distributed_dataset"])
def test_same_global_batch_gives_the_same_training(distributed_results, variant):
    reference = distributed_results["one_device"]
    other = distributed_results[variant]
    if variant.startswith("mirrored"):
        assert other["replicas"] == 2
    # Same global batches, losses normalized over the global batch: only float summation order differs.
    np.testing.assert_allclose(other["losses"], reference["losses"], rtol=1e-5)
    for a, b in zip(other["weights"], reference["weights"]):
        np.testing.assert_allclose(a, b, atol=1e-5)
    # The model did learn something, so the comparison is not between two idle runs.
    assert reference["losses"][-1] < reference["losses"][0] - 0.1


@pytest.mark.slow
def test_replicas_draw_their_own_dropout_masks(distributed_results):
    result = distributed_results["mirrored_dropout"]
    # Same input on both replicas, training=True: different masks, after training and after a resume (a restore
    # writes replica 0's state into every replica, so the streams must be split again).
    assert result["full_replica_max_diff"] > 0.1
    assert result["resumed_replica_max_diff"] > 0.1
    assert result["full_calls_max_diff"] > 0.1 and result["resumed_calls_max_diff"] > 0.1
    # Stopped at step 10 and resumed by fresh objects: the same weights, bit for bit, as the uninterrupted run.
    assert result["resumed_steps"] == [15, 20]
    assert result["resume_bitwise"]


def test_resume_continues_bitwise(tmp_path):
    strategy = distribution.get_distribution_strategy("one_device")
    full, full_model, _ = tiny.train(strategy, str(tmp_path / "full"), num_train_steps=20, dropout=0.2)
    first, _, _ = tiny.train(strategy, str(tmp_path / "split"), num_train_steps=20, dropout=0.2, stop_at_step=10)
    assert first.step == 10 and [h["loss"] for h in first.history] == [h["loss"] for h in full.history[:2]]
    # A fresh process would build fresh objects; so do we. Same model_dir: resumes at step 10 (optimizer, input
    # position and dropout RNG restored) and must land on the same weights as the uninterrupted run.
    resumed, resumed_model, optimizer = tiny.train(strategy, str(tmp_path / "split"), num_train_steps=20, dropout=0.2)
    assert resumed.step == 20 and [h["step"] for h in resumed.history] == [15, 20]
    assert int(optimizer.iterations.numpy()) == 20
    assert _weights_equal(full_model.get_weights(), resumed_model.get_weights())
    assert resumed.history[-1]["loss"] == full.history[-1]["loss"]


def test_calls_with_the_same_input_continue_without_a_new_trace(tmp_path):
    # Fine-tuning trains epoch by epoch, one call each; the second call reuses the first one's iterator and traced
    # loop, and the two calls land on the uninterrupted run's weights, bit for bit, dropout on.
    from official.nlp.training.objectives import SparseCategoricalObjective
    from official.nlp.training.trainer import Trainer, TrainerConfig

    strategy = distribution.get_distribution_strategy("one_device")
    _, full_model, _ = tiny.train(strategy, str(tmp_path / "full"), num_train_steps=20, dropout=0.2)
    model, optimizer = tiny.build(strategy, num_train_steps=20, dropout=0.2)
    trainer = Trainer(
        model,
        optimizer,
        SparseCategoricalObjective(label_key="label"),
        strategy,
        TrainerConfig(
            model_dir=str(tmp_path / "epochs"), num_train_steps=20, steps_per_loop=5, save_checkpoints_steps=10
        ),
        global_batch_size=tiny.GLOBAL_BATCH,
    )

    def dataset_fn(ctx):
        return tiny.make_dataset(ctx.get_per_replica_batch_size(tiny.GLOBAL_BATCH))

    first = trainer.train(dataset_fn, stop_at_step=10)
    loop = trainer._session.loop
    second = trainer.train(dataset_fn)
    assert (first.step, second.step) == (10, 20) and [h["step"] for h in second.history] == [15, 20]
    assert trainer._session.loop is loop and loop.experimental_get_tracing_count() == 1
    assert _weights_equal(full_model.get_weights(), model.get_weights())
    # Another input function starts over from model_dir: nothing left to train there.
    assert trainer.train(lambda ctx: dataset_fn(ctx)).history == []


def test_checkpoints_summaries_and_cleanup(tmp_path):
    model_dir = tmp_path / "run"
    model_dir.mkdir()
    # A checkpoint file in a folder without a commit record is not provably this library's, so it is kept; the
    # `_temp` staging folder is TensorFlow's own and goes (tests/nlp/training/test_checkpoint_leftovers.py).
    (model_dir / "ckpt-7.index").write_bytes(b"partial")
    (model_dir / "ckpt-7_temp").mkdir()
    strategy = distribution.get_distribution_strategy("one_device")
    result, _, _ = tiny.train(strategy, str(model_dir), num_train_steps=20)
    names = sorted(os.listdir(model_dir))
    assert "ckpt-7.index" in names and "ckpt-7_temp" not in names  # TensorFlow's own staging name goes
    assert tf.train.latest_checkpoint(str(model_dir)).endswith("ckpt-20")
    assert {"ckpt-10.index", "ckpt-20.index"} <= set(names)
    assert sorted(os.listdir(model_dir / "input_state" / "worker-0")) == sorted(
        ["checkpoint", "ckpt-10.index", "ckpt-10.data-00000-of-00001", "ckpt-20.index", "ckpt-20.data-00000-of-00001"]
    )
    tags = set()
    for event_file in (model_dir / "summaries").iterdir():
        for event in tf.compat.v1.train.summary_iterator(str(event_file)):
            tags.update(value.tag for value in event.summary.value)
    assert {"loss", "accuracy", "learning_rate", "steps_per_second", "examples_per_second"} <= tags
    assert set(result.metrics) >= {"loss", "accuracy", "learning_rate", "steps_per_second", "examples_per_second"}


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, capsys):
    strategy = distribution.get_distribution_strategy("one_device")
    # Inputs turn NaN from the 13th batch: the loop of steps 11-15 sees a NaN loss; ckpt-10 is the last good one.
    with pytest.raises(TrainingDivergedError, match=r"loss is nan in steps 11-15.*ckpt-10.*is kept") as diverged:
        tiny.train(strategy, str(tmp_path), num_train_steps=20, dataset_kwargs={"nan_from_batch": 12})
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-10")
    assert "lower --learning_rate" in str(diverged.value)
    assert f"--init_checkpoint={tmp_path / 'ckpt-10'}" in str(diverged.value)

    # The user's to fix (the rate, clipping, precision): a script ends with one line and exit 2, no traceback.
    def main(argv):
        raise diverged.value

    with pytest.raises(SystemExit) as exited:
        cli._guarded(main, "run_pretraining")(["run_pretraining"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"run_pretraining: {diverged.value}"
    reader = tf.train.load_checkpoint(str(tmp_path / "ckpt-10"))
    for name in reader.get_variable_to_shape_map():
        value = reader.get_tensor(name)
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.isfinite(value).all(), name


def test_float16_skips_and_counts_nonfinite_steps(tmp_path):
    strategy = distribution.get_distribution_strategy("one_device")
    # A loss scale of 2**28 overflows float16 gradients: those steps are skipped while the scale halves.
    result, model, optimizer = tiny.train(
        strategy, str(tmp_path), num_train_steps=20, mixed_precision="float16", initial_loss_scale=2.0**28
    )
    skipped = result.metrics["nonfinite_steps"]
    assert 1 <= skipped < 20
    assert int(optimizer.iterations.numpy()) == 20 - skipped  # skipped steps do not move the optimizer
    assert result.metrics["loss_scale"] < 2.0**28
    assert all(np.isfinite(w).all() for w in model.get_weights())
    assert np.isfinite(result.metrics["loss"])


@pytest.mark.parametrize("mixed_precision", ["bfloat16", "float16"])
def test_mixed_precision_trains(tmp_path, mixed_precision):
    strategy = distribution.get_distribution_strategy("one_device")
    result, model, _ = tiny.train(strategy, str(tmp_path), num_train_steps=20, mixed_precision=mixed_precision)
    losses = [h["loss"] for h in result.history]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]
    assert all(w.dtype == np.float32 for w in model.get_weights())  # variables stay float32


def test_configuration_errors(tmp_path):
    strategy = distribution.get_distribution_strategy("one_device")
    model, optimizer = tiny.build(tf.distribute.get_strategy())
    with pytest.raises(ValueError, match="inside `strategy.scope\\(\\)`"):
        Trainer(
            model,
            optimizer,
            SparseCategoricalObjective("label"),
            strategy,
            TrainerConfig(model_dir=str(tmp_path), num_train_steps=1),
            global_batch_size=16,
        )
    with pytest.raises(ValueError, match=r"per-replica batch \(16\) must divide by gradient_accumulation_steps=3"):
        tiny.train(strategy, str(tmp_path), accumulation=3)


def test_a_jobs_loop_flags_are_the_trainers_settings():
    """Pretraining and fine-tuning read their loop flags into the loop's settings through one function."""
    from official.nlp.training.config import TrainingConfig

    job = TrainingConfig(
        steps_per_loop=7,
        save_checkpoints_steps=9,
        keep_checkpoint_max=2,
        gradient_accumulation_steps=4,
        jit_compile=True,
    )
    loop = TrainerConfig.from_training_config(job, model_dir="/tmp/x", num_train_steps=30, checkpoint_input=False)
    assert loop == TrainerConfig(
        model_dir="/tmp/x",
        num_train_steps=30,
        steps_per_loop=7,
        save_checkpoints_steps=9,
        max_checkpoints_to_keep=2,
        gradient_accumulation_steps=4,
        jit_compile=True,
        checkpoint_input=False,
    )
