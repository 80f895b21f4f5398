"""A Ctrl-C ends a script with one line saying what was interrupted and how to go on, and exit status 130."""

import signal
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO_ROOT

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from official.nlp.common import cli
    from official.nlp.common.processes import interruption

    def main(argv):
        where = os.environ["WHERE"]  # not an argument: a script takes flags only
        if where == "outside":
            os.kill(os.getpid(), signal.SIGINT)
        with interruption.resumable("interrupted in the job"):
            with interruption.resumable(lambda: f"interrupted at step {3}; the same command resumes from ckpt-2"):
                if where == "inner":
                    os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)

    cli.run(main, script="demo")
""")


@pytest.mark.parametrize(
    "where, line",
    [
        ("inner", "demo: interrupted at step 3; the same command resumes from ckpt-2"),  # the innermost stretch
        ("outer", "demo: interrupted in the job"),
        ("outside", "demo: interrupted; nothing half-written was kept, and the same command starts over"),
    ],
)
def test_ctrl_c_is_one_line_and_exit_130(tmp_path, where, line):
    path = tmp_path / "demo.py"
    path.write_text(SCRIPT)
    result = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin", "WHERE": where},
    )
    assert result.returncode == 128 + signal.SIGINT
    assert result.stderr.strip().splitlines() == [line]


def test_ctrl_c_while_the_script_starts_is_one_line_too(tmp_path):
    """Importing TensorFlow takes seconds, before `cli.run`: a Ctrl-C then must not end in a traceback either."""
    path = tmp_path / "starting.py"
    path.write_text(
        "import os, signal, time\n"
        "from official.nlp.common import cli\n"
        "os.kill(os.getpid(), signal.SIGINT)  # as if during `import tensorflow`\n"
        "time.sleep(30)\n"
    )
    result = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 128 + signal.SIGINT
    assert result.stderr.strip().splitlines() == ["starting: interrupted while starting; nothing was written"]


def test_a_program_that_imports_a_script_keeps_its_own_ctrl_c(tmp_path):
    (tmp_path / "a_script.py").write_text("from official.nlp.common import cli\n")
    (tmp_path / "program.py").write_text(
        "import signal\nimport a_script\nprint(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    result = subprocess.run(
        [sys.executable, str(tmp_path / "program.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": f"{REPO_ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"},
    )
    assert result.stdout.strip() == "True", result.stderr


SWALLOWED = textwrap.dedent("""
    import gc, os, signal, sys, time
    from official.nlp.common import cli
    from official.nlp.common.processes import interruption

    class Finalized:
        def __del__(self):  # as a tf.data iterator's: a Ctrl-C here is "Exception ignored in ..." in plain Python
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**6):  # the handler runs here, inside the finalizer
                pass

    def main(argv):
        with interruption.resumable("interrupted in the job; the same command resumes"):
            Finalized()
            print("the job went on", flush=True)
            if os.environ["THEN"] == "work":
                time.sleep(3600)  # the Ctrl-C is delivered again in here, and cuts the wait short
            # "return": the job ends before it is delivered again; it is raised at the end

    cli.run(main, script="demo")
""")


@pytest.mark.parametrize(
    "then, line",
    [
        ("work", "demo: interrupted in the job; the same command resumes"),
        ("return", "demo: interrupted; nothing half-written was kept, and the same command starts over"),
    ],
)
def test_a_ctrl_c_that_lands_in_a_finalizer_is_not_swallowed(tmp_path, then, line):
    """Python cannot raise a KeyboardInterrupt in a `__del__`: it printed "Exception ignored in ..." and a
    reproduce_paper run went on to exit 0. It is delivered again, where the job runs."""
    path = tmp_path / "demo.py"
    path.write_text(SWALLOWED)
    result = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        timeout=120,  # "work" sleeps an hour: only a Ctrl-C delivered into the wait ends it in time
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin", "THEN": then},
    )
    assert result.stdout == "the job went on\n"  # the interrupt was swallowed at first: the job went on
    assert result.returncode == 128 + signal.SIGINT, result.stderr
    assert result.stderr.strip().splitlines() == [line]
