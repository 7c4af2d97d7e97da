"""The shape of the package's code: short parameter lists, and the component kinds named in one table.

Both are read from the source with `ast`, so that a function added anywhere in
``cmbench/`` is held to them without a list to keep up to date.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import cmbench

PACKAGE = Path(cmbench.__file__).parent

#: most parameters a function of cmbench takes: beyond it, options travel as one object (`RunOptions`)
MAX_PARAMETERS = 10

#: functions whose parameters are a public interface kept as it is: `cmbench.run_suite` takes a run's
#: options as keywords (and builds the one `RunOptions` from them)
PUBLIC_KEYWORDS = {("__init__.py", "run_suite")}


@functools.cache
def _modules() -> tuple[tuple[str, ast.Module], ...]:
    """cmbench's own modules: not the built-in plugins (``plugins/`` in a checkout, installed as
    ``cmbench/builtins``), whose components' parameters are their suite parameters.

    Parsed once for the tests of this file, which only read the trees.
    """
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if not module.startswith("builtins/"):
            found.append((module, ast.parse(path.read_text(encoding="utf-8"), str(path))))
    return tuple(found)


def _parameters(fn: ast.AST) -> int:
    args = fn.args
    return (len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
            + (args.vararg is not None) + (args.kwarg is not None))


def test_no_function_takes_more_than_ten_parameters():
    offenders = []
    for module, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                name = getattr(node, "name", "<lambda>")
                n = _parameters(node)
                if n > MAX_PARAMETERS and (module, name) not in PUBLIC_KEYWORDS:
                    offenders.append(f"cmbench/{module}:{node.lineno} {name}() takes {n} parameters")
    assert not offenders, "\n".join(offenders)


def test_the_parameter_count_sees_every_kind_of_parameter():
    tree = ast.parse("def f(a, /, b, *c, d, **e): pass\nlambda x, y: x")
    fn, lam = tree.body[0], tree.body[1].value
    assert (_parameters(fn), _parameters(lam)) == (5, 2)
    assert {m for m, _ in _modules()} >= {"__init__.py", "cli.py", "runner/__init__.py", "report/load.py"}


#: literals that spell kind names but list something else: the built-in plugin modules (named
#: for what they declare) and the columns of the report's table of failed cells
NOT_KIND_LISTS = {("plugins.py", "BUILTIN_MODULES"), ("report/content/tables.py", "cols")}


def _kind_lists(module: str, tree: ast.AST, names: set) -> list[str]:
    """Each tuple, list or set literal of ``module`` naming two kinds or more, as ``module:line``."""
    skipped = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
               for target in node.targets
               if isinstance(target, ast.Name) and (module, target.id) in NOT_KIND_LISTS}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and id(node) not in skipped:
            # a name alone, or first in a row of a table of kinds (``(("datasets", Dataset), ...)``)
            firsts = [e.elts[0] if isinstance(e, ast.Tuple) and e.elts else e for e in node.elts]
            kinds = [e.value for e in firsts if isinstance(e, ast.Constant) and e.value in names]
            if len(kinds) >= 2:
                found.append(f"cmbench/{module}:{node.lineno} {', '.join(kinds)}")
    return found


def test_the_kinds_are_listed_in_one_table():
    from cmbench.kinds import KINDS

    names = {kind.plural for kind in KINDS}  # (singular names are also the cube's dimensions, `cube.DIMS`)
    offenders = [hit for module, tree in _modules() if module != "kinds.py"
                 for hit in _kind_lists(module, tree, names)]
    assert not offenders, "kinds listed outside cmbench.kinds:\n" + "\n".join(offenders)


def test_the_kind_list_finder_finds_a_list_of_kinds():
    tree = ast.parse('KINDS = ("datasets", "adversaries")\nx = ["datasets", "ppca"]\n'
                     'BUILTIN_MODULES = ("metrics", "datasets")\n'
                     'TABLE = {k: c for k, c in (("metrics", 1), ("datasets", 2))}')
    names = {"datasets", "adversaries", "metrics"}
    assert _kind_lists("plugins.py", tree, names) == ["cmbench/plugins.py:1 datasets, adversaries",
                                                      "cmbench/plugins.py:4 metrics, datasets"]
    assert len(_kind_lists("selection.py", tree, names)) == 3  # the exemption is by module and name


def test_each_kind_has_its_hook_and_the_table_orders_the_cells_as_the_cube():
    from cmbench import hookspecs
    from cmbench.cube import DIMS
    from cmbench.kinds import CELL_KINDS, KINDS

    assert all(callable(getattr(hookspecs, kind.hook, None)) for kind in KINDS)
    assert [kind.dimension for kind in CELL_KINDS] == [d for d in DIMS if d not in ("instance", "budget")]
    registry = cmbench.load_plugins()
    assert all(registry.kind(kind.plural) is getattr(registry, kind.plural) for kind in KINDS)
