"""The kinds of component, in one table: each one's class, hook, suite key, cube dimension and names.

Everything that goes over the kinds (the plugin registry, the suite loader, a
slice, ``cmbench check``, ``cmbench plugins``, the runner, the dry run) reads
them here, so that a new kind is a row of `KINDS` and its hook specification
(`cmbench.hookspecs`), not an edit of every list of kinds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .components import Adversary, Component, Dataset, Estimator, Metric, Recoverer
from .cube import DIMS


@dataclass(frozen=True)
class Kind:
    """One kind of component.

    Parameters
    ----------
    plural : str
        Its name among the kinds: the registry's table (``registry.estimators``),
        the key of an experiment that lists such components, ``KIND:NAME`` in
        ``cmbench info``.
    cls : type
        Its declaration class; ``cls.kind`` is the singular name.
    dimension : str or None
        The cube dimension along which its components lie (their labels are its
        coordinates), or None for a kind that is no dimension (metrics are the cube's variables).
    entries : str
        The attribute of `cmbench.suite.Experiment` holding an experiment's entries of this kind.
    call : tuple
        The contract's call of a component's function: the names of its positional
        arguments and of the keywords it is always given (`cmbench.plugins.check_signature`
        checks a declared function accepts them, with its parameters).
    """

    plural: str
    cls: type[Component]
    dimension: Optional[str]
    entries: str
    call: tuple[tuple[str, ...], tuple[str, ...]]

    @property
    def singular(self) -> str:
        """``"estimator"``: how a message names one component of the kind."""
        return self.cls.kind

    @property
    def hook(self) -> str:
        """The hook a plugin implements to declare components of the kind (`cmbench.hookspecs`)."""
        return f"register_{self.plural}"

    @property
    def suite_key(self) -> str:
        """The key of an ``[[experiment]]`` table listing components of the kind."""
        return self.plural


#: every kind, in the order plugins are registered and ``cmbench check`` checks them
KINDS = (
    Kind("adversaries", Adversary, "adversary", "adversaries", (("X", "budget"), ("rng", "structure"))),
    Kind("recoverers", Recoverer, "recoverer", "recoverers", (("X",), ("rng", "structure", "rank"))),
    Kind("estimators", Estimator, "estimator", "estimators", (("X",), ("rng",))),
    Kind("datasets", Dataset, "dataset", "datasets", ((), ("instance", "rng"))),
    Kind("metrics", Metric, None, "metric_entries", (("mu_hat", "data"), ())),
)
#: each kind by its plural name
BY_NAME = {kind.plural: kind for kind in KINDS}
#: the singular name of each kind, by its plural (``"estimators"`` -> ``"estimator"``)
SINGULAR = {kind.plural: kind.singular for kind in KINDS}
#: the kinds that are cube dimensions, in the cube's order (`cmbench.cube.DIMS`): a cell's labels
CELL_KINDS = tuple(kind for dim in DIMS for kind in KINDS if kind.dimension == dim)
#: every kind as a suite lists them (and ``cmbench plugins``): the cube's dimensions, then the others
LISTED = (*CELL_KINDS, *(kind for kind in KINDS if kind.dimension is None))
#: the kinds of a method: a recoverer, then an estimator (``--plugin`` adds them to every experiment)
METHOD_KINDS = (BY_NAME["recoverers"], BY_NAME["estimators"])
#: the keys of an experiment's grid, along the cube's dimensions: a kind's list, or its instances and budgets
GRID_KEYS = tuple(next((k.suite_key for k in CELL_KINDS if k.dimension == dim), f"{dim}s") for dim in DIMS)

