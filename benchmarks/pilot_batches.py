r"""Held-out loss per CPU-second at batch 32, 64, 128 and 256, each with the rate scaled (issue 41, part 3).

Runs the paper rerun's pilot (`--tables=pilot`: the corpus, its held-out documents, the vocabulary, the records, then
one MLM + NSP run per batch size, the same training examples each, the rate scaled by the square root of the batch
ratio) and prints, for each batch against the first one, in the same run: CPU seconds per training example, the
held-out masked-LM loss at equal examples, and the held-out loss at equal CPU time (each run's loss interpolated
linearly in CPU seconds to the shortest run's total). A rerun with the same flags resumes (and only prints when
everything is done).

    python -m benchmarks.pilot_batches --input_file='../shared/data/wikipedia/wiki_*' \
        --output_dir=output/pilot_batches --learning_rate=2e-3 --batch_sizes=32,64,128,256
"""

from __future__ import annotations

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags

from official.nlp.paper import grid
from official.nlp.paper.config import PaperConfig
from official.nlp.paper.reproduce import reproduce_paper
from official.nlp.paper.results import select
from official.nlp.paper.transfer import pilot

flags.DEFINE_string("input_file", None, "Raw text (WikiExtractor output or plain text), globs.", required=True)
flags.DEFINE_string("output_dir", None, "The pilot's output folder (reruns resume).", required=True)
flags.DEFINE_string("budget", "default", "The paper budget whose model size, corpus and records the runs use.")
flags.DEFINE_float("learning_rate", 2e-3, "The rate at the budget's pretraining batch (32 for the default).")
flags.DEFINE_list("batch_sizes", ["32", "64", "128", "256"], "Batch sizes; the first is the reference of the ratios.")
flags.DEFINE_integer("examples", None, "Training examples per run (default: the budget's pretraining, 64,000).")
FLAGS = flags.FLAGS


def main(_):
    batches = [int(b) for b in FLAGS.batch_sizes]
    result = reproduce_paper(
        PaperConfig(
            input_file=FLAGS.input_file,
            output_dir=FLAGS.output_dir,
            budget=FLAGS.budget,
            tables=[grid.PILOT_TABLE],
            pilot_learning_rates=[FLAGS.learning_rate],
            pilot_batch_sizes=batches,
            pilot_examples=FLAGS.examples,
            plots=False,
        )
    )
    rows = [r for r in result.rows if r.task == "pilot" and r.variant.startswith("pilot-")]
    runs = {}
    for variant in sorted({r.variant for r in rows}):
        batch = int(select(rows, variant=variant, metric="batch_size")[0].value)
        by_step = {
            metric: {r.steps: r.value for r in select(rows, variant=variant, metric=metric)}
            for metric in ("cpu_seconds", "heldout_mlm_loss", "examples")
        }
        steps = sorted(by_step["heldout_mlm_loss"])
        runs[batch] = [
            (by_step["cpu_seconds"][s], by_step["heldout_mlm_loss"][s], by_step["examples"][s]) for s in steps
        ]
    common = min(points[-1][0] for points in runs.values())
    reference = runs[batches[0]]
    print(f"Held-out MLM loss per CPU-second, {FLAGS.budget} budget, rate {FLAGS.learning_rate:g} at its batch, scaled")
    print(f"equal CPU time: {common:.0f} s (the shortest run's total)")
    print("batch  CPU s/1k examples  ratio  loss@equal examples  loss@equal CPU time  loss ratio (equal CPU)")
    base_rate = reference[-1][0] / reference[-1][2]
    base_loss = pilot.at_time([(c, v) for c, v, _ in reference], common)
    for batch in batches:
        points = runs[batch]
        per_example = points[-1][0] / points[-1][2]
        at_common = pilot.at_time([(c, v) for c, v, _ in points], common)
        loss_ratio = "—" if at_common is None or base_loss is None else f"{at_common / base_loss:.3f}"
        print(
            f"{batch:5d}  {1000 * per_example:17.2f}  {per_example / base_rate:5.2f}  {points[-1][1]:19.3f}  "
            f"{'—' if at_common is None else f'{at_common:.3f}':>19}  {loss_ratio:>22}"
        )


if __name__ == "__main__":
    cli.run(main)
