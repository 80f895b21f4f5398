import keras
import numpy as np
import pytest

from official.nlp.modeling import losses
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import (
    BertClassifier,
    BertMultipleChoice,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
    real_tokens_mask,
)
from tests.keras_checks import check_model

CONFIG = BertConfig(
    vocab_size=50,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=32,
    max_position_embeddings=16,
)
B, S = 4, 8


def _encoder(dtype=None):
    return BertEncoder.from_bert_config(CONFIG, dtype=dtype)


def _inputs(batch_shape=(B,), seed=0):
    rng = np.random.default_rng(seed)
    shape = tuple(batch_shape) + (S,)
    mask = np.ones(shape, "int32")
    mask[..., 6:] = 0
    return {
        "input_word_ids": (rng.integers(1, 50, shape) * mask).astype("int32"),
        "input_mask": mask,
        "input_type_ids": np.zeros(shape, "int32"),
    }


def _pretraining_data(seed=0):
    rng = np.random.default_rng(seed)
    x = _inputs(seed=seed)
    x["masked_lm_positions"] = np.array([[1, 2, 0]] * B, "int32")
    y = {
        "masked_lm_ids": rng.integers(1, 50, (B, 3)).astype("int32"),
        "masked_lm_weights": np.array([[1, 1, 0]] * B, "float32"),
        "next_sentence_labels": rng.integers(0, 2, (B, 1)).astype("int32"),
    }
    return x, y


@pytest.mark.slow
def test_pretrainer_standard_checks_and_fit(tmp_path):
    x, y = _pretraining_data()
    model, history = check_model(
        lambda dtype=None: BertPretrainer(_encoder(dtype)),
        x,
        labels=y,
        expected_output_shape={"mlm_logits": (B, 3, 50), "nsp_logits": (B, 2)},
        tmp_path=tmp_path,
    )
    assert set(history.history) == {"loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"}
    # Weight tying: the MLM head reads the encoder's word embeddings, not a copy.
    assert model.masked_lm.embedding_layer is model.encoder.embeddings.word_embeddings
    assert len({id(w) for w in model.weights}) == len(model.weights)

    # The reported losses are the functions of official.nlp.modeling.losses on the model's outputs.
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    terms = losses.pretraining_losses(y, model(x, training=False))
    np.testing.assert_allclose(result["mlm_loss"], terms["mlm_loss"], rtol=1e-5)
    np.testing.assert_allclose(result["nsp_loss"], terms["nsp_loss"], rtol=1e-5)
    np.testing.assert_allclose(result["loss"], terms["loss"], rtol=1e-5)

    # A .keras file restores the compiled state: training continues without compile().
    model.save(tmp_path / "trained.keras")
    loaded = keras.saving.load_model(tmp_path / "trained.keras")
    loaded.fit(x, y, epochs=1, verbose=0)


@pytest.mark.slow
def test_pretrainer_without_nsp(tmp_path):
    x, y = _pretraining_data()
    model = BertPretrainer(_encoder(), use_next_sentence_label=False)
    assert set(model.output) == {"mlm_logits"}
    model.compile(optimizer="adam")
    history = model.fit(x, y, epochs=1, verbose=0)
    assert set(history.history) == {"loss", "mlm_loss", "mlm_accuracy"}
    assert BertPretrainer.from_config(model.get_config()).get_config() == model.get_config()


def test_pretrainer_refuses_foreign_losses():
    model = BertPretrainer(_encoder())
    with pytest.raises(ValueError, match="computes its own losses"):
        model.compile(optimizer="adam", loss="mse")


@pytest.mark.slow
@pytest.mark.parametrize("num_classes", [3, 1])
def test_classifier(num_classes, tmp_path):
    x = _inputs()
    if num_classes == 1:
        y, loss = np.linspace(0, 5, B).astype("float32")[:, None], "mse"
    else:
        y, loss = np.arange(B) % 3, keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    check_model(
        lambda dtype=None: BertClassifier(_encoder(dtype), num_classes),
        x,
        expected_output_shape=(B, num_classes),
        labels=y,
        loss=loss,
        tmp_path=tmp_path,
    )


@pytest.mark.slow
def test_span_labeler(tmp_path):
    x = _inputs()
    y = {"start_logits": np.array([1, 2, 3, 0]), "end_logits": np.array([2, 2, 5, 0])}
    sce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    check_model(
        lambda dtype=None: BertSpanLabeler(_encoder(dtype)),
        x,
        expected_output_shape={"start_logits": (B, S), "end_logits": (B, S)},
        labels=y,
        loss={"start_logits": sce, "end_logits": sce},
        unused_weights=("pooler",),
        tmp_path=tmp_path,
    )


@pytest.mark.slow
def test_token_classifier(tmp_path):
    x = _inputs()
    y = np.random.default_rng(0).integers(0, 5, (B, S))
    check_model(
        lambda dtype=None: BertTokenClassifier(_encoder(dtype), 5),
        x,
        expected_output_shape=(B, S, 5),
        labels=y,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        unused_weights=("pooler",),
        tmp_path=tmp_path,
    )


@pytest.mark.slow
def test_multiple_choice(tmp_path):
    x = _inputs(batch_shape=(B, 3))
    y = np.array([0, 1, 2, 1])
    model, _ = check_model(
        lambda dtype=None: BertMultipleChoice(_encoder(dtype)),
        x,
        expected_output_shape=(B, 3),
        labels=y,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        tmp_path=tmp_path,
        # The softmax over choices does not change when every score moves by the same amount, so the score's bias
        # has a zero gradient: whether Adam moves it at all depends on the kernels' round-off.
        unused_weights=("classifier/bias",),
    )
    # Each choice is scored on its own: the score of choice j equals a single-sequence run of that choice.
    logits = np.asarray(model(x))
    encoder = model.encoder
    pooled = encoder({k: v[:, 1] for k, v in x.items()})["pooled_output"]
    np.testing.assert_allclose(logits[:, 1], np.asarray(model.classifier(pooled))[:, 0], atol=1e-5)
    # The number of choices is not fixed.
    assert model.predict(_inputs(batch_shape=(2, 5)), verbose=0).shape == (2, 5)


def test_span_labeler_bilstm_head(tmp_path):
    # A lighter check_model (an LSTM makes the full one slow): config and .keras round trips, bfloat16, padding.
    x = _inputs()
    model = BertSpanLabeler(_encoder(), span_head="bilstm", lstm_units=6)
    output = {k: np.asarray(v) for k, v in model(x).items()}  # eager: predict() would trace the LSTM, slowly
    assert {k: v.shape for k, v in output.items()} == {"start_logits": (B, S), "end_logits": (B, S)}
    assert model.span_logits.kernel.shape == (12, 2)  # both directions' 6 units
    config = model.get_config()
    assert config["span_head"] == "bilstm" and config["lstm_units"] == 6
    clone = BertSpanLabeler.from_config(config)
    assert clone.get_config() == config and len(clone.weights) == len(model.weights)
    model.save(tmp_path / "span.keras")
    loaded = keras.saving.load_model(tmp_path / "span.keras")
    for name, value in loaded(x).items():
        np.testing.assert_array_equal(value, output[name])
    mixed = BertSpanLabeler(_encoder("mixed_bfloat16"), span_head="bilstm", lstm_units=6, dtype="mixed_bfloat16")
    assert all(v.dtype == "float32" for v in mixed(x).values())
    # The LSTM's width defaults to the encoder's hidden size.
    assert BertSpanLabeler(_encoder(), span_head="bilstm").lstm_units == CONFIG.hidden_size
    with pytest.raises(ValueError, match="span_head must be one of"):
        BertSpanLabeler(_encoder(), span_head="lstm")
    with pytest.raises(ValueError, match="lstm_units is for span_head='bilstm'"):
        BertSpanLabeler(_encoder(), lstm_units=4)


def test_span_bilstm_ignores_padding():
    """The same real tokens, padded to 8 (the fixture) and to 13 with other ids and segments under the padding: the
    logits of the real tokens are equal, as a serving batch padded to its longest row needs (the LSTM reads
    `input_mask`; without it the backward direction starts in the padding)."""
    model = BertSpanLabeler(_encoder(), span_head="bilstm", lstm_units=6)
    x = _inputs()
    rng = np.random.default_rng(1)
    longer = {
        "input_word_ids": np.concatenate([x["input_word_ids"], rng.integers(1, 50, (B, 5))], 1).astype("int32"),
        "input_mask": np.pad(x["input_mask"], ((0, 0), (0, 5))),
        "input_type_ids": np.concatenate([x["input_type_ids"], np.ones((B, 5), "int32")], 1),
    }
    longer["input_word_ids"][:, 6:8] = rng.integers(1, 50, (B, 2))  # the fixture's own padding changes too
    real = x["input_mask"].astype(bool)
    short, padded = model(x), model(longer)
    for name in ("start_logits", "end_logits"):
        np.testing.assert_allclose(np.asarray(padded[name])[:, :S][real], np.asarray(short[name])[real], atol=1e-6)
    # A row of padding alone (the serving signatures' stand-in for an empty batch) still has its [CLS] position in
    # the LSTM's mask: cuDNN refuses a fully masked row.
    mask = np.asarray(real_tokens_mask(np.array([[0, 0, 0], [1, 1, 0]], "int32")))
    np.testing.assert_array_equal(mask, [[True, False, False], [True, True, False]])
