import numpy as np
import pytest

from official.nlp.data.pretraining.statistics import PretrainingStatistics


def _stats(max_seq_length, lengths):
    stats = PretrainingStatistics(max_seq_length)
    lengths = np.asarray(lengths)
    stats.add_batch(lengths, lengths % 2, np.zeros_like(lengths), np.array([0, 0, 1, 2], np.int8))
    return stats


def test_merge_adds_counts_and_refuses_another_max_seq_length():
    a, b = _stats(8, [5, 8]), _stats(8, [3])
    a.merge(b)
    assert a.instances == 3 and a.real_tokens == 16 and a.predictions == 8 and a.actions == [4, 2, 2]
    assert a.length_histogram == [0, 0, 0, 1, 0, 1, 0, 0, 1]
    with pytest.raises(
        ValueError,
        match=r"max_seq_length=6 \(a length histogram of 7 entries\) into statistics "
        r"of max_seq_length=8 \(9 entries\)",
    ):
        a.merge(_stats(6, [4]))
    assert a.instances == 3  # Unchanged by the refused merge.
    bad = _stats(8, [4])
    bad.length_histogram = bad.length_histogram[:5]  # A file edited by hand, or written by another version.
    with pytest.raises(ValueError, match="5 entries"):
        a.merge(bad)


def test_read_ignores_rates_and_extras(tmp_path):
    stats = _stats(8, [5, 8])
    stats.write(str(tmp_path / "s.json"), {"settings": {"dupe_factor": 1}, "output_files": ["x"]})
    assert PretrainingStatistics.read(str(tmp_path / "s.json")) == stats
    assert PretrainingStatistics.from_dict(stats.to_dict()) == stats
