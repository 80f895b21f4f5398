"""Fine-tune and predict SQuAD v1.1 / v2.0 (the flags of the original `run_squad.py`, plus the training flags).

    python run_scripts/run_squad.py --init_checkpoint=models/minilm --do_train --train_file=train-v1.1.json \
        --do_predict --predict_file=dev-v1.1.json --train_batch_size=32 --learning_rate=5e-5 \
        --num_train_epochs=2 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad

Writes `predictions.json`, `nbest_predictions.json`, `null_odds.json` (with --version_2_with_negative) and, when
the predict file has answers, `eval_results.json`, `eval_results.txt` and TensorBoard scalars (`summaries/eval`).
Training checkpoints go to --output_dir; the same command run again resumes from them, and `best_model/` is the
fine-tuned model directory (it works as --init_checkpoint for --do_predict).
"""
from __future__ import annotations

import dataclasses
import json

from absl import app, flags, logging

from official.nlp.common import cli
from official.nlp.tasks import finetuning, finetuning_flags
from official.nlp.tasks.question_answering import SquadConfig, run_squad

FLAGS = flags.FLAGS
DEFAULTS = {f.name: f.default for f in dataclasses.fields(SquadConfig) if f.default is not dataclasses.MISSING}

# The shared fine-tuning flags (--init_checkpoint, --vocab_file, --train_batch_size, --learning_rate, ...).
finetuning_flags.define_flags(max_seq_length=DEFAULTS["max_seq_length"])
# The SQuAD flags of the original.
flags.DEFINE_string("train_file", None, "SQuAD JSON for training.")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict (and evaluate, when it has answers).")
flags.DEFINE_bool("do_train", False, "Fine-tune on --train_file.")
flags.DEFINE_bool("do_predict", False, "Predict --predict_file.")
flags.DEFINE_integer("doc_stride", DEFAULTS["doc_stride"], "Tokens between the starts of consecutive windows.")
flags.DEFINE_integer("max_query_length", DEFAULTS["max_query_length"], "Longer questions are truncated (and "
                     "counted).")
flags.DEFINE_integer("n_best_size", DEFAULTS["n_best_size"], "Candidates kept per question (nbest_predictions).")
flags.DEFINE_integer("max_answer_length", DEFAULTS["max_answer_length"], "Longest answer, in tokens.")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: questions may have no answer.")
flags.DEFINE_float("null_score_diff_threshold", DEFAULTS["null_score_diff_threshold"], "v2.0: answer \"\" when "
                   "null score - best span score exceeds this.")


def config_from_flags() -> SquadConfig:
    """The `SquadConfig` of the command-line flags (--do_lower_case only when given, else the model's)."""
    shared = finetuning_flags.config_from_flags()
    squad_only = {f.name: FLAGS[f.name].value for f in dataclasses.fields(SquadConfig)
                  if f.name not in {g.name for g in dataclasses.fields(finetuning.FineTuningConfig)}}
    return SquadConfig(**vars(shared), **squad_only)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    info = run_squad(config_from_flags())
    logging.info("Results: %s", json.dumps(info, sort_keys=True))


if __name__ == "__main__":
    cli.run(main)
