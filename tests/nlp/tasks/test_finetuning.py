"""The fine-tuning base on a toy task: per-epoch evaluation, best model directory, resume, refused reruns, the
feature cache."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import model_dir, model_loading, our_checkpoints
from official.nlp.common.errors import InputError
from official.nlp.data import feature_cache
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier
from official.nlp.tasks import finetuning, finetuning_config, finetuning_outputs
from official.nlp.training.objectives import SparseCategoricalObjective
from tests import pretraining_records

VOCAB = 200
SEQ = 8
TINY = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=16,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


class ToyTask:
    """Label 1 when the first token is 7 (the pooler reads the first position): learnable in a few steps."""

    name = "toy"
    metric_name = "accuracy"

    def __init__(self, labels=("no", "yes"), n=192):
        self.labels = list(labels)
        rng = np.random.RandomState(0)
        ids = rng.randint(10, VOCAB, size=(n, SEQ)).astype("int32")
        self.y = (rng.rand(n) < 0.5).astype("int32")
        ids[:, 0] = 2
        ids[self.y == 1, 0] = 7
        self.x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
        self.evaluations = 0

    def build_model(self, encoder):
        return BertClassifier(encoder, len(self.labels), dropout_rate=0.0)

    def objective(self):
        return SparseCategoricalObjective(label_key="label")

    def num_train_examples(self):
        return len(self.y)

    def train_dataset(self, ctx, batch_size, seed):
        return (
            tf.data.Dataset.from_tensor_slices((self.x, {"label": self.y}))
            .shuffle(256, seed=seed)
            .repeat()
            .batch(batch_size, drop_remainder=True)
        )

    def evaluate(self, model):
        self.evaluations += 1
        logits = model.predict(self.x, verbose=0)
        return {"accuracy": float(np.mean(np.argmax(logits, -1) == self.y))}

    def settings(self):
        return {"data": "toy"}


@pytest.fixture(scope="module")
def init_dir(tmp_path_factory):
    from official.nlp.modeling.encoder import BertEncoder

    root = tmp_path_factory.mktemp("init")
    vocab = pretraining_records.write_vocab(root / "vocab.txt", VOCAB)
    keras.utils.set_random_seed(1)
    encoder = BertEncoder.from_bert_config(BertConfig(**TINY))
    model_dir.save_model_dir(str(root / "model"), encoder, vocab_file=vocab, do_lower_case=True)
    return str(root / "model")


def _config(init_dir, output_dir, **overrides):
    values = dict(
        output_dir=str(output_dir),
        init_checkpoint=init_dir,
        max_seq_length=SEQ,
        train_batch_size=16,
        learning_rate=1e-3,
        num_train_epochs=2,
        steps_per_loop=3,
        warmup_proportion=0.0,
    )
    values.update(overrides)
    return finetuning_config.FineTuningConfig(**values)


@pytest.fixture(scope="module")
def trained(init_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("toy_run")
    task = ToyTask()
    return out, task, finetuning.run_finetuning(_config(init_dir, out), task)


def test_trains_evaluates_each_epoch_and_keeps_the_best(trained):
    out, task, result = trained
    assert result.step == 24  # int(192 / 16 * 2)
    assert [e["epoch"] for e in result.eval_history] == [1, 2]
    assert [e["step"] for e in result.eval_history] == [12, 24]
    assert result.eval_history[-1]["accuracy"] > 0.9
    text = (out / finetuning_outputs.EVAL_RESULTS_FILE).read_text()
    assert "global_step 12" in text and "global_step 24" in text and "accuracy = " in text
    best = json.loads((out / "best_model" / model_dir.TASK_FILE).read_text())
    assert best["labels"] == ["no", "yes"]
    assert best["evaluation"]["accuracy"] == max(e["accuracy"] for e in result.eval_history)
    assert model_loading.read_model_files(str(out / "best_model")).checkpoint.endswith(
        f"ckpt-{best['evaluation']['step']}"
    )
    events = tf.io.gfile.glob(str(out / "summaries" / "eval" / "events*"))
    assert events


def test_rerun_resumes_without_training_or_evaluating_again(trained, init_dir):
    out, _, result = trained
    task = ToyTask()
    again = finetuning.run_finetuning(_config(init_dir, out), task)
    assert again.step == result.step and task.evaluations == 0
    np.testing.assert_array_equal(again.model.get_weights()[0], result.model.get_weights()[0])


def test_rerun_with_other_flags_is_refused_naming_them(trained, init_dir):
    out, _, _ = trained
    with pytest.raises(InputError, match=r"--learning_rate: 0.001 there, 0.002 now"):
        finetuning.run_finetuning(_config(init_dir, out, learning_rate=2e-3), ToyTask())
    with pytest.raises(InputError, match=r"--labels"):
        finetuning.run_finetuning(_config(init_dir, out), ToyTask(labels=("a", "b")))


def test_fine_tuned_head_with_other_labels_is_refused(trained, init_dir, tmp_path):
    out, _, result = trained
    best = str(out / "best_model")
    with pytest.raises(InputError, match=r"labels \['no', 'yes'\]"):
        finetuning.run_finetuning(_config(best, tmp_path / "a"), ToyTask(labels=("x", "y")))
    # The same labels: evaluation straight from the fine-tuned directory, head included.
    task = ToyTask()
    evaluated = finetuning.run_finetuning(_config(best, tmp_path / "b"), task, do_train=False)
    assert (
        evaluated.eval_history[-1]["accuracy"]
        == json.loads((out / "best_model" / model_dir.TASK_FILE).read_text())["evaluation"]["accuracy"]
    )


def test_a_model_fine_tuned_for_another_task_with_the_same_labels_is_warned_about(trained, tmp_path, caplog):
    """An MRPC best_model evaluated on SST-2 matched the labels 0/1 and gave no notice."""
    out, _, _ = trained
    other = ToyTask()
    other.name = "other_toy"
    with caplog.at_level("WARNING"):
        finetuning.run_finetuning(_config(str(out / "best_model"), tmp_path), other, do_train=False)
    assert "fine-tuned for the task 'toy', and this run is 'other_toy'" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        finetuning.run_finetuning(_config(str(out / "best_model"), tmp_path), ToyTask(), do_train=False)
    assert "fine-tuned for the task" not in caplog.text


def test_predicting_without_a_fine_tuned_model_is_refused(init_dir, tmp_path):
    with pytest.raises(InputError, match="Nothing to evaluate or predict"):
        finetuning.run_finetuning(_config(init_dir, tmp_path), ToyTask(), do_train=False)


def test_a_finished_runs_output_dir_alone_evaluates_and_predicts(trained, init_dir, tmp_path):
    """Issue 40: `--do_predict --output_dir=<a finished run>` said `--bert_config_file is required`, though the folder
    holds the config, vocabulary and case; it now uses the model of the run, as `--init_checkpoint=<it>` does."""
    out, _, result = trained
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    alone = finetuning.run_finetuning(_config(None, copy), ToyTask(), do_train=False)
    named = finetuning.run_finetuning(_config(str(out), tmp_path / "named"), ToyTask(), do_train=False)
    assert alone.eval_history[-1]["accuracy"] == named.eval_history[-1]["accuracy"]
    assert alone.eval_history[-1]["step"] == result.model_evaluation["step"]
    task = ToyTask()
    np.testing.assert_array_equal(alone.model.predict(task.x, verbose=0), named.model.predict(task.x, verbose=0))

    # Without a run there, the message says which flag to add.
    with pytest.raises(InputError, match=r"--init_checkpoint is required: the model to use \(--output_dir=.* holds no"):
        finetuning.run_finetuning(_config(None, tmp_path / "empty"), ToyTask(), do_train=False)
    with pytest.raises(
        InputError, match=r"--init_checkpoint is required: the model to fine-tune, .*--bert_config_file"
    ):
        finetuning.run_finetuning(_config(None, tmp_path / "new"), ToyTask())


def test_eval_points():
    assert finetuning.eval_points(12, 6) == [6, 12]
    assert finetuning.eval_points(15, 6) == [6, 12, 15]  # 2.5 epochs
    assert finetuning.eval_points(3, 6) == [3]
    assert finetuning.eval_points(37, 18) == [18, 37]  # int(300 / 16 * 2): one step of rounding


def test_feature_cache_reuses_same_key_and_rebuilds_another(tmp_path, caplog):
    path = str(tmp_path / "train.tf_record")
    calls = []

    def build(n):
        def records():
            calls.append(n)
            for i in range(n):
                yield {"input_ids": [i, i + 1], "score": [0.5 * i]}

        return records

    assert feature_cache.cached_records(path, {"max_seq_length": 2}, build(3)) == 3
    assert feature_cache.cached_records(path, {"max_seq_length": 2}, build(5)) == 3  # reused
    assert calls == [3]
    assert feature_cache.cached_records(path, {"max_seq_length": 4}, build(5)) == 5  # stale: rebuilt
    assert calls == [3, 5]
    assert "max_seq_length: 2 there, 4 now" in caplog.text
    spec = {"input_ids": tf.io.FixedLenFeature([2], tf.int64), "score": tf.io.FixedLenFeature([1], tf.float32)}
    rows = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(path)]
    assert [r["input_ids"].numpy().tolist() for r in rows][-1] == [4, 5]
    assert rows[-1]["score"].numpy().tolist() == [2.0]
    # A key file without its records (a killed writer) is not a cache.
    os.remove(path)
    assert feature_cache.cached_records(path, {"max_seq_length": 4}, build(2)) == 2


def test_eval_without_training_writes_eval_results(trained, init_dir, tmp_path):
    """As the original: `--do_eval` alone writes eval_results.txt, numbers as the training run reported them for
    the model of the run (its best_model/)."""
    out, _, result = trained
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (copy / finetuning_outputs.EVAL_RESULTS_FILE).unlink()
    evaluated = finetuning.run_finetuning(_config(init_dir, copy), ToyTask(), do_train=False)
    last = evaluated.eval_history[-1]
    best = result.model_evaluation
    assert last["step"] == best["step"] and last["accuracy"] == best["accuracy"]
    text = (copy / finetuning_outputs.EVAL_RESULTS_FILE).read_text()
    assert text.endswith(
        f"***** Eval results: epoch None, global_step {best['step']} *****\naccuracy = {last['accuracy']}\n"
        f"epoch = None\nstep = {best['step']}\n"
    )
    assert text.count("*****") == 2 * 3  # the two training evaluations, then this one
    # From a fine-tuned model directory into a new --output_dir: the file is written there.
    fresh = tmp_path / "fresh"
    finetuning.run_finetuning(_config(str(out / "best_model"), fresh), ToyTask(), do_train=False)
    assert "accuracy = " in (fresh / finetuning_outputs.EVAL_RESULTS_FILE).read_text()


class ServedToyTask(ToyTask):
    """A pair task whose job records serving settings (as a generic pair classifier and SQuAD do)."""

    name = "generic"

    def settings(self):
        return {
            "data": "toy",
            "text_b_column": "b",
            "doc_stride": 3,
            "max_query_length": 4,
            "version_2_with_negative": True,
        }

    def serving_settings(self):
        return {"n_best_size": 5, "max_answer_length": 6, "null_score_diff_threshold": 0.5}


def test_best_model_carries_what_it_is_served_with(init_dir, tmp_path, monkeypatch):
    """Exporting `best_model/` alone gets the job's max_seq_length, pair signature and SQuAD settings."""
    from official.nlp.serving import exporter

    out = tmp_path / "out"
    finetuning.run_finetuning(_config(init_dir, out, num_train_epochs=1), ServedToyTask())
    recorded = json.loads((out / model_dir.SETTINGS_FILE).read_text())
    carried = json.loads((out / "best_model" / model_dir.SETTINGS_FILE).read_text())
    assert carried == {**recorded, "n_best_size": 5, "max_answer_length": 6, "null_score_diff_threshold": 0.5}

    built = {}

    class Built(Exception):
        pass

    def build_export(task, model, **kwargs):
        built[task] = kwargs
        raise Built

    monkeypatch.setattr(exporter, "load_task_model", lambda *args: None)
    monkeypatch.setattr(exporter, "build_export", build_export)
    for task in ("classifier", "squad"):
        with pytest.raises(Built):
            exporter.export_model(task, str(out / "best_model"), str(tmp_path / "export"))
    assert built["classifier"]["max_seq_length"] == SEQ and built["classifier"]["text_pair"] is True
    assert built["classifier"]["label_names"] == ["no", "yes"]
    assert built["squad"]["squad_settings"] == {
        "doc_stride": 3,
        "max_query_length": 4,
        "n_best_size": 5,
        "max_answer_length": 6,
        "version_2_with_negative": True,
        "null_score_diff_threshold": 0.5,
    }


class FirstEpochBestTask(ToyTask):
    """The toy task whose metric says epoch 1 was the best (epoch 2 still changes the weights): the best model is
    not the last one. `predict` returns the logits of the training inputs."""

    metric_name = "score"

    def evaluate(self, model):
        self.evaluations += 1
        self.evaluated = model.predict(self.x, verbose=0)  # what an evaluation that predicts (SQuAD) writes
        return {"score": 1.0 / self.evaluations}

    def predict(self, model):
        return model.predict(self.x, verbose=0)


@dataclasses.dataclass
class JobsConfig(finetuning_config.FineTuningConfig):
    do_train: bool = True
    do_eval: bool = True
    do_predict: bool = True


def _logits_of(directory, task):
    """The logits of the latest checkpoint in `directory`, read into a new model."""
    model = task.build_model(BertEncoder.from_bert_config(BertConfig(**TINY)))
    our_checkpoints.restore_checkpoint(model, tf.train.latest_checkpoint(str(directory)))
    return model.predict(task.x, verbose=0)


@pytest.mark.parametrize("evaluation_predicts", [False, True])
def test_predictions_after_training_are_those_of_best_model(init_dir, tmp_path, caplog, evaluation_predicts):
    """One model per run: --do_predict after --do_train --do_eval predicts with best_model/ (what the export and a
    later --init_checkpoint=<output_dir> load), not with the last weights. Before, it used the last weights; a task
    whose evaluation is its prediction (SQuAD) kept the last epoch's predictions."""
    out = tmp_path / "out"
    task = FirstEpochBestTask()
    config = JobsConfig(**dataclasses.asdict(_config(init_dir, out)))
    # absl's own logger: a script run earlier in the same worker may have left its level at WARNING.
    with caplog.at_level("INFO", logger="absl"):
        run = finetuning.run_task(
            config, lambda files: task, evaluate=(lambda t: True) if evaluation_predicts else None
        )
    assert [e["score"] for e in run.result.eval_history] == [1.0, 0.5]
    assert run.result.model_evaluation["step"] == 12 and run.result.restored_best
    assert "The model of this run is" in caplog.text and "not the last step's (24)" in caplog.text
    best = _logits_of(out / "best_model", task)
    last = _logits_of(out, task)
    assert np.abs(best - last).max() > 1e-3  # epoch 2 moved the weights: the test tells the two apart
    written = task.evaluated if evaluation_predicts else run.predictions
    np.testing.assert_allclose(written, best, atol=1e-6)
    # A job without --do_train on the same --output_dir predicts with the same model.
    again = FirstEpochBestTask()
    rerun = finetuning.run_task(
        JobsConfig(**{**dataclasses.asdict(config), "do_train": False, "do_eval": False}), lambda files: again
    )
    np.testing.assert_allclose(rerun.predictions, best, atol=1e-6)


def test_a_best_model_folder_that_is_not_the_runs_is_refused_before_training(init_dir, tmp_path):
    """Issue 30: the first evaluation replaced whatever `--output_dir/best_model` held."""
    (tmp_path / "out" / "best_model").mkdir(parents=True)
    (tmp_path / "out" / "best_model" / "model.bin").write_bytes(b"the user's")
    task = ToyTask()
    with pytest.raises(InputError, match=r"best_model holds files this run did not write \(model.bin\)"):
        finetuning.run_finetuning(_config(init_dir, tmp_path / "out"), task)
    assert task.evaluations == 0
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")] == [
        "out", "out/best_model", "out/best_model/model.bin"
    ]  # fmt: skip
    assert (tmp_path / "out" / "best_model" / "model.bin").read_bytes() == b"the user's"
