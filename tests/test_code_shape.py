"""The shape of the package's code: short parameter lists.

Both are read from the source with `ast`, so that a function added anywhere in
``cmbench/`` is held to them without a list to keep up to date.
"""
from __future__ import annotations

import ast
from pathlib import Path

import cmbench

PACKAGE = Path(cmbench.__file__).parent

#: most parameters a function of cmbench takes: beyond it, options travel as one object (`RunOptions`)
MAX_PARAMETERS = 10

#: functions whose parameters are a public interface kept as it is: `cmbench.run_suite` takes a run's
#: options as keywords (and builds the one `RunOptions` from them)
PUBLIC_KEYWORDS = {("__init__.py", "run_suite")}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path))


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

