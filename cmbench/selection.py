"""A slice of a suite: some experiments, and the cells whose labels match a pattern.

``cmbench suite NAME --experiment E -k PATTERN`` runs part of a suite. A cell is
named ``dataset/adversary/recoverer/estimator`` by its labels; a pattern with
glob characters (``* ? [``) matches that name or any one of its labels, any other
pattern is a substring of the name. The slice keeps, per kind, the labels of the
matching cells (so an experiment stays a cross product, a superset of the matches
when patterns are combined). Seeds and cache keys depend on labels only, so a
slice computes exactly what the whole suite would and shares its cache.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import itertools
from typing import Sequence

from .errors import UserError
from .kinds import CELL_KINDS
from .plugins import choices_hint
from .suite import Experiment, Suite

#: the kinds naming a cell (``dataset/adversary/recoverer/estimator``), in that order
CELL = tuple(kind.plural for kind in CELL_KINDS)


def matches(pattern: str, labels: Sequence[str]) -> bool:
    """Whether ``pattern`` selects the cell with these four labels."""
    name = "/".join(labels)  # the cell's name
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(name, pattern) or any(fnmatch.fnmatchcase(x, pattern) for x in labels)
    return pattern in name


def slice_suite(suite: Suite, experiments: Sequence[str] = (), patterns: Sequence[str] = ()) -> Suite:
    """The part of ``suite`` that ``--experiment`` names and ``-k`` patterns select.

    Parameters
    ----------
    suite : a loaded suite.
    experiments : experiment names (all when empty).
    patterns : ``-k`` patterns; a cell is kept when any of them matches it.

    Returns
    -------
    Suite
        The same suite with fewer experiments and narrower component lists;
        ``methods`` keep only the pairs that remain.

    Raises
    ------
    UserError
        An unknown experiment name (with the close matches), or patterns that
        select no cell.
    """
    names = [e.name for e in suite.experiments]
    for name in experiments:
        if name not in names:
            raise UserError(f"--experiment {name!r}: suite {suite.name!r} has no such experiment; "
                            f"{choices_hint(name, names)}")
    chosen = [e for e in suite.experiments if not experiments or e.name in experiments]
    if patterns:
        chosen = [sliced for sliced in (_narrow(e, patterns) for e in chosen) if sliced is not None]
        if not chosen:
            raise UserError(f"-k {' -k '.join(repr(p) for p in patterns)} selects no cell; cells are named "
                            "dataset/adversary/recoverer/estimator by their labels")
    return dataclasses.replace(suite, experiments=tuple(chosen))


def _narrow(exp: Experiment, patterns: Sequence[str]) -> Experiment | None:
    keep = {kind: set() for kind in CELL}
    for labels in itertools.product(*([x.label for x in getattr(exp, kind)] for kind in CELL)):
        if any(matches(p, labels) for p in patterns):
            for kind, label in zip(CELL, labels):
                keep[kind].add(label)
    if not keep[CELL[0]]:  # no cell matched
        return None
    lists = {kind: tuple(x for x in getattr(exp, kind) if x.label in keep[kind]) for kind in CELL}
    methods = {m: pair for m, pair in exp.methods.items()
               if pair[0] in keep["recoverers"] and pair[1] in keep["estimators"]}
    return dataclasses.replace(exp, methods=methods, **lists)


def is_slice(suite: Suite, sliced: Suite) -> bool:
    """Whether ``sliced`` leaves out any cell of ``suite``."""
    return sliced.experiments != suite.experiments
