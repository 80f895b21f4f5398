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
    shapes = {"input_ids": [3], "label_ids": [1]}
    assert len(list(feature_cache.read_records(path, shapes))) == 40


def test_a_complete_cache_is_reused_without_reading_its_inputs_again(tmp_path):
    path = str(tmp_path / "train.tf_record")
    feature_cache.cached_records(path, {"k": 1}, _records(5))
    assert feature_cache.cached_records(path, {"k": 1}, lambda: pytest.fail("rebuilt a complete cache")) == 5
    assert feature_cache.read_key(path)["bytes"] == tf.io.gfile.stat(path).length
