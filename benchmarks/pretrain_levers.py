r"""Pretraining examples per CPU-second of our real training step, lever by lever, beside transformers' step
(issue 41, part 3).

Every contender is the library's own training loop (`TrainStep.make_loop`: the steps of one call inside one
`tf.function`, the optimizer of `PretrainingConfig`, the real records through `PretrainDataLoader`), at the paper
rerun's main size (`--size`, default `tiny`) with the vocabulary of `--vocab_file`, timed in interleaved rounds of
the same number of examples (`timing.interleaved`), after a warm-up call that traces it:

- batch 32, 64, 128, 256 (`--batch_sizes`): the same model, fewer and larger steps per example;
- `jit_compile=True` (XLA on the CPU) at the first batch;
- transformers' `BertForPreTraining` (torch, CPU, AdamW, the same sizes, masked-LM labels at the same positions,
  NSP labels) at the first batch: the peer's step speed in the same run.

Each row gives examples per wall second and per CPU-second of this process (user + system: what the step costs
whatever else runs on the machine; on a shared machine the wall rate moves with the other jobs, the CPU rate much
less), and the ratio of both to ours at the first batch. Threading is a process setting, fixed when TensorFlow
starts, so `--thread_settings` (intra-op:inter-op pairs) each run ours at the first batch in a child process of
this run, beside a child with the default settings, and are printed as ratios to that child.

    python -m benchmarks.pretrain_levers --input_file='output/pilot/data/records/*' \
        --vocab_file=output/pilot/data/vocab.txt --batch_sizes=32,64,128,256 --thread_settings=1:1,2:1,1:2
"""

from __future__ import annotations

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import json
import os
import subprocess
import sys
import tempfile

from absl import flags

from benchmarks import pretrain_contenders as contenders
from benchmarks import timing

flags.DEFINE_string("input_file", None, "Pretraining TFRecords (globs): a rerun's data/records/*.", required=True)
flags.DEFINE_string("vocab_file", None, "The records' vocabulary (its size is the model's).", required=True)
flags.DEFINE_string("size", "tiny", "Model size: a preset or L<layers>-H<hidden>-A<heads>.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the records.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence in the records.")
flags.DEFINE_list("batch_sizes", ["32", "64", "128", "256"], "Batch sizes; the first is the reference.")
flags.DEFINE_integer("examples_per_round", 512, "Training examples per contender per timing round.")
flags.DEFINE_integer("rounds", 3, "Interleaved timing rounds (the median counts).")
flags.DEFINE_bool("jit", True, "Also time jit_compile=True at the first batch.")
flags.DEFINE_bool("transformers", True, "Also time transformers' BertForPreTraining at the first batch.")
flags.DEFINE_list("thread_settings", [], "intra:inter thread pairs (e.g. 1:1,2:1), each in a child process.")
flags.DEFINE_string("threads", None, "Internal: run only ours at the first batch with these intra:inter threads.")
FLAGS = flags.FLAGS


def _data() -> contenders.Data:
    return contenders.Data(
        FLAGS.input_file, FLAGS.vocab_file, FLAGS.size, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq
    )


def _threads_child(setting: str) -> dict:
    """Runs ours at the first batch in a child process with `setting` ("intra,inter" or "default")."""
    command = [sys.executable, "-m", "benchmarks.pretrain_levers", f"--threads={setting}"]
    command += [f"--{name}={FLAGS[name].value}" for name in ("input_file", "vocab_file", "size", "max_seq_length")]
    command += [f"--batch_sizes={FLAGS.batch_sizes[0]}", f"--examples_per_round={FLAGS.examples_per_round}"]
    command += [f"--rounds={FLAGS.rounds}", f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq}"]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def _child(setting: str) -> None:
    import tensorflow as tf

    if setting != "default":
        intra, inter = (int(n) for n in setting.split(":"))
        tf.config.threading.set_intra_op_parallelism_threads(intra)
        tf.config.threading.set_inter_op_parallelism_threads(inter)
    with tempfile.TemporaryDirectory() as tmp:
        train = contenders.ours(_data(), int(FLAGS.batch_sizes[0]), tmp, FLAGS.examples_per_round)
        rate = timing.interleaved({"ours": train}, FLAGS.rounds)["ours"]
    print(json.dumps({"wall": rate.per_round, "cpu": rate.per_cpu_round}))


def main(_):
    if FLAGS.threads:
        _child(FLAGS.threads)
        return
    data = _data()
    batches = [int(b) for b in FLAGS.batch_sizes]
    examples = FLAGS.examples_per_round
    reference = f"ours, batch {batches[0]}"
    functions = {}
    with tempfile.TemporaryDirectory() as tmp:
        for batch in batches:
            functions[f"ours, batch {batch}"] = contenders.ours(data, batch, os.path.join(tmp, str(batch)), examples)
        if FLAGS.jit:
            functions[f"ours, batch {batches[0]}, jit_compile"] = contenders.ours(
                data, batches[0], os.path.join(tmp, "jit"), examples, True
            )
        if FLAGS.transformers:
            name = f"transformers BertForPreTraining, batch {batches[0]}"
            functions[name] = contenders.transformers_step(data, batches[0], examples)
        rates = timing.interleaved(functions, FLAGS.rounds)
    contenders.print_rates(data, rates, reference)
    if FLAGS.thread_settings:
        children = {"default": _threads_child("default")}
        for setting in FLAGS.thread_settings:
            children[setting] = _threads_child(setting)
        print(f"\n## threads (intra-op,inter-op), ours at batch {batches[0]}, each in a child process")
        base = children["default"]
        for name, result in children.items():
            wall = timing.Rate(name, result["wall"], result["cpu"])
            ref = timing.Rate("default", base["wall"], base["cpu"])
            print(
                f"  {name:<10} {wall.median:8.1f} examples/s ({wall.median / ref.median:4.2f}x default) | per CPU-s "
                f"{wall.cpu_median:8.1f} ({wall.cpu_median / ref.cpu_median:4.2f}x)"
            )


if __name__ == "__main__":
    cli.run(main)
