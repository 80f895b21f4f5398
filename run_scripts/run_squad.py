"""Fine-tune and predict SQuAD v1.1 / v2.0 (the flags of the original `run_squad.py`, plus the training flags).

    python run_scripts/run_squad.py --init_checkpoint=models/minilm --do_train --train_file=train-v1.1.json \
        --do_predict --predict_file=dev-v1.1.json --train_batch_size=32 --learning_rate=5e-5 \
        --num_train_epochs=2 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad

Writes `predictions.json`, `nbest_predictions.json`, `null_odds.json` (with --version_2_with_negative) and, when
the predict file has answers, `eval_results.json` and TensorBoard scalars (`summaries/eval`). Training
checkpoints go to --output_dir; the same command run again resumes from them.
"""
from __future__ import annotations

import dataclasses
import json

from absl import app, flags, logging

from official.nlp.common import cli
from official.nlp.tasks.question_answering import SquadConfig, run_squad
from official.nlp.training import distribution, optimization

FLAGS = flags.FLAGS
DEFAULTS = {f.name: f.default for f in dataclasses.fields(SquadConfig) if f.default is not dataclasses.MISSING}

# The original flags.
flags.DEFINE_string("train_file", None, "SQuAD JSON for training.")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict (and evaluate, when it has answers).")
flags.DEFINE_string("vocab_file", None, "vocab.txt (default: the one in --init_checkpoint's model directory).")
flags.DEFINE_string("bert_config_file", None, "bert_config.json (default: the one with --init_checkpoint).")
flags.DEFINE_string("init_checkpoint", None, "Model directory or original TF1 checkpoint to start from.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the text (default: the model directory's do_lower_case).")
flags.DEFINE_string("output_dir", None, "Checkpoints, cached features, predictions and results go here.")
flags.DEFINE_integer("max_seq_length", DEFAULTS["max_seq_length"], "Tokens per window, question included.")
flags.DEFINE_integer("doc_stride", DEFAULTS["doc_stride"], "Tokens between the starts of consecutive windows.")
flags.DEFINE_integer("max_query_length", DEFAULTS["max_query_length"], "Longer questions are truncated (and "
                     "counted).")
flags.DEFINE_bool("do_train", False, "Fine-tune on --train_file.")
flags.DEFINE_bool("do_predict", False, "Predict --predict_file.")
flags.DEFINE_integer("train_batch_size", DEFAULTS["train_batch_size"], "Global training batch size.")
flags.DEFINE_integer("predict_batch_size", DEFAULTS["predict_batch_size"], "Prediction batch size.")
flags.DEFINE_float("learning_rate", DEFAULTS["learning_rate"], "Peak learning rate (AdamW).")
flags.DEFINE_float("num_train_epochs", DEFAULTS["num_train_epochs"], "Passes over the training features.")
flags.DEFINE_float("warmup_proportion", DEFAULTS["warmup_proportion"], "Share of the steps with linear warmup.")
flags.DEFINE_integer("n_best_size", DEFAULTS["n_best_size"], "Candidates kept per question (nbest_predictions).")
flags.DEFINE_integer("max_answer_length", DEFAULTS["max_answer_length"], "Longest answer, in tokens.")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: questions may have no answer.")
flags.DEFINE_float("null_score_diff_threshold", DEFAULTS["null_score_diff_threshold"], "v2.0: answer \"\" when "
                   "null score - best span score exceeds this.")
# The training flags shared with run_pretraining.
flags.DEFINE_enum("optimizer", DEFAULTS["optimizer"], list(optimization.OPTIMIZERS), "adamw or lamb.")
flags.DEFINE_float("weight_decay", DEFAULTS["weight_decay"], "Decoupled weight decay (not on LayerNorm, bias).")
flags.DEFINE_float("clip_norm", DEFAULTS["clip_norm"], "Clip gradients to this global norm (0 = off).")
flags.DEFINE_integer("save_checkpoints_steps", DEFAULTS["save_checkpoints_steps"], "Checkpoint interval.")
flags.DEFINE_integer("keep_checkpoint_max", DEFAULTS["keep_checkpoint_max"], "Checkpoints kept.")
flags.DEFINE_integer("steps_per_loop", DEFAULTS["steps_per_loop"], "Steps per tf.function call and log line.")
flags.DEFINE_integer("gradient_accumulation_steps", DEFAULTS["gradient_accumulation_steps"], "Micro-batches per "
                     "optimizer step.")
flags.DEFINE_enum("mixed_precision", DEFAULTS["mixed_precision"], list(optimization.MIXED_PRECISION),
                  "Compute dtype.")
flags.DEFINE_bool("jit_compile", DEFAULTS["jit_compile"], "XLA-compile the training step.")
flags.DEFINE_enum("distribution_strategy", DEFAULTS["distribution_strategy"], list(distribution.STRATEGIES),
                  "How to use devices.")
flags.DEFINE_integer("num_gpus", None, "GPUs on this host (default: all visible).")
flags.DEFINE_string("tpu", None, "TPU name or address.")
flags.DEFINE_string("all_reduce_alg", None, "All-reduce algorithm of the strategy.")
flags.DEFINE_integer("seed", DEFAULTS["seed"], "Seed of the head's initialization, dropout and data order.")


def config_from_flags() -> SquadConfig:
    """The `SquadConfig` of the command-line flags (--do_lower_case only when given, else the model's)."""
    values = {f.name: FLAGS[f.name].value for f in dataclasses.fields(SquadConfig)}
    if not FLAGS["do_lower_case"].present:
        values["do_lower_case"] = None
    return SquadConfig(**values)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    info = run_squad(config_from_flags())
    logging.info("Results: %s", json.dumps(info, sort_keys=True))


if __name__ == "__main__":
    flags.mark_flags_as_required(["output_dir"])
    cli.run(main)
