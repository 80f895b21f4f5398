import errno
import os

import numpy as np
import pytest

from official.nlp.common import output_names
from official.nlp.data.pretraining import outputs as pretraining_outputs


def test_output_paths():
    assert output_names.output_paths("out/x@3") == [
        "out/x-00000-of-00003",
        "out/x-00001-of-00003",
        "out/x-00002-of-00003",
    ]
    assert output_names.output_paths(" a.tfrecord, b.tfrecord,") == ["a.tfrecord", "b.tfrecord"]
    with pytest.raises(ValueError, match="'out/x@0': the shard count must be >= 1"):
        output_names.output_paths("out/x@0")
    with pytest.raises(ValueError, match="names no file"):
        output_names.output_paths(" , ")
    assert output_names.default_stats_path("out/x@3", ["out/x-00000-of-00003"]) == "out/stats/x.json"
    assert output_names.default_stats_path("a,b", ["a", "b"]) == "stats/a.all.json"
    assert output_names.stats_path("out/x-00000-of-00003") == "out/stats/x-00000-of-00003.json"


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_parts_are_joined_whole_by_the_kernel_copy_and_by_its_fallback(tmp_path, monkeypatch, kernel_copy):
    """A shard is its parts back to back; where copy_file_range is refused (another filesystem, an old kernel)
    the join copies through Python instead."""
    if not kernel_copy:

        def refuse(*args):
            raise OSError(errno.EXDEV, "Invalid cross-device link")

        monkeypatch.setattr(os, "copy_file_range", refuse, raising=False)
    elif not hasattr(os, "copy_file_range"):
        pytest.skip("no copy_file_range on this platform")
    rng = np.random.default_rng(0)
    parts = [rng.integers(0, 256, size).astype(np.uint8).tobytes() for size in (0, 1, 70_000, 5_000_000)]
    joined = tmp_path / "joined"
    with open(joined, "wb") as out:
        out.write(b"head")
        for i, data in enumerate(parts):
            (tmp_path / f"part{i}").write_bytes(data)
            with open(tmp_path / f"part{i}", "rb") as source:
                pretraining_outputs.append_file(source, out)
    assert joined.read_bytes() == b"head" + b"".join(parts)
