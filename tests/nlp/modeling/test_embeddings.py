import numpy as np

from official.nlp.modeling.embeddings import BertEmbeddings
from tests.keras_checks import check_layer
from tests.nlp.modeling import reference


def test_embeddings_standard_checks_and_reference(tmp_path):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, (2, 7)).astype("int32")
    types = rng.integers(0, 2, (2, 7)).astype("int32")
    kwargs = dict(vocab_size=50, hidden_size=16, max_position_embeddings=12, type_vocab_size=2)
    check_layer(
        BertEmbeddings,
        kwargs,
        (ids, types),
        expected_output_shape=(2, 7, 16),
        float32_output_under_mixed=True,
        tmp_path=tmp_path,
    )

    layer = BertEmbeddings(**kwargs)
    out = layer(ids, types)
    expected = reference.embeddings(ids, types, layer, 1e-12)
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_sequence_longer_than_positions_is_refused():
    import keras
    import pytest

    layer = BertEmbeddings(vocab_size=10, hidden_size=8, max_position_embeddings=4)
    with pytest.raises(ValueError, match="exceeds max_position_embeddings"):
        layer(keras.Input((6,), dtype="int32"), keras.Input((6,), dtype="int32"))
