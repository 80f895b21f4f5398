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

from absl import flags

from official.nlp.common import cli
from official.nlp.tasks import finetuning_flags
from official.nlp.tasks.multiple_choice import MultipleChoiceConfig, run_swag

FLAGS = flags.FLAGS
finetuning_flags.define_flags(FLAGS)
flags.DEFINE_string("train_file", None, "SWAG training file (train.csv or JSON lines).")
flags.DEFINE_string("eval_file", None, "SWAG file for --do_eval (val.csv).")
flags.DEFINE_string("predict_file", None, "SWAG file for --do_predict (test.csv; labels not needed).")
flags.DEFINE_bool("do_train", False, "Fine-tune (or resume).")
flags.DEFINE_bool("do_eval", False, "Accuracy on --eval_file after each epoch (or once, without --do_train).")
flags.DEFINE_bool("do_predict", False, "Predict --predict_file into --output_dir/test_results.csv.")
flags.DEFINE_bool("skip_bad_rows", False, "Skip and count rows with too few columns, a missing ending, an empty "
                  "context or an unknown label.")
flags.DEFINE_float("dropout_rate", 0.1, "Dropout before the choice scorer.")


def main(argv):
    del argv
    choice = MultipleChoiceConfig(train_file=FLAGS.train_file, eval_file=FLAGS.eval_file,
                                  predict_file=FLAGS.predict_file, skip_bad_rows=FLAGS.skip_bad_rows,
                                  dropout_rate=FLAGS.dropout_rate)
    result = run_swag(finetuning_flags.config_from_flags(FLAGS), choice, do_train=FLAGS.do_train, do_eval=FLAGS.do_eval,
                      do_predict=FLAGS.do_predict)
    for split, count in result.bad_rows.items():
        if count:
            print(f"skipped {count} bad row(s) in the {split} file")
    for entry in result.eval_history:
        print("eval: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in entry.items()))
    if result.predictions_file:
        print(f"predictions: {result.predictions_file}")


if __name__ == "__main__":
    cli.run(main)
