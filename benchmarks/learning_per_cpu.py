r"""Held-out masked-LM loss per CPU-second of pretraining: recipes (batch size and learning rate) side by side, and
the issue-41 goal against today's recipe (issue 41, part 3).

Each run of `--runs` (`batch:learning_rate[:examples]`, the first is the reference) is an MLM + NSP pretraining of
the same model from the same seed on the same records, for its training examples (default `--examples`), with the
settings of
the paper rerun's pretraining (`PretrainingConfig`: AdamW with bias correction, 10% linear warmup then linear decay
over the run's own steps, float32). It is trained by our `Trainer` in `--evaluations` segments in this process; after
each segment the held-out masked-LM loss of the live model is measured on `--heldout_file` (inference mode; not
timed). The time of a run is the process CPU seconds (user + system, all threads: what the training costs, whatever
else runs on this shared machine; wall seconds move with the other jobs) of its training segments alone: building
the model and evaluating are left out of every run alike (tracing the step is in each run's first segment).

Printed, in the same run: each run's CPU seconds per 1,000 examples and its ratio to the reference, its held-out
loss at its end, its loss at equal CPU time (interpolated linearly in CPU seconds to the shortest
run's total), and the CPU seconds it needed to reach the reference's final held-out loss (interpolated; "—" when
it did not), as a fraction of the reference's total. A mid-run point of a longer schedule is a conservative stand-in
for a run stopped there (its rate has not decayed yet). Then our step beside transformers' `BertForPreTraining` at
the reference batch (`benchmarks.pretrain_contenders`), timed in interleaved rounds in this process.

    python -m benchmarks.learning_per_cpu --input_file='output/pilot/data/records/*' \
        --heldout_file='output/pilot/data/records-heldout/*' --vocab_file=output/pilot/data/vocab.txt \
        --runs=32:5e-4,32:2e-3:32000,128:4e-3:32000 --examples=64000
"""

from __future__ import annotations

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import dataclasses
import math
import os
import tempfile
import time

from absl import flags

from benchmarks import pretrain_contenders as contenders
from benchmarks import timing

flags.DEFINE_string("input_file", None, "Pretraining TFRecords (globs): a rerun's data/records/*.", required=True)
flags.DEFINE_string("vocab_file", None, "The records' vocabulary (its size is the model's).", required=True)
flags.DEFINE_string("size", "tiny", "Model size: a preset or L<layers>-H<hidden>-A<heads>.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the records.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence in the records.")
flags.DEFINE_string("heldout_file", None, "Held-out records (globs): a rerun's data/records-heldout/*.", required=True)
flags.DEFINE_list(
    "runs",
    ["32:5e-4", "32:2e-3:32000", "128:4e-3:32000"],
    "batch:learning_rate[:examples] of each run (examples: default --examples); the first is the reference.",
)
flags.DEFINE_integer(
    "examples", 64000, "Training examples of a run that does not give its own (the default budget's: 2,000 x 32)."
)
flags.DEFINE_integer("evaluations", 8, "Evenly spaced held-out evaluations per run (the last at its end).")
flags.DEFINE_float("warmup_share", 0.1, "Warmup steps as a share of each run's steps (the paper budgets').")
flags.DEFINE_bool("peer", True, "Time our step beside transformers' BertForPreTraining at the reference batch.")
FLAGS = flags.FLAGS

SEED = 12345  # the paper rerun's pretraining seed


@dataclasses.dataclass
class Point:
    examples: int
    cpu_seconds: float
    wall_seconds: float
    loss: float


def _parse_runs(texts: list[str]) -> list[tuple[int, float, int]]:
    """`(batch, learning rate, examples)` of each `batch:rate[:examples]`."""
    from official.nlp.common.errors import InputError

    runs = []
    for text in texts:
        parts = text.split(":")
        try:
            if len(parts) not in (2, 3):
                raise ValueError
            runs.append((int(parts[0]), float(parts[1]), int(parts[2]) if len(parts) == 3 else FLAGS.examples))
        except ValueError:
            raise InputError(f"--runs: {text!r} is not batch:learning_rate[:examples]; give e.g. 32:2e-3") from None
    return runs


def train_run(batch: int, learning_rate: float, examples: int, model_dir: str) -> list[Point]:
    """One run of `examples` examples at `batch` and `learning_rate`, its held-out loss after each segment."""
    import keras

    from official.nlp.paper import training_jobs
    from official.nlp.tasks.pretraining import (
        PretrainingConfig,
        PretrainingObjective,
        build_model_and_optimizer,
        make_data_loader,
        trainer_config,
    )
    from official.nlp.training import distribution
    from official.nlp.training.trainer import Trainer

    steps = max(1, examples // batch)
    count = max(1, min(FLAGS.evaluations, steps))
    points = sorted({max(1, round(steps * i / count)) for i in range(1, count + 1)})
    config = PretrainingConfig(
        input_file=FLAGS.input_file,
        model_dir=model_dir,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        train_batch_size=batch,
        num_train_steps=steps,
        num_warmup_steps=int(steps * FLAGS.warmup_share),
        learning_rate=learning_rate,
        adam_bias_correction=True,
        steps_per_loop=max(1, min(points[0], steps // 50 or 1)),
        save_checkpoints_steps=10**9,
        keep_checkpoint_max=1,
        seed=SEED,
    )
    bert_config = contenders.bert_config(FLAGS.size, FLAGS.vocab_file)
    strategy = distribution.get_distribution_strategy("one_device")
    keras.utils.set_random_seed(SEED)
    model, optimizer = build_model_and_optimizer(config, bert_config, strategy)
    loader = make_data_loader(config, bert_config)
    trainer = Trainer(
        model,
        optimizer,
        PretrainingObjective(),
        strategy,
        dataclasses.replace(trainer_config(config), write_summaries=False),
        global_batch_size=batch,
    )
    done, cpu, wall = [], 0.0, 0.0
    for point in points:
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        trainer.train(loader.load, stop_at_step=point)
        cpu += time.process_time() - start_cpu
        wall += time.perf_counter() - start_wall
        loss = training_jobs.mlm_loss(
            model,
            FLAGS.heldout_file,
            max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            vocab_size=bert_config.vocab_size,
        )
        done.append(Point(point * batch, cpu, wall, loss))
        print(
            f"  batch {batch} rate {learning_rate:g}: step {point}/{steps}, {cpu:.0f} CPU s, {wall:.0f} wall s, "
            f"held-out loss {loss:.3f} (perplexity {math.exp(loss):.0f})",
            flush=True,
        )
    return done


def at_cpu(points: list[Point], seconds: float) -> float | None:
    """The held-out loss interpolated linearly in CPU seconds (None outside the measured points)."""
    for a, b in zip(points, points[1:]):
        if a.cpu_seconds <= seconds <= b.cpu_seconds:
            return a.loss + (b.loss - a.loss) * (seconds - a.cpu_seconds) / max(b.cpu_seconds - a.cpu_seconds, 1e-9)
    if points and abs(seconds - points[-1].cpu_seconds) < 1e-6:
        return points[-1].loss
    return None


def cpu_to_reach(points: list[Point], loss: float) -> float | None:
    """CPU seconds at which the loss first falls to `loss` (interpolated linearly; None if it never does)."""
    for a, b in zip([None, *points], points):
        if b.loss <= loss:
            if a is None or a.loss == b.loss:
                return b.cpu_seconds
            return a.cpu_seconds + (b.cpu_seconds - a.cpu_seconds) * (a.loss - loss) / (a.loss - b.loss)
    return None


def main(_):
    runs = _parse_runs(FLAGS.runs)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{FLAGS.size}, {FLAGS.evaluations} evaluations per run, started {started}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, run in enumerate(runs):
            results[run] = train_run(*run, os.path.join(tmp, str(i)))
    reference = results[runs[0]]
    common = min(points[-1].cpu_seconds for points in results.values())
    ref_rate = reference[-1].cpu_seconds / reference[-1].examples
    ref_equal = at_cpu(reference, common)
    target = reference[-1].loss
    load = os.getloadavg()
    print(f"\n## held-out masked-LM loss per CPU-second, {FLAGS.size} (load average {load[0]:.1f})")
    print(f"$ {timing.command_line()}")
    print(
        f"equal CPU time: {common:.0f} s (the shortest run's training); target: the reference's final loss "
        f"{target:.3f} (perplexity {math.exp(target):.0f}) after {reference[-1].cpu_seconds:.0f} CPU s"
    )
    print(
        "batch  rate     examples  CPU s/1k ex  ratio  wall s  loss at its end (ppl)  loss@equal CPU (ratio)  "
        "CPU s to target (share)"
    )
    for run in runs:
        batch, rate, examples = run
        points = results[run]
        per_example = points[-1].cpu_seconds / points[-1].examples
        equal = at_cpu(points, common)
        equal_text = "—" if equal is None else f"{equal:.3f} ({equal / ref_equal:.3f})"
        reach = cpu_to_reach(points, target)
        reach_text = "—" if reach is None else f"{reach:.0f} ({reach / reference[-1].cpu_seconds:.2f})"
        print(
            f"{batch:5d}  {rate:<7g}  {examples:8d}  {1000 * per_example:11.2f}  {per_example / ref_rate:5.2f}  "
            f"{points[-1].wall_seconds:6.0f}  {points[-1].loss:12.3f} ({math.exp(points[-1].loss):5.0f})"
            f"{equal_text:>24}  {reach_text:>23}"
        )
    if FLAGS.peer:
        data = contenders.Data(
            FLAGS.input_file, FLAGS.vocab_file, FLAGS.size, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq
        )
        contenders.peer_table(data, runs[0][0])


if __name__ == "__main__":
    cli.run(main)
