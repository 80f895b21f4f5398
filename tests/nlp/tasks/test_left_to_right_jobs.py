"""A left-to-right model directory stays left-to-right in the jobs that load it ("the left-only constraint was also
applied at fine-tuning"): feature extraction, and fine-tuning a tagger, whose fine-tuned model directory keeps the
attention kind. Each is checked by changing the token at position j: the outputs before j stay exactly the same."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import model_dir, model_loading
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertTokenClassifier
from official.nlp.tasks import feature_extraction, finetuning, finetuning_config, tagging
from tests import pretraining_records
from tests.nlp.modeling import causality

VOCAB = 200
SEQ = 12
TINY = BertConfig(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=SEQ,
    attention="left_to_right",
)


@pytest.fixture(scope="module")
def ltr_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("ltr_model")
    vocab = pretraining_records.write_vocab(root / "vocab.txt", VOCAB)
    keras.utils.set_random_seed(3)
    model_dir.save_model_dir(
        str(root / "model"), BertEncoder.from_bert_config(TINY), vocab_file=vocab, do_lower_case=True
    )
    return str(root / "model")


def test_feature_extraction_keeps_the_model_left_to_right(ltr_dir, tmp_path):
    (tmp_path / "input.txt").write_text("w1 w2 w3 w4 w5 w6 ||| w7 w8\nw1 w2 w3 w9 w5 w6 ||| w7 w8\n")
    feature_extraction.run_feature_extraction(
        feature_extraction.FeatureExtractionConfig(
            input_file=str(tmp_path / "input.txt"),
            output_file=str(tmp_path / "features.jsonl"),
            init_checkpoint=ltr_dir,
            layers="-1,-2",
            max_seq_length=SEQ,
        )
    )
    lines = [json.loads(line) for line in (tmp_path / "features.jsonl").read_text().splitlines()]
    tokens = [[f["token"] for f in line["features"]] for line in lines]
    assert tokens[0][:5] == ["[CLS]", "w1", "w2", "w3", "w4"] and tokens[1][4] == "w9" and len(tokens[0]) == 11
    vectors = np.array(
        [[[v for layer in f["layers"] for v in layer["values"]] for f in line["features"]] for line in lines]
    )
    causality.assert_left_to_right(vectors[:1], vectors[1:], j=4)


class ToyTagging:
    """Tag 1 where the token is w5, else 0: a token task the fine-tuning loop trains in a few steps."""

    name = "toy_tags"
    labels = ["other", "w5"]
    metric_name = "accuracy"
    head = "token_classifier"

    def __init__(self, n=32):
        rng = np.random.RandomState(0)
        self.ids = rng.randint(10, 20, size=(n, SEQ)).astype("int32")
        self.tags = (self.ids == 15).astype("int32")

    def build_model(self, encoder):
        return BertTokenClassifier(encoder, len(self.labels), dropout_rate=0.2)

    def objective(self):
        return tagging.TokenClassificationObjective()

    def num_train_examples(self):
        return len(self.ids)

    def train_dataset(self, ctx, batch_size, seed):
        x = {
            "input_word_ids": self.ids,
            "input_mask": np.ones_like(self.ids),
            "input_type_ids": np.zeros_like(self.ids),
        }
        return tf.data.Dataset.from_tensor_slices((x, {"label_ids": self.tags})).repeat().batch(batch_size, True)

    def evaluate(self, model):
        return {"accuracy": 0.5}

    def settings(self):
        return {"data": "toy"}


@pytest.mark.slow
def test_fine_tuning_keeps_the_model_left_to_right(ltr_dir, tmp_path):
    config = finetuning_config.FineTuningConfig(
        output_dir=str(tmp_path / "out"),
        init_checkpoint=ltr_dir,
        max_seq_length=SEQ,
        train_batch_size=8,
        num_train_epochs=1,
        learning_rate=1e-3,
        steps_per_loop=4,
    )
    result = finetuning.run_finetuning(config, ToyTagging())
    assert result.step == 4 and result.model.encoder.config == TINY
    best = model_loading.read_model_files(result.best_model_dir)
    assert best.config == TINY  # the fine-tuned model directory is left-to-right too
    settings = json.loads((tmp_path / "out" / model_dir.SETTINGS_FILE).read_text())
    assert settings["bert_config"]["attention"] == "left_to_right"
    # The fine-tuned tagger, dropout on, with the same dropout masks for both inputs.
    model = result.model
    ids = ToyTagging().ids[:4]
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    changed = {**inputs, "input_word_ids": causality.change_token(ids, 6)}
    before, after = causality.with_the_same_dropout(model, lambda x: model(x, training=True), inputs, changed)
    causality.assert_left_to_right(before, after, j=6)
