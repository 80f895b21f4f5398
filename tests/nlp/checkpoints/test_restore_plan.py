"""`restore_plan.plan_restore`: each kind of source gives the plan it should, and `apply` loads what the plan says."""

from __future__ import annotations

import json
import shutil

import keras
import numpy as np
import pytest

from official.nlp.checkpoints import init_checkpoint, model_dir, model_loading, restore_plan
from official.nlp.checkpoints.peers import hf_weights, tf1_checkpoints
from official.nlp.checkpoints.restore_plan import FINE_TUNED, PRETRAINED, PRETRAINING, RESUME, SCRATCH, Head
from official.nlp.common.errors import InputError
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier, BertPretrainer
from tests import pretraining_records

VOCAB = 200
CONFIG = BertConfig(
    vocab_size=VOCAB,
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=16,
)
LABELS = ("no", "yes")
CLASSIFIER = Head("classifier", LABELS, "toy")


def _seeded(model, seed):
    rng = np.random.default_rng(seed)
    for w in model.weights:
        w.assign(rng.normal(size=w.shape).astype("float32"))
    return model


def _classifier(seed=None):
    model = BertClassifier(BertEncoder.from_bert_config(CONFIG), len(LABELS))
    return model if seed is None else _seeded(model, seed)


def _same(a, b):
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a, b))


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """One model directory, fine-tuned directory, TF1 prefix (with and without heads) and Hugging Face folder."""
    root = tmp_path_factory.mktemp("sources")
    vocab = pretraining_records.write_vocab(root / "vocab.txt", VOCAB)
    keras.utils.set_random_seed(0)
    pretrainer = _seeded(BertPretrainer(BertEncoder.from_bert_config(CONFIG)), 1)
    paths = {"pretrainer": pretrainer, "vocab": vocab}

    paths["ours"] = str(root / "ours")
    model_dir.save_model_dir(paths["ours"], pretrainer.encoder, vocab_file=vocab, do_lower_case=True)
    paths["ours_heads"] = str(root / "ours_heads")
    model_dir.save_model_dir(paths["ours_heads"], pretrainer, vocab_file=vocab, do_lower_case=True)

    fine_tuned = _classifier(seed=2)
    paths["fine_tuned_model"] = fine_tuned
    paths["fine_tuned"] = str(root / "best_model")
    model_dir.export_model_dir(fine_tuned, paths["fine_tuned"], vocab_file=vocab, do_lower_case=True, step=5)
    (root / "best_model" / model_dir.TASK_FILE).write_text(
        json.dumps(
            {"task": "toy", "head": "classifier", "labels": list(LABELS), "metric": "accuracy", "evaluation": {}}
        )
    )

    for name, model in (("tf1", pretrainer), ("tf1_encoder", pretrainer.encoder)):
        folder = root / name
        folder.mkdir()
        tf1_checkpoints.write_tf1_checkpoint(str(folder / "bert_model.ckpt"), tf1_checkpoints.export_weights(model))
        CONFIG.to_json_file(folder / "bert_config.json")
        shutil.copy(vocab, folder / "vocab.txt")
        paths[name] = str(folder / "bert_model.ckpt")

    from safetensors.numpy import save_file

    for name, model in (("hf", pretrainer.encoder), ("hf_heads", pretrainer)):
        folder = root / name
        folder.mkdir()
        tensors = {}
        for tf1_name, value in tf1_checkpoints.export_weights(model).items():
            key = hf_weights.tf1_name_to_hf(tf1_name)
            tensors[key] = np.ascontiguousarray(value.T if hf_weights.hf_name_to_tf1(key)[1] else value)
        save_file(tensors, str(folder / "model.safetensors"))
        CONFIG.to_json_file(folder / "config.json")
        shutil.copy(vocab, folder / "vocab.txt")
        paths[name] = str(folder)
    return paths


def _plan(init, output_dir, head=CLASSIFIER, **kwargs):
    files = model_loading.read_model_files(
        init, do_lower_case=True, bert_config=None if init else CONFIG, require_vocab=False
    )
    return restore_plan.plan_restore(files, init_checkpoint=init, output_dir=str(output_dir), head=head, **kwargs)


def test_no_init_checkpoint_is_scratch_and_refused_for_inference(tmp_path):
    plan = _plan(None, tmp_path)
    assert (plan.source, plan.checkpoint, plan.fresh) == (SCRATCH, None, ("encoder", "classifier"))
    with pytest.raises(InputError, match="Nothing to evaluate or predict with: .* fine-tuned for toy"):
        _plan(None, tmp_path, inference=True)


@pytest.mark.parametrize("kind, fmt", [("ours", "ours"), ("tf1", "tf1"), ("tf1_encoder", "tf1"), ("hf", "hf")])
def test_a_pretrained_checkpoint_gives_the_encoder_and_a_fresh_head(sources, tmp_path, kind, fmt):
    plan = _plan(sources[kind], tmp_path / "out")
    assert (plan.source, plan.checkpoint_format, plan.head_restored, plan.fresh) == (
        PRETRAINED,
        fmt,
        False,
        ("classifier",),
    )
    model = _classifier(seed=3)
    head = [w.numpy().copy() for w in model.classifier.weights]
    plan.apply(model)
    assert _same(model.encoder.weights, sources["pretrainer"].encoder.weights)
    assert _same(model.classifier.weights, head)
    # Not a fine-tuned model: nothing to evaluate with.
    with pytest.raises(InputError, match="Nothing to evaluate or predict with"):
        _plan(sources[kind], tmp_path / "out", inference=True)


@pytest.mark.parametrize(
    "kind, heads",
    [("tf1", True), ("tf1_encoder", False), ("ours", False), ("ours_heads", True), ("hf", False), ("hf_heads", True)],
)
def test_pretraining_restores_the_heads_where_the_checkpoint_has_them(sources, tmp_path, kind, heads):
    plan = _plan(sources[kind], tmp_path / "model_dir", head=PRETRAINING)
    assert (plan.source, plan.head_restored) == (PRETRAINED, heads)
    assert plan.fresh == (() if heads else ("pretraining",))
    model = _seeded(BertPretrainer(BertEncoder.from_bert_config(CONFIG)), 4)
    plan.apply(model)
    assert _same(model.encoder.weights, sources["pretrainer"].encoder.weights)
    assert _same(model.masked_lm.weights, sources["pretrainer"].masked_lm.weights) == heads


@pytest.mark.parametrize("inference", [False, True])
def test_a_fine_tuned_directory_for_the_same_head_gives_every_weight(sources, tmp_path, inference):
    plan = _plan(sources["fine_tuned"], tmp_path / "out", inference=inference)
    assert (plan.source, plan.head_restored, plan.fresh) == (FINE_TUNED, True, ())
    assert plan.checkpoint.endswith("ckpt-5")
    model = _classifier(seed=3)
    plan.apply(model)
    assert _same(model.weights, sources["fine_tuned_model"].weights)


@pytest.mark.parametrize("head", [Head("classifier", ("a", "b"), "rte"), Head("token_classifier", LABELS, "ner")])
def test_a_fine_tuned_directory_for_another_head_is_refused(sources, tmp_path, head):
    with pytest.raises(
        InputError,
        match=r"holds a fine-tuned classifier head for the labels \['no', 'yes'\] "
        r"\(task 'toy'\); this task needs a \w+ head",
    ):
        _plan(sources["fine_tuned"], tmp_path / "out", head=head)


def test_the_jobs_own_checkpoint_is_resumed_before_any_init_checkpoint(sources, tmp_path):
    out = tmp_path / "out"
    trained = _classifier(seed=6)
    model_dir.save_model_dir(str(out), trained, vocab_file=None, do_lower_case=None, checkpoint_number=3)
    for init in (sources["ours"], sources["fine_tuned"]):
        plan = _plan(init, out)
        assert (plan.source, plan.head_restored, plan.fresh) == (RESUME, True, ())
        assert plan.checkpoint.endswith("ckpt-3")
    # An inference job reads the labels the run recorded; the same labels restore the trained model.
    (out / model_dir.SETTINGS_FILE).write_text(json.dumps({"labels": list(LABELS)}))
    model = _classifier(seed=7)
    _plan(sources["ours"], out, inference=True).apply(model)
    assert _same(model.weights, trained.weights)
    with pytest.raises(InputError, match=r"was trained for the labels \['no', 'yes'\], not \['a', 'b'\]"):
        _plan(sources["ours"], out, head=Head("classifier", ("a", "b"), "rte"), inference=True)


def test_task_and_settings_files_are_read_beside_a_prefix(sources, tmp_path):
    found = model_dir.read_task_file(sources["fine_tuned"])
    assert found["labels"] == list(LABELS)
    prefix = model_loading.read_model_files(sources["fine_tuned"]).checkpoint
    assert model_dir.read_task_file(prefix) == found
    assert model_dir.read_task_file(sources["ours"]) is None and model_dir.read_task_file(None) is None
    assert model_dir.read_settings_file(str(tmp_path)) is None


def test_an_output_directory_stands_for_the_model_it_trained(sources, tmp_path):
    """A fine-tuning --output_dir as --init_checkpoint (issue 22): its latest checkpoint, read with the config, case
    and vocabulary its settings recorded, gives every weight to a job of its task; a best_model/ in it comes first."""
    out = tmp_path / "out"
    trained = _classifier(seed=8)
    model_dir.save_model_dir(str(out), trained, vocab_file=None, do_lower_case=None, checkpoint_number=4)
    (out / model_dir.CONFIG_FILE).unlink()  # a job's output_dir has no model files of its own
    settings = {
        "task": "toy",
        "labels": list(LABELS),
        "bert_config": CONFIG.to_dict(),
        "do_lower_case": True,
        "vocab_file": None,
        "init_checkpoint": sources["ours"],
    }
    (out / model_dir.SETTINGS_FILE).write_text(json.dumps(settings))
    files = init_checkpoint.resolve_model_files(str(out))
    assert (files.config, files.do_lower_case, files.checkpoint) == (CONFIG, True, str(out / "ckpt-4"))
    assert files.vocab_file == model_loading.read_model_files(sources["ours"]).vocab_file
    assert init_checkpoint.fine_tuned_head(str(out)) == {"task": "toy", "head": None, "labels": list(LABELS)}
    # One of its checkpoint prefixes is read the same way.
    assert init_checkpoint.resolve_model_files(str(out / "ckpt-4")) == files
    assert init_checkpoint.fine_tuned_head(str(out / "ckpt-4"))["task"] == "toy"
    plan = restore_plan.plan_restore(
        files, init_checkpoint=str(out), output_dir=str(tmp_path / "next"), head=CLASSIFIER, inference=True
    )
    assert (plan.source, plan.head_restored) == (FINE_TUNED, True)
    model = _classifier(seed=3)
    plan.apply(model)
    assert _same(model.weights, trained.weights)
    with pytest.raises(InputError, match=r"task 'toy'\); this task needs a classifier head"):
        restore_plan.plan_restore(
            files, init_checkpoint=str(out), output_dir=str(tmp_path / "next"), head=Head("classifier", LABELS, "other")
        )
    # With a best_model/ (the job evaluated), that is what the output directory stands for.
    shutil.copytree(sources["fine_tuned"], out / model_dir.BEST_MODEL_DIR)
    assert init_checkpoint.locate(str(out)) == str(out / model_dir.BEST_MODEL_DIR)
    assert init_checkpoint.resolve_model_files(str(out)).checkpoint.endswith("best_model/ckpt-5")
    assert init_checkpoint.fine_tuned_head(str(out))["head"] == "classifier"
