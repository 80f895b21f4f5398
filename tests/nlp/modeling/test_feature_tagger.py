"""The feature-based tagger: standard model checks, only the BiLSTM and classifier train, the encoder is frozen and
runs without dropout, the layer combinations match a hand computation."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.feature_tagger import BertFeatureTagger, LayerCombination
from official.nlp.tasks import tagging
from tests.nlp.modeling import reference
from tests.nlp.modeling.test_models import CONFIG, B, S, _encoder, _inputs


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
    with pytest.raises(ValueError, match="layer -3 is not one of the model.s 2 layers"):
        BertFeatureTagger(_encoder(), 3, layers=(-3,))


# Table 7's feature-based rows, spelled as `--feature_layers` and `--feature_combine` spell them (docs/ner.md).
TABLE_7 = {
    "embeddings": (["embeddings"], "concat"),
    "second_to_last_hidden": (["-2"], "concat"),
    "last_hidden": (["-1"], "concat"),
    "weighted_sum_last_four_hidden": (["-1", "-2", "-3", "-4"], "weighted_sum"),
    "concat_last_four_hidden": (["-1", "-2", "-3", "-4"], "concat"),
    "weighted_sum_all_layers": (["all"], "weighted_sum"),
}


@pytest.fixture(scope="module")
def five_layers():
    """A frozen encoder of five layers (so that "the last four" and "all" differ), shared by the rows, and its
    embeddings and layers by the float64 NumPy transcription of the original."""
    encoder = BertEncoder.from_bert_config(dataclasses.replace(CONFIG, num_hidden_layers=5))
    x = _inputs()
    hidden, _ = reference.encoder(encoder, x["input_word_ids"], x["input_mask"], x["input_type_ids"])
    embedded = reference.embeddings(x["input_word_ids"], x["input_type_ids"], encoder.embeddings, 1e-12)
    return encoder, x, embedded, hidden


@pytest.mark.parametrize("row", sorted(TABLE_7))
def test_table_7_features_are_the_encoders_tensors_and_train(row, five_layers):
    """The features each row feeds the BiLSTM equal the reference's embeddings and layers, combined by hand with
    known weights; one training step changes the BiLSTM, the classifier and the layer weights, not the encoder."""
    encoder, x, embedded, hidden = five_layers
    layers, combine = TABLE_7[row]
    model = BertFeatureTagger(encoder, 3, layers=layers, combine=combine, lstm_units=4, num_lstm_layers=1)
    chosen = {
        "embeddings": [embedded],
        "second_to_last_hidden": [hidden[-2]],
        "last_hidden": [hidden[-1]],
        "weighted_sum_last_four_hidden": hidden[::-1][:4],
        "concat_last_four_hidden": hidden[::-1][:4],
        "weighted_sum_all_layers": hidden,
    }[row]
    if combine == "weighted_sum":
        weights = np.arange(1.0, len(chosen) + 1)
        model.layer_combination.layer_logits.assign(np.log(weights))
        model.layer_combination.gamma.assign(2.0)
        expected = 2.0 * sum(w * h for w, h in zip(weights / weights.sum(), chosen))
    else:
        expected = np.concatenate(chosen, axis=-1)
    features = keras.Model(model.input, model.layer_combination.output)(x)
    np.testing.assert_allclose(features, expected, atol=1e-4)

    labels = np.random.default_rng(0).integers(-1, 3, (B, S))
    before = [w.numpy().copy() for w in model.weights]
    with tf.GradientTape() as tape:
        loss = tagging.masked_token_loss(labels, model(x, training=True))
    keras.optimizers.Adam(1e-2).apply(tape.gradient(loss, model.trainable_weights), model.trainable_weights)
    assert np.isfinite(loss.numpy())
    trainable = {id(w) for w in model.trainable_weights}
    for value, weight in zip(before, model.weights):
        assert np.array_equal(value, weight.numpy()) != (id(weight) in trainable), weight.path
