"""The `>>>` examples in the library's docstrings run (doctest), one test per module that has any: an example that
drifts from the code fails here. Only those modules are imported; the ones whose examples build and fit models are
marked slow."""

import doctest
import importlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Examples that build, fit or trace models (seconds each).
SLOW = {
    "official.nlp.data.length_buckets",
    "official.nlp.modeling.models",
    "official.nlp.text_tasks.classifier",
    "official.nlp.text_tasks.question_answerer",
    "official.nlp.text_tasks.token_classifier",
}


def _runs_examples(text: str) -> bool:
    """Whether `text` has an example without `doctest: +SKIP` (on its `>>>` line or a `...` line of the same one)."""
    examples = []
    for line in (line.strip() for line in text.splitlines()):
        if line.startswith(">>>"):
            examples.append(line)
        elif line.startswith("...") and examples:
            examples[-1] += line
    return any("doctest: +SKIP" not in example for example in examples)


def _modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "official").rglob("*.py")):
        if _runs_examples(path.read_text(encoding="utf-8")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def run_examples(module) -> tuple[doctest.TestResults, str]:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.append)
    return runner.summarize(verbose=False), "".join(report)


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW else m for m in _modules()])
def test_docstring_examples_run(name):
    results, report = run_examples(importlib.import_module(name))
    assert results.attempted > 0
    assert results.failed == 0, report


def test_a_failing_example_is_reported(tmp_path, monkeypatch):
    """Not vacuous: an example whose output drifted fails, with the example in the report."""
    (tmp_path / "drifted.py").write_text('def f():\n    """\n    >>> 1 + 1\n    3\n    """\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    results, report = run_examples(importlib.import_module("drifted"))
    assert results.failed == 1 and "1 + 1" in report
