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

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import sys

from absl import flags

from official.nlp.common import config_flags
from official.nlp.tasks.tagging import TaggingConfig, run_ner

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, TaggingConfig)


def main(argv):
    del argv
    result = run_ner(config_flags.config_from_flags(FLAGS, TaggingConfig))
    for split, count in result.bad_rows.items():
        if count:
            print(f"skipped {count} bad row(s) in the {split} file")
    if result.eval_history:
        last = result.eval_history[-1]
        print("eval: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in last.items()))
    if result.predictions_file:
        print(f"predictions: {result.predictions_file}")
        print(result.predict_scores.report())
    sys.stdout.flush()


if __name__ == "__main__":
    cli.run(main)
