"""Question answering from Python: model.fit on cached SQuAD features, the loop's objective, answers from strings;
which span head a job builds."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.common.errors import InputError
from official.nlp.data import feature_cache
from official.nlp.data.squad import examples as squad_examples
from official.nlp.data.squad import features as squad_features
from official.nlp.data.squad import records as squad_records
from official.nlp.data.squad.postprocessing import AnswerSettings
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertSpanLabeler
from official.nlp.tasks import question_answering as qa
from official.nlp.tokenizers.tokenization import FullTokenizer
from official.nlp.training import objectives

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
    examples, _ = squad_examples.read_squad_examples(str(path), is_training=True, version_2_with_negative=True)
    features, _ = squad_features.convert_examples_to_features(
        examples, tokenizer, max_seq_length=SEQ, doc_stride=24, max_query_length=16, is_training=True
    )
    record = str(path.with_suffix(".tf_record"))
    feature_cache.cached_records(record, {"test": 1}, lambda: squad_records.records(features))
    return tokenizer, examples, features, record


def test_records_round_trip(slice_features):
    _, _, features, record = slice_features
    ds = squad_records.training_dataset(
        record, max_seq_length=SEQ, batch_size=len(features), repeat=False, shuffle_buffer_size=1
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
    x, y = next(iter(squad_records.training_dataset(record, max_seq_length=SEQ, batch_size=8, seed=3)))
    outputs = model(x)
    objective = objectives.SpanObjective()
    loop_loss = tf.reduce_sum(objective.losses(y, outputs)["loss"]) / tf.reduce_sum(objective.loss_weights(y)["loss"])
    model.compile(keras.optimizers.Adam(1e-3), loss=objectives.span_losses(), loss_weights=objectives.SPAN_LOSS_WEIGHTS)
    fit_loss = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    assert float(loop_loss) == pytest.approx(fit_loss, rel=1e-5)


def test_fit_then_answer_strings(slice_features):
    tokenizer, examples, features, record = slice_features
    model = _tiny_span_labeler()
    model.compile(keras.optimizers.Adam(3e-3), loss=objectives.span_losses(), loss_weights=objectives.SPAN_LOSS_WEIGHTS)
    ds = squad_records.training_dataset(record, max_seq_length=SEQ, batch_size=8, seed=0)
    history = model.fit(ds, steps_per_epoch=20, epochs=3, verbose=0).history["loss"]
    assert history[-1] < 0.5 * history[0]
    pairs = [(e.question_text, e.context_text) for e in examples[:6]]
    settings = AnswerSettings(doc_stride=24, max_query_length=16)
    answers = qa.answer_questions(model, tokenizer, pairs, max_seq_length=SEQ, settings=settings)
    assert len(answers) == 6
    # Answers are spans of the context's own text (case, accents and punctuation kept).
    assert all(a and a in context for a, (_, context) in zip(answers, pairs))


def test_span_head_follows_the_model_it_loads(tmp_path):
    """Without --span_head the head is the one the loaded model was fine-tuned with (the run in --output_dir, else a
    SQuAD --init_checkpoint; records from before the choice are dense); a flag that contradicts it is refused."""
    runs = {
        "bilstm": {"task": "squad_v1.1", "span_head": "bilstm", "span_lstm_units": 12},
        "dense": {"task": "squad_v2.0"},
        "ner": {"task": "conll_ner"},
    }
    for name, settings in runs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "finetuning_settings.json").write_text(json.dumps(settings))

    def resolve(output_dir="new", init_checkpoint=None, **flags):
        config = qa.SquadConfig(output_dir=str(tmp_path / output_dir), init_checkpoint=init_checkpoint, **flags)
        return qa.span_head_settings(config, hidden_size=32)

    assert resolve() == ("dense", None)
    assert resolve(span_head="bilstm") == ("bilstm", 32)  # the LSTM as wide as the encoder, per direction
    assert resolve(span_head="bilstm", span_lstm_units=8) == ("bilstm", 8)
    assert resolve("bilstm") == ("bilstm", 12)
    assert resolve(init_checkpoint=str(tmp_path / "bilstm")) == ("bilstm", 12)
    assert resolve("dense") == ("dense", None)
    assert resolve("ner", span_head="bilstm") == ("bilstm", 32)  # another task's record says nothing of spans
    refused = {
        "--span_lstm_units=8 is for --span_head=bilstm": dict(span_lstm_units=8),
        "--span_head=dense: --output_dir=.*/bilstm was fine-tuned with --span_head=bilstm": dict(
            output_dir="bilstm", span_head="dense"
        ),
        "--span_lstm_units=8: --output_dir=.*/bilstm was fine-tuned with --span_lstm_units=12": dict(
            output_dir="bilstm", span_lstm_units=8
        ),
        "--span_head=bilstm: --init_checkpoint=.*/dense was fine-tuned with --span_head=dense": dict(
            init_checkpoint=str(tmp_path / "dense"), span_head="bilstm"
        ),
    }
    for message, flags in refused.items():
        with pytest.raises(InputError, match=message):
            resolve(**flags)
