"""Outputs get their final name only when complete, and never replace something that is not a regular file."""

import os

import pytest

from official.nlp.common.errors import InputError
from official.nlp.common.output_files import check_target, commit, write_atomically


def test_a_fifo_or_a_folder_is_refused_and_left_as_it_was(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"--output_file=.*pipe is a FIFO, not a regular file"):
        with write_atomically(str(fifo), name="--output_file") as f:
            f.write("never")
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(InputError, match="is a folder, not a regular file"):
        check_target(str(folder))
    tmp = tmp_path / "done.tmp"
    tmp.write_text("x")
    with pytest.raises(InputError, match="is a FIFO"):
        commit(str(tmp), str(fifo))
    assert os.path.exists(fifo) and not os.path.isfile(fifo) and folder.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["done.tmp", "folder", "pipe"]
    check_target(str(folder), folder=True)
    with pytest.raises(InputError, match="is a regular file, not a folder"):
        check_target(str(tmp), folder=True)


@pytest.mark.parametrize("root", ["local", "ram://output_files_test"])
def test_an_interrupted_write_leaves_no_file_under_the_final_name(tmp_path, root):
    import tensorflow as tf

    folder = str(tmp_path) if root == "local" else root
    tf.io.gfile.makedirs(folder)
    path = os.path.join(folder, "features.jsonl")
    with pytest.raises(OSError, match="disk full"):
        with write_atomically(path) as f:
            f.write('{"linex_index": 0}\n{"linex_')
            raise OSError("disk full")
    assert tf.io.gfile.listdir(folder) == []
    with write_atomically(path) as f:
        f.write("old\n")
    with pytest.raises(RuntimeError):
        with write_atomically(path) as f:
            f.write("new, cut")
            raise RuntimeError
    with tf.io.gfile.GFile(path) as f:
        assert f.read() == "old\n"  # the earlier complete file stays
    assert tf.io.gfile.listdir(folder) == ["features.jsonl"]
