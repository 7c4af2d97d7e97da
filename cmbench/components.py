"""The public contract: component declarations, the `Data` a data set loads,
and the exceptions a component raises to say an input is outside its domain.

This module imports nothing of cmbench, so a plugin (built-in or third party)
depends only on it.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Union

import numpy as np

LEVELS = ("sample", "value", "coordinate")  # the paper's A1, A2, A3
MODES = ("missing", "replace", "delete")
#: where a sample-level adversary's corrupted rows lie: anywhere, or among the last floor(eps N)
PLACEMENTS = ("any", "last")


class Undefined(Exception):
    """Raised by a component when its method is not defined on this input.

    Example: Data Sanitization when every row holds a missing entry. The cell is
    recorded with status ``undefined`` and the reason; it is not a failure.
    """


class NotApplicable(Exception):
    """Raised by a component that cannot work on this kind of input at all.

    The runner also decides applicability from a recoverer's declared ``modes``
    and ``needs_structure``; raising this covers cases only the callable knows.
    """


@dataclass(frozen=True)
class Component:
    """Fields shared by every declaration.

    Parameters
    ----------
    name : kebab-case identifier, unique per kind.
    fn : the callable; its signature is fixed per kind (see the subclasses).
    params : defaults of the keyword parameters a suite may override. Left out
        (None), they are read from ``fn``'s signature: every keyword parameter
        with a default, except the arguments of the contract (``rng``,
        ``structure``, ...), so that each default is written once.
    description : one line, shown by ``cmbench plugins``.
    choices : allowed values of some parameters, e.g. ``{"rule": ("rank", "m_a")}``;
        a suite naming another value is refused when it loads.
    ranges : bounds of numeric parameters, ``(low, high)`` inclusive or
        ``(low, high, closure)`` with closure ``"[)"``, ``"(]"`` or ``"()"``,
        e.g. ``{"proportion": (0.0, 0.5, "[)")}``; None leaves a side unbounded.

    Example
    -------
    ::

        def trimmed(X, *, rng, proportion=0.1): ...
        cmbench.Estimator("trimmed", trimmed, ranges={"proportion": (0.0, 0.5, "[)")})
        # params == {"proportion": 0.1}, from the signature
    """

    name: str
    fn: Callable[..., Any]
    params: Optional[Mapping[str, Any]] = None
    description: str = ""
    choices: Mapping[str, tuple] = None
    ranges: Mapping[str, tuple] = None

    kind = "component"
    #: keyword arguments the contract passes; never suite parameters
    contract_args = ("rng",)

    def __post_init__(self) -> None:
        if self.params is None:
            object.__setattr__(self, "params", signature_defaults(self.fn, self.contract_args))
        object.__setattr__(self, "choices", {k: tuple(v) for k, v in (self.choices or {}).items()})
        object.__setattr__(self, "ranges", {k: tuple(v) for k, v in (self.ranges or {}).items()})


def signature_defaults(fn: Callable[..., Any], exclude: tuple = ()) -> dict:
    """Keyword parameters of ``fn`` that have a default, as a dict (``exclude`` left out).

    Parameters
    ----------
    fn : any callable; one without an inspectable signature gives ``{}``.
    exclude : names to leave out (the contract's own arguments).

    Returns
    -------
    dict
        name -> default, in the signature's order.
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in sig.parameters.values()
            if p.default is not inspect.Parameter.empty and p.name not in exclude
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


@dataclass(frozen=True)
class Adversary(Component):
    """``corrupt(X, budget, *, rng, structure, **params) -> X_corrupted``.

    ``X`` is (N, n) float and must not be modified; the result has the same
    shape, hidden entries are NaN, replaced entries hold other values, and row
    i of the result is the corruption of row i of ``X``.

    ``level`` is the budget's meaning: ``"sample"`` (A1, fraction of rows),
    ``"value"`` (A2, fraction of each column) or ``"coordinate"`` (A3, fraction
    of all entries). ``mode`` is ``"missing"``, ``"replace"`` or ``"delete"``.

    A ``"delete"`` adversary (sample level only) removes rows: its result has
    fewer rows, each equal (bit for bit) to a distinct row of ``X``, at most
    ``floor(eps N)`` of them removed, in the order it chooses; estimators and
    metrics then see the shorter matrix.

    ``placement="last"`` (sample level, replace or missing mode) promises that
    the corrupted rows are among the last ``floor(eps N)`` rows: appending
    outliers to i.i.d. inliers, as some studies do, is distributionally the
    same as replacing the last rows. When the adversary has a parameter
    named ``placement``, the promise holds when its value is ``"last"``.
    The runner and ``cmbench check`` hold it to that promise.

    ``needs_truth=True``: the adversary also receives ``true_mean`` (the data
    set's (n,) true mean) and ``true_cov`` (its (n, n) covariance, None when
    the data set does not know it), as `Data` holds them.

    An ``adaptive`` adversary also receives ``pipeline=callable(X_corrupted)
    -> error`` and ``evaluations`` (its compute budget); the runner then stages
    it per (recoverer, estimator) pair instead of once for all.
    """

    level: str = "value"
    mode: str = "missing"
    adaptive: bool = False
    needs_truth: bool = False
    placement: str = "any"

    kind = "adversary"
    contract_args = ("budget", "rng", "structure", "pipeline", "true_mean", "true_cov")

    def placement_for(self, params: Optional[Mapping[str, Any]] = None) -> str:
        """The placement promised with these parameters: ``"last"`` when the adversary has a
        ``placement`` parameter whose value (``params`` overriding its default) is ``"last"``,
        ``"any"`` for another value; the declaration's ``placement`` when it has no such parameter."""
        if "placement" in (self.params or {}):
            return "last" if {**self.params, **(params or {})}["placement"] == "last" else "any"
        return self.placement


@dataclass(frozen=True)
class Recoverer(Component):
    """``recover(X, *, rng, structure, rank, **params) -> X_recovered``.

    Same shape as ``X``; NaN left in the result means "not recovered".
    ``structure`` is the known A (n x r) or None, ``rank`` the data set's hint.
    A recoverer may return ``(X_recovered, info)`` where ``info`` is a dict of
    scalar diagnostics (e.g. ``{"converged": True, "iterations": 12}``).

    ``modes`` lists the corruption modes it handles; ``needs_structure`` says it
    requires A. Other pairings are recorded as ``not-applicable``.
    ``rank_hint`` says it reads ``rank``: a suite may then set ``rank`` for it,
    and `cmbench plugins --params` lists it (False: it is called with the hint
    and ignores it, so setting it is refused).
    """

    modes: tuple = ("missing",)
    needs_structure: bool = False
    rank_hint: bool = True

    kind = "recoverer"
    contract_args = ("rng", "structure", "rank")


@dataclass(frozen=True)
class Estimator(Component):
    """``estimate(X, *, rng, **params) -> mu_hat``.

    ``X`` is (N, n) float, NaN = missing; the result is an (n,) float vector with
    no NaN. Raise `Undefined` when the method is not defined on ``X``.

    ``cost`` is how long a call takes against the empirical mean's on the same
    input (1, the default): a hint, by which the runner shares the cells of a
    unit too large for one worker among several so that they finish together
    (`cmbench.runner.jobs.split`). It changes no result.
    """

    cost: float = 1.0

    kind = "estimator"


@dataclass(frozen=True)
class DataFile:
    """A file a data set reads: its path under the data folder, its SHA-256,
    and where to download it from when it is absent."""

    path: str
    sha256: str
    url: str = ""


@dataclass(frozen=True)
class ShippedTable:
    """A compact table derived from a data set's files and shipped with its plugin.

    It lets the data set load where its source files are absent (offline, no
    data folder). ``cmbench.data`` reads and writes the file.

    Parameters
    ----------
    path : the table file (``.npz`` written by `cmbench.data.write_table`).
    derive : ``derive(folder) -> dict[str, numpy.ndarray]``, the same arrays
        computed from the source files in ``folder``; the shipped file must hold
        exactly what it returns for the declared files.
    about : what the table's metadata records besides its source files'
        SHA-256: ``title``, ``source`` (URL), ``licence``, ``attribution`` and
        ``derivation`` (how the arrays follow from the files).
    """

    path: str
    derive: Callable[[Any], Mapping[str, np.ndarray]]
    about: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Dataset(Component):
    """``load(*, instance, rng, **params) -> Data``.

    ``shape`` and ``rank`` are the nominal (N, n) and rank hint, shown by
    ``cmbench datasets``; ``files`` the data files it needs (empty for
    generated data); ``folder`` the sub-folder of the data directory that holds
    them; ``table`` an optional `ShippedTable` used when those files are absent.

    A generated data set whose size follows its parameters gives ``shape`` as
    a callable, ``shape(**params) -> (N, n)`` (called with the declared
    defaults updated by the suite's values, no ``instance`` or ``rng``): the
    suite's size check and ``--dry-run`` then know N x n before anything is
    allocated (`shape_for`), and the cube describes it by that shape and its
    ``rank`` without loading it in the runner's own process (no structure A:
    a data set with a known A gives a fixed ``shape``, or none).
    """

    shape: Optional[Union[tuple, Callable[..., tuple]]] = None
    rank: Optional[int] = None
    files: tuple = ()
    folder: str = ""
    table: Optional[ShippedTable] = None

    kind = "dataset"
    contract_args = ("instance", "rng")

    def shape_for(self, params: Optional[Mapping[str, Any]] = None) -> Optional[tuple]:
        """The (N, n) this data set loads with ``params`` (its defaults updated by them), as far
        as its declaration tells without loading: None when it does not, or its ``shape``
        callable raises or returns something else than two positive integers."""
        shape = self.shape
        if callable(shape):
            try:
                shape = shape(**{**self.params, **(params or {})})
            except Exception:  # a size it cannot tell from these parameters: known once loaded
                return None
        try:
            N, n = (int(v) for v in shape)
        except (TypeError, ValueError):
            return None
        return (N, n) if N > 0 and n > 0 else None


@dataclass(frozen=True)
class Metric(Component):
    """``error(mu_hat, data, **params) -> float``.

    ``mu_hat`` is the estimator's (n,) finite vector, ``data`` the `Data` the
    data set loaded (``data.mean`` is the truth). Return NaN where the metric
    has no value (e.g. Mahalanobis without a covariance); raise `Undefined` to
    say the same with a reason. A suite's ``metrics = [...]`` names metrics;
    the cube holds one variable per metric and the report one page each.

    ``inputs`` names what else the metric needs from the runner, each passed
    as a keyword argument: ``"inlier_mean"`` is the (n,) mean of the clean rows
    the adversary did not replace or hide (all NaN when it touched every row;
    a deleting adversary replaces nothing, so there it is the mean of the whole
    clean sample, as the studies that delete rows take their inliers), so that
    ``fn(mu_hat, data, inlier_mean=m, **params)`` can measure an excess error.
    """

    inputs: tuple = ()

    kind = "metric"
    contract_args = ()
    #: what a metric may ask for in ``inputs``
    INPUTS = ("inlier_mean",)

    def __post_init__(self) -> None:
        inputs = (self.inputs,) if isinstance(self.inputs, str) else tuple(self.inputs or ())
        unknown = [i for i in inputs if i not in self.INPUTS]
        if unknown:
            raise ValueError(f"metric {self.name!r}: unknown inputs {unknown}; a metric may ask for "
                             f"{', '.join(self.INPUTS)}")
        object.__setattr__(self, "inputs", inputs)
        if self.params is None:  # what the runner passes is not a parameter a suite sets
            object.__setattr__(self, "params", signature_defaults(self.fn, inputs))
        super().__post_init__()


@dataclass(frozen=True, eq=False)
class Data:
    """What a data set loads.

    Parameters
    ----------
    X : (N, n) float array, the clean sample (NaN only where the data set says
        so, e.g. values missing in the source).
    mean : (n,) true mean (analytic for generated data, the clean sample mean
        for real data).
    cov : (n, n) covariance or None when unknown; may be singular.
    structure : (n, r) known A with x = A z, or None.
    rank : rank hint for recoverers that learn the structure.
    columns : names of the n columns.
    """

    X: np.ndarray
    mean: np.ndarray
    cov: Optional[np.ndarray] = None
    structure: Optional[np.ndarray] = None
    rank: Optional[int] = None
    columns: tuple = ()

    @property
    def shape(self) -> tuple:
        return tuple(self.X.shape)
