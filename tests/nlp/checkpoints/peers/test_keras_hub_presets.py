"""keras-hub preset folders both ways, against keras-hub's own code: the fixture is a random `BertBackbone` saved
with keras-hub's `save_to_preset`, its forward pass gives the expected outputs, and a preset we write must load
with `BertBackbone.from_preset` and give our outputs back. Also `kaggle://` handles through kagglehub's cache
(filled with kagglehub's own cache API, no network)."""

from __future__ import annotations

import os

import keras
import keras_hub
import numpy as np
import pytest

from official.nlp.checkpoints import conversion, model_loading
from official.nlp.checkpoints.peers import hub_names, keras_hub_export, keras_hub_presets
from official.nlp.common.errors import InputError, MissingInputError
from tests.run_scripts.script_runs import assert_user_error, run_in_one_process

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "on", "mat", "##s", "."]
IDS = np.array([[2, 5, 7, 9, 10, 5, 11, 3, 0, 0], [2, 6, 8, 12, 3, 5, 7, 3, 0, 0]], np.int32)
SEGMENTS = np.array([[0] * 10, [0, 0, 0, 0, 0, 1, 1, 1, 0, 0]], np.int32)
MASK = (IDS != 0).astype(np.int32)


def _keras_hub_outputs(backbone) -> tuple[np.ndarray, np.ndarray]:
    out = backbone({"token_ids": IDS, "segment_ids": SEGMENTS, "padding_mask": MASK}, training=False)
    return np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"])


def _our_outputs(encoder) -> tuple[np.ndarray, np.ndarray]:
    out = encoder({"input_word_ids": IDS, "input_mask": MASK, "input_type_ids": SEGMENTS}, training=False)
    return np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"])


@pytest.fixture(scope="module")
def preset(tmp_path_factory) -> tuple[str, tuple[np.ndarray, np.ndarray]]:
    """A keras-hub preset written by keras-hub (random weights, every bias and norm too) and its own outputs."""
    folder = str(tmp_path_factory.mktemp("keras_hub") / "preset")
    keras.utils.set_random_seed(7)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCAB), num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
        max_sequence_length=24, num_segments=2,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    for weight in backbone.weights:
        weight.assign(rng.normal(0, 0.3, weight.shape).astype(np.float32))
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=True)
    backbone.save_to_preset(folder)
    tokenizer.save_to_preset(folder)
    keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=10).save_to_preset(folder)
    return folder, _keras_hub_outputs(backbone)


def test_a_keras_hub_preset_folder_gives_keras_hub_outputs(preset):
    folder, (sequence, pooled) = preset
    files = model_loading.read_model_files(folder)
    assert files.checkpoint_format == "keras_hub" and files.do_lower_case is True
    assert files.vocab_file == os.path.join(folder, keras_hub_presets.PRESET_VOCAB_FILE)
    assert files.config.hidden_act == "gelu" and files.config.max_position_embeddings == 24
    ours = _our_outputs(files.build_encoder())
    np.testing.assert_allclose(ours[0], sequence, atol=1e-5)
    np.testing.assert_allclose(ours[1], pooled, atol=1e-5)
    model, loaded = model_loading.load_model(folder)
    np.testing.assert_allclose(_our_outputs(model)[0], sequence, atol=1e-5)
    assert loaded.do_lower_case is True


def test_a_preset_we_write_loads_in_keras_hub_and_gives_our_outputs(preset, tmp_path):
    """preset -> our model directory -> preset -> keras-hub: the same numbers all the way."""
    folder, (sequence, pooled) = preset
    model_dir = tmp_path / "ours"
    conversion.convert(conversion.ConversionConfig(input=folder, output_dir=str(model_dir)))
    back = tmp_path / "back"
    written = conversion.convert(
        conversion.ConversionConfig(input=str(model_dir), output_dir=str(back), output_format="keras_hub")
    )
    assert written == model_loading.read_model_files(str(back))  # what was written, as every format returns it
    backbone = keras_hub.models.BertBackbone.from_preset(str(back))
    again = _keras_hub_outputs(backbone)
    np.testing.assert_allclose(again[0], sequence, atol=1e-5)
    np.testing.assert_allclose(again[1], pooled, atol=1e-5)
    tokenizer = keras_hub.models.BertTokenizer.from_preset(str(back))
    assert tokenizer.get_vocabulary() == VOCAB and tokenizer.lowercase
    assert np.asarray(tokenizer("The CATs")).tolist() == [5, 7, 12]
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(str(back))
    assert preprocessor.sequence_length == 24


def test_a_model_keras_hub_cannot_hold_is_refused(tmp_path):
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder

    config = BertConfig(vocab_size=14, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, hidden_act="gelu_exact")  # fmt: skip
    with pytest.raises(InputError, match=r"hidden_act='gelu_exact'.*--output_format=ours or hf"):
        keras_hub_export.write_preset(BertEncoder.from_bert_config(config), str(tmp_path / "p"), vocab_file=None,
                                      do_lower_case=None)  # fmt: skip
    assert not (tmp_path / "p").exists()


def _copy(folder: str, target) -> str:
    import shutil

    shutil.copytree(folder, target)
    return str(target)


def test_bad_preset_folders_are_one_line(preset, tmp_path):
    folder, _ = preset
    wrong = _copy(folder, tmp_path / "wrong")
    config = os.path.join(wrong, "config.json")
    with open(config) as f:
        text = f.read()
    with open(config, "w") as f:
        f.write(text.replace('"class_name": "BertBackbone"', '"class_name": "GPT2Backbone"'))
    with pytest.raises(InputError, match="describes a 'GPT2Backbone', not a keras-hub BertBackbone"):
        model_loading.read_model_files(wrong)
    no_vocab = _copy(folder, tmp_path / "no_vocab")
    os.remove(os.path.join(no_vocab, keras_hub_presets.PRESET_VOCAB_FILE))
    with pytest.raises(MissingInputError, match="has no assets/tokenizer/vocabulary.txt"):
        model_loading.read_model_files(no_vocab)
    not_h5 = _copy(folder, tmp_path / "not_h5")
    with open(os.path.join(not_h5, "model.weights.h5"), "w") as f:
        f.write("not weights")
    with pytest.raises(InputError, match="is not a readable HDF5 weights file, or is truncated"):
        model_loading.load_model(not_h5)


@pytest.mark.slow
def test_convert_checkpoint_reads_and_writes_presets_and_names_a_truncated_one(preset, tmp_path):
    folder, (sequence, _) = preset
    ours, back = tmp_path / "ours", tmp_path / "back"
    results = run_in_one_process(  # both ways in one process, the refusals in a second: TensorFlow imported twice
        {
            "ours": ("convert_checkpoint.py", [f"--input={folder}", f"--output_dir={ours}"]),
            "back": ("convert_checkpoint.py", [f"--input={ours}", f"--output_dir={back}", "--output_format=keras_hub"]),
        }
    )
    for result in results.values():
        assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_allclose(
        _keras_hub_outputs(keras_hub.models.BertBackbone.from_preset(str(back)))[0], sequence, atol=1e-5
    )
    weights = back / "model.weights.h5"
    weights.write_bytes(weights.read_bytes()[:-3000])
    results = run_in_one_process(
        {
            "truncated": ("convert_checkpoint.py", [f"--input={back}", f"--output_dir={tmp_path / 'out'}"]),
            "missing": ("convert_checkpoint.py", [f"--input={tmp_path / 'missing'}", f"--output_dir={tmp_path / 'o'}"]),
        }
    )
    assert_user_error(
        results["truncated"], f"{weights} is not a readable HDF5 weights file, or is truncated", "copy or download"
    )
    assert_user_error(results["missing"], f"{tmp_path / 'missing'}")
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()


# ---------------------------------------------------------------------------------------------------------------
# kaggle:// handles


def test_kaggle_names_are_parsed_and_bad_ones_refused():
    assert hub_names.parse_kaggle("kaggle://keras/bert/keras/bert_tiny_en_uncased/2") == (
        "keras/bert/keras/bert_tiny_en_uncased/2",
        2,
    )
    assert hub_names.parse_kaggle("kaggle://keras/bert/keras/bert_tiny_en_uncased")[1] is None
    for bad in ("kaggle://keras/bert", "kaggle://keras/bert/keras/x/latest", "kaggle://a//b/c"):
        with pytest.raises(InputError, match="not a Kaggle model handle"):
            hub_names.parse_kaggle(bad)
    assert hub_names.resolve("/a/local/folder") == "/a/local/folder"


def test_a_warm_kagglehub_cache_works_without_network_and_a_cold_one_is_one_line(preset, tmp_path, monkeypatch):
    from kagglehub import cache
    from kagglehub.handle import parse_model_handle

    folder, (sequence, _) = preset
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub"))
    monkeypatch.setenv("KAGGLE_API_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: no network either way
    handle = "keras/bert/keras/bert_test_en_uncased/3"
    store = cache.Cache()
    _copy(folder, store.get_path(parse_model_handle(handle)))
    store.mark_as_complete(parse_model_handle(handle))
    assert hub_names.kaggle_cache_folder(handle) == store.get_path(parse_model_handle(handle))
    files = model_loading.read_model_files(f"kaggle://{handle}")
    np.testing.assert_allclose(_our_outputs(files.build_encoder())[0], sequence, atol=1e-5)
    # A partial download (no completion marker) is never used.
    partial = "keras/bert/keras/bert_test_en_uncased/4"
    _copy(folder, store.get_path(parse_model_handle(partial)))
    with pytest.raises(MissingInputError, match=r"not in the kagglehub cache .* downloading failed") as e:
        model_loading.read_model_files(f"kaggle://{partial}")
    assert "\n" not in str(e.value)
