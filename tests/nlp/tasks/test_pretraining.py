"""Pretraining end to end on a tiny config: it learns, mixed precision holds, phase 2 continues from phase 1."""

from __future__ import annotations

import json
import math
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import model_dir, model_loading
from official.nlp.common.errors import InputError
from official.nlp.data.pretraining.record_files import PretrainDataError
from official.nlp.modeling import losses
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier
from official.nlp.tasks.pretraining import PretrainingObjective, build_pretrainer, make_data_loader, run_pretraining
from official.nlp.tasks.pretraining_config import PretrainingConfig
from official.nlp.training import optimization
from tests import pretraining_records

VOCAB = 1000
TINY = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=128,
    max_position_embeddings=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretrain_data")
    pretraining_records.write_records(root / "seq32", num_files=2, per_file=512, seq_length=32, max_predictions=5)
    pretraining_records.write_records(
        root / "seq64", num_files=1, per_file=64, seq_length=64, max_predictions=10, seed=1
    )
    vocab = pretraining_records.write_vocab(root / "vocab.txt", VOCAB)
    config = root / "bert_config.json"
    config.write_text(json.dumps(TINY))
    return root, vocab, str(config)


def _config(data, model_dir, **overrides):
    root, vocab, bert_config = data
    values = dict(
        input_file=str(root / "seq32" / "*.tfrecord"),
        bert_config_file=bert_config,
        vocab_file=vocab,
        do_lower_case=True,
        model_dir=str(model_dir),
        max_seq_length=32,
        max_predictions_per_seq=5,
        train_batch_size=32,
        num_train_steps=200,
        num_warmup_steps=20,
        learning_rate=1e-2,
        steps_per_loop=25,
        save_checkpoints_steps=100,
        # Bias-corrected Adam takes 1e-2 here. The original optimizer's first steps are up to 6.5x
        # larger: at 3e-3 this model does not learn, and at 1.5e-3 it reaches MLM loss 2.81 in 200 steps.
        adam_bias_correction=True,
    )
    values.update(overrides)
    return PretrainingConfig(**values)


@pytest.fixture(scope="module")
def phase1(data, tmp_path_factory):
    return run_pretraining(_config(data, tmp_path_factory.mktemp("phase1")))


def test_objective_matches_the_models_own_losses(data):
    """The loop's pooled loss over a batch is `losses.pretraining_losses`, what BertPretrainer.fit minimizes."""
    config = _config(data, "unused", train_batch_size=8)
    bert_config = BertConfig.from_json_file(config.bert_config_file)
    model = build_pretrainer(bert_config)
    x, y = next(iter(make_data_loader(config, bert_config).load()))
    outputs = model(x)
    objective = PretrainingObjective()
    weights, per_element = objective.loss_weights(y), objective.losses(y, outputs)
    ours = {
        name: float(tf.reduce_sum(per_element[name] * weights[name]) / tf.reduce_sum(weights[name])) for name in weights
    }
    reference = losses.pretraining_losses(y, outputs)
    assert ours["mlm_loss"] == pytest.approx(float(reference["mlm_loss"]), rel=1e-6)
    assert ours["nsp_loss"] == pytest.approx(float(reference["nsp_loss"]), rel=1e-6)
    # Accuracies: what fit reports (Keras' SparseCategoricalAccuracy, weighted by masked_lm_weights).
    metrics = objective.metrics(y, outputs)
    reference = keras.metrics.SparseCategoricalAccuracy()
    reference.update_state(y["masked_lm_ids"], outputs["mlm_logits"], sample_weight=y["masked_lm_weights"])
    assert float(metrics["mlm_accuracy"][0] / metrics["mlm_accuracy"][1]) == pytest.approx(float(reference.result()))
    reference = keras.metrics.SparseCategoricalAccuracy()
    reference.update_state(tf.reshape(y["next_sentence_labels"], [-1]), outputs["nsp_logits"])
    assert float(metrics["nsp_accuracy"][0] / metrics["nsp_accuracy"][1]) == pytest.approx(float(reference.result()))


@pytest.mark.slow
def test_tiny_pretraining_learns(phase1):
    first, last = phase1.history[0], phase1.history[-1]
    # A fresh model predicts uniformly: the masked-LM loss starts at ln(vocab_size).
    assert first["mlm_loss"] == pytest.approx(math.log(VOCAB), abs=0.3)
    assert last["mlm_loss"] < 0.4 * math.log(VOCAB)
    assert last["mlm_accuracy"] > 0.4
    # Next-sentence labels are balanced; the records carry a real signal, which the model picks up.
    assert first["nsp_accuracy"] < 0.6 and last["nsp_accuracy"] > 0.8
    assert phase1.step == 200 and last["learning_rate"] == 0.0
    export = phase1.export_dir
    assert {"bert_config.json", "vocab.txt", "do_lower_case"} <= set(os.listdir(export))
    assert BertConfig.from_json_file(os.path.join(export, "bert_config.json")) == BertConfig(**TINY)


@pytest.mark.slow
def test_phase2_continues_from_the_phase1_export(data, phase1, tmp_path):
    root = data[0]
    # Longer records, a fresh model_dir and optimizer; the encoder starts from phase 1 (config and vocabulary
    # come from its model directory). A learning rate of 0 leaves the weights as loaded.
    config = _config(
        data,
        tmp_path / "phase2",
        input_file=str(root / "seq64" / "*.tfrecord"),
        max_seq_length=64,
        max_predictions_per_seq=10,
        bert_config_file=None,
        vocab_file=None,
        init_checkpoint=phase1.export_dir,
        train_batch_size=8,
        num_train_steps=4,
        num_warmup_steps=0,
        learning_rate=0.0,
        steps_per_loop=4,
    )
    result = run_pretraining(config)
    assert result.step == 4
    # Positions 32-63 were never trained in phase 1, so the loss is higher than at its end, but far from ln(V).
    assert result.history[0]["mlm_loss"] < math.log(VOCAB) - 1.0
    before, after = (tf.train.load_checkpoint(d) for d in (phase1.export_dir, result.export_dir))
    names = [n for n in before.get_variable_to_shape_map() if "encoder" in n and "VARIABLE_VALUE" in n]
    assert len(names) > 20
    for name in names:
        np.testing.assert_array_equal(before.get_tensor(name), after.get_tensor(name), err_msg=name)
    assert os.path.exists(os.path.join(result.export_dir, "vocab.txt"))  # taken over from phase 1


@pytest.mark.slow
@pytest.mark.parametrize("mixed_precision,jit_compile", [("bfloat16", False), ("float16", False), ("float32", True)])
def test_mixed_precision_and_xla_train_without_nan(data, tmp_path, mixed_precision, jit_compile):
    result = run_pretraining(
        _config(
            data,
            tmp_path,
            num_train_steps=40,
            steps_per_loop=20,
            mixed_precision=mixed_precision,
            jit_compile=jit_compile,
            learning_rate=5e-3,
        )
    )
    losses_ = [h["loss"] for h in result.history]
    assert all(np.isfinite(losses_)) and losses_[-1] < losses_[0]
    if mixed_precision == "float16":
        assert result.metrics["nonfinite_steps"] < 5 and result.metrics["loss_scale"] > 1


def test_notebook_fit_with_the_same_loader(data):
    config = _config(data, "unused", train_batch_size=16)
    bert_config = BertConfig.from_json_file(config.bert_config_file)
    model = build_pretrainer(bert_config)
    model.compile(optimizer=optimization.create_optimizer(learning_rate=1e-3, num_train_steps=4))
    history = model.fit(
        make_data_loader(config, bert_config).load(), steps_per_epoch=4, epochs=1, verbose=0, shuffle=False
    )
    assert {"loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy"} <= set(history.history)
    assert np.isfinite(history.history["loss"][-1])


def test_bad_settings_stop_early_with_a_message(data, tmp_path):
    with pytest.raises(
        ValueError,
        match=r"--train_batch_size=30 must divide by replicas \(1\) x "
        r"--gradient_accumulation_steps \(4\)",
    ):
        run_pretraining(_config(data, tmp_path, train_batch_size=30, gradient_accumulation_steps=4))
    with pytest.raises(ValueError, match=r"--learning_rate=-0.001: must be >= 0"):  # the loss would rise
        run_pretraining(_config(data, tmp_path, learning_rate=-1e-3))
    with pytest.raises(ValueError, match=r"--train_batch_size=0: must be >= 1"):
        run_pretraining(_config(data, tmp_path, train_batch_size=0))
    with pytest.raises(PretrainDataError, match="but max_seq_length=64; pass --max_seq_length=32"):
        run_pretraining(_config(data, tmp_path, max_seq_length=64))
    with pytest.raises(InputError, match=r"--max_seq_length=128 exceeds the model's max_position_embeddings \(64\)"):
        run_pretraining(_config(data, tmp_path, max_seq_length=128, input_file=str(data[0] / "seq64" / "*")))
    with pytest.raises(ValueError, match="--bert_config_file is required"):
        run_pretraining(_config(data, tmp_path, bert_config_file=None))
    # Refused at start-up, before --model_dir is touched: a bert_config.json written there would lock the directory
    # to the config of a run that never started.
    assert not os.listdir(tmp_path)


@pytest.mark.slow
def test_running_a_finished_job_again_leaves_its_export_alone(data, phase1):
    """Relaunching a finished job (e.g. the two-phase launcher after a preemption in phase 2) trains nothing and
    must not rewrite the export that the next phase or a fine-tuning job may be reading."""
    config = _config(data, os.path.dirname(phase1.export_dir))
    export = phase1.export_dir
    assert os.path.basename(tf.train.latest_checkpoint(export)) == "ckpt-200"  # the export says its step

    def snapshot():
        return {
            name: (os.stat(os.path.join(export, name)).st_ino, os.stat(os.path.join(export, name)).st_mtime_ns)
            for name in os.listdir(export)
        }

    before = snapshot()
    again = run_pretraining(config)
    assert (again.step, again.history, again.export_dir) == (200, [], export)
    assert snapshot() == before
    # An export that is missing (a job killed after its last checkpoint, before exporting) is written again.
    tf.io.gfile.rmtree(export)
    again = run_pretraining(config)
    assert again.history == [] and os.path.basename(tf.train.latest_checkpoint(export)) == "ckpt-200"
    assert {"bert_config.json", "vocab.txt", "do_lower_case"} <= set(os.listdir(export))


def test_resuming_with_another_config_is_refused(data, phase1):
    bigger = BertConfig(**dict(TINY, num_hidden_layers=3))
    model_dir = os.path.dirname(phase1.export_dir)
    with pytest.raises(ValueError, match="bert_config.json differs from the model config of this run"):
        run_pretraining(_config(data, model_dir, bert_config_file=None, bert_config=bigger))


@pytest.mark.slow
def test_init_checkpoint_takes_a_fine_tuning_output_dir_as_every_script_does(data, tmp_path):
    """`--init_checkpoint` means one thing in every script (`init_checkpoint.resolve_model_files`): a fine-tuning
    job's --output_dir, with its config, case and vocabulary in its settings, gives pretraining its encoder."""
    _, vocab, _ = data
    out = tmp_path / "finetuned"
    classifier = BertClassifier(BertEncoder.from_bert_config(BertConfig(**TINY)), 2)
    model_dir.save_model_dir(str(out), classifier, vocab_file=vocab, do_lower_case=True, checkpoint_number=3)
    (out / model_dir.CONFIG_FILE).unlink()  # a job's output_dir has no model files of its own
    settings = {"task": "toy", "labels": ["0", "1"], "bert_config": TINY, "do_lower_case": True, "vocab_file": vocab}
    (out / model_dir.SETTINGS_FILE).write_text(json.dumps(settings))
    config = _config(
        data,
        tmp_path / "pretrain",
        bert_config_file=None,
        vocab_file=None,
        init_checkpoint=str(out),
        num_train_steps=1,
        num_warmup_steps=0,
        learning_rate=0.0,
        steps_per_loop=1,
    )
    result = run_pretraining(config)
    assert result.step == 1
    # A learning rate of 0 leaves the weights as loaded: the export's encoder is the fine-tuned one.
    exported = model_loading.read_model_files(result.export_dir).build_encoder()
    assert len(exported.weights) == len(classifier.encoder.weights) > 20
    for ours, theirs in zip(exported.weights, classifier.encoder.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)
