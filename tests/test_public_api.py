"""`official.bert` is the one public namespace: the Python code of the README, of docs/ and of the notebook imports
nothing of the library but it, every `bert.<name>` they write is in it, every name in it is used there, and each
is the object its home module in `official.nlp` defines (once: no aliases)."""

import ast
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOTEBOOK = ROOT / "run_scripts" / "examples" / "fine_tune_with_keras.ipynb"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
_USE = re.compile(r"\bbert\.(?!py\b)([A-Za-z_]\w*)")  # `official/bert.py` names the file


def _python_code() -> dict[str, str]:
    code = {}
    for page in PAGES:
        for i, block in enumerate(_BLOCK.findall(page.read_text(encoding="utf-8"))):
            code[f"{page.name}#{i}"] = block
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            code[f"{NOTEBOOK.name}#{i}"] = "".join(cell["source"])
    return code


def _library_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "official"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "official":
            found += [f"from {node.module} import {alias.name}" for alias in node.names]
    return found


def test_the_docs_import_the_library_only_as_official_bert():
    code = _python_code()
    assert len(code) > 8
    others = {
        where: imports
        for where, source in code.items()
        if (imports := [i for i in _library_imports(source) if i != "from official import bert"])
    }
    assert not others, others


def test_every_name_the_docs_use_is_in_the_api_once_and_every_name_there_is_used():
    from official import bert

    text = "".join(page.read_text(encoding="utf-8") for page in PAGES) + NOTEBOOK.read_text(encoding="utf-8")
    used = set(_USE.findall(text))
    exported = list(bert.__all__)
    assert len(exported) == len(set(exported))
    assert sorted(used - set(exported)) == []
    assert sorted(set(exported) - used) == []
    objects = [getattr(bert, name) for name in exported]
    assert len({id(o) for o in objects}) == len(objects)  # no name is an alias of another
    for name, value in zip(exported, objects):
        assert value.__module__.startswith("official.nlp.") and value.__name__ == name, name


def test_the_checks_see_a_stray_import_and_an_unknown_name():
    assert _library_imports("from official.nlp.modeling import models\nimport official.nlp") == [
        "from official.nlp.modeling import models",
        "official.nlp",
    ]
    assert _USE.findall("`bert.TextClassifier` and bert.nothing_here(1)") == ["TextClassifier", "nothing_here"]


def test_every_public_name_has_a_docstring_of_its_own():
    """A class's own docstring (not a base class's, nor the signature a dataclass writes when it has none)."""
    from official import bert

    assert (bert.__doc__ or "").strip()
    bare = []
    for name in bert.__all__:
        value = getattr(bert, name)
        doc = value.__dict__.get("__doc__") if isinstance(value, type) else value.__doc__
        if not (doc or "").strip() or doc.startswith(f"{name}("):
            bare.append(name)
    assert bare == []


SCRIPTS = sorted((ROOT / "run_scripts").glob("*.py"))


def _imported(tree: ast.Module, expression: ast.expr):
    """The object a script's `name` or `module_alias.name` refers to, through the script's `from m import ...`."""
    import importlib

    head, attribute = (
        (expression.value.id, expression.attr) if isinstance(expression, ast.Attribute) else (expression.id, None)
    )
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == head:
                    if attribute is None:
                        return getattr(importlib.import_module(node.module), alias.name)
                    return getattr(importlib.import_module(f"{node.module}.{alias.name}"), attribute)
    raise AssertionError(f"{ast.unparse(expression)} is not imported with `from ... import`")


def _job_of_script(source: str) -> tuple[object, object]:
    """`(config class, job function)` of a script: the class it defines its flags from, and the function its
    `main` calls with the config made from them."""
    tree = ast.parse(source)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]

    def called(node: ast.Call, name: str) -> bool:
        return ast.unparse(node.func).endswith(name)

    [define] = [call for call in calls if called(call, "define_flags")]
    config = _imported(tree, define.args[1])
    made = [call for call in calls if called(call, "config_from_flags")]
    bound = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and node.value in made
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    jobs = [
        call
        for call in calls
        if call.args
        and (call.args[0] in made or (isinstance(call.args[0], ast.Name) and call.args[0].id in bound))
        and not called(call, "config_from_flags")
    ]
    assert len(jobs) == 1, [ast.unparse(call) for call in jobs]
    return config, _imported(tree, jobs[0].func)


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.name for script in SCRIPTS])
def test_every_script_is_a_job_of_the_api(script):
    """Each script in run_scripts/ defines its flags from a config dataclass and runs one function on it; both are
    in `official.bert`, the function takes that config and returns a dataclass (the job's result)."""
    import dataclasses
    import inspect
    import typing

    from official import bert

    config, job = _job_of_script(script.read_text(encoding="utf-8"))
    for value in (config, job):
        assert value.__name__ in bert.__all__ and getattr(bert, value.__name__) is value, value.__name__
    assert dataclasses.is_dataclass(config)
    hints = typing.get_type_hints(job)
    first = next(iter(inspect.signature(job).parameters))
    assert hints[first] is config, (job.__name__, hints[first])
    assert dataclasses.is_dataclass(hints["return"]), (job.__name__, hints["return"])


def test_the_script_check_sees_a_job_outside_the_api():
    source = (
        "from absl import flags\n"
        "from official.nlp.common import config_flags\n"
        "from official.nlp.tasks import finetuning\n"
        "from official.nlp.tasks.classification import ClassifierConfig\n"
        "config_flags.define_flags(flags.FLAGS, ClassifierConfig)\n"
        "def main(_):\n"
        "    config = config_flags.config_from_flags(flags.FLAGS, ClassifierConfig)\n"
        "    finetuning.run_task(config, None)\n"
    )
    from official import bert
    from official.nlp.tasks import classification, finetuning

    config, job = _job_of_script(source)
    assert config is classification.ClassifierConfig and job is finetuning.run_task
    assert job.__name__ not in bert.__all__
