import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import our_checkpoints
from official.nlp.checkpoints.peers import tf1_checkpoints
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier, BertPretrainer
from tests.nlp.checkpoints.peers.test_tf1_checkpoints import (
    CONFIG,
    _assert_same_outputs,
    _pretrainer,
    _pretraining_inputs,
)


def test_our_checkpoint_keys_partial_restore_and_mismatch(tmp_path):
    model = _pretrainer()
    prefix = our_checkpoints.save_checkpoint(model, str(tmp_path / "ckpt"))
    names = dict(tf.train.list_variables(prefix))
    # Keys follow attribute names, not positions in the functional graph.
    assert "encoder/transformer_layer_1/attention/query/_kernel/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert "model/masked_lm/output_bias/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert our_checkpoints.is_our_checkpoint(prefix) and not tf1_checkpoints.is_tf1_checkpoint(prefix)

    # The encoder alone out of a pretraining checkpoint (fine-tuning).
    classifier = BertClassifier(BertEncoder.from_bert_config(CONFIG), 2)
    our_checkpoints.restore_checkpoint(classifier, prefix, encoder_only=True)
    for a, b in zip(classifier.encoder.weights, model.encoder.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())

    # The whole pretrainer.
    other = BertPretrainer(BertEncoder.from_bert_config(CONFIG))
    our_checkpoints.restore_checkpoint(other, prefix)
    _assert_same_outputs(model, other, _pretraining_inputs())

    deeper = BertEncoder.from_bert_config(BertConfig(**{**CONFIG.to_dict(), "num_hidden_layers": 3}))
    with pytest.raises(tf1_checkpoints.CheckpointMismatchError, match=r"missing \(16\)"):
        our_checkpoints.restore_checkpoint(deeper, prefix)
    shallower = BertEncoder.from_bert_config(BertConfig(**{**CONFIG.to_dict(), "num_hidden_layers": 1}))
    with pytest.raises(tf1_checkpoints.CheckpointMismatchError, match="unexpected .*\n.*transformer_layer_1"):
        our_checkpoints.restore_checkpoint(shallower, prefix)


@pytest.mark.slow
def test_checkpoint_with_training_state_restores_into_the_encoder(tmp_path):
    import keras

    model = _pretrainer()
    # One eager step is the training state the checkpoint needs (Adam's slots and step count); tracing it is not.
    model.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)
    x = _pretraining_inputs()
    y = {
        "masked_lm_ids": np.ones((3, 3), "int32"),
        "masked_lm_weights": np.ones((3, 3), "float32"),
        "next_sentence_labels": np.zeros((3, 1), "int32"),
    }
    model.fit(x, y, epochs=1, verbose=0)
    step = tf.Variable(12, dtype=tf.int64)
    manager = tf.train.CheckpointManager(
        our_checkpoints.checkpoint_root(model, optimizer=model.optimizer, step=step), str(tmp_path), max_to_keep=1
    )
    prefix = manager.save()
    # The optimizer's variable list gives TF a shorter path than the encoder's attributes, so the keys are
    # `optimizer/_trainable_variables/N/...`; restoring follows the object graph, not the key names.
    assert any(n.startswith("optimizer/_trainable_variables/") for n, _ in tf.train.list_variables(prefix))
    encoder = BertEncoder.from_bert_config(CONFIG)
    our_checkpoints.restore_checkpoint(encoder, prefix)
    for a, b in zip(encoder.weights, model.encoder.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    fresh = BertPretrainer(BertEncoder.from_bert_config(CONFIG))
    our_checkpoints.restore_checkpoint(fresh, prefix)
    _assert_same_outputs(model, fresh, x)
    # The heads are found in the object graph whatever the keys: the model is rebuilt with both of them.
    rebuilt = our_checkpoints.model_from_checkpoint(prefix, CONFIG)
    assert isinstance(rebuilt, BertPretrainer) and rebuilt.use_next_sentence_label
    _assert_same_outputs(model, rebuilt, x)


def test_training_checkpoint_root_keeps_the_bert_layout():
    import keras

    classifier = BertClassifier(BertEncoder.from_bert_config(CONFIG), 2)
    step = tf.Variable(3, dtype=tf.int64)
    root = our_checkpoints.training_checkpoint_root(classifier, step=step)
    assert root.encoder is classifier.encoder and root.model is classifier and root.step is step
    # Any other Keras model goes under `model` alone.
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    root = our_checkpoints.training_checkpoint_root(other, step=step)
    assert root.model is other and not hasattr(root, "encoder")
