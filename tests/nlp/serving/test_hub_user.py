"""The TF-Hub pair fine-tuned as TensorFlow's BERT tutorials do, in a process without this library (issue 22):
`hub.KerasLayer(encoder, trainable=True)` has the encoder's trainable weights and `fit` moves them and lowers the
loss; `training=True` runs dropout and `training=False` is the exported model; `tokenize` and `bert_pack_inputs`
work through `hub.KerasLayer` and pack as training does."""

import json
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

from official.nlp.checkpoints import model_dir
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.serving import exporter
from official.nlp.tokenizers.text_layers import BertTokenizer
from official.nlp.tokenizers.tokenization import FullTokenizer

pytestmark = pytest.mark.slow
HERE = pathlib.Path(__file__).resolve().parent
CONFIG = BertConfig(
    vocab_size=30522,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)


@pytest.fixture(scope="module")
def hub_user(tmp_path_factory, uncased_vocab):
    root = tmp_path_factory.mktemp("hub")
    keras.utils.set_random_seed(11)
    encoder = BertEncoder.from_bert_config(CONFIG)
    model_dir.save_model_dir(str(root / "model"), encoder, vocab_file=str(uncased_vocab), do_lower_case=True)
    # The checks read only the TF-Hub pair: no .keras file, and one batch slice in the tokenizer (slices change no
    # id: tests/nlp/tokenizers/test_text_layers.py), so one copy of the tokenization graph is traced and saved.
    tokenizer = BertTokenizer(str(uncased_vocab), do_lower_case=True, parallel_shards=1)
    paths = exporter.export_model(
        "encoder", str(root / "model"), str(root / "export"), max_seq_length=32, keras_file=False, tokenizer=tokenizer
    )
    hub_dir = str(pathlib.Path(paths["hub_encoder"]).parent)
    out = root / "seen.json"
    done = subprocess.run(
        [sys.executable, str(HERE / "hub_user.py"), hub_dir, str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(root),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return encoder, json.loads(out.read_text())


def _pack(tok, a, b, seq_length):
    ids_a, ids_b = tok.convert_tokens_to_ids(tok.tokenize(a)), tok.convert_tokens_to_ids(tok.tokenize(b))
    cls, sep = tok.vocab["[CLS]"], tok.vocab["[SEP]"]
    ids = [cls, *ids_a, sep] + ([*ids_b, sep] if ids_b else [])
    types = [0] * (len(ids_a) + 2) + ([1] * (len(ids_b) + 1) if ids_b else [])
    pad = seq_length - len(ids)
    return ids + [0] * pad, [1] * len(ids) + [0] * pad, types + [0] * pad


def test_fine_tuning_through_hub_keras_layer(hub_user):
    encoder, seen = hub_user
    assert seen["leaked"] == []
    count = len(encoder.trainable_weights)
    assert seen["trainable_weights"] == seen["trainable_variables"] == seen["changed"] == count
    assert seen["variables"] == seen["weights"] >= count and seen["regularization_losses"] == 0
    losses = seen["losses"]
    assert min(losses[-5:]) < 0.5 * losses[0], losses


def test_training_flag_and_inference_outputs(hub_user, uncased_vocab):
    encoder, seen = hub_user
    assert seen["inference_repeats"] == 0.0 and seen["training_repeats"] > 0.0  # dropout only when training
    tok = FullTokenizer(str(uncased_vocab), do_lower_case=True)
    rows = [_pack(tok, text, "", 32) for text in ("a good movie", "東京 café")]
    inputs = {
        name: np.array([r[i] for r in rows], np.int32)
        for i, name in enumerate(("input_word_ids", "input_mask", "input_type_ids"))
    }
    expected = np.asarray(encoder(inputs, training=False)["pooled_output"])
    np.testing.assert_allclose(np.array(seen["pooled"]), expected, atol=1e-5)


def test_pair_path_packs_as_training(hub_user, uncased_vocab):
    _, seen = hub_user
    tok = FullTokenizer(str(uncased_vocab), do_lower_case=True)
    rows = [_pack(tok, "Who wrote it?", "Ann Smith.", 20), _pack(tok, "Naïve 東京", "", 20)]
    for i, name in enumerate(("input_word_ids", "input_mask", "input_type_ids")):
        assert seen["packed"][name] == [r[i] for r in rows], name
