"""TF-Hub/Kaggle BERT SavedModels both ways, against the Model Garden's own code: the fixtures in
`data/tf_hub/` are a random Model Garden `BertEncoder` written by its `export_tfhub` (with the masked-LM head) and
its preprocessing model, with their outputs on real sentences (`make_fixtures.py`, run with tf-models-official
2.20.0). Ours must give those outputs to 1e-5 and tokenize as the preprocessing model does; the TF-Hub pair we write
from the converted model must serve, in a process without this library, what our model and the peer give."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from official.bert import TextClassifier
from official.nlp.checkpoints import conversion, init_checkpoint, model_dir, model_loading
from official.nlp.checkpoints.peers import tf_hub_saved_models
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertPretrainer
from official.nlp.serving import exporter
from official.nlp.tokenizers.text_layers import BertTokenizer
from tests.run_scripts.script_runs import assert_user_error, run_in_one_process

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE / "data" / "tf_hub"
ENCODER, PREPROCESSING = str(FIXTURES / "encoder"), str(FIXTURES / "preprocessing")
EXPECTED = dict(np.load(FIXTURES / "expected.npz"))
TEXTS = [str(t) for t in EXPECTED["texts"]]
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
INPUTS = {name: EXPECTED[name] for name in INPUT_NAMES}


def _outputs(encoder, inputs=INPUTS) -> dict[str, np.ndarray]:
    out = encoder(inputs, training=False)
    return {
        "sequence_output": np.asarray(out["sequence_output"]),
        "pooled_output": np.asarray(out["pooled_output"]),
        "encoder_outputs": np.stack([np.asarray(x) for x in out["encoder_outputs"]]),
    }


def _assert_peer_outputs(outputs: dict[str, np.ndarray]) -> None:
    for name in ("sequence_output", "pooled_output", "encoder_outputs"):
        np.testing.assert_allclose(outputs[name], EXPECTED[name], atol=1e-5, err_msg=name)


def test_the_encoder_gives_the_peers_outputs():
    files = model_loading.read_model_files(ENCODER)
    assert files.checkpoint_format == "tf_hub" and files.do_lower_case is True
    assert files.vocab_file == os.path.join(ENCODER, "assets", "vocab.txt")
    config = files.config
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (
        840, 32, 2, 2
    )  # fmt: skip
    assert (config.intermediate_size, config.max_position_embeddings, config.hidden_act) == (64, 64, "gelu")
    assert np.abs(EXPECTED["pooled_output"]).max() > 0.1  # the random weights give outputs worth comparing
    _assert_peer_outputs(_outputs(files.build_encoder()))


def test_init_checkpoint_and_from_model_dir_take_it():
    """What every script's --init_checkpoint resolves, and a text task's `from_model_dir`, start from its weights."""
    files = init_checkpoint.resolve_model_files(ENCODER)
    assert files.checkpoint_format == "tf_hub" and files.vocab_file.endswith("vocab.txt")
    classifier = TextClassifier.from_model_dir(ENCODER, num_classes=2, seq_length=16)
    (encoder,) = [layer for layer in classifier.model.layers if isinstance(layer, BertEncoder)]
    _assert_peer_outputs(_outputs(encoder))
    assert classifier.predict(TEXTS[:2])["probabilities"].shape == (2, 2)


def test_the_masked_lm_head_comes_with_it():
    """`export_tfhub --export_type=model_with_mlm`'s `mlm` subobject becomes our pretrainer's masked-LM head."""
    model, files = model_loading.load_model(ENCODER)
    assert isinstance(model, BertPretrainer) and files.do_lower_case is True
    positions = EXPECTED["masked_lm_positions"]
    logits = np.asarray(model(dict(INPUTS, masked_lm_positions=positions), training=False)["mlm_logits"])
    np.testing.assert_allclose(logits, EXPECTED["mlm_logits"], atol=1e-5)


def test_our_tokenizer_with_the_recovered_vocabulary_tokenizes_as_the_preprocessing_model():
    files = model_loading.read_model_files(ENCODER)
    vocab_file, do_lower_case = tf_hub_saved_models.preprocessor_vocab(PREPROCESSING)
    assert do_lower_case is True and open(vocab_file).read() == open(files.vocab_file).read()
    tokenizer = files.tokenizer()
    # The preprocessing model's tokenize: [text, word, word piece], stored flat with the lengths of both levels.
    per_word = np.split(EXPECTED["token_ids"], np.cumsum(EXPECTED["word_lengths"])[:-1])
    per_text = np.split(np.arange(len(per_word)), np.cumsum(EXPECTED["text_words"])[:-1])
    unknown = tokenizer.vocab["[UNK]"]
    seen_unknown = seen_pieces = False
    for text, words in zip(TEXTS, per_text):
        expected = [int(i) for w in words for i in per_word[w]]
        assert tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text)) == expected, text
        seen_unknown |= unknown in expected
        seen_pieces |= any(len(per_word[w]) > 1 for w in words)
    assert seen_unknown and seen_pieces  # the sentences reach [UNK] and word pieces


def test_a_missing_vocabulary_is_one_error_and_preprocessor_supplies_it(tmp_path):
    encoder = tmp_path / "encoder"
    shutil.copytree(ENCODER, encoder)
    (encoder / "assets" / "vocab.txt").unlink()
    with pytest.raises(MissingInputError, match="carries no vocabulary.*--preprocessor"):
        model_loading.read_model_files(str(encoder))
    written = conversion.convert(
        conversion.ConversionConfig(input=str(encoder), output_dir=str(tmp_path / "ours"), preprocessor=PREPROCESSING)
    )
    assert written.do_lower_case is True
    assert (tmp_path / "ours" / "vocab.txt").read_text() == (FIXTURES / "vocab.txt").read_text()
    _assert_peer_outputs(_outputs(model_loading.read_model_files(str(tmp_path / "ours")).build_encoder()))


def test_what_is_not_a_bert_encoder_is_refused(tmp_path):
    module = tf.Module()
    module.weight = tf.Variable(tf.ones([3, 4]), name="dense/kernel")
    module.__call__ = tf.function(lambda x: tf.matmul(x, module.weight), input_signature=[tf.TensorSpec([None, 3])])
    tf.saved_model.save(module, str(tmp_path / "not_bert"))
    with pytest.raises(InputError, match="not a TF-Hub BERT encoder"):
        model_loading.read_model_files(str(tmp_path / "not_bert"))
    with pytest.raises(InputError, match="is a BERT preprocessing model, not the encoder"):
        model_loading.read_model_files(PREPROCESSING)


def _tf_hub_user(*pairs: tuple[str, str, pathlib.Path]) -> list[dict[str, np.ndarray]]:
    """Each (preprocessor, encoder, out) pair used by `tf_hub_user.py`, all in one fresh process."""
    args = [str(x) for pair in pairs for x in pair]
    done = subprocess.run(
        [sys.executable, str(HERE / "tf_hub_user.py"), *args, "--", *TEXTS],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(pairs[0][2].parent),
    )
    assert done.returncode == 0 and "modules ok" in done.stdout, done.stderr[-4000:]
    return [dict(np.load(out)) for _, _, out in pairs]


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    """The peer's encoder -> our model directory -> our TF-Hub pair (max_seq_length 16, as the peer's).

    The export's tokenizer is one batch slice: the pair traces, saves and (in the fresh process) loads one copy of
    the tokenization graph per function instead of one per CPU (`parallel_shards` changes no id or order:
    tests/nlp/tokenizers/test_text_layers.py checks that)."""
    root = tmp_path_factory.mktemp("tf_hub")
    conversion.convert(conversion.ConversionConfig(input=ENCODER, output_dir=str(root / "ours")))
    tokenizer = BertTokenizer(str(root / "ours" / model_dir.VOCAB_FILE), do_lower_case=True, parallel_shards=1)
    # Only the TF-Hub pair is used here (the .keras file is test_exports.py's).
    paths = exporter.export_model(
        "encoder", str(root / "ours"), str(root / "export"), max_seq_length=16, keras_file=False, tokenizer=tokenizer
    )
    return root, paths


def test_converted_model_directory_gives_the_peers_outputs(round_trip):
    root, _ = round_trip
    files = model_loading.read_model_files(str(root / "ours"))
    assert files.do_lower_case is True and files.checkpoint_format == "ours"
    assert (root / "ours" / model_dir.VOCAB_FILE).read_text() == (FIXTURES / "vocab.txt").read_text()
    _assert_peer_outputs(_outputs(files.build_encoder()))
    model, _ = model_loading.load_model(str(root / "ours"))
    assert isinstance(model, BertPretrainer)  # the masked-LM head is kept


@pytest.mark.slow  # processes of their own
def test_our_tf_hub_pair_serves_as_the_peers_does(round_trip):
    """The same TF-Hub user script on the peer's pair and on ours: the same inputs, packing and outputs."""
    root, paths = round_trip
    peer, ours = _tf_hub_user(
        (PREPROCESSING, ENCODER, root / "peer.npz"),
        (paths["hub_preprocessor"], paths["hub_encoder"], root / "ours.npz"),
    )
    for name in INPUT_NAMES:
        assert np.array_equal(peer[name], EXPECTED[name]) and np.array_equal(ours[name], EXPECTED[name]), name
        assert np.array_equal(ours[f"pair_{name}"], EXPECTED[f"pair_{name}"]), name
        assert np.array_equal(ours[f"pair_{name}"], peer[f"pair_{name}"]), name
        assert np.array_equal(ours[f"single_{name}"], peer[f"single_{name}"]), name
    for served in (peer, ours):
        _assert_peer_outputs(served)
        np.testing.assert_allclose(served["default"], served["pooled_output"], atol=0)
        np.testing.assert_allclose(served["layer_pooled_output"], EXPECTED["pooled_output"], atol=1e-5)
        assert int(served["vocab_size"]) == 840 and bool(served["do_lower_case"]) is True
    specials = {name: int(value) for name, value in peer.items() if name.startswith("special_")}
    assert specials == {name: int(value) for name, value in ours.items() if name.startswith("special_")}
    assert specials["special_vocab_size"] == 840 and specials["special_mask_id"] == 4
    # Our model directory's own forward pass, too (not only the peer's numbers).
    encoder = model_loading.read_model_files(str(root / "ours")).build_encoder()
    np.testing.assert_allclose(ours["sequence_output"], _outputs(encoder)["sequence_output"], atol=1e-5)


def test_our_tf_hub_export_reads_back(round_trip):
    """A pair folder (`hub/<version>/`) or its encoder is taken wherever a model is: ours, read back."""
    _, paths = round_trip
    pair_folder = str(pathlib.Path(paths["hub_encoder"]).parent)
    for path in (paths["hub_encoder"], pair_folder):
        files = model_loading.read_model_files(path)
        assert files.checkpoint_format == "tf_hub" and files.do_lower_case is True
        _assert_peer_outputs(_outputs(files.build_encoder()))


@pytest.mark.slow  # a process of its own
def test_bad_inputs_are_one_line_each(tmp_path):
    """The script's words for a preprocessing model given as the encoder and an encoder without its vocabulary
    (both runs of convert_checkpoint.py in one process: TensorFlow is imported once)."""
    encoder = tmp_path / "encoder"
    shutil.copytree(ENCODER, encoder)
    (encoder / "assets" / "vocab.txt").unlink()
    results = run_in_one_process(
        {
            "preprocessing": ("convert_checkpoint.py", [f"--input={PREPROCESSING}", f"--output_dir={tmp_path / 'a'}"]),
            "no vocabulary": ("convert_checkpoint.py", [f"--input={encoder}", f"--output_dir={tmp_path / 'b'}"]),
        },
        cwd=tmp_path,
    )
    assert_user_error(results["preprocessing"], "is a BERT preprocessing model, not the encoder", "--preprocessor")
    assert_user_error(results["no vocabulary"], "carries no vocabulary", "--preprocessor")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_kaggle_handle_in_kagglehubs_cache_is_read(tmp_path, monkeypatch):
    """Kaggle serves TF-Hub's BERTs as `tensorflow/bert/tensorFlow2/<variation>/<version>`: the folder kagglehub's
    cache holds for a handle is read as the folder itself (filled through kagglehub's own cache API, no network)."""
    from kagglehub import cache
    from kagglehub.handle import parse_model_handle

    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub"))
    monkeypatch.setenv("KAGGLE_API_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: no network
    handle = parse_model_handle("tensorflow/bert/tensorFlow2/en-uncased-l-2-h-32-a-2/1")
    store = cache.Cache()
    shutil.copytree(ENCODER, store.get_path(handle))
    store.mark_as_complete(handle)
    files = model_loading.read_model_files("kaggle://tensorflow/bert/tensorFlow2/en-uncased-l-2-h-32-a-2/1")
    assert files.checkpoint_format == "tf_hub" and files.do_lower_case is True
    _assert_peer_outputs(_outputs(files.build_encoder()))


def test_the_probe_tells_the_activation_and_refuses_what_none_matches(monkeypatch):
    """Without the tanh GELU among the candidates nothing matches the Model Garden's encoder: the erf GELU is off
    by more than the probe's tolerance, so a SavedModel of another architecture is refused, not converted wrong."""
    monkeypatch.setattr(tf_hub_saved_models, "_ACTIVATIONS", ("gelu_exact", "relu"))
    monkeypatch.setattr(tf_hub_saved_models, "_configs", {})
    with pytest.raises(InputError, match=r"no BERT of this library computes what it computes .*gelu_exact"):
        tf_hub_saved_models.read_hub_config(ENCODER)
