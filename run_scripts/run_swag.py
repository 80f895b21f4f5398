"""SWAG multiple choice: fine-tune BERT to pick the ending of a sentence out of four.

    python run_scripts/run_swag.py --init_checkpoint=models/minilm --output_dir=/tmp/swag \
        --train_file=swagaf/data/train.csv --eval_file=swagaf/data/val.csv --do_train --do_eval \
        --num_train_epochs=3 --learning_rate=2e-5 --train_batch_size=16

Files are the original CSV of rowanz/swagaf or JSON lines with sent1, sent2, ending0..3 and label. Each choice is
`[CLS] sent1 [SEP] sent2 ending_i [SEP]`; the model scores the four and a softmax picks one. --do_eval writes the
accuracy (and the evaluation loss) to eval_results.txt after each epoch and keeps the best model in
--output_dir/best_model; --do_predict writes test_results.csv (predicted ending and the four probabilities).
Rerunning with the same --output_dir resumes.
"""

from __future__ import annotations

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags

from official.nlp.common import config_flags
from official.nlp.tasks.multiple_choice import MultipleChoiceConfig, run_swag

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, MultipleChoiceConfig)


def main(argv):
    del argv
    result = run_swag(config_flags.config_from_flags(FLAGS, MultipleChoiceConfig))
    for split, count in result.bad_rows.items():
        if count:
            print(f"skipped {count} bad row(s) in the {split} file")
    for entry in result.eval_history:
        print("eval: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in entry.items()))
    if result.predictions_file:
        print(f"predictions: {result.predictions_file}")


if __name__ == "__main__":
    cli.run(main)
