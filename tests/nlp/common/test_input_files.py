import pytest

from official.nlp.common import input_files


def test_missing_files_are_named(tmp_path):
    present = tmp_path / "present.txt"
    present.write_text("x\n")
    with pytest.raises(input_files.InputError, match="matches no file"):
        input_files.expand_input_files(str(tmp_path / "nothing*.txt"))
    with pytest.raises(input_files.InputError, match="missing.txt.*does not exist"):
        input_files.expand_input_files(f"{present},{tmp_path / 'missing.txt'}")


def test_a_file_name_with_a_bracket_is_the_file_or_a_message_saying_how_to_escape_it(tmp_path):
    """`[` opens a character class, so "part[1].txt" as a pattern matches no file named so: the literal file is
    taken, and a pattern that matches nothing says how to write a literal [ (checked to work here and remotely)."""
    import tensorflow as tf

    (tmp_path / "part[1].txt").write_text("x\n")
    (tmp_path / "part[2].txt").write_text("x\n")
    assert input_files.expand_input_files(str(tmp_path / "part[1].txt")) == [str(tmp_path / "part[1].txt")]
    with pytest.raises(input_files.MissingInputError) as e:
        input_files.expand_input_files(str(tmp_path / "part[3]*.txt"))
    assert "to match a literal [ write [[]" in str(e.value)
    assert repr(str(tmp_path / "part[[]3]*.txt")) in str(e.value)
    escaped = str(tmp_path / "part[[]2]*")
    assert input_files.expand_input_files(escaped) == [str(tmp_path / "part[2].txt")]
    assert tf.io.gfile.glob(escaped) == [str(tmp_path / "part[2].txt")]  # what gs:// paths are globbed with
    with pytest.raises(input_files.MissingInputError) as e:
        input_files.expand_input_files(str(tmp_path / "nothing*.txt"))
    assert "[[]" not in str(e.value)


def test_expand_input_files_sorts_each_glob(tmp_path):
    for name in ("b.txt", "a.txt", "c.md"):
        (tmp_path / name).write_text("x\n")
    got = input_files.expand_input_files(f"{tmp_path}/c.md,{tmp_path}/*.txt")
    assert [p.rsplit("/", 1)[1] for p in got] == ["c.md", "a.txt", "b.txt"]


def test_a_missing_object_or_bucket_and_no_permission_are_one_line_naming_the_path(tmp_path):
    """ram:// answers a missing object with an empty NotFoundError; a bucket that does not exist, no permission
    and a store that cannot be reached come from TensorFlow's GCS filesystem as these errors (no bucket here)."""
    import tensorflow as tf

    with pytest.raises(input_files.MissingInputError, match=r"^ram://no-such-bucket/x.txt does not exist; check"):
        input_files.read_bytes("ram://no-such-bucket/x.txt")
    with pytest.raises(input_files.InputError, match="ram://no-such-bucket/.*matches no file"):
        input_files.expand_input_files("ram://no-such-bucket/*.txt")
    path = "gs://my-bucket/corpus.txt"
    cases = [
        (
            tf.errors.NotFoundError(None, None, "Error executing an HTTP request: HTTP response code 404"),
            "bucket exists",
        ),
        (tf.errors.PermissionDeniedError(None, None, "HTTP response code 403"), "permission denied"),
        (tf.errors.FailedPreconditionError(None, None, "Could not resolve host: www.googleapis.com"), "network"),
        (tf.errors.ResourceExhaustedError(None, None, "No space left on device"), "free some space"),
    ]
    for error, fix in cases:
        with pytest.raises(input_files.InputError) as raised:
            with input_files.user_path(path):
                raise error
        message = str(raised.value)
        assert message.startswith(path) and fix in message and "\n" not in message, message
    with pytest.raises(input_files.InputError, match=r"permission denied|Permission denied"):
        with input_files.user_path(str(tmp_path)):
            raise PermissionError(13, "Permission denied", str(tmp_path))
    # Issue 30: a local folder TensorFlow could not write to was answered with the bucket's credentials.
    with pytest.raises(input_files.InputError) as raised:
        with input_files.user_path(str(tmp_path)):
            raise tf.errors.PermissionDeniedError(None, None, f"{tmp_path}/ckpt-1.index; Permission denied")
    assert str(raised.value).endswith("; choose a path you can read and write, or change its permissions")
    assert "bucket" not in str(raised.value)
    with pytest.raises(input_files.InputError, match=r"^gs://my-bucket/corpus.txt: permission denied .* bucket"):
        with input_files.user_path(path):
            raise tf.errors.PermissionDeniedError(None, None, "HTTP response code 403")
    with pytest.raises(ZeroDivisionError):  # not about a path: a bug keeps its traceback
        with input_files.user_path(path):
            raise ZeroDivisionError
