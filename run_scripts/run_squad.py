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

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import json

from absl import flags, logging

from official.nlp.common import config_flags
from official.nlp.tasks.question_answering import SquadConfig, run_squad

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, SquadConfig)


def main(argv):
    del argv
    result = run_squad(config_flags.config_from_flags(FLAGS, SquadConfig))
    logging.info("Results: %s", json.dumps(result.metrics, sort_keys=True))


if __name__ == "__main__":
    cli.run(main)
