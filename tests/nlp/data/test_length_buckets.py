import collections

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import length_buckets
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier
from official.nlp.tokenizers import tokenization

SEQ = 64


def test_bucket_lengths():
    assert length_buckets.bucket_lengths(128) == (16, 24, 32, 48, 64, 96, 128)
    assert length_buckets.bucket_lengths(100) == (16, 24, 32, 48, 64, 96, 100)
    assert length_buckets.bucket_lengths(16) == (16,)
    assert length_buckets.bucket_lengths(128, fixed=True) == (128,)
    with pytest.raises(ValueError, match="positive"):
        length_buckets.bucket_lengths(0)


@pytest.fixture(scope="module")
def sst2(shared_data):
    """The first 200 SST-2 training sentences, tokenized and padded to SEQ like classification records."""
    tokenizer = tokenization.FullTokenizer(str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"), True)
    lines = (shared_data / "glue" / "SST-2" / "train.tsv").read_text().splitlines()[1:201]
    ids = np.zeros((len(lines), SEQ), "int32")
    labels = np.zeros(len(lines), "int32")
    for i, line in enumerate(lines):
        text, label = line.rsplit("\t", 1)
        tokens = ["[CLS]"] + tokenizer.tokenize(text)[: SEQ - 2] + ["[SEP]"]
        ids[i, : len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
        labels[i] = int(label)
    x = {"input_word_ids": ids, "input_mask": np.int32(ids > 0), "input_type_ids": np.zeros_like(ids)}
    return x, labels


def _expected_length(mask_rows):
    longest = int(mask_rows.sum(axis=1).max())
    return min(b for b in length_buckets.bucket_lengths(SEQ) if b >= longest)


def test_trim_batches_cuts_to_the_bucket_of_the_longest_and_keeps_everything_else(sst2):
    x, labels = sst2
    ds = tf.data.Dataset.from_tensor_slices((x, labels)).batch(32)
    trimmed = list(length_buckets.trim_batches(ds, length_buckets.bucket_lengths(SEQ)))
    assert len(trimmed) == 7
    lengths = []
    for i, (tx, ty) in enumerate(trimmed):
        rows = slice(32 * i, 32 * (i + 1))
        length = tx["input_word_ids"].shape[1]
        lengths.append(length)
        assert length == _expected_length(x["input_mask"][rows])
        for key in x:
            np.testing.assert_array_equal(tx[key], x[key][rows, :length])
            assert not x[key][rows, length:].any()  # only padding was cut
        np.testing.assert_array_equal(ty, labels[rows])
    assert min(lengths) < SEQ  # SST-2 is short: real savings on real data


def test_group_by_length_keeps_every_example_once_in_batches_of_one_bucket(sst2):
    x, labels = sst2
    ds = tf.data.Dataset.from_tensor_slices((x, np.arange(len(labels))))
    buckets = length_buckets.bucket_lengths(SEQ)
    seen = []
    padded_tokens = 0
    for bx, index in length_buckets.group_by_length(ds, buckets, batch_size=16, drop_remainder=False):
        index = index.numpy()
        seen += list(index)
        real = x["input_mask"][index].sum(axis=1)
        length = bx["input_word_ids"].shape[1]
        assert length == _expected_length(x["input_mask"][index])
        # Every example of a batch falls in the batch's bucket (none would fit a smaller one).
        smaller = max([0] + [b for b in buckets if b < length])
        assert (real > smaller).all()
        np.testing.assert_array_equal(bx["input_word_ids"], x["input_word_ids"][index, :length])
        padded_tokens += bx["input_word_ids"].shape[0] * length
    assert sorted(seen) == list(range(len(labels)))
    trimmed_only = sum(
        b["input_word_ids"].shape[0] * b["input_word_ids"].shape[1]
        for b in length_buckets.trim_batches(tf.data.Dataset.from_tensor_slices(x).batch(16), buckets)
    )
    assert padded_tokens < 0.8 * trimmed_only


def test_group_by_length_drops_partial_batches_for_training(sst2):
    x, _ = sst2
    ds = tf.data.Dataset.from_tensor_slices(x)
    sizes = collections.Counter(
        b["input_word_ids"].shape[0]
        for b in length_buckets.group_by_length(ds, length_buckets.bucket_lengths(SEQ), batch_size=16)
    )
    assert set(sizes) == {16}


def test_fixed_shapes_leave_batches_alone(sst2):
    x, _ = sst2
    ds = tf.data.Dataset.from_tensor_slices(x)
    for b in length_buckets.group_by_length(ds, length_buckets.bucket_lengths(SEQ, fixed=True), batch_size=50):
        assert b["input_word_ids"].shape == (50, SEQ)


def test_trimmed_batches_give_the_same_logits(sst2):
    """Cutting padding is exact: the model's outputs for the real tokens do not move."""
    x, _ = sst2
    tf.keras.utils.set_random_seed(1)
    model = BertClassifier(BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=30522)), 2)
    batch = {k: v[:32] for k, v in x.items()}
    full = model(batch, training=False)
    trimmed = length_buckets.trim_batch(
        {k: tf.constant(v) for k, v in batch.items()}, length_buckets.bucket_lengths(SEQ)
    )
    assert trimmed["input_word_ids"].shape[1] < SEQ
    np.testing.assert_allclose(model(trimmed, training=False), full, atol=1e-5)
