r"""Pretrain BERT (masked LM + next sentence prediction) on TFRecords from create_pretraining_data.

The flags of the original `run_pretraining.py`, plus distribution, mixed precision, gradient accumulation,
LAMB and dynamic masking. Re-running the same command resumes from the last checkpoint in --model_dir. The
final model is exported to --export_dir (default --model_dir/export) as a model directory, which is what
--init_checkpoint takes (here, in extract_features.py and in convert_checkpoint.py's --input).

--init_checkpoint may also be a model directory without pretraining heads (a converted Hugging Face encoder, or a
TF1 checkpoint without cls/*): the encoder is loaded and the heads start fresh. --preset=tiny|mini|small|medium|
base|large instead of --bert_config_file builds a config of that size for --vocab_file.

    python run_scripts/run_pretraining.py --input_file='out/train.tfrecord-*' \
        --bert_config_file=bert_config.json --vocab_file=vocab.txt --do_lower_case \
        --model_dir=/tmp/pretrain --train_batch_size=32 --num_train_steps=10000 --num_warmup_steps=1000 \
        --learning_rate=1e-4
"""

from __future__ import annotations

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags, logging

from official.nlp.common import config_flags
from official.nlp.tasks.pretraining import run_pretraining
from official.nlp.tasks.pretraining_config import PretrainingConfig

FLAGS = flags.FLAGS
# One flag per PretrainingConfig field (its name, default and help), so the script and the Python API cannot drift.
config_flags.define_flags(FLAGS, PretrainingConfig)


def main(argv):
    del argv
    result = run_pretraining(config_flags.config_from_flags(FLAGS, PretrainingConfig))
    if result.metrics:  # else a finished job run again, which the trainer has reported already
        logging.info(
            "Finished at step %d: %s", result.step, ", ".join(f"{k}={v:.4g}" for k, v in result.metrics.items())
        )
    if result.export_dir:
        logging.info("Model directory for fine-tuning (--init_checkpoint): %s", result.export_dir)


if __name__ == "__main__":
    cli.run(main)
