"""The layout rule of DESIGN.md, kept true: imports only go down the layers, there are no import circles, no folder
holds more than about a dozen modules, the library never imports the benchmarks beside it, and each public name of
the library is defined once, and no module reaches into another module's private names. Every import counts,
including those inside functions."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "official"
BENCHMARKS = ROOT / "benchmarks"  # may import official; official never imports it (it is not installed)
RUN_SCRIPTS = ROOT / "run_scripts"
# Lower rank = lower layer. A package may import its own modules and any package of a lower rank.
LAYERS = {
    "common": 0,
    "modeling": 1,
    "tokenizers": 1,
    "checkpoints": 2,
    "data": 2,
    "metrics": 2,
    "training": 3,
    "tasks": 4,
    "serving": 5,
    "text_tasks": 6,  # Keras models on raw text: their predict and export are the serving modules'
    "paper": 7,  # the rerun of the paper: above every job it runs
}
MAX_MODULES_PER_FOLDER = 12


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: pathlib.Path, name: str, known: set[str]) -> set[str]:
    """The official.* modules that ``path`` imports (``from pkg import mod`` resolves to the module when it is one)."""
    found = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("official"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            if not base.startswith("official"):
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in known else base)
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, name, set(modules)) for name, path in modules.items()}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["official", "nlp"] else None


def test_every_package_has_a_layer():
    folders = {p.name for p in (PACKAGE / "nlp").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= set(LAYERS), f"add {sorted(folders - set(LAYERS))} to LAYERS (and to DESIGN.md's layering)"


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    upward = []
    for module, targets in graph.items():
        source = _layer(module)
        for target in targets:
            dest = _layer(target)
            if source is None or dest is None or source == dest:
                continue
            if LAYERS[dest] >= LAYERS[source]:
                upward.append(f"{module} imports {target} ({source} may not import {dest})")
    return sorted(upward)


def test_imports_only_go_down():
    upward = _upward_imports(_graph())
    assert not upward, "\n".join(upward)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    # Tarjan's strongly connected components: any component of more than one module is a circle.
    index, low, on_stack, stack, circles, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return circles


# Packages that may not import a lower one: what they need of it lives lower still.
SEPARATE = {("text_tasks", "tasks"): "fine-tuned models are checkpoints.fine_tuned's (head kinds, records, loading)"}


def _separation_breaches(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target} ({why})"
        for module, targets in graph.items()
        for target in targets
        for (source, dest), why in SEPARATE.items()
        if _layer(module) == source and _layer(target) == dest
    )


def test_the_text_tasks_do_not_import_the_tasks():
    breaches = _separation_breaches(_graph())
    assert not breaches, "\n".join(breaches)
    graph = _graph()  # and the check sees one
    module = next(m for m in sorted(graph) if _layer(m) == "text_tasks")
    graph[module] = graph[module] | {"official.nlp.tasks.classification"}
    assert _separation_breaches(graph) == [
        f"{module} imports official.nlp.tasks.classification ({SEPARATE[('text_tasks', 'tasks')]})"
    ]


def test_no_import_circles():
    circles = _circles(_graph())
    assert not circles, f"import circles: {circles}"


def test_folders_stay_small():
    crowded = {}
    for folder in [PACKAGE, *[p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"]]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert not crowded, f"folders over {MAX_MODULES_PER_FOLDER} modules (split the concept): {crowded}"


def _absolute_imports(path: pathlib.Path) -> set[str]:
    """Every module `path` names in an absolute import (`import a.b`, `from a.b import c`), anywhere in the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return found


def _benchmark_imports(paths) -> list[str]:
    return sorted(
        f"{path} imports {module}"
        for path in paths
        for module in _absolute_imports(path)
        if module.split(".")[0] == BENCHMARKS.name
    )


def test_the_library_never_imports_the_benchmarks():
    """benchmarks/ sits beside official/ and is not installed with it: an import of it from the library would fail
    for every user of the package."""
    assert BENCHMARKS.is_dir() and not (PACKAGE / "nlp" / "benchmarks").exists()
    offending = _benchmark_imports(sorted(PACKAGE.rglob("*.py")))
    assert not offending, "\n".join(offending)
    # The benchmarks use the library as a user does.
    assert any(module.startswith("official.") for path in BENCHMARKS.glob("*.py") for module in _absolute_imports(path))


def test_the_benchmark_check_sees_an_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "import benchmarking\nfrom official.nlp import benchmarks_like\n\n\n"
        "def f():\n    from benchmarks import step\n\n\nimport benchmarks.timing\n"
    )
    assert _benchmark_imports([module]) == [f"{module} imports benchmarks", f"{module} imports benchmarks.timing"]


@pytest.mark.parametrize("higher", ["tasks", "training"])
def test_the_checks_see_a_violation(higher):
    """The rules are not vacuous: a modeling module importing a higher layer, or a circle, is reported."""
    graph = _graph()
    target = next(m for m in sorted(graph) if _layer(m) == higher)
    graph["official.nlp.modeling.encoder"] = graph["official.nlp.modeling.encoder"] | {target}
    assert any(f"modeling may not import {higher}" in line for line in _upward_imports(graph))
    graph = _graph()
    graph["official.nlp.modeling.configs"] = graph["official.nlp.modeling.configs"] | {"official.nlp.modeling.encoder"}
    assert ["official.nlp.modeling.configs", "official.nlp.modeling.encoder"] in _circles(graph)


def _public_definitions(path: pathlib.Path) -> dict[str, int]:
    """The public names a module defines at its top level (functions, classes and constants), with their lines.

    A constant that only re-exports another module's (``X = module.X``) is the same definition, not a second one.
    """
    found = {}
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            reexport = isinstance(node.value, ast.Attribute) and all(
                isinstance(t, ast.Name) and t.id == node.value.attr for t in targets
            )
            names = [] if reexport else [t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()]
        else:
            continue
        found.update({name: node.lineno for name in names if not name.startswith("_")})
    return found


def _names_defined_twice(modules: dict[str, pathlib.Path]) -> dict[str, list[str]]:
    places: dict[str, list[str]] = {}
    for name, path in modules.items():
        for defined, line in _public_definitions(path).items():
            places.setdefault(defined, []).append(f"{name}:{line}")
    return {name: where for name, where in sorted(places.items()) if len(where) > 1}


def test_each_public_name_is_defined_once():
    """ "Go to definition" lands on the one meaning: no public function, class or constant of official/ is defined
    in two modules (two `check_settings` with two meanings were; rename one, or make it private)."""
    twice = _names_defined_twice(_modules())
    assert not twice, "\n".join(f"{name}: {', '.join(where)}" for name, where in twice.items())


def test_the_name_check_sees_a_second_definition(tmp_path):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text("def read_text(path):\n    pass\n\n\nSETTINGS_FILE = 'a.json'\nNAME = other.NAME\n")
    second.write_text("class read_text:\n    pass\n\n\nSETTINGS_FILE = 'b.json'\nNAME = 'x'\n_private = 1\n")
    assert _names_defined_twice({"a": first, "b": second}) == {
        "SETTINGS_FILE": ["a:5", "b:5"],
        "read_text": ["a:1", "b:1"],
    }


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_imports(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """Where `path` takes a private name of another module: `from official.x import _name` (or a relative import of
    one), or `m._name` (`m.Class._name`, ...) on a name `m` that an import of `official` bound."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(root)
    found, bound = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("official")):
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(f"{where}:{node.lineno} imports {'.' * node.level}{node.module or ''}:{alias.name}")
                bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            bound.update(
                alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name.startswith("official")
            )
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            value = node.value
            while isinstance(value, ast.Attribute):
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                found.append(f"{where}:{node.lineno} uses {ast.unparse(node)}")
    return sorted(found)


def test_no_module_takes_another_modules_private_names():
    """A helper two modules need is public, in the lower of the two (or below both): a private name is free to
    change with its module, and an import of one from elsewhere breaks when it does. Tests may reach in."""
    paths = [*sorted(PACKAGE.rglob("*.py")), *sorted(RUN_SCRIPTS.rglob("*.py")), *sorted(BENCHMARKS.rglob("*.py"))]
    offending = [line for path in paths for line in _private_imports(path)]
    assert not offending, "\n".join(offending)


def test_the_private_import_check_sees_one(tmp_path):
    module = tmp_path / "probe.py"
    module.write_text(
        "from official.nlp.modeling.models import _BertTask, BertClassifier\n"
        "from official.nlp.checkpoints import tf1_checkpoints\n"
        "import official.nlp.data.pretraining.generator as gen\n"
        "import keras\n\n\n"
        "def f(self, other):\n"
        "    tf1_checkpoints._describe(None)\n"
        "    gen._keep_freed_memory()\n"
        "    BertClassifier._finish_init\n"
        "    keras._private, self._own, other._field, tf1_checkpoints.__name__\n"
        "    from . import _helper\n"
    )
    assert _private_imports(module, tmp_path) == [
        "probe.py:1 imports official.nlp.modeling.models:_BertTask",
        "probe.py:10 uses BertClassifier._finish_init",
        "probe.py:12 imports .:_helper",
        "probe.py:8 uses tf1_checkpoints._describe",
        "probe.py:9 uses gen._keep_freed_memory",
    ]
