import pytest

from official.nlp.data.pretraining import outputs as pretraining_outputs


def test_output_paths():
    assert pretraining_outputs.output_paths("out/x@3") == [
        "out/x-00000-of-00003",
        "out/x-00001-of-00003",
        "out/x-00002-of-00003",
    ]
    assert pretraining_outputs.output_paths(" a.tfrecord, b.tfrecord,") == ["a.tfrecord", "b.tfrecord"]
    with pytest.raises(ValueError, match="'out/x@0': the shard count must be >= 1"):
        pretraining_outputs.output_paths("out/x@0")
    with pytest.raises(ValueError, match="names no file"):
        pretraining_outputs.output_paths(" , ")
    assert pretraining_outputs.default_stats_path("out/x@3", ["out/x-00000-of-00003"]) == "out/stats/x.json"
    assert pretraining_outputs.default_stats_path("a,b", ["a", "b"]) == "stats/a.all.json"
    assert pretraining_outputs.stats_path("out/x-00000-of-00003") == "out/stats/x-00000-of-00003.json"
