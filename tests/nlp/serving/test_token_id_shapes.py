"""serve_token_ids refuses an input_mask or input_type_ids whose shape is not that of the ids (in the graph)."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import models
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.serving.sequence_exports import ClassifierExport
from tests import pretraining_records


def test_a_mask_shorter_than_the_ids_is_refused_not_cut(tmp_path):
    """Before: a 32-long mask with 40 ids cut the ids to 32, so changing token 35 left the logits unchanged."""
    config = BertConfig(
        vocab_size=1000,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    model = models.BertClassifier(BertEncoder.from_bert_config(config), 2)
    vocab = pretraining_records.write_vocab(tmp_path / "vocab.txt", 1000)
    module = ClassifierExport(model, vocab_file=vocab, do_lower_case=True, max_seq_length=40)
    serve = tf.function(module.serve_token_ids, input_signature=[module.token_id_spec()])
    ids = np.random.RandomState(0).randint(200, 1000, size=(2, 40)).astype(np.int32)
    ones = np.ones_like(ids)
    full = serve({"input_word_ids": ids, "input_mask": ones, "input_type_ids": 0 * ones})["logits"]
    assert full.shape == (2, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="input_mask must have the shape of input_word_ids"):
        serve({"input_word_ids": ids, "input_mask": ones[:, :32], "input_type_ids": 0 * ones})
    with pytest.raises(tf.errors.InvalidArgumentError, match="input_type_ids must have the shape of input_word_ids"):
        serve({"input_word_ids": ids, "input_mask": ones, "input_type_ids": ones[:1]})
