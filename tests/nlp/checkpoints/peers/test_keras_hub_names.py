"""Bare keras-hub preset names (`bert_tiny_en_uncased`), as `BertBackbone.from_preset` takes them: looked up in
keras-hub's own registry and read through kagglehub's cache. No network: the cache is laid out by kagglehub's own
cache API from a preset keras-hub's `save_to_preset` wrote, and keras-hub's `from_preset` of the same name, through
the same cache, gives the expected outputs."""

from __future__ import annotations

import os
import shutil

import keras
import keras_hub
import numpy as np
import pytest

from official.nlp.checkpoints import model_loading
from official.nlp.checkpoints.peers import hub_names
from official.nlp.common.errors import InputError, MissingInputError
from tests.run_scripts.script_runs import assert_user_error, run_in_one_process

NAME = "bert_tiny_en_uncased"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "on", "mat", "##s", "."]
IDS = np.array([[2, 5, 7, 9, 10, 5, 11, 3, 0, 0]], np.int32)
MASK = (IDS != 0).astype(np.int32)


@pytest.fixture(scope="module")
def preset(tmp_path_factory) -> str:
    """A small BERT preset written by keras-hub (random weights) standing in for the real bert_tiny_en_uncased."""
    folder = str(tmp_path_factory.mktemp("keras_hub_names") / "preset")
    keras.utils.set_random_seed(3)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCAB), num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
        max_sequence_length=16,
    )  # fmt: skip
    rng = np.random.default_rng(1)
    for weight in backbone.weights:
        weight.assign(rng.normal(0, 0.3, weight.shape).astype(np.float32))
    backbone.save_to_preset(folder)
    keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=True).save_to_preset(folder)
    return folder


@pytest.fixture
def cache(preset, tmp_path, monkeypatch):
    """kagglehub's cache holding `NAME` at the handle keras-hub's registry gives it, file by file with each file
    marked complete, as keras-hub's own `from_preset` leaves it; Kaggle unreachable."""
    from kagglehub import cache
    from kagglehub.handle import parse_model_handle

    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub"))
    monkeypatch.setenv("KAGGLE_API_ENDPOINT", "http://127.0.0.1:9")  # nothing listens
    handle = keras_hub.models.BertBackbone.presets[NAME]["kaggle_handle"]
    model = parse_model_handle(handle.removeprefix("kaggle://"))
    store = cache.Cache()
    shutil.copytree(preset, store.get_path(model))
    for root, _, names in os.walk(preset):
        for name in names:
            store.mark_as_complete(model, os.path.relpath(os.path.join(root, name), preset))
    return store.get_path(model)


def test_a_bare_preset_name_gives_keras_hubs_outputs_for_the_same_name(cache, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert hub_names.resolve(NAME) == cache
    backbone = keras_hub.models.BertBackbone.from_preset(NAME)  # keras-hub's own lookup, through the same cache
    expected = backbone({"token_ids": IDS, "segment_ids": 0 * IDS, "padding_mask": MASK})["sequence_output"]
    files = model_loading.read_model_files(NAME)
    assert files.checkpoint_format == "keras_hub" and files.do_lower_case is True
    ours = files.build_encoder()({"input_word_ids": IDS, "input_mask": MASK, "input_type_ids": 0 * IDS})
    np.testing.assert_allclose(np.asarray(ours["sequence_output"]), np.asarray(expected), atol=1e-5)
    from official.bert import TextClassifier

    classifier = TextClassifier.from_model_dir(NAME, num_classes=2, seq_length=8)  # a new head on the preset
    encoder = classifier.model.encoder({"input_word_ids": IDS, "input_mask": MASK, "input_type_ids": 0 * IDS})
    np.testing.assert_allclose(np.asarray(encoder["sequence_output"]), np.asarray(expected), atol=1e-5)


def test_a_path_that_exists_wins_over_a_preset_name(cache, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    os.mkdir(NAME)
    assert hub_names.resolve(NAME) == NAME  # the local folder, whatever it holds
    assert not hub_names.is_preset_name(NAME)
    (tmp_path / "my_model.index").write_text("")
    assert hub_names.resolve("my_model") == "my_model"  # a checkpoint prefix too
    for path in ("models/bert_base_en_uncased", "bert_model.ckpt", "kaggle://keras/bert/keras/x/1", "hf://a/b"):
        assert not hub_names.is_preset_name(path)


def test_unknown_names_and_network_failures_are_one_line(cache, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MissingInputError, match="not a keras-hub BERT preset name; did you mean bert_tiny_en_uncased"):
        hub_names.resolve("bert_tiny_en_uncasd")
    with pytest.raises(InputError, match="gpt2_base_en: a keras-hub preset of a gpt2 model, not a BERT"):
        hub_names.resolve("gpt2_base_en")
    # A BERT preset not in the cache, Kaggle unreachable: the name, its handle, the cache and the failure.
    handle = keras_hub.models.BertBackbone.presets["bert_small_en_uncased"]["kaggle_handle"]
    with pytest.raises(MissingInputError, match="downloading failed") as e:
        model_loading.read_model_files("bert_small_en_uncased")
    assert str(e.value).startswith(f"bert_small_en_uncased ({handle}): not in the kagglehub cache")
    assert "\n" not in str(e.value)


def test_a_file_cached_without_its_marker_is_not_used(cache):
    """A preset file in the cache without kagglehub's completion marker may be cut short: Kaggle is asked again."""
    with open(os.path.join(cache, "task.json"), "w") as f:
        f.write('{"class_name": "BertTextC')  # a download cut short: the file, without its marker
    with pytest.raises(MissingInputError, match=r"not in the kagglehub cache .* downloading failed"):
        hub_names.resolve(NAME)


@pytest.mark.slow
def test_convert_checkpoint_takes_a_preset_name(cache, monkeypatch, tmp_path):
    out = tmp_path / "out"
    results = run_in_one_process(  # both runs in one process: TensorFlow is imported once
        {
            "name": ("convert_checkpoint.py", [f"--input={NAME}", f"--output_dir={out}"]),
            "misspelt": ("convert_checkpoint.py", ["--input=bert_tiny_en_uncasd", f"--output_dir={tmp_path / 'o'}"]),
        }
    )
    assert results["name"].returncode == 0, results["name"].stderr[-3000:]
    assert (out / "bert_config.json").exists() and (out / "vocab.txt").read_text().split() == VOCAB
    assert_user_error(
        results["misspelt"], "bert_tiny_en_uncasd: no such file or folder", "did you mean bert_tiny_en_uncased"
    )
    assert not (tmp_path / "o").exists()
