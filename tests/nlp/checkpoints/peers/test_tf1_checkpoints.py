import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import our_checkpoints
from official.nlp.checkpoints.peers import tf1_checkpoints
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier, BertPretrainer
from tests.conftest import REPO_ROOT

CONFIG = BertConfig(
    vocab_size=40,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=32,
    max_position_embeddings=16,
)
# The variable names and shapes of an original google-research/bert checkpoint (run_pretraining.py), for a
# 2-layer model with H=16, I=32, V=40; written out by hand from modeling.py and run_pretraining.py.
ORIGINAL_NAMES = {
    "bert/embeddings/word_embeddings": [40, 16],
    "bert/embeddings/token_type_embeddings": [2, 16],
    "bert/embeddings/position_embeddings": [16, 16],
    "bert/embeddings/LayerNorm/gamma": [16],
    "bert/embeddings/LayerNorm/beta": [16],
    **{
        f"bert/encoder/layer_{i}/{name}": shape
        for i in range(2)
        for name, shape in {
            "attention/self/query/kernel": [16, 16],
            "attention/self/query/bias": [16],
            "attention/self/key/kernel": [16, 16],
            "attention/self/key/bias": [16],
            "attention/self/value/kernel": [16, 16],
            "attention/self/value/bias": [16],
            "attention/output/dense/kernel": [16, 16],
            "attention/output/dense/bias": [16],
            "attention/output/LayerNorm/gamma": [16],
            "attention/output/LayerNorm/beta": [16],
            "intermediate/dense/kernel": [16, 32],
            "intermediate/dense/bias": [32],
            "output/dense/kernel": [32, 16],
            "output/dense/bias": [16],
            "output/LayerNorm/gamma": [16],
            "output/LayerNorm/beta": [16],
        }.items()
    },
    "bert/pooler/dense/kernel": [16, 16],
    "bert/pooler/dense/bias": [16],
    "cls/predictions/transform/dense/kernel": [16, 16],
    "cls/predictions/transform/dense/bias": [16],
    "cls/predictions/transform/LayerNorm/gamma": [16],
    "cls/predictions/transform/LayerNorm/beta": [16],
    "cls/predictions/output_bias": [40],
    "cls/seq_relationship/output_weights": [2, 16],
    "cls/seq_relationship/output_bias": [2],
}


def _randomized(model, seed=0):
    """Fills every weight with distinct random values, so a swapped or transposed weight cannot go unnoticed."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        w.assign(rng.normal(scale=0.5, size=w.shape).astype("float32"))
    return model


def _pretraining_inputs(seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((3, 9), "int32")
    mask[1, 6:] = 0
    return {
        "input_word_ids": (rng.integers(1, 40, (3, 9)) * mask).astype("int32"),
        "input_mask": mask,
        "input_type_ids": (np.arange(9)[None] >= 4).astype("int32").repeat(3, 0) * mask,
        "masked_lm_positions": np.array([[1, 4, 0], [2, 3, 5], [8, 0, 0]], "int32"),
    }


def _pretrainer(config=CONFIG, nsp=True, seed=0):
    return _randomized(BertPretrainer(BertEncoder.from_bert_config(config), use_next_sentence_label=nsp), seed)


def _assert_same_outputs(a, b, inputs):
    out_a, out_b = a(inputs), b(inputs)
    for key in out_a:
        if isinstance(out_a[key], list):
            continue
        np.testing.assert_array_equal(np.asarray(out_a[key]), np.asarray(out_b[key]), err_msg=key)


def test_tf1_checkpoint_has_the_original_names_and_round_trips(tmp_path):
    model = _pretrainer()
    prefix = tf1_checkpoints.write_tf1_checkpoint(
        str(tmp_path / "bert_model.ckpt"), tf1_checkpoints.export_weights(model)
    )
    # Readable by TF's generic reader with exactly the original names and shapes.
    assert dict(tf.train.list_variables(prefix)) == ORIGINAL_NAMES
    assert tf1_checkpoints.is_tf1_checkpoint(prefix) and not our_checkpoints.is_our_checkpoint(prefix)
    weights = tf1_checkpoints.read_tf1_checkpoint(prefix)
    # NSP weights are [2, H] in TF1: row k scores class k.
    np.testing.assert_array_equal(weights["cls/seq_relationship/output_weights"], model.next_sentence.kernel.numpy().T)
    restored = tf1_checkpoints.model_from_weights(weights, CONFIG)
    assert isinstance(restored, BertPretrainer) and restored.use_next_sentence_label
    _assert_same_outputs(model, restored, _pretraining_inputs())


def test_tf1_training_state_is_dropped_and_task_heads_are_ignored(tmp_path):
    weights = tf1_checkpoints.export_weights(_randomized(BertEncoder.from_bert_config(CONFIG)))
    extra = {
        "global_step": np.array(7.0),
        "bert/pooler/dense/kernel/adam_m": np.zeros((16, 16)),
        "bert/pooler/dense/kernel/adam_v": np.zeros((16, 16)),
        "output_weights": np.zeros((3, 16)),
    }
    prefix = tf1_checkpoints.write_tf1_checkpoint(str(tmp_path / "model.ckpt-10"), {**weights, **extra})
    read = tf1_checkpoints.read_tf1_checkpoint(prefix)
    assert set(read) == set(weights) | {"output_weights"}
    classifier = BertClassifier(BertEncoder.from_bert_config(CONFIG), 3)
    assert tf1_checkpoints.assign_weights(read, classifier) == ["output_weights"]


@pytest.mark.parametrize(
    "change, kind, needle",
    [
        (dict(num_hidden_layers=1), "unexpected", "bert/encoder/layer_1/attention/self/query/kernel [16, 16]"),
        (dict(num_hidden_layers=3), "missing", "bert/encoder/layer_2/output/LayerNorm/beta [16]"),
        (dict(vocab_size=41), "wrong_shape", "bert/embeddings/word_embeddings: checkpoint [40, 16], model [41, 16]"),
        (
            dict(intermediate_size=64),
            "wrong_shape",
            "bert/encoder/layer_0/intermediate/dense/kernel: checkpoint [16, 32], model [16, 64]",
        ),
    ],
)
def test_mismatches_are_listed(change, kind, needle):
    weights = tf1_checkpoints.export_weights(_pretrainer())
    other = BertPretrainer(BertEncoder.from_bert_config(BertConfig(**{**CONFIG.to_dict(), **change})))
    before = [w.numpy().copy() for w in other.weights]
    with pytest.raises(tf1_checkpoints.CheckpointMismatchError) as info:
        tf1_checkpoints.assign_weights(weights, other, source="ckpt/bert_model.ckpt")
    assert needle in getattr(info.value, kind)
    message = str(info.value)
    assert message.startswith("ckpt/bert_model.ckpt does not match the model (")
    assert {"missing": "missing (", "unexpected": "unexpected (", "wrong_shape": "wrong shape ("}[kind] in message
    assert needle in message
    # Nothing was assigned.
    assert all(np.array_equal(b, w.numpy()) for b, w in zip(before, other.weights))


def test_pretrainer_needs_its_heads():
    weights = tf1_checkpoints.export_weights(_randomized(BertEncoder.from_bert_config(CONFIG)))
    with pytest.raises(tf1_checkpoints.CheckpointMismatchError, match="cls/predictions/output_bias"):
        tf1_checkpoints.assign_weights(weights, BertPretrainer(BertEncoder.from_bert_config(CONFIG)))


KILLED_MID_SAVE = """
import os, signal, sys, threading, time
import numpy as np
from official.nlp.checkpoints.peers import tf1_checkpoints

folder = sys.argv[1]


def kill_once_tensorflow_writes():  # SaveV2 writes <prefix>.data-...tempstate<n> and renames it when whole
    while True:
        for directory, _, names in os.walk(folder):
            if any("tempstate" in name for name in names):
                os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.0005)


threading.Thread(target=kill_once_tensorflow_writes, daemon=True).start()
tf1_checkpoints.write_tf1_checkpoint(os.path.join(folder, "bert_model.ckpt"), {"big": np.ones(32 << 20, np.float32)})
"""


@pytest.mark.slow
def test_a_tf1_write_killed_mid_save_leaves_nothing_a_rerun_keeps(tmp_path):
    """SIGKILL while TensorFlow writes a TF1 checkpoint (a conversion killed by the OOM killer or a preemption): its
    half-written `.tempstate` file (16 MB for BERT-tiny, 440 MB for BERT-base) must not outlive the rerun."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MID_SAVE, str(tmp_path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert any("tempstate" in p.name for p in tmp_path.rglob("*"))  # what the kill left
    assert not list(tmp_path.glob("*.index"))  # and no checkpoint

    weights = {"bert/embeddings/word_embeddings": np.arange(12, dtype=np.float32).reshape(4, 3)}
    prefix = tf1_checkpoints.write_tf1_checkpoint(str(tmp_path / "bert_model.ckpt"), weights)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "bert_model.ckpt.data-00000-of-00001",
        "bert_model.ckpt.index",
    ]
    np.testing.assert_array_equal(
        tf1_checkpoints.read_tf1_checkpoint(prefix)["bert/embeddings/word_embeddings"],
        weights["bert/embeddings/word_embeddings"],
    )
