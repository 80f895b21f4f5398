"""The multi-label side of the classification task (`tasks.classification` with `--multi_label` or GoEmotions).

One sigmoid per label over the classifier's logits; a label is predicted when its probability is at least its
threshold (`metrics.multi_label`). The thresholds belong to the model: a training job uses `--threshold` (0.5 by
default) or, with `--tune_thresholds`, tunes one per label on the dev set at each evaluation, and `best_model/`
records the ones of its evaluation (`thresholds` in its `finetuning_settings.json`). Every later use of the model
(`--do_predict`, `export_model.py`, the Hugging Face export) reads them from there (`recorded_thresholds`, by
`checkpoints.fine_tuned`'s rule); a job that does not train may override them with `--threshold` or
`--tune_thresholds`.

`--do_predict` writes, per test file, the submission file `index<TAB>prediction<TAB>scores` (the predicted label
names, most probable first, comma-separated, and their probabilities in the same order) and `test_results.tsv`
(every label's probability, in head order), as the exported model's `predicted_labels` and `predicted_scores`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import head_kinds
from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.common import input_files, output_files
from official.nlp.common.errors import InputError
from official.nlp.metrics import multi_label as metrics_lib


def check_flags(config, multi_label: bool) -> None:
    """Refuses the multi-label flags of a `ClassifierConfig` where they cannot apply or contradict each other."""
    given = [
        name
        for name, value in (
            ("threshold", config.threshold),
            ("tune_thresholds", config.tune_thresholds),
            ("allow_empty_labels", config.allow_empty_labels),
        )
        if value not in (None, False)
    ]
    if not multi_label and given:
        raise InputError(
            f"--{given[0]} is for multi-label data (--task_name=generic --multi_label, or --task_name=goemotions)"
        )
    if config.threshold is not None and config.tune_thresholds:
        raise InputError("--threshold and --tune_thresholds exclude each other: give one")
    if config.tune_thresholds and not config.do_eval:
        raise InputError("--tune_thresholds tunes the thresholds on the dev set: add --do_eval")


def label_matrix(examples, labels: Sequence[str]) -> np.ndarray:
    """`[examples, labels]` 0/1 of the examples' label sets."""
    index = {name: j for j, name in enumerate(labels)}
    matrix = np.zeros([len(examples), len(labels)], np.int64)
    for i, example in enumerate(examples):
        matrix[i, [index[name] for name in example.label]] = 1
    return matrix


def sigmoid(logits) -> np.ndarray:
    from scipy.special import expit

    return expit(np.asarray(logits, np.float64))


def binary_cross_entropy(labels: np.ndarray, logits: np.ndarray) -> float:
    """The training loss (`objectives.MultiLabelObjective`) in float64: mean over examples and labels."""
    logits = np.asarray(logits, np.float64)
    return float(np.mean(np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))))


def model_path(output_dir: str, init_checkpoint: str | None) -> str | None:
    """Where the model a job uses lives: its `--output_dir` once that holds a checkpoint (the model of the run), else
    its `--init_checkpoint` (the rule of `checkpoints.restore_plan`)."""
    if input_files.isdir(output_dir) and tf.train.latest_checkpoint(output_dir):
        return output_dir
    return init_checkpoint


def recorded_thresholds(path: str | None, num_labels: int) -> np.ndarray:
    """The thresholds recorded with the model at `path` (`best_model/`'s tuned or fixed ones, else the job's
    `--threshold`), else `metrics.multi_label.DEFAULT_THRESHOLD` for every label."""
    record = init_checkpoint_lib.read_record(path) if path else {}
    return np.asarray(head_kinds.thresholds_per_label(num_labels, record.get("thresholds"), record.get("threshold")))


def fixed_thresholds(config, num_labels: int) -> np.ndarray:
    """The thresholds of a job that does not tune them: `--threshold`; else for a training job 0.5, and for a job
    without training those recorded with the model it evaluates or predicts with."""
    if config.threshold is not None or config.do_train:
        return metrics_lib.decision_thresholds(num_labels, threshold=config.threshold)
    return recorded_thresholds(model_path(config.output_dir, config.init_checkpoint), num_labels)


def prediction_thresholds(config, num_labels: int, evaluated: np.ndarray | None) -> np.ndarray:
    """The thresholds `--do_predict` uses: those recorded with the model of a training run (as the export reads
    them), else the ones this job tuned (`evaluated`) or `fixed_thresholds`."""
    if config.do_train:
        return recorded_thresholds(config.output_dir, num_labels)
    if config.tune_thresholds:
        return evaluated
    return fixed_thresholds(config, num_labels)


def evaluate_multi_label(config, labels: Sequence[str], examples, logits: np.ndarray) -> tuple[dict, np.ndarray]:
    """`(metrics, thresholds)` of one evaluation: thresholds tuned on these examples with `--tune_thresholds`, else
    `fixed_thresholds`."""
    if config.tune_thresholds:
        thresholds = metrics_lib.tune_thresholds(label_matrix(examples, labels), sigmoid(logits))
    else:
        thresholds = fixed_thresholds(config, len(labels))
    return score(labels, examples, logits, thresholds, tuned=config.tune_thresholds), thresholds


def score(labels: Sequence[str], examples, logits: np.ndarray, thresholds: np.ndarray, *, tuned: bool) -> dict:
    """The metrics of `metrics.multi_label` and the loss; with `tuned`, also each label's `threshold/<name>`."""
    truth = label_matrix(examples, labels)
    predicted = metrics_lib.predict_labels(sigmoid(logits), thresholds)
    result = {**metrics_lib.multi_label_metrics(truth, predicted, labels), "loss": binary_cross_entropy(truth, logits)}
    if tuned:
        result.update({f"threshold/{name}": float(t) for name, t in zip(labels, thresholds)})
    return result


def ranked_predictions(
    probabilities: np.ndarray, thresholds: np.ndarray, labels: Sequence[str]
) -> list[list[tuple[str, float]]]:
    """Per example, `(label name, probability)` of the labels at or above their thresholds, most probable first
    (ties in head order)."""
    predicted = metrics_lib.predict_labels(probabilities, thresholds)
    ranked = []
    for row, chosen in zip(probabilities, predicted):
        order = np.argsort(-row, kind="stable")
        ranked.append([(labels[j], float(row[j])) for j in order if chosen[j]])
    return ranked


def write_multi_label_predictions(
    examples, logits: np.ndarray, thresholds: np.ndarray, labels: Sequence[str], submission: str, results: str
) -> list[str]:
    """The submission file and `test_results.tsv` (see the module docstring); returns their paths."""
    probabilities = sigmoid(logits)
    with output_files.write_atomically(submission) as f:
        f.write("index\tprediction\tscores\n")
        for example, ranked in zip(examples, ranked_predictions(probabilities, thresholds, labels)):
            names = ",".join(name for name, _ in ranked)
            scores = ",".join(repr(p) for _, p in ranked)
            f.write(f"{example.guid}\t{names}\t{scores}\n")
    with output_files.write_atomically(results) as f:
        f.write("".join("\t".join(repr(float(p)) for p in row) + "\n" for row in probabilities))
    logging.info(
        "Wrote %d multi-label predictions to %s and %s (thresholds %s)",
        len(examples),
        submission,
        results,
        "0.5" if np.all(thresholds == metrics_lib.DEFAULT_THRESHOLD) else "per label",
    )
    return [submission, results]
