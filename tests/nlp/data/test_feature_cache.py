"""A feature cache counts only while its records file is the one its key describes (issue 23: a truncated cached
`eval.tf_record` failed later with a `DataLossError` that named neither the file nor the fix)."""

from __future__ import annotations

import json

import pytest
import tensorflow as tf

from official.nlp.data import feature_cache


def _records(n):
    return lambda: ({"input_ids": [i, i + 1, i + 2], "label_ids": [i % 2]} for i in range(n))


@pytest.mark.parametrize("damage", ["truncated", "grown", "no records", "old key without size"])
def test_an_incomplete_cache_is_rebuilt_with_a_notice(tmp_path, caplog, damage):
    path = str(tmp_path / "eval.tf_record")
    key = {"task": "mrpc", "max_seq_length": 3}
    assert feature_cache.cached_records(path, key, _records(40)) == 40
    data = (tmp_path / "eval.tf_record").read_bytes()
    if damage == "truncated":  # a copy or a disk that stopped half-way
        (tmp_path / "eval.tf_record").write_bytes(data[: len(data) // 2])
    elif damage == "grown":
        (tmp_path / "eval.tf_record").write_bytes(data + data[:10])
    elif damage == "no records":
        (tmp_path / "eval.tf_record").unlink()
    else:  # a key written before the key recorded the size
        key_file = tmp_path / ("eval.tf_record" + feature_cache.KEY_SUFFIX)
        recorded = json.loads(key_file.read_text())
        del recorded["bytes"]
        key_file.write_text(json.dumps(recorded))
    built = []

    def build():
        built.append(1)
        return _records(40)()

    with caplog.at_level("WARNING"):
        assert feature_cache.cached_records(path, key, build) == 40
    assert built, "the incomplete cache was reused"
    notices = [r.getMessage() for r in caplog.records if "incomplete" in r.getMessage()]
    assert len(notices) == 1 and path in notices[0]
    assert (tmp_path / "eval.tf_record").read_bytes() == data
    assert sum(1 for _ in tf.data.TFRecordDataset(path)) == 40


def test_a_complete_cache_is_reused_without_reading_its_inputs_again(tmp_path):
    path = str(tmp_path / "train.tf_record")
    feature_cache.cached_records(path, {"k": 1}, _records(5))
    assert feature_cache.cached_records(path, {"k": 1}, lambda: pytest.fail("rebuilt a complete cache")) == 5
    assert feature_cache.read_key(path)["bytes"] == tf.io.gfile.stat(path).length


def _former_task_pipeline(path, batch_size, seed, ctx):
    """tasks/tagging.py's and tasks/multiple_choice.py's own pipeline before they shared `training_batches`: each
    record parsed, this worker's shard, `shuffle(10000, seed)`, repeat, batches with the remainder dropped."""
    spec = {"input_ids": tf.io.FixedLenFeature([3], tf.int64), "label_ids": tf.io.FixedLenFeature([1], tf.int64)}
    dataset = tf.data.TFRecordDataset(path).map(lambda r: tf.io.parse_single_example(r, spec))
    if ctx.num_input_pipelines > 1:
        dataset = dataset.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
    return dataset.shuffle(10000, seed=seed).repeat().batch(batch_size, drop_remainder=True)


@pytest.mark.parametrize("pipelines", [1, 2])
def test_training_batches_keep_the_tasks_order_shards_and_batches(tmp_path, pipelines):
    """The one training pipeline gives what each task's copy gave: the same shard of each worker, the same
    seeded order (a new one each epoch), whole batches only, without end; so runs and resumes stay as they were."""
    path = str(tmp_path / "train.tf_record")
    feature_cache.cached_records(path, {}, _records(50))
    parse = feature_cache.int_parser({"input_ids": [3], "label_ids": [1]})
    for worker in range(pipelines):
        ctx = tf.distribute.InputContext(num_input_pipelines=pipelines, input_pipeline_id=worker)
        ours = feature_cache.training_batches(path, 4, parse=parse, seed=7, input_context=ctx)
        former = _former_task_pipeline(path, 4, 7, ctx)
        batches = [(a["input_ids"].numpy(), b["input_ids"].numpy()) for a, b in zip(ours.take(40), former.take(40))]
        assert len(batches) == 40  # 40 batches of 4 from 50 / pipelines records: several epochs, without end
        for a, b in batches:
            assert a.dtype == "int32" and a.shape == (4, 3)
            assert (a == b).all()
        # This worker's records, each once per epoch, in a seeded order that changes from epoch to epoch.
        order = [int(row[0]) for a, _ in batches for row in a]
        shard, n = list(range(worker, 50, pipelines)), 50 // pipelines
        assert sorted(order[:n]) == sorted(order[n : 2 * n]) == shard
        assert order[:n] != shard and order[:n] != order[n : 2 * n]
