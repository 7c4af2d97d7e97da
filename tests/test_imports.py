"""Dependency rules between cmbench's own modules (DESIGN.md, "Inside cmbench/")."""
from __future__ import annotations

import ast
from pathlib import Path

import cmbench

PACKAGE = Path(cmbench.__file__).parent


def _imports(path: Path):
    """(level, module, names) of every ``from ... import ...`` in a file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
    """Theory is usable alone (DESIGN.md): plugins, reports and tests import it freely."""
    names = [(level, module) for level, module, _ in _imports(PACKAGE / "theory.py")]
    assert all(level == 0 and not (module or "").startswith("cmbench") for level, module in names), names
