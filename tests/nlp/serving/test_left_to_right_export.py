"""The export of a left-to-right model stays left-to-right: one encoder export, served in a fresh process that imports
only TensorFlow and tensorflow_text (raw text and token ids), answers two inputs that differ at position j with exactly
the same vectors before j. (The TF-Hub-style pair and the `.keras` file hold the same Keras model, whose config
round trip test_left_to_right.py checks; they are left out for time, ~20 s.)"""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

from official.nlp.checkpoints import model_dir
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.serving import exporter
from tests import pretraining_records
from tests.nlp.modeling import causality
from tests.nlp.serving import fresh

pytestmark = pytest.mark.slow
SEQ = 12
CONFIG = BertConfig(
    vocab_size=200,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=SEQ,
    attention="left_to_right",
)


def test_the_served_encoder_is_left_to_right(tmp_path):
    vocab = pretraining_records.write_vocab(tmp_path / "vocab.txt", CONFIG.vocab_size)
    keras.utils.set_random_seed(5)
    init = str(tmp_path / "model")
    model_dir.save_model_dir(init, BertEncoder.from_bert_config(CONFIG), vocab_file=vocab, do_lower_case=True)
    paths = exporter.export_model(
        "encoder", init, str(tmp_path / "export"), max_seq_length=SEQ, text_pair=False, hub_pair=False, keras_file=False
    )
    assets = json.loads((tmp_path / "export" / "1" / "assets" / "bert_config.json").read_text())
    assert assets["attention"] == "left_to_right"

    texts = ["w1 w2 w3 w4 w5 w6", "w1 w2 w3 w9 w5 w6"]  # [CLS] w1 w2 w3 w4|w9 ...: they differ at position 4
    ids = np.array([[1, 11, 12, 13, 14, 15, 16, 2], [1, 11, 12, 13, 19, 15, 16, 2]], "int32")  # wN is 10 + N
    id_inputs = {
        "input_word_ids": {"dtype": "int32", "value": ids.tolist()},
        "input_mask": {"dtype": "int32", "value": np.ones_like(ids).tolist()},
        "input_type_ids": {"dtype": "int32", "value": np.zeros_like(ids).tolist()},
    }
    jobs = [
        {
            "name": "text",
            "path": paths["saved_model"],
            "signature": "serving_default",
            "inputs": {"text_a": {"dtype": "string", "value": texts}},
        },
        {"name": "ids", "path": paths["saved_model"], "signature": "serve_token_ids", "inputs": id_inputs},
    ]
    served = fresh.serve(tmp_path, jobs)
    np.testing.assert_array_equal(served["text/input_word_ids"][:, :8], ids)
    for name in ("text", "ids"):
        for output in ("sequence_output", "encoder_output_0"):
            values = served[f"{name}/{output}"]
            real = served["text/input_mask"][:1] if name == "text" else None
            causality.assert_left_to_right(values[:1], values[1:], j=4, real=real)
    np.testing.assert_allclose(served["text/sequence_output"][:, :8], served["ids/sequence_output"], atol=1e-6)
