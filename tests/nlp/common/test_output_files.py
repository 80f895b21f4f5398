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


def test_a_full_disk_names_the_output_not_the_input_or_the_staging_file(tmp_path, monkeypatch):
    """Issue 40: a full disk while converting a checkpoint named the input's vocab.txt (Python's copy names the
    source) or the job's hidden staging folder. A copy names its target, and an output's writer names the output."""
    import errno
    import shutil

    from official.nlp.common import full_disk, output_files

    source, target = tmp_path / "in.txt", tmp_path / "out" / "vocab.txt"
    source.write_text("[PAD]\n")
    target.parent.mkdir()

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", str(src))  # as shutil's sendfile copy does

    monkeypatch.setattr(shutil, "copyfile", full)
    with pytest.raises(OSError) as raised:
        output_files.copy(str(source), str(target))
    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, str(target))

    output = tmp_path / "model"
    with pytest.raises(InputError) as raised:
        with full_disk.naming_output_when_full(str(output), name="--output_dir"):
            output_files.copy(str(source), str(tmp_path / ".model.staging" / "vocab.txt"))
    assert str(raised.value) == (
        f"--output_dir={output}: cannot be written (No space left on device), and nothing of it was kept; free some "
        "space or choose another disk"
    )
    # TensorFlow's own writes (a checkpoint), also after `input_files.user_path` made them an InputError.
    import tensorflow as tf

    from official.nlp.common import input_files

    with pytest.raises(InputError, match=r"cannot be written \(File too large\).*raise the file size limit"):
        with full_disk.naming_output_when_full(str(output), name="--output_dir"):
            raise tf.errors.OutOfRangeError(None, None, "/x/.model.staging/ckpt-1_temp/part-0; File too large")
    with pytest.raises(InputError, match=r"--output_dir=.*: cannot be written \(No space left on device\)"):
        with full_disk.naming_output_when_full(str(output), name="--output_dir"):
            with input_files.user_path("/x/.model.staging/vocab.txt"):
                raise tf.errors.ResourceExhaustedError(None, None, "/x/.model.staging/vocab.txt; No space left")
    # Anything else passes unchanged.
    with pytest.raises(tf.errors.ResourceExhaustedError, match="OOM when allocating"):
        with full_disk.naming_output_when_full(str(output)):
            raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")
