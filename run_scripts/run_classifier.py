"""Fine-tune BERT for sentence(-pair) classification or regression: GLUE, or any TSV/CSV/JSON-lines data.

The flags of the original `run_classifier.py`, plus the training flags every fine-tuning script shares
(`official.nlp.tasks.finetuning`). Rerunning with the same --output_dir resumes; other settings are refused.

    python run_scripts/run_classifier.py --task_name=MRPC --data_dir=glue/MRPC --init_checkpoint=models/minilm \
        --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \
        --num_train_epochs=3 --output_dir=/tmp/mrpc
"""
from __future__ import annotations

from absl import flags, logging

from official.nlp.common import cli
from official.nlp.common.errors import InputError
from official.nlp.tasks import finetuning_flags
from official.nlp.tasks.classification import ClassifierConfig, run_classifier

FLAGS = flags.FLAGS

finetuning_flags.define_flags(FLAGS, config_class=ClassifierConfig, help_texts={
    "task_name": "cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli, ax, or generic (with the column flags).",
    "data_dir": "The folder with the task's files (GLUE layout: train.tsv, dev.tsv, test.tsv, ...).",
    "do_train": "Fine-tune (resuming a run in --output_dir).",
    "do_eval": "Evaluate on the dev set(s) after each epoch (eval_results.txt, TensorBoard, best_model/).",
    "do_predict": "Write the GLUE submission file(s) and test_results.tsv for the test set(s).",
    "long_text": "truncate (the original) or sliding_window (windows over the longer text, logits averaged).",
    "doc_stride": "Tokens between the starts of two windows (--long_text=sliding_window; default: half a window).",
    "skip_bad_rows": "Skip (and count) rows with too few columns, an unknown label or an empty text.",
    "max_train_examples": "Use only the first N training examples.",
    "tfds_name": "Read GLUE from tensorflow-datasets instead of --data_dir, e.g. glue/mrpc (must be prepared).",
    "tfds_data_dir": "tensorflow-datasets data folder.",
    "text_a_column": "generic: column (or JSON key) of the first text.",
    "text_b_column": "generic: column of the second text, for pairs.",
    "label_column": "generic: column of the label.",
    "id_column": "generic: column of the example id, written with the predictions.",
    "labels": "generic: comma-separated label set in head order (default: sorted labels of the training file).",
    "regression": "generic: numeric labels, one output (Pearson/Spearman).",
    "file_format": "generic: tsv, csv or jsonl (files train.<fmt>, dev.<fmt>, test.<fmt> in --data_dir).",
})


def main(argv):
    if len(argv) > 1:
        raise InputError(f"unexpected arguments: {argv[1:]}")
    result = run_classifier(finetuning_flags.config_from_flags(FLAGS, config_class=ClassifierConfig))
    for entry in result.eval_history[-1:]:
        logging.info("Evaluation: %s", ", ".join(f"{k}={v}" for k, v in entry.items()))
    if result.best_model_dir:
        logging.info("Best model directory: %s", result.best_model_dir)
    for path in result.predictions:
        logging.info("Wrote %s", path)


if __name__ == "__main__":
    cli.run(main)
