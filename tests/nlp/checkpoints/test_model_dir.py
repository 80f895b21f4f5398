import numpy as np
import pytest

from official.nlp.checkpoints import model_dir, model_loading
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder

# vocab_size matches the real uncased vocabulary so the size check passes; the model stays tiny otherwise.
CONFIG = BertConfig(
    vocab_size=30522,
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=16,
)


def _encoder(seed=0):
    encoder = BertEncoder.from_bert_config(CONFIG)
    rng = np.random.default_rng(seed)
    for w in encoder.weights:
        w.assign(rng.normal(size=w.shape).astype("float32"))
    return encoder


def _same_weights(a, b):
    return all(np.array_equal(x.numpy(), y.numpy()) for x, y in zip(a.weights, b.weights))


def test_model_dir_round_trip(tmp_path, uncased_vocab):
    encoder = _encoder()
    written = model_dir.save_model_dir(str(tmp_path / "m"), encoder, vocab_file=str(uncased_vocab), do_lower_case=True)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "bert_config.json",
        "checkpoint",
        "ckpt-1.data-00000-of-00001",
        "ckpt-1.index",
        "do_lower_case",
        "vocab.txt",
    ]
    assert (tmp_path / "m" / "do_lower_case").read_text() == "true\n"
    files = model_loading.read_model_files(str(tmp_path / "m"))
    assert files == written
    assert (files.config, files.do_lower_case, files.checkpoint_format) == (CONFIG, True, "ours")
    assert _same_weights(files.build_encoder(), encoder)
    assert files.tokenizer().tokenize("Hello world") == ["hello", "world"]
    # A prefix works as well as the directory.
    assert model_loading.read_model_files(files.checkpoint) == files
    with pytest.raises(FileExistsError, match="already holds a checkpoint"):
        model_dir.save_model_dir(str(tmp_path / "m"), encoder, vocab_file=str(uncased_vocab), do_lower_case=True)
