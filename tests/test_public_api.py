"""`official.bert` is the one public namespace: the Python code of the README, of docs/ and of the notebook imports
nothing of the library but it, every `bert.<name>` they write is in it, every name in it is used there, and each
is the object its home module in `official.nlp` defines (once: no aliases)."""

import ast
import json
import pathlib
import re

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
