import numpy as np

from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.heads import MaskedLMHead
from tests.keras_checks import check_layer
from tests.nlp.modeling import reference


def test_masked_lm_head_standard_checks(tmp_path):
    rng = np.random.default_rng(0)
    seq = rng.normal(size=(2, 6, 16)).astype("float32")
    positions = np.array([[0, 3, 5], [1, 1, 0]], "int32")
    check_layer(
        MaskedLMHead,
        dict(vocab_size=30),
        (seq, positions),
        expected_output_shape=(2, 3, 30),
        float32_output_under_mixed=True,
        tmp_path=tmp_path,
    )


def test_tied_head_matches_reference():
    encoder = BertEncoder.from_bert_config(
        BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    )
    head = MaskedLMHead(vocab_size=30, embedding_layer=encoder.embeddings.word_embeddings)
    rng = np.random.default_rng(1)
    seq = rng.normal(size=(2, 6, 16)).astype("float32")
    positions = np.array([[0, 3, 5], [1, 1, 0]], "int32")
    head(seq, positions)  # builds the head, so that its bias exists
    head.output_bias.assign(rng.normal(size=30).astype("float32"))  # non-zero, so that a dropped bias shows
    logits = np.asarray(head(seq, positions))

    gathered = np.take_along_axis(seq.astype(np.float64), positions[..., None], axis=1)
    x = reference.gelu_tanh(reference.dense(gathered, head.dense))
    x = reference.layer_norm(x, np.asarray(head.layer_norm.gamma), np.asarray(head.layer_norm.beta), 1e-12)
    table = np.asarray(encoder.get_embedding_table(), np.float64)
    expected = x @ table.T + np.asarray(head.output_bias)
    np.testing.assert_allclose(logits, expected, atol=1e-4)
    # Tied: no own output matrix, and the table is the encoder's variable.
    assert not hasattr(head, "output_embeddings")
    assert any(w is encoder.get_embedding_table() for w in head.weights)
