"""Dependency rules between cmbench's own modules: no import cycle, no import of the facade."""
from __future__ import annotations

import ast
import functools
import importlib
import textwrap
from pathlib import Path

import pytest

import cmbench

PACKAGE = Path(cmbench.__file__).parent
#: the packages whose modules may not import one another in a circle: cmbench and its built-in plugins
ROOTS = {"cmbench": PACKAGE, "cmbench.builtins": Path(importlib.import_module("cmbench.builtins").__file__).parent}


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """A source file's syntax tree, parsed once for this file's tests (which only read it)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path):
    """(level, module, names) of every ``from ... import ...`` in a file."""
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom):
            yield node.level, node.module, [a.name for a in node.names]


def test_inner_modules_never_import_the_package_facade():
    """``__version__`` comes from cmbench.version and ``load_plugins``/``run_suite`` from
    where they live, so importing an inner module never runs the public API's wrappers."""
    facade = {name for name in cmbench.__all__} - {"hookimpl", "hookspec"}
    facade -= {name for name in facade if (PACKAGE / f"{name}.py").is_file()}  # a submodule (claims) is itself
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue
        depth = len(path.relative_to(PACKAGE).parts) - 1  # 0 for cmbench/x.py
        for level, module, names in _imports(path):
            to_package = (level == depth + 1 and module is None) or (level == 0 and module == "cmbench")
            wrong = sorted(set(names) & facade) if to_package else []
            if wrong:
                offenders.append(f"{path.relative_to(PACKAGE)} imports {', '.join(wrong)} from cmbench")
    assert not offenders, offenders


def test_theory_imports_nothing_of_cmbench():
    """Theory is usable alone: plugins, reports and tests import it freely."""
    names = [(level, module) for level, module, _ in _imports(PACKAGE / "theory.py")]
    assert all(level == 0 and not (module or "").startswith("cmbench") for level, module in names), names


# ----------------------------------------------------------------- cycles


def module_files(roots: dict) -> dict:
    """``{dotted name: (path, is_package)}`` of every module under ``roots`` (name -> folder)."""
    found = {}
    for package, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            found[".".join([package, *(parts[:-1] if is_package else parts)])] = (path, is_package)
    return found


def imported_modules(name: str, path: Path, is_package: bool, known) -> dict:
    """``{module: line}`` of the modules in ``known`` that module ``name`` imports anywhere
    (at the top, in a function, under ``if``), relative imports resolved.

    ``import a.b`` counts as importing ``a.b`` only: the parent packages Python imports
    on the way are not arrows (each ``__init__`` importing its submodules would be a cycle).

    ``from pkg import x`` imports the submodule ``pkg.x`` when there is one, else ``pkg``
    itself (its ``__init__``).
    """
    here = name if is_package else name.rpartition(".")[0]
    out: dict = {}
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            pairs = [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = here.split(".")[:len(here.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            pairs = [(base, [alias.name for alias in node.names])]
        else:
            continue
        for module, names in pairs:
            subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
            if module in known and len(subs) < max(1, len(names)):
                subs.append(module)
            for target in subs:
                if target != name:
                    out.setdefault(target, node.lineno)
    return out


def import_graph(roots: dict) -> dict:
    """``{module: {imported module: line}}`` over every module under ``roots``."""
    known = module_files(roots)
    return {name: imported_modules(name, path, is_package, known) for name, (path, is_package) in known.items()}


def collapsed(graph: dict, depth: int = 2) -> dict:
    """The graph of the units of ``depth`` dotted parts (``cmbench.report.content.x`` is
    ``cmbench.report``): an arrow from a subpackage back to a module that imports it
    is a cycle there even when no two modules form one."""
    def unit(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    out: dict = {}
    for name, targets in graph.items():
        edges = out.setdefault(unit(name), {})
        for target, line in targets.items():
            if unit(target) != unit(name):
                edges.setdefault(unit(target), f"{name}:{line} imports {target}")
    return out


def find_cycle(graph: dict) -> list:
    """One cycle ``[a, b, ..., a]`` of ``graph`` (a depth-first search), or ``[]`` when there is none."""
    state: dict = {}  # 1: on the current path, 2: done
    path: list = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def describe(cycle: list, graph: dict) -> str:
    """``a -> b (a:12); b -> a (b:3)``: each arrow with where it is (module and line)."""
    def where(a, b):
        line = graph[a][b]
        return f"{a}:{line}" if isinstance(line, int) else line

    return "; ".join(f"{a} -> {b} ({where(a, b)})" for a, b in zip(cycle, cycle[1:]))


@pytest.fixture(scope="module")
def graph() -> dict:
    """`import_graph` of cmbench and its built-in plugins, built once for this file's tests."""
    return import_graph(ROOTS)


@pytest.mark.parametrize("depth", [None, 2], ids=["modules", "subpackages"])
def test_no_import_cycle(graph, depth):
    """No module of cmbench or of its built-in plugins imports itself back through others, and
    no subpackage (runner, report, builtins) imports a module that imports it: each arrow
    points one way."""
    if depth is not None:
        graph = collapsed(graph, depth)
    cycle = find_cycle(graph)
    assert not cycle, "import cycle: " + describe(cycle, graph)


def _package(root: Path, files: dict) -> dict:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return {"pkg": root}


def test_the_cycle_search_finds_a_circle_through_a_function_level_relative_import(tmp_path):
    roots = _package(tmp_path / "pkg", {
        "__init__.py": "",
        "a.py": "from .b import f\n",
        "b.py": "def f():\n    from . import c\n",
        "c.py": "import pkg.a\n",
    })
    graph = import_graph(roots)
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
    assert describe(find_cycle(graph), graph).startswith("pkg.a -> pkg.b (pkg.a:1); pkg.b -> pkg.c (pkg.b:2)")


def test_the_cycle_search_finds_a_subpackage_imported_back(tmp_path):
    """``sub.x`` imports ``top``, which imports ``sub.y``: no module cycle, a subpackage one."""
    roots = _package(tmp_path / "pkg", {
        "__init__.py": "", "top.py": "from .sub.y import g\n",
        "sub/__init__.py": "", "sub/x.py": "from ..top import h\n", "sub/y.py": "g = 1\n",
    })
    graph = import_graph(roots)
    assert find_cycle(graph) == []
    assert find_cycle(collapsed(graph)) == ["pkg.sub", "pkg.top", "pkg.sub"]


def test_the_cycle_search_passes_a_tree(tmp_path):
    roots = _package(tmp_path / "pkg", {
        "__init__.py": "from . import a, b\n", "a.py": "from .b import x\nimport os\n", "b.py": "x = 1\n",
    })
    graph = import_graph(roots)
    assert graph["pkg"] == {"pkg.a": 1, "pkg.b": 1} and graph["pkg.a"] == {"pkg.b": 1}
    assert find_cycle(graph) == []


def test_no_builtin_plugin_imports_another(graph):
    """A built-in plugin shares code with another only through a module that registers
    nothing (such as ``cmbench.builtins.rows``), as a third-party plugin would."""
    from cmbench.plugins import BUILTIN_MODULES

    registering = {f"cmbench.builtins.{name}" for name in BUILTIN_MODULES}
    wrong = {name: sorted(set(graph[name]) & registering) for name in sorted(registering)}
    assert not any(wrong.values()), {name: targets for name, targets in wrong.items() if targets}


def test_every_builtin_module_that_registers_is_loaded():
    """A module of the built-ins with a hook implementation is in `BUILTIN_MODULES` (else its
    components would silently be missing); the others (shared helpers) have none."""
    from cmbench.plugins import BUILTIN_MODULES

    hooks = {name for name in module_files(ROOTS) if name.startswith("cmbench.builtins.")
             and "@cmbench.hookimpl" in module_files(ROOTS)[name][0].read_text(encoding="utf-8")}
    assert hooks == {f"cmbench.builtins.{name}" for name in BUILTIN_MODULES}
