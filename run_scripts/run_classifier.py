"""Fine-tune BERT for sentence(-pair) classification or regression: GLUE, GoEmotions (multi-label), or any
TSV/CSV/JSON-lines data (single- or multi-label).

The flags of the original `run_classifier.py`, plus the training flags every fine-tuning script shares
(`official.nlp.tasks.finetuning`). Rerunning with the same --output_dir resumes; other settings are refused.

    python run_scripts/run_classifier.py --task_name=MRPC --data_dir=glue/MRPC --init_checkpoint=models/minilm \
        --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \
        --num_train_epochs=3 --output_dir=/tmp/mrpc
"""

from __future__ import annotations

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags, logging

from official.nlp.common import config_flags
from official.nlp.tasks.classification import ClassifierConfig, run_classifier

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, ClassifierConfig)


def main(argv):
    del argv
    result = run_classifier(config_flags.config_from_flags(FLAGS, ClassifierConfig))
    for entry in result.eval_history[-1:]:
        # Per-label scores of multi-label data (`f1/<label>`, ...) are in eval_results.txt.
        logging.info("Evaluation: %s", ", ".join(f"{k}={v}" for k, v in entry.items() if "/" not in k))
    if result.best_model_dir:
        logging.info("Best model directory: %s", result.best_model_dir)
    for path in result.predictions:
        logging.info("Wrote %s", path)


if __name__ == "__main__":
    cli.run(main)
