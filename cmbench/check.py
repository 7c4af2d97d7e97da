"""The component contract, checked on small generated inputs: ``cmbench check``.

A plugin author learns whether a new component keeps the contract of
`cmbench.components` before running any suite: each declared component is
called on a handful of small generated samples and every promise is checked
separately, so that one defect gives one failed check with its reason.

The same per-input probes (`probe_estimator`, `probe_adversary`,
`probe_recoverer`, `probe_dataset`, `probe_metric`) back the property tests of
the built-ins, which feed them random inputs instead of the fixed cases here.
Each probe takes the declaration ``decl``, one input, a ``seed`` for the
component's rng and optional ``params`` (default: the declared ones); it calls
the component twice, with equal rngs and different global random states, and
returns a `Probe`: ``value`` the checked output (None when the call raised),
``problems`` the failed checks with their reasons, ``undefined`` the reason of
a `cmbench.Undefined` or `cmbench.NotApplicable`.
The output checks themselves are the runner's (`cmbench.runner.contracts`), so a
component that passes here is never recorded as a failed cell for breaking
the contract.
"""
from __future__ import annotations

import inspect
import math
from pathlib import Path
import random
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from .components import Adversary, Component, Data, Dataset, Estimator, Metric, Recoverer
from .errors import PluginError, UserError, describe_error
from .options import check_timeout
from .kinds import KINDS, SINGULAR
from .check_pages import PAGE_CHECKS, probe_page_kind
from .plugins import (Registry, choices_hint, is_file_spec, load_plugins,
                      resolve_plugin, split_spec, watch_child)
from .runner.contracts import check_corruption, check_data, check_estimate, check_recovery
from .runner.guard import Context, call as guarded_call  # the one guarded plugin call, as a suite's cells use it
from .cube import NOT_APPLICABLE, OK, TIMEOUT as TIMEOUT_STATUS, UNDEFINED
from .suite import MAX_SEED, Entry
from .theory import changed_entries

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"

# The checks of each kind, in the order they are printed.
PARAMS = "params defaults match the signature's"
SAME_RNG = "same result for the same rng (no global or unseeded randomness)"
UNMODIFIED = "leaves its input unmodified"
CHECKS = {
    "estimators": (
        "returns a finite (n,) vector (cmbench.Undefined only where entries are missing)",
        UNMODIFIED, SAME_RNG, PARAMS),
    "adversaries": (
        "returns a float array of the input's shape",
        "respects its budget at its level, changes entries (or deletes rows) as its mode and placement say",
        "budget 0 changes nothing",
        UNMODIFIED, SAME_RNG, PARAMS),
    "recoverers": (
        "returns the input's shape, no inf (NaN = not recovered)",
        "keeps the visible entries (missing mode)",
        UNMODIFIED, SAME_RNG, PARAMS),
    "datasets": (
        "load returns a valid cmbench.Data",
        "same data for the same rng and instance",
        PARAMS),
    "metrics": (
        "returns a real number, 0 at the true mean, >= 0 elsewhere (NaN allowed)",
        UNMODIFIED, "same value twice", PARAMS),
}
#: a plugin's kinds of report page (`cmbench.check_pages`), checked beside its components
PAGES = "report-pages"
CHECKS[PAGES] = PAGE_CHECKS
#: how a result names what it checked: a component's kind, or a kind of report page
WHAT = {**SINGULAR, PAGES: "report page kind"}
BUDGETS = (0.05, 0.1, 0.25, 0.5, 1.0)


@dataclass(frozen=True)
class Result:
    """One check of one component: PASS, FAIL (with the reason) or SKIP (with why)."""

    kind: str
    name: str
    check: str
    status: str
    reason: str = ""

    def line(self) -> str:
        text = f"{self.status} {WHAT[self.kind]} {self.name}: {self.check}"
        return f"{text}: {self.reason}" if self.reason else text


@dataclass
class Probe:
    """What one call of a component on one input showed.

    ``value`` is the (checked) output, None when the call raised; ``undefined``
    the reason of a `cmbench.Undefined` or `cmbench.NotApplicable`;
    ``problems`` maps a check (see `CHECKS`) to why it failed on this input.
    """

    value: Any = None
    undefined: str = ""
    problems: dict = field(default_factory=dict)
    #: why the call gave no output to check (it raised, timed out, or was not made): the checks of
    #: its output did not run on this input
    no_output: str = ""
    #: the call was not made at all (after a timeout): no check ran on this input
    not_called: bool = False

    def fail(self, check: str, reason: str) -> None:
        self.problems.setdefault(check, reason)


@dataclass
class _Call:
    value: Any = None
    undefined: str = ""
    error: str = ""
    modified: str = ""
    user_error: str = ""  # a `UserError` the call raised (a data set that needs a file)
    called: bool = True  # False: not made, after an earlier call of the component timed out


# ------------------------------------------------------------------ calling a component

#: the per-call limit of `cmbench check` in seconds (``--timeout``), as in a suite's cells
DEFAULT_TIMEOUT = 60.0
_CONTEXT = [Context(DEFAULT_TIMEOUT)]  # set by `check_component` for the calls of one component
_TIMED_OUT = [False]  # a call of the component being checked timed out


def _call(fn: Callable, args: tuple, kwargs: dict, noise: int) -> _Call:
    """Call ``fn`` on private copies of its array arguments; report what it did to them.

    The call goes through the runner's guarded call (`cmbench.runner.guard.call`): the
    per-call timeout, ``BaseException`` (``SystemExit`` too) caught, as in a suite's cells.
    The global NumPy and ``random`` states are reseeded with ``noise`` first, so
    that two calls with the same ``rng`` but different ``noise`` differ only if
    the component draws from somewhere other than its ``rng``.
    """
    if _TIMED_OUT[0]:  # one timeout per component is enough: its other calls would each wait as long
        return _Call(error=f"not called: an earlier call did not return within --timeout {_CONTEXT[0].timeout:g} s",
                     called=False)
    copies = tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)
    np.random.seed(noise)
    random.seed(noise)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one line per check: a component's warnings are noise here
        outcome = guarded_call(fn, _CONTEXT[0], *copies, **kwargs)
    out = _Call(value=outcome.value, user_error=outcome.user_error)
    if outcome.status in (UNDEFINED, NOT_APPLICABLE):
        out.undefined = f"{'Undefined' if outcome.status == UNDEFINED else 'NotApplicable'}: {outcome.error}"
    elif outcome.status == TIMEOUT_STATUS:
        _TIMED_OUT[0] = True
        out.error = f"did not return within --timeout {_CONTEXT[0].timeout:g} s"
    elif outcome.status != OK:  # the component's bug (or a data set's missing input), reported as its check's failure
        out.error = f"raised {outcome.error}"
    for i, (a, c) in enumerate(zip(args, copies)):
        if isinstance(a, np.ndarray) and not np.array_equal(a, c, equal_nan=True):
            where = np.argwhere(changed_entries(a, c))
            out.modified = (f"wrote into its input array (argument {i + 1}) at {len(where)} "
                            f"entr{'y' if len(where) == 1 else 'ies'}, first {tuple(int(j) for j in where[0])}")
    return out


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True))
    except (TypeError, ValueError):  # not numbers: another check fails them; equal reprs are the same
        return repr(a) == repr(b)


def _entry(decl: Component, params: dict) -> Entry:
    return Entry(label=decl.name, decl=decl, params=dict(params), source="cmbench check")


def _twice(probe: Probe, fn: Callable, args: tuple, seed: Optional[int], /, same: str = SAME_RNG,
           **kwargs) -> _Call:
    """Call twice with different global states (and equal rngs seeded with ``seed``, none when
    None); record modification, and a second result unlike the first as a failure of ``same``."""
    def call(noise: int) -> _Call:
        return _call(fn, args, {**({} if seed is None else {"rng": np.random.default_rng(seed)}), **kwargs}, noise)

    first = call(1)
    if first.modified:
        probe.fail(UNMODIFIED, first.modified)
    if first.error or first.undefined:
        return first
    second = call(2)
    if not second.error and not second.undefined and not _same(_array(first.value), _array(second.value)):
        probe.fail(same, "two calls with equally seeded rngs gave different results" if seed is not None
                   else f"gave {first.value!r}, then {second.value!r}")
    return first


def _no_value(probe: Probe, call: _Call, check: str) -> bool:
    """Record a call that raised (a failure of ``check``) or was undefined (its reason).

    Returns True when the call gave no value whose contract could be checked.
    """
    if call.error:
        probe.fail(check, call.error)
        probe.no_output, probe.not_called = probe.no_output or call.error, not call.called
    elif call.undefined:
        probe.undefined = call.undefined
    return bool(call.error or call.undefined)


def _array(value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict):
        return value[0]  # a recoverer's (X, info)
    return value


# ------------------------------------------------------------------ probes: one input each

def probe_estimator(decl: Estimator, X: np.ndarray, seed: int, params: Optional[dict] = None) -> Probe:
    """Run estimator ``decl`` on ``X`` (N, n; NaN = missing) and check its contract.

    Returns
    -------
    Probe
        ``value`` the (n,) estimate (None if it raised), ``problems`` by check.
    """
    params = dict(decl.params if params is None else params)
    X = np.asarray(X, dtype=float)
    probe = Probe()
    out = _twice(probe, decl.fn, (X,), seed, **params)
    check = CHECKS["estimators"][0]
    if _no_value(probe, out, check):
        # no row at all (a deleting adversary at budget 1) leaves nothing to estimate from
        if out.undefined and X.shape[0] > 0 and not np.isnan(X).any():
            probe.fail(check, f"{out.undefined} on data without missing entries")
    else:
        try:
            probe.value = check_estimate(out.value, X.shape[1])
        except ValueError as exc:
            probe.fail(check, str(exc))
    return probe


def probe_adversary(decl: Adversary, X: np.ndarray, budget: float, seed: int, structure=None,
                    params: Optional[dict] = None, pipeline: Optional[Callable] = None) -> Probe:
    """Run adversary ``decl`` on ``X`` at ``budget`` and check its contract.

    An adaptive adversary gets ``pipeline`` (default: the l2 error of the
    per-coordinate mean of the visible entries); one that needs the truth gets
    ``X``'s own mean and covariance as ``true_mean`` and ``true_cov``. A
    deleting adversary must return distinct rows of ``X``, at most
    ``floor(budget N)`` fewer (all of them at budget 0); one placing its rows
    last must leave the rows before the last ``floor(budget N)`` alone.
    """
    params = dict(decl.params if params is None else params)
    X = np.asarray(X, dtype=float)
    probe = Probe()
    extra = {"pipeline": pipeline or _mean_pipeline(X)} if decl.adaptive else {}
    if decl.needs_truth:  # the probe's sample stands for the distribution: its own mean and covariance
        extra.update(_sample_truth(X))
    out = _twice(probe, decl.fn, (X, budget), seed, structure=structure, **params, **extra)
    shape_check, budget_check, zero_check = CHECKS["adversaries"][:3]
    if _no_value(probe, out, shape_check):
        return probe
    Y = np.asarray(out.value)
    deletes = decl.mode == "delete"
    if (Y.shape != X.shape and not deletes) or not np.issubdtype(Y.dtype, np.floating):
        probe.fail(shape_check, f"returned {Y.dtype} of shape {Y.shape}, expected float of shape {X.shape}")
        return probe
    try:
        check_corruption(Y, X, _entry(decl, params), budget)
    except ValueError as exc:
        probe.fail(budget_check, f"at budget {budget:g}: {exc}")
        if deletes:
            return probe
    if deletes:  # rows removed, none changed: the checks above are all there is
        if budget == 0 and Y.shape[0] != X.shape[0]:
            probe.fail(zero_check, f"deleted {X.shape[0] - Y.shape[0]} rows at budget 0")
        probe.value = Y
        return probe
    changed = changed_entries(X, Y)
    if budget == 0 and changed.any():
        probe.fail(zero_check, f"changed {int(changed.sum())} entries at budget 0")
    probe.value = Y
    return probe


def _sample_truth(X: np.ndarray) -> dict:
    """A sample's mean and covariance as a data set's truth: finite, as `Data` requires (NaN
    entries filled with their column's mean, an all-NaN column's mean 0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column
        mean = np.nan_to_num(np.nanmean(X, axis=0))
    filled = np.where(np.isnan(X), mean, X)
    cov = np.atleast_2d(np.cov(filled, rowvar=False)) if X.shape[0] > 1 else np.zeros((X.shape[1],) * 2)
    return {"true_mean": mean, "true_cov": np.nan_to_num(cov)}


def _mean_pipeline(X: np.ndarray) -> Callable:
    truth = np.nanmean(X, axis=0)

    def pipeline(Xc) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: inf below
            mu = np.nanmean(np.asarray(Xc, dtype=float), axis=0)
        return float(np.linalg.norm(mu - truth)) if np.isfinite(mu).all() else math.inf

    return pipeline


def probe_recoverer(decl: Recoverer, Xc: np.ndarray, seed: int, structure=None, rank=None,
                    mode: str = "missing", params: Optional[dict] = None) -> Probe:
    """Run recoverer ``decl`` on the corrupted ``Xc`` and check its contract.

    ``mode`` is the corruption's: in missing mode the visible entries must come
    back unchanged.
    """
    params = dict(decl.params if params is None else params)
    rank = params.pop("rank", rank)
    Xc = np.asarray(Xc, dtype=float)
    probe = Probe()
    out = _twice(probe, decl.fn, (Xc,), seed, structure=structure, rank=rank, **params)
    shape_check, keep_check = CHECKS["recoverers"][:2]
    if _no_value(probe, out, shape_check):
        return probe
    try:
        Xr, _ = check_recovery(out.value, Xc)
    except ValueError as exc:
        probe.fail(shape_check, str(exc))
        return probe
    if mode == "missing":
        visible = ~np.isnan(Xc)
        scale = 1e-9 * (1.0 + np.abs(Xc[visible]))
        moved = ~(np.abs(Xr[visible] - Xc[visible]) <= scale)
        if moved.any():
            probe.fail(keep_check, f"changed {int(moved.sum())} visible entries (NaN or another value)")
    probe.value = Xr
    return probe


def probe_dataset(decl: Dataset, seed: int, instance: int = 0, params: Optional[dict] = None) -> Probe:
    """Load data set ``decl`` and check what it returns; a `UserError` (absent file,
    required parameter) leaves ``problems`` empty and says why in ``undefined``."""
    params = dict(decl.params if params is None else params)
    probe = Probe()
    valid_check, same_check = CHECKS["datasets"][:2]
    entry = _entry(decl, params)

    def load(noise: int) -> _Call:
        return _call(decl.fn, (), dict(instance=instance, rng=np.random.default_rng(seed), **params), noise)

    first = load(1)
    if first.user_error:
        probe.undefined = f"needs input to load: {first.user_error}"
        return probe
    if _no_value(probe, first, valid_check):
        return probe
    try:
        data = check_data(first.value, entry)
    except (TypeError, ValueError) as exc:
        probe.fail(valid_check, str(exc))
        return probe
    second = load(2)
    problem = second.error or second.undefined
    if not problem:
        try:
            again = check_data(second.value, entry)
        except Exception as exc:
            problem = f"raised {describe_error(exc, decl.fn)}"
    if problem:
        probe.fail(same_check, f"the second load {problem}")
    else:  # (None is the same as None only)
        differ = [n for n in ("X", "mean", "cov", "structure") if not _same(getattr(data, n), getattr(again, n))]
        if differ:
            probe.fail(same_check, f"two loads with equally seeded rngs gave different {differ[0]}")
    probe.value = data
    return probe


def probe_metric(decl: Metric, mu_hat: np.ndarray, data: Data, params: Optional[dict] = None) -> Probe:
    """Evaluate metric ``decl`` at ``mu_hat`` and at the true mean; check its contract."""
    params = dict(decl.params if params is None else params)
    if "inlier_mean" in getattr(decl, "inputs", ()):  # the runner's input (`cmbench.Metric`): an
        params["inlier_mean"] = np.array(data.mean, dtype=float)  # uncorrupted sample's, exact here
    probe = Probe()
    value_check, _, same_check = CHECKS["metrics"][:3]
    values = []
    for point in (np.asarray(mu_hat, dtype=float), np.array(data.mean, dtype=float)):
        out = _twice(probe, decl.fn, (point, data), None, same_check, **params)
        if _no_value(probe, out, value_check):
            return probe
        try:
            values.append(float(out.value))
        except (TypeError, ValueError):
            probe.fail(value_check, f"returned {type(out.value).__name__} {out.value!r}, not a number")
            return probe
    at_mu, at_truth = values
    if not math.isnan(at_truth) and abs(at_truth) > 1e-9 * (1.0 + float(np.linalg.norm(data.mean))):
        probe.fail(value_check, f"{at_truth!r} at the true mean, expected 0")
    if at_mu < 0 or math.isinf(at_mu):
        probe.fail(value_check, f"{at_mu!r} away from the true mean")
    probe.value = at_mu
    return probe


def params_problem(decl: Component) -> str:
    """Why ``decl.params`` disagrees with the keyword defaults of ``decl.fn`` ('' if it agrees)."""
    try:
        sig = inspect.signature(decl.fn)
    except (TypeError, ValueError):
        return ""
    return "; ".join(f"params[{key!r}] = {value!r} but the signature's default is {p.default!r}"
                     for key, value in decl.params.items()
                     if (p := sig.parameters.get(key)) is not None and p.default is not p.empty
                     and not _equal_default(value, p.default))


def _equal_default(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal_default(x, y) for x, y in zip(a, b))
    if type(a) is bool or type(b) is bool:
        return a is b
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


# ------------------------------------------------------------------ the generated cases

def _low_rank(rng: np.random.Generator, N: int, n: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    A = rng.normal(size=(n, r))
    return rng.normal(size=(N, r)) @ A.T + rng.normal(0, 3, size=n), A


def estimator_cases(seed: int = 0) -> list[tuple[str, np.ndarray]]:
    """Small samples: complete, scattered NaN, NaN rows, no complete row, an all-NaN column, N < n."""
    rng = np.random.default_rng(seed)
    X = rng.normal(loc=rng.normal(0, 5, size=5), size=(40, 5))
    scattered = X.copy()
    scattered[rng.random(X.shape) < 0.2] = np.nan
    rows = X.copy()
    rows[::4] = np.nan
    no_complete = X.copy()
    no_complete[np.arange(40), rng.integers(5, size=40)] = np.nan
    column = X.copy()
    column[:, 2] = np.nan
    return [("complete 40x5", X), ("20% NaN 40x5", scattered), ("NaN rows 40x5", rows),
            ("no complete row 40x5", no_complete), ("an all-NaN column 40x5", column),
            ("complete 4x6", rng.normal(size=(4, 6))), ("complete 30x1", rng.normal(size=(30, 1)))]


def adversary_cases(seed: int = 0) -> list[tuple[str, np.ndarray, Optional[np.ndarray]]]:
    """Clean samples (as the runner gives them): low rank with A known, Gaussian, ties, n = 1."""
    rng = np.random.default_rng(seed)
    X, A = _low_rank(rng, 40, 6, 2)
    ties = rng.integers(-2, 3, size=(30, 4)).astype(float)
    return [("low rank 40x6, A known", X, A), ("Gaussian 40x6", rng.normal(size=(40, 6)), None),
            ("ties 30x4", ties, None), ("30x1", rng.normal(size=(30, 1)), None)]


def recoverer_cases(decl: Recoverer, seed: int = 0) -> list[tuple[str, np.ndarray, np.ndarray, int, str]]:
    """Low-rank samples corrupted in each mode the recoverer handles: (label, Xc, A, r, mode)."""
    rng = np.random.default_rng(seed)
    X, A = _low_rank(rng, 40, 6, 2)
    cases = []
    if "missing" in decl.modes:
        hidden = X.copy()
        hidden[rng.random(X.shape) < 0.15] = np.nan
        cases.append(("low rank 40x6, 15% hidden", hidden, A, 2, "missing"))
    if "replace" in decl.modes:
        replaced = X.copy()
        rows = rng.choice(40, size=4, replace=False)
        replaced[rows, rng.integers(6, size=4)] += 5.0
        cases.append(("low rank 40x6, 4 entries replaced", replaced, A, 2, "replace"))
    return cases


# ------------------------------------------------------------------ checking components

def check_component(kind: str, decl: Component, seed: int = 0,
                    timeout: Optional[float] = DEFAULT_TIMEOUT, running: Optional[str] = None) -> list[Result]:
    """Every check of ``kind`` on component ``decl``, over the generated cases of its kind.

    Parameters
    ----------
    kind : str
        ``"estimators"``, ``"adversaries"``, ``"recoverers"``, ``"datasets"`` or ``"metrics"``.
    decl : Component
        The declaration to check.
    seed : int, default 0
        Seed of the generated inputs and of the component's rng.
    timeout : float or None, default `DEFAULT_TIMEOUT`
        Seconds each call of the component may take (None: no limit); a call
        that takes longer fails its check.
    running : str or None
        The slot in which each call names itself (`cmbench.runner.guard.Context`), in the
        process `run_checks` watches.

    Returns
    -------
    list of Result
        One per check of `CHECKS` ``[kind]``, in order: FAIL with the first
        case's reason, SKIP when every case was undefined, else PASS.
    """
    previous, _CONTEXT[0] = _CONTEXT[0], Context(timeout, running=running)
    _TIMED_OUT[0] = False
    try:
        failures: dict = {}  # check -> first reason
        skipped: list = []
        probes: list = []
        for label, probe in _probes(kind, decl, seed):
            probes.append(probe)
            for check, reason in probe.problems.items():
                failures.setdefault(check, f"{reason} [{label}]")
            if probe.undefined:
                skipped.append(f"{label}: {probe.undefined}")
        ran = len(probes)
        results = []
        for check in CHECKS[kind]:
            # the inputs on which this check could not run: no call was made (after a timeout), or,
            # for a check of the output, the call gave none (it raised: its first check failed)
            unrun = [p for p in probes if p.not_called or (p.no_output and check != UNMODIFIED)]
            if check == PARAMS:
                problem = params_problem(decl)
                results.append(Result(kind, decl.name, check, FAIL if problem else PASS, problem))
            elif check in failures:
                results.append(Result(kind, decl.name, check, FAIL, failures[check]))
            elif len(skipped) == ran and ran:
                results.append(Result(kind, decl.name, check, SKIP, skipped[0]))
            elif unrun and len(unrun) + len(skipped) >= ran:
                results.append(Result(kind, decl.name, check, SKIP, f"not run: {unrun[0].no_output}"))
            elif unrun:
                results.append(Result(kind, decl.name, check, PASS,
                                      f"on the {ran - len(unrun)} of {ran} inputs where it could run"))
            else:
                results.append(Result(kind, decl.name, check, PASS))
        return results
    finally:
        _CONTEXT[0] = previous
        _TIMED_OUT[0] = False


def refused_results(kind: str, decl: Component, why: str) -> list[Result]:
    """The results of a component whose declaration is refused: its parameters check fails with
    ``why``; the others are not run (it cannot be called as declared)."""
    why = why.split(": ", 1)[-1] if why.startswith("plugin ") else why  # the line names the component
    return [Result(kind, decl.name, check, FAIL, why) if check == PARAMS else
            Result(kind, decl.name, check, SKIP, "not run: the declaration's parameters are refused")
            for check in CHECKS[kind]]


def _probes(kind: str, decl: Component, seed: int) -> Iterator[tuple[str, Probe]]:
    """``(case label, probe)`` of each generated case of ``kind``, probed as it is asked for."""
    if kind == "estimators":
        for label, X in estimator_cases(seed):
            yield label, probe_estimator(decl, X, seed)
    elif kind == "adversaries":
        for label, X, A in adversary_cases(seed):
            for budget in (0.0, *BUDGETS) if not decl.adaptive else (0.0, 0.1, 0.5):
                yield f"{label}, budget {budget:g}", probe_adversary(decl, X, budget, seed, structure=A)
    elif kind == "recoverers":
        for label, Xc, A, r, mode in recoverer_cases(decl, seed):
            yield label, probe_recoverer(decl, Xc, seed, structure=A if decl.needs_structure else None,
                                         rank=r, mode=mode)
    elif kind == "datasets":
        yield "instance 0", probe_dataset(decl, seed)
    elif kind == "metrics":
        rng = np.random.default_rng(seed)
        X, A = _low_rank(rng, 40, 6, 2)
        mu = X.mean(axis=0)
        for label, cov in (("covariance known", np.cov(X.T)), ("covariance unknown", None)):
            data = Data(X=X, mean=mu, cov=cov, structure=A, rank=2)
            yield label, probe_metric(decl, mu + rng.normal(size=6), data)


def select(registry: Registry, plugins: Sequence[str] = (), names: Sequence[str] = ()
           ) -> list[tuple[str, Any]]:
    """The components to check: those ``plugins`` (specs as `run_checks` resolves them)
    declared (all of them when no plugin is given), narrowed to ``names`` (``NAME`` or
    ``KIND:NAME``, e.g. ``estimator:mean``); then, without ``names``, the kinds of report
    page they add (`PAGES`, with the `cmbench.report.PageKind`; the built-in kinds are not checked).

    Raises
    ------
    UserError
        A name no selected component has (with the close matches).
    """
    labels = {"cmbench." + p[len("cmbench.builtins."):] if p.startswith("cmbench.builtins.") else p for p in plugins}
    pool = [(kind.plural, decl) for kind in KINDS for name, decl in registry.kind(kind.plural).items()
            if not labels or registry.source(kind.plural, name).plugin in labels]
    # a component whose parameters were refused (a lenient load) is selected too: its check fails
    pool += [(kind, decl) for (kind, _), (decl, source, _) in registry.refused.items()
             if not labels or source.plugin in labels]
    if not names:
        from .report.kinds import page_kinds

        adding = {source.plugin for source, _ in registry.page_hooks if not labels or source.plugin in labels}
        pool += [(PAGES, kind) for kind in page_kinds(registry, only=adding)] if adding else []
    if plugins and not pool:
        raise UserError(f"plugin {', '.join(plugins)} declares no component and no report page")
    if not names:
        return pool
    chosen = []
    for want in names:
        kinds, name = split_spec(want)
        hits = [(k, d) for k, d in pool if k in kinds and d.name == name]
        if not hits:
            where = f" in plugin {', '.join(plugins)}" if plugins else ""
            raise UserError(f"no component {want!r}{where}; {choices_hint(name, sorted({d.name for _, d in pool}))}")
        chosen += [h for h in hits if h not in chosen]
    return chosen


def run_checks(plugins: Sequence[str] = (), names: Sequence[str] = (), seed: int = 0,
               on_result: Optional[Callable[[Result], None]] = None,
               timeout: Optional[float] = DEFAULT_TIMEOUT) -> list[Result]:
    """Check the components of ``plugins`` (or ``names`` among them); return every result.

    Plugin code runs as in a suite's cells: each call through the runner's
    guarded call (a per-call ``timeout``, any ``BaseException`` caught), in a
    guard process (`cmbench.plugins.watch_child`), so that a plugin that ends
    its process (``os._exit``, a signal) fails its component's check instead
    of ending the check silently; a plugin that ends it while being imported
    is a `PluginError` naming its file.

    Parameters
    ----------
    plugins : plugin specs as for ``--plugin`` (paths, modules, or a loaded plugin's
        name such as ``cmbench.estimators``); none means every loaded component.
    names : component names (``NAME`` or ``KIND:NAME``) to narrow the selection.
    seed : seed of the generated inputs and of the components' rngs.
    on_result : called with each result as soon as it is known (for printing).
    timeout : seconds each plugin call may take (None: no limit); `DEFAULT_TIMEOUT`.

    Raises
    ------
    UserError
        A plugin that cannot be loaded (or ends its process while being
        imported), a name that matches no component, a timeout that is not a
        positive number, a seed outside 0 .. 2**63 - 1.
    """
    check_timeout(timeout)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
        raise UserError(f"--seed must be an integer from 0 to {MAX_SEED} (NumPy's generators take no "
                        f"negative seed), got {seed!r}")
    plugins = tuple(str(Path(p).resolve()) if is_file_spec(p) else str(p) for p in plugins)
    results: list[Result] = []

    def emit(result: Result) -> None:
        results.append(result)
        if on_result is not None:
            on_result(result)

    done: set = set()
    # a fresh guard process after each component that ended its own
    while (ended := _check_in_child(plugins, names, seed, timeout, done, emit)) is not None:
        kind, name, how = ended
        done.add((kind, name))
        emit(Result(kind, name, CHECKS[kind][0], FAIL, how))
    return results


#: grace beyond ``timeout`` before the parent kills a child whose plugin call ignores the alarm
_GRACE = 10.0


def _check_in_child(plugins, names, seed, timeout, done: set, emit) -> Optional[tuple]:
    """Check in one guard process every selected component not in ``done``.

    Returns None when the child finished, else ``(kind, name, why)`` of the
    component whose check ended the child (killed after ``timeout`` + `_GRACE`
    seconds without a word, when a call ignores the alarm).
    """
    from .pools import Slot

    slot = Slot()  # the plugin call in progress (`guard.Context.running`), written by the child
    where: list = ["start"]

    def on_message(message: tuple) -> bool:
        tag = message[0]
        if tag == "result":
            emit(message[1])
        elif tag == "finished":
            done.add(message[1:])
        elif tag == "error":
            raise message[1]
        elif tag == "done":
            return True
        else:  # the step the child starts: importing a plugin, registering, checking a component
            where[:] = message
        return False

    args = (plugins, tuple(names), seed, timeout, frozenset(done), slot.path)
    try:
        how = watch_child(_child, args, None if timeout is None else timeout + _GRACE, on_message)
        call = slot.value.decode("utf-8", "replace")
    finally:
        slot.close()
    if how == "":
        return None
    if how is None:
        how = f"no return within --timeout {timeout:g} s and the alarm ignored: killed"
    if where[0] == "importing":
        what = "plugin file" if is_file_spec(where[1]) else "plugin module"
        raise PluginError(f"{what} {where[1]} ended the process while being imported ({how})")
    if where[0] == "registering":
        raise PluginError(f"a plugin ended the process while its components were registered ({how}); "
                          f"plugins: {', '.join(plugins) or 'built-ins and entry points'}")
    if where[0] != "component":
        raise UserError(f"cmbench check: the checking process ended before any component was checked ({how})")
    return where[1], where[2], f"ended its process ({how})" + (f" in {call}" if call else "")


def _child(conn, plugins, names, seed, timeout, done, running: str) -> None:
    """The guard process of `run_checks`: import, check, report each step to the parent through ``conn``."""
    from . import plugins as plugin_host

    plugin_host.PREFLIGHT = False  # this process is the guard
    try:
        for spec in plugins:  # one at a time: the parent names the one that ends the process
            if not spec.startswith("cmbench."):
                conn.send(("importing", spec))
                resolve_plugin(spec)
        conn.send(("registering",))
        # a built-in named by its module (``cmbench.estimators``) is loaded already
        # lenient: a component whose params= is refused fails its check; the others are checked
        registry = load_plugins([p for p in plugins if not p.startswith("cmbench.")], lenient=True)
        chosen = select(registry, plugins, names)
    except UserError as exc:
        conn.send(("error", exc))
        return
    for kind, decl in chosen:
        if (kind, decl.name) in done:
            continue
        conn.send(("component", kind, decl.name))
        refused = registry.refused.get((kind, decl.name))
        if kind == PAGES:
            results = page_results(decl, timeout)
        elif refused is None:
            results = check_component(kind, decl, seed, timeout, running)
        else:
            results = refused_results(kind, decl, refused[2])
        for result in results:
            conn.send(("result", result))
        conn.send(("finished", kind, decl.name))
    conn.send(("done",))


def page_results(kind, timeout: Optional[float]) -> list[Result]:
    """The results of a kind of report page (`cmbench.check_pages.probe_page_kind`)."""
    return [Result(PAGES, kind.name, f.check, FAIL if f.problem else SKIP if f.skipped else PASS,
                   f.problem or f.skipped) for f in probe_page_kind(kind, timeout)]


def assert_ok(probe: Probe, what: str = "") -> Probe:
    """Raise AssertionError listing the probe's problems (for tests)."""
    if probe.problems:
        raise AssertionError(f"{what}: " + "; ".join(f"{k}: {v}" for k, v in probe.problems.items()))
    return probe


__all__ = ["CHECKS", "FAIL", "PAGES", "PASS", "SKIP", "Probe", "Result", "assert_ok", "check_component",
           "page_results", "params_problem", "probe_adversary", "probe_dataset", "probe_estimator",
           "probe_metric", "probe_recoverer", "run_checks", "select"]

