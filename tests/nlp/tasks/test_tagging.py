"""The token-classification objective (loop) and loss (fit) agree with a hand computation over labelled positions;
the fit path trains a tagger from Python on real CoNLL sentences; the feature-based layer flags spell Table 7."""

import keras
import numpy as np
import pytest
from absl import flags

from official.nlp.common import config_flags
from official.nlp.data import conll
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.feature_tagger import feature_layers
from official.nlp.modeling.models import BertTokenClassifier
from official.nlp.tasks import tagging
from official.nlp.tokenizers.tokenization import FullTokenizer


def test_objective_and_fit_loss_average_over_labelled_positions():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 5, 3)).astype("float32")
    labels = np.array([[-1, 2, -1, 0, -1], [-1, 1, 1, -1, -1]], "int32")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = [-log_probs[b, s, labels[b, s]] for b in range(2) for s in range(5) if labels[b, s] >= 0]
    expected = np.mean(picked)
    assert float(tagging.masked_token_loss(labels, logits)) == pytest.approx(expected, rel=1e-5)
    objective = tagging.TokenClassificationObjective()
    weights = np.asarray(objective.loss_weights({"label_ids": labels})["loss"])
    losses = np.asarray(objective.losses({"label_ids": labels}, logits)["loss"])
    assert weights.sum() == 4 and (losses * weights).sum() / weights.sum() == pytest.approx(expected, rel=1e-5)
    correct, count = objective.metrics({"label_ids": labels}, logits)["accuracy"]
    argmax = logits.argmax(-1)
    assert float(count) == 4 and float(correct) == sum(argmax[labels >= 0] == labels[labels >= 0])


@pytest.mark.slow
def test_fit_path_from_python(shared_data, uncased_vocab):
    sentences = conll.read_conll(str(shared_data / "conll2003/iob2/valid.txt")).sentences[:48]
    labels = conll.label_list(sentences)
    tokenizer = FullTokenizer(str(uncased_vocab), do_lower_case=True)
    features = conll.convert_sentences(sentences, tokenizer, labels, max_seq_length=32)
    keras.utils.set_random_seed(0)
    encoder = BertEncoder.from_bert_config(
        BertConfig(
            vocab_size=30522,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=32,
        )
    )
    model = BertTokenClassifier(encoder, len(labels))
    model.compile(keras.optimizers.Adam(3e-3), loss=tagging.masked_token_loss)
    history = model.fit(features.model_inputs(), features.arrays["label_ids"], batch_size=16, epochs=2, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    predicted = conll.word_predictions(
        features, model.predict(features.model_inputs(), verbose=0).argmax(-1), labels, sentences
    )
    assert [len(p) for p in predicted] == [len(s.words) for s in sentences]


def test_feature_layer_flags_spell_table_7():
    """`--feature_layers` as run_ner.py parses it, for Table 7's rows on a 12-layer model (docs/ner.md), and the
    spellings it refuses."""
    rows = {
        "embeddings": ["embeddings"],
        "-2": [-2],
        "-1": [-1],
        "-1,-2,-3,-4": [-1, -2, -3, -4],
        "all": list(range(12)),
        "embeddings,all": ["embeddings", *range(12)],
    }
    for spelled, expected in rows.items():
        flag_values = flags.FlagValues()
        config_flags.define_flags(flag_values, tagging.TaggingConfig)
        flag_values(["run_ner", "--output_dir=out", f"--feature_layers={spelled}"])
        config = config_flags.config_from_flags(flag_values, tagging.TaggingConfig)
        assert feature_layers(config.feature_layers, 12) == expected, spelled
    defaults = tagging.TaggingConfig(output_dir="out")
    assert feature_layers(defaults.feature_layers, 12) == [-1, -2, -3, -4]
    # The paper's "two-layer 768-dimensional BiLSTM" (Section 5.3), 768 units per direction.
    assert (defaults.num_lstm_layers, defaults.lstm_units) == (2, 768)
    for spelled, message in (
        (["last"], "'last' is not a layer"),
        (["all", "-1"], "a layer is named twice"),
        (["12"], "layer 12 is not one of the model's 12 layers"),
        ([], "no layer chosen"),
    ):
        with pytest.raises(ValueError, match=message):
            feature_layers(spelled, 12)
