"""Question answering from Python: model.fit on cached SQuAD features, the loop's objective, answers from strings."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import feature_cache, squad, squad_records
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertSpanLabeler
from official.nlp.tasks import question_answering as qa
from official.nlp.tokenizers.tokenization import FullTokenizer

SEQ = 64


def _tiny_span_labeler(seed=1):
    keras.utils.set_random_seed(seed)
    config = BertConfig.preset(
        "tiny",
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=SEQ,
    )
    return BertSpanLabeler(BertEncoder.from_bert_config(config))


@pytest.fixture(scope="module")
def slice_features(shared_data, uncased_vocab, tmp_path_factory):
    """Training features of the first paragraph of SQuAD v2.0 dev (answerable and unanswerable), as TFRecords."""
    with open(shared_data / "squad" / "dev-v2.0-subset-Normans-Rhine.json", encoding="utf-8") as f:
        article = json.load(f)["data"][0]
    path = tmp_path_factory.mktemp("squad") / "slice.json"
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": article["paragraphs"][:1]}]}))
    tokenizer = FullTokenizer(uncased_vocab, do_lower_case=True)
    examples, _ = squad.read_squad_examples(str(path), is_training=True, version_2_with_negative=True)
    features, _ = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=SEQ, doc_stride=24, max_query_length=16, is_training=True
    )
    record = str(path.with_suffix(".tf_record"))
    feature_cache.cached_records(record, {"test": 1}, lambda: squad_records.records(features))
    return tokenizer, examples, features, record


def test_records_round_trip(slice_features):
    _, _, features, record = slice_features
    ds = squad_records.training_dataset(
        record, seq_length=SEQ, batch_size=len(features), repeat=False, shuffle_buffer_size=1
    )
    x, y = next(iter(ds))
    assert x["input_word_ids"].dtype == tf.int32
    np.testing.assert_array_equal(x["input_word_ids"].numpy(), [f.input_ids for f in features])
    np.testing.assert_array_equal(x["input_type_ids"].numpy(), [f.segment_ids for f in features])
    np.testing.assert_array_equal(y["start_logits"].numpy(), [f.start_position for f in features])
    np.testing.assert_array_equal(y["end_logits"].numpy(), [f.end_position for f in features])


def test_objective_is_the_fit_loss(slice_features):
    _, _, features, record = slice_features
    model = _tiny_span_labeler()
    x, y = next(iter(squad_records.training_dataset(record, seq_length=SEQ, batch_size=8, seed=3)))
    outputs = model(x)
    objective = qa.SpanObjective()
    loop_loss = tf.reduce_sum(objective.losses(y, outputs)["loss"]) / tf.reduce_sum(objective.loss_weights(y)["loss"])
    model.compile(keras.optimizers.Adam(1e-3), loss=qa.span_losses(), loss_weights=qa.SPAN_LOSS_WEIGHTS)
    fit_loss = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    assert float(loop_loss) == pytest.approx(fit_loss, rel=1e-5)


def test_fit_then_answer_strings(slice_features):
    tokenizer, examples, features, record = slice_features
    model = _tiny_span_labeler()
    model.compile(keras.optimizers.Adam(3e-3), loss=qa.span_losses(), loss_weights=qa.SPAN_LOSS_WEIGHTS)
    ds = squad_records.training_dataset(record, seq_length=SEQ, batch_size=8, seed=0)
    history = model.fit(ds, steps_per_epoch=20, epochs=3, verbose=0).history["loss"]
    assert history[-1] < 0.5 * history[0]
    pairs = [(e.question_text, e.context_text) for e in examples[:6]]
    answers = qa.answer_questions(model, tokenizer, pairs, max_seq_length=SEQ, doc_stride=24, max_query_length=16)
    assert len(answers) == 6
    # Answers are spans of the context's own text (case, accents and punctuation kept).
    assert all(a and a in context for a, (_, context) in zip(answers, pairs))
