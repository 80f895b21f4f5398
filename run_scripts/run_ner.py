"""Named-entity recognition on CoNLL-2003 (or any CoNLL column file): fine-tuning, or the paper's feature-based
approach with --feature_based.

    python run_scripts/run_ner.py --init_checkpoint=models/minilm --output_dir=/tmp/ner \
        --train_file=eng.train --eval_file=eng.testa --predict_file=eng.testb \
        --do_train --do_eval --do_predict --num_train_epochs=3 --learning_rate=5e-5

Files are CoNLL columns (word ... tag, tag last; IOB1 or IOB2; -DOCSTART- lines). Each word's first sub-token
carries its tag; sentences longer than --max_seq_length are split into overlapping windows. --do_eval writes the
conlleval entity F1 (overall and per type) to eval_results.txt after each epoch and keeps the best model in
--output_dir/best_model; --do_predict writes test_predictions.txt in CoNLL columns (`conlleval <
test_predictions.txt` reads it). Rerunning with the same --output_dir resumes.
"""
from __future__ import annotations

import sys

from absl import flags

from official.nlp.common import cli
from official.nlp.common.errors import InputError
from official.nlp.tasks import finetuning_flags
from official.nlp.tasks.feature_extraction import parse_layers
from official.nlp.tasks.tagging import TaggingConfig, run_ner

FLAGS = flags.FLAGS
finetuning_flags.define_flags(FLAGS)
flags.DEFINE_string("train_file", None, "CoNLL training file (e.g. eng.train or train.txt).")
flags.DEFINE_string("eval_file", None, "CoNLL file for --do_eval (e.g. eng.testa).")
flags.DEFINE_string("predict_file", None, "CoNLL file for --do_predict (e.g. eng.testb).")
flags.DEFINE_bool("do_train", False, "Fine-tune (or resume).")
flags.DEFINE_bool("do_eval", False, "Entity F1 on --eval_file after each epoch (or once, without --do_train).")
flags.DEFINE_bool("do_predict", False, "Tag --predict_file into --output_dir/test_predictions.txt.")
flags.DEFINE_list("labels", None, "The tag set in the head's order (default: the training file's tags).")
flags.DEFINE_bool("skip_bad_rows", False, "Leave out and count sentences with a malformed line or an unknown tag.")
flags.DEFINE_integer("window_stride", None, "Sub-tokens between windows of a long sentence (default: half a window).")
flags.DEFINE_bool("feature_based", False, "Freeze BERT and train a BiLSTM on its layers (the paper's Table 7).")
flags.DEFINE_string("feature_layers", "-1,-2,-3,-4", "--feature_based: encoder layers to use (-1 is the last).")
flags.DEFINE_enum("feature_combine", "concat", ["concat", "weighted_sum"], "--feature_based: how the layers are "
                  "combined.")
flags.DEFINE_integer("lstm_units", 768, "--feature_based: units per direction of each BiLSTM layer.")
flags.DEFINE_integer("num_lstm_layers", 2, "--feature_based: BiLSTM layers.")
flags.DEFINE_float("dropout_rate", 0.1, "Dropout before the classifier.")


def main(argv):
    del argv
    try:
        layers = parse_layers(FLAGS.feature_layers)
    except ValueError as e:
        raise InputError(str(e).replace("--layers", "--feature_layers")) from None
    tagging = TaggingConfig(
        train_file=FLAGS.train_file, eval_file=FLAGS.eval_file, predict_file=FLAGS.predict_file,
        labels=FLAGS.labels, skip_bad_rows=FLAGS.skip_bad_rows, window_stride=FLAGS.window_stride,
        feature_based=FLAGS.feature_based, feature_layers=layers, feature_combine=FLAGS.feature_combine,
        lstm_units=FLAGS.lstm_units, num_lstm_layers=FLAGS.num_lstm_layers, dropout_rate=FLAGS.dropout_rate)
    result = run_ner(finetuning_flags.config_from_flags(FLAGS), tagging, do_train=FLAGS.do_train, do_eval=FLAGS.do_eval,
                     do_predict=FLAGS.do_predict)
    for split, count in result.bad_rows.items():
        if count:
            print(f"skipped {count} bad row(s) in the {split} file")
    if result.eval_history:
        last = result.eval_history[-1]
        print("eval: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                   for k, v in last.items()))
    if result.predictions_file:
        print(f"predictions: {result.predictions_file}")
        print(result.predict_scores.report())
    sys.stdout.flush()


if __name__ == "__main__":
    cli.run(main)
