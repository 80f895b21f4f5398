"""The feature-based tagger: standard model checks, only the BiLSTM and classifier train, the encoder is frozen and
runs without dropout, the layer combinations match a hand computation."""

import keras
import numpy as np
import pytest

from official.nlp.modeling.feature_tagger import BertFeatureTagger, LayerCombination
from tests.nlp.modeling.test_models import B, S, _encoder, _inputs


def test_layer_combination():
    # Saving, config and mixed precision are covered with the model below (check_layer takes array arguments only).
    rng = np.random.default_rng(0)
    layers = [rng.normal(size=(2, 3, 4)).astype("float32") for _ in range(3)]
    concat = LayerCombination("concat")
    np.testing.assert_array_equal(concat(layers), np.concatenate(layers, -1))
    assert LayerCombination.from_config(concat.get_config()).combine == "concat"
    mix = LayerCombination("weighted_sum")
    np.testing.assert_allclose(mix(layers), sum(layers) / 3, atol=1e-6)  # equal weights at the start, gamma 1
    mix.layer_logits.assign([0.0, np.log(3.0), 0.0])
    mix.gamma.assign(2.0)
    np.testing.assert_allclose(mix(layers), 2 * (0.2 * layers[0] + 0.6 * layers[1] + 0.2 * layers[2]), atol=1e-5)
    with pytest.raises(ValueError, match="combine must be one of"):
        LayerCombination("max")


def test_feature_tagger_config_saving_and_trainable_weights(tmp_path):
    # A lighter check_model (which takes ~40 s with two LSTM layers): config and .keras round trips, bfloat16.
    x = _inputs()
    model = BertFeatureTagger(_encoder(), 5, layers=(-1, -2), combine="weighted_sum", lstm_units=6, num_lstm_layers=1)
    output = model.predict(x, verbose=0)
    assert output.shape == (B, S, 5) and output.dtype == np.float32
    config = model.get_config()
    assert BertFeatureTagger.from_config(config).get_config() == config
    model.save(tmp_path / "tagger.keras")
    loaded = keras.saving.load_model(tmp_path / "tagger.keras")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), output)
    assert not loaded.encoder.trainable_weights
    mixed = BertFeatureTagger(
        _encoder("mixed_bfloat16"), 5, layers=(-1,), lstm_units=6, num_lstm_layers=1, dtype="mixed_bfloat16"
    )
    assert mixed.predict(x, verbose=0).dtype == np.float32

    names = {w.path.split("/")[0] for w in model.trainable_weights}
    assert names == {"bilstm_0", "classifier", "layer_combination"}
    # Training through the loop (encoder unchanged, the rest changed): tests/run_scripts/test_run_ner.py.


def test_frozen_encoder_has_no_dropout():
    model = BertFeatureTagger(_encoder(), 3, layers=(-1,), lstm_units=4, dropout_rate=0.0)
    x = _inputs()
    # The frozen encoder runs in inference mode even when the model trains: its features carry no dropout.
    np.testing.assert_array_equal(model(x, training=True), model(x, training=False))
    with pytest.raises(ValueError, match="must index the encoder's 2 layers"):
        BertFeatureTagger(_encoder(), 3, layers=(-3,))
