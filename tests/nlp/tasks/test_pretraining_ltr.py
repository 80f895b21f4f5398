"""`run_pretraining --objective=ltr`, the paper's left-to-right LM baseline: the next-token loss checked by hand, a
tiny run that learns, writes a left-to-right model directory and resumes, and the combinations it refuses."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import conversion, model_loading
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.common.errors import InputError
from official.nlp.modeling import losses
from official.nlp.modeling.configs import BertConfig
from official.nlp.serving import exporter
from official.nlp.tasks.pretraining import PretrainingObjective, build_pretrainer, make_data_loader, run_pretraining
from official.nlp.tasks.pretraining_config import PretrainingConfig
from tests import pretraining_records

VOCAB = 1000
SEQ = 32
TINY = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=128,
    max_position_embeddings=64,
)


def _original_ids(examples):
    """The tokens before masking, put back by hand from what make_examples kept: each prediction's label."""
    ids = np.stack([e["input_ids"] for e in examples])
    for row, e in enumerate(examples):
        real = e["masked_lm_weights"] > 0
        ids[row, e["masked_lm_positions"][real]] = e["masked_lm_ids"][real]
    return ids


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Masked records (the MLM ones, with NSP labels) and the same sequences unmasked, without masked_lm_*."""
    root = tmp_path_factory.mktemp("ltr_data")
    pretraining_records.write_records(root / "masked", num_files=1, per_file=256, seq_length=SEQ, max_predictions=5)
    examples = pretraining_records.make_examples(256, seq_length=SEQ, max_predictions=5, seed=0)
    original = _original_ids(examples)
    (root / "plain").mkdir()
    with tf.io.TFRecordWriter(str(root / "plain" / "part-000.tfrecord")) as writer:
        for e, ids in zip(examples, original):
            writer.write(
                pretraining_records.serialize({**{k: e[k] for k in ("input_mask", "segment_ids")}, "input_ids": ids})
            )
    vocab = pretraining_records.write_vocab(root / "vocab.txt", VOCAB)
    (root / "bert_config.json").write_text(json.dumps(TINY))  # bidirectional: --objective=ltr makes it causal
    return root, vocab, examples, original


def _config(data, model_dir, **overrides):
    root, vocab, _, _ = data
    values = dict(
        input_file=str(root / "masked" / "*.tfrecord"),
        bert_config_file=str(root / "bert_config.json"),
        vocab_file=vocab,
        do_lower_case=True,
        model_dir=str(model_dir),
        max_seq_length=SEQ,
        max_predictions_per_seq=5,
        train_batch_size=16,
        num_train_steps=30,
        num_warmup_steps=3,
        learning_rate=1e-2,
        adam_bias_correction=True,
        steps_per_loop=10,
        save_checkpoints_steps=10,
        shuffle_buffer_size=64,
        objective="ltr",
        use_next_sentence_label=False,
        # The shared loop's options, on for the LTR objective: accumulation over 2 micro-batches.
        gradient_accumulation_steps=2,
        deterministic=True,
    )
    values.update(overrides)
    return PretrainingConfig(**values)


def test_the_loss_is_the_next_token_cross_entropy_over_real_positions(data):
    """Both kinds of records give the original tokens; the loop's loss and accuracy are the numpy next-token cross
    entropy of the model's logits, over the positions whose next token is real."""
    root, _, examples, original = data
    bert_config = BertConfig(**TINY, attention="left_to_right")
    batches = {}
    for kind in ("masked", "plain"):
        config = _config(data, "unused", input_file=str(root / kind / "*"), train_batch_size=8, shuffle_buffer_size=0)
        batches[kind] = next(iter(make_data_loader(config, bert_config).load()))
    x, y = batches["masked"]
    assert sorted(x) == ["input_mask", "input_type_ids", "input_word_ids"]
    mask = np.stack([e["input_mask"] for e in examples[:8]])
    np.testing.assert_array_equal(x["input_word_ids"], original[:8])
    for name in x:
        np.testing.assert_array_equal(x[name], batches["plain"][0][name])
    for name in y:
        np.testing.assert_array_equal(y[name], batches["plain"][1][name])

    model = build_pretrainer(bert_config)
    logits = np.asarray(model(x)["ltr_logits"], np.float64)
    log_probs = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True))
    log_probs -= logits.max(-1, keepdims=True)
    terms, hits = [], []
    for b in range(8):
        for i in range(SEQ - 1):
            if mask[b, i + 1]:  # the next token is real (and so is this one)
                terms.append(-log_probs[b, i, original[b, i + 1]])
                hits.append(logits[b, i].argmax() == original[b, i + 1])
    assert len(terms) == mask.sum() - 8  # every real token but the last of each row predicts the next one
    objective = PretrainingObjective(use_next_sentence_label=False, objective="ltr")
    weights, per_element = objective.loss_weights(y)["ltr_loss"], objective.losses(y, model(x))["ltr_loss"]
    assert float(np.sum(per_element * weights) / np.sum(weights)) == pytest.approx(np.mean(terms), rel=1e-5)
    assert float(losses.ltr_losses(y, model(x))["ltr_loss"]) == pytest.approx(np.mean(terms), rel=1e-5)
    correct, count = objective.metrics(y, model(x))["ltr_accuracy"]
    assert (float(correct), float(count)) == (sum(hits), len(terms))


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("ltr_run")
    return model_dir, run_pretraining(_config(data, model_dir))


@pytest.mark.slow
def test_a_tiny_run_learns_and_writes_a_left_to_right_model_directory(trained):
    model_dir, result = trained
    first, last = result.history[0], result.history[-1]
    assert sorted(k for k in last if k.startswith(("ltr", "mlm", "nsp"))) == ["ltr_accuracy", "ltr_loss"]
    # A fresh model predicts uniformly: ln(vocab_size) = 6.9. Measured: 6.75, 5.71, 5.07 at steps 10, 20, 30.
    curve = [h["ltr_loss"] for h in result.history]
    assert curve == sorted(curve, reverse=True) and first["ltr_loss"] < math.log(VOCAB) + 0.3
    assert last["ltr_loss"] < math.log(VOCAB) - 1.5 and last["ltr_accuracy"] > first["ltr_accuracy"]
    for folder in (model_dir, result.export_dir):
        config = json.loads(
            (folder / "bert_config.json").read_text()
            if folder == model_dir
            else open(os.path.join(folder, "bert_config.json")).read()
        )
        assert config["attention"] == "left_to_right"
    assert model_loading.read_model_files(result.export_dir).config == BertConfig(**TINY, attention="left_to_right")
    assert json.loads((model_dir / "pretraining_settings.json").read_text())["objective"] == "ltr"
    tags = {
        value.tag
        for path in tf.io.gfile.glob(str(model_dir / "summaries" / "events*"))
        for event in tf.compat.v1.train.summary_iterator(path)
        for value in event.summary.value
    }
    assert {"ltr_loss", "ltr_accuracy", "loss"} <= tags


@pytest.mark.slow
def test_an_interrupted_run_resumes_where_it_stopped(data, trained):
    """The last checkpoint's files lost: the same command resumes from step 20 and ends where the uninterrupted
    run did (the input position and the dropout streams are in the checkpoint)."""
    model_dir, result = trained
    for path in tf.io.gfile.glob(str(model_dir / "ckpt-30*")):
        tf.io.gfile.remove(path)
    resumed = run_pretraining(_config(data, model_dir))
    assert [h["step"] for h in resumed.history] == [30]
    for name in ("ltr_loss", "ltr_accuracy"):
        assert resumed.history[-1][name] == pytest.approx(result.history[-1][name], rel=1e-6)


def test_what_cannot_be_trained_is_refused_before_any_work(data, tmp_path):
    root, vocab, _, _ = data
    fresh = tmp_path / "fresh"
    with pytest.raises(InputError, match="^--objective=ltr trains a left-to-right LM without next sentence"):
        run_pretraining(_config(data, fresh, use_next_sentence_label=True))
    with pytest.raises(InputError, match="^--dynamic_masking draws masks for --objective=mlm"):
        run_pretraining(_config(data, fresh, dynamic_masking=True))
    bidirectional, left_to_right = str(tmp_path / "bidirectional"), str(tmp_path / "left_to_right")
    for path, config in (
        (bidirectional, BertConfig(**TINY)),
        (left_to_right, BertConfig(**TINY, attention="left_to_right")),
    ):
        model = build_pretrainer(config)  # with its heads: a pretraining export
        model_dir_lib.save_model_dir(path, model, vocab_file=vocab, do_lower_case=True)
    with pytest.raises(
        InputError,
        match=r"^--objective=ltr cannot start from --init_checkpoint=.*bidirectional, a bidirectional model .*; "
        r"start from scratch or from a left-to-right model directory$",
    ):
        run_pretraining(_config(data, fresh, bert_config_file=None, init_checkpoint=bidirectional))
    mlm = dict(objective="mlm", use_next_sentence_label=True, gradient_accumulation_steps=1)
    with pytest.raises(
        InputError, match="^--objective=mlm cannot start from .* a left-to-right model .*--objective=ltr"
    ):
        run_pretraining(_config(data, fresh, bert_config_file=None, init_checkpoint=left_to_right, **mlm))
    ltr_config = tmp_path / "ltr_config.json"
    BertConfig(**TINY, attention="left_to_right").to_json_file(ltr_config)
    with pytest.raises(InputError, match="^--objective=mlm trains a bidirectional model, but --bert_config_file="):
        run_pretraining(_config(data, fresh, bert_config_file=str(ltr_config), **mlm))
    assert not fresh.exists()  # refused before --model_dir is touched
    # The original TF1 code has no causal attention: a left-to-right model has no TF1 form.
    with pytest.raises(InputError, match="a left-to-right model .* has no TF1 form"):
        conversion.convert_checkpoint(left_to_right, str(tmp_path / "tf1"), output_format="tf1")
    assert not (tmp_path / "tf1").exists()
    with pytest.raises(InputError, match="is a left-to-right LM; --task=pretrainer serves the masked LM"):
        exporter.export_model("pretrainer", left_to_right, str(tmp_path / "export"))
