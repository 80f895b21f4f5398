import ast
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO_ROOT

SCRIPT = textwrap.dedent("""
    import sys
    from absl import flags
    from official.nlp.common import cli
    from official.nlp.common.errors import InputError

    flags.DEFINE_string("what", None, "user or bug")

    def main(argv):
        if flags.FLAGS.what == "user":
            raise InputError("data.tsv:3: expected 2 columns, got 1; fix the row or pass --skip_bad_rows")
        raise RuntimeError("a bug")

    cli.run(main, script="demo")
""")


def _run(tmp_path, what):
    path = tmp_path / "demo.py"
    path.write_text(SCRIPT)
    return subprocess.run([sys.executable, str(path), f"--what={what}"], capture_output=True, text=True, timeout=120)


def test_user_error_is_one_line_without_traceback(tmp_path):
    result = _run(tmp_path, "user")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "demo: data.tsv:3: expected 2 columns, got 1; fix the row or pass --skip_bad_rows"
    ]


def test_a_bug_keeps_its_traceback(tmp_path):
    result = _run(tmp_path, "bug")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "RuntimeError: a bug" in result.stderr


def test_noise_filter_keeps_everything_but_cpp_start_up_chatter():
    from official.nlp.common import quiet_start

    noise = [
        b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
        b"I0000 00:00:1795370374.369911   11699 port.cc:153] oneDNN custom operations are on.",
        b"I0000 00:00:1795370374.370183   11699 cudart_stub.cc:31] Could not find cuda drivers on your machine",
        b"To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild TensorFlow",
        b"E0000 00:00:1795370377.549555   11699 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error",
        b"W1122 18:00:48.288017   11699 some_op.cc:12] a C++ warning",
    ]
    kept = [
        b"I1122 18:00:48.288017 140589841025920 run_pretraining.py:6] step 2/4: loss=7.569",  # our absl logging
        b"E1122 18:00:48.288017   11699 gpu_device.cc:99] Out of memory while allocating",  # a real C++ error
        b"Traceback (most recent call last):",
        b"run_pretraining: input.tfrecord: corrupt",
    ]
    assert all(quiet_start._is_noise(line) for line in noise)
    assert not any(quiet_start._is_noise(line) for line in kept)
    assert quiet_start._verbosity(["x.py", "--verbosity=1"]) == 1 and quiet_start._verbosity(["x.py", "-v", "2"]) == 2
    assert quiet_start._verbosity(["x.py", "--input_file=a"]) == 0


NOISY = textwrap.dedent("""
    from official.nlp.common import cli
    import tensorflow as tf

    def main(argv):
        print(int(tf.reduce_sum(tf.constant([1, 2]))))

    cli.run(main, script="noisy")
""")


@pytest.mark.slow
def test_tensorflow_start_up_is_quiet_unless_verbosity_asks(tmp_path):
    path = tmp_path / "noisy.py"
    path.write_text(NOISY)
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    quiet = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env)
    assert quiet.returncode == 0 and quiet.stdout == "3\n"
    assert quiet.stderr == "", quiet.stderr
    loud = subprocess.run(
        [sys.executable, str(path), "--verbosity=1"], capture_output=True, text=True, timeout=300, env=env
    )
    assert loud.returncode == 0 and "absl::InitializeLog" in loud.stderr  # what the filter removes, measured


def test_every_script_imports_cli_before_tensorflow_and_ends_with_cli_run():
    """The filter must be in place before TensorFlow's first line; scripts added later are checked too."""
    scripts = sorted((REPO_ROOT / "run_scripts").glob("*.py"))
    assert scripts
    for script in scripts:
        tree = ast.parse(script.read_text())
        imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        heavy = [
            i
            for i, node in enumerate(imports)
            if any(
                name.split(".")[0] in ("official", "tensorflow", "keras", "tensorflow_text")
                for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])
            )
        ]
        assert heavy, script.name
        first = imports[heavy[0]]
        assert (
            isinstance(first, ast.ImportFrom)
            and first.module == "official.nlp.common"
            and [a.name for a in first.names] == ["cli"]
        ), f"{script.name}: import cli before {ast.unparse(first)}"
        assert "cli.run(main" in script.read_text(), f"{script.name} does not end with cli.run(main)"


POOL = textwrap.dedent("""
    import multiprocessing
    import sys

    from official.nlp.common import cli, quiet_start

    def shout(i):
        print(f"worker {i} says", file=sys.stderr, flush=True)

    def main(argv):
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            pool.map(shout, [1])
        print("main's last words", file=sys.stderr, flush=True)
        quiet_start._filter.close()
        # multiprocessing's resource tracker, which outlives atexit, still holds the pipe's write end: close()
        # must not wait for an end of file that comes only after this process is gone.
        print("filter thread alive:", quiet_start._filter.thread.is_alive())

    if __name__ == "__main__":
        cli.run(main, script="pool")
""")


def test_filter_passes_on_every_line_and_lets_go_while_a_child_holds_the_pipe(tmp_path):
    path = tmp_path / "pool.py"
    path.write_text(POOL)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "filter thread alive: False\n"
    assert done.stderr.splitlines() == ["worker 1 says", "main's last words"]


def test_a_permission_error_from_tensorflow_says_bucket_things_for_buckets_only():
    """Issue 30: a local folder without write permission was answered with "the credentials and the bucket's
    access"."""
    import tensorflow as tf

    from official.nlp.common import cli

    local = cli._describe_tf_error(
        tf.errors.PermissionDeniedError(None, None, "/data/run/ckpt-1.index; Permission denied")
    )
    assert (
        local == "/data/run/ckpt-1.index; Permission denied; choose a path you can write to, or change its permissions"
    )
    bucket = cli._describe_tf_error(tf.errors.PermissionDeniedError(None, None, "gs://b/run/ckpt-1.index: 403"))
    assert bucket == "gs://b/run/ckpt-1.index: 403; check the credentials and the bucket's access"
