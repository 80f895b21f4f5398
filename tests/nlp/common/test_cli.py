import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    from official.nlp.common import cli
    from official.nlp.common.errors import InputError

    def main(argv):
        if argv[1] == "user":
            raise InputError("data.tsv:3: expected 2 columns, got 1; fix the row or pass --skip_bad_rows")
        raise RuntimeError("a bug")

    cli.run(main, script="demo")
""")


def _run(tmp_path, what):
    path = tmp_path / "demo.py"
    path.write_text(SCRIPT)
    return subprocess.run([sys.executable, str(path), what], capture_output=True, text=True, timeout=120)


def test_user_error_is_one_line_without_traceback(tmp_path):
    result = _run(tmp_path, "user")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "demo: data.tsv:3: expected 2 columns, got 1; fix the row or pass --skip_bad_rows"]


def test_a_bug_keeps_its_traceback(tmp_path):
    result = _run(tmp_path, "bug")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "RuntimeError: a bug" in result.stderr
