import pytest

from official.nlp.common import input_files


def test_missing_files_are_named(tmp_path):
    present = tmp_path / "present.txt"
    present.write_text("x\n")
    with pytest.raises(input_files.InputError, match="matches no file"):
        input_files.expand_input_files(str(tmp_path / "nothing*.txt"))
    with pytest.raises(input_files.InputError, match="missing.txt.*does not exist"):
        input_files.expand_input_files(f"{present},{tmp_path / 'missing.txt'}")


def test_expand_input_files_sorts_each_glob(tmp_path):
    for name in ("b.txt", "a.txt", "c.md"):
        (tmp_path / name).write_text("x\n")
    got = input_files.expand_input_files(f"{tmp_path}/c.md,{tmp_path}/*.txt")
    assert [p.rsplit("/", 1)[1] for p in got] == ["c.md", "a.txt", "b.txt"]
