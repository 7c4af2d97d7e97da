"""The contract checks on what components get and give.

Inputs: every array a component receives is read-only in a way no
``setflags`` can undo (`matrices.sealed`) and its digest is
checked after the call (`untouched`): a component that writes into what
another one sees, around numpy, has that call failed. Outputs: a data set's `Data`, an adversary's corruption (shape,
mode, budget at its level), a recovery and an estimate are checked before any
other stage sees them; `cmbench check` applies the same checks.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Optional

import numpy as np

from ..components import Data
from ..cube import FAILED, OK
from ..suite import Entry
from ..theory import budget_count, changed_entries
from .guard import Outcome
from .matrices import digest, sealed


def check_data(data: Data, entry: Entry) -> Data:
    """Refuse data that would give silently wrong numbers; name the data set and column."""
    what = f"data set {entry.label!r} ({entry.source})"
    if not isinstance(data, Data):
        raise TypeError(f"{what}: load() returned {type(data).__name__}, expected cmbench.Data")
    for field in ("X", "mean", "cov", "structure"):
        if getattr(data, field) is not None and np.iscomplexobj(getattr(data, field)):
            raise ValueError(f"{what}: {field} holds complex values")
    # no copy here (a float array is taken as it is): `sealed` below takes it over
    X = np.asarray(data.X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"{what}: X must be 2-D (N, n), got shape {X.shape}")
    N, n = X.shape
    names = list(data.columns) if len(data.columns) == n else [str(j) for j in range(n)]
    if N < 2:
        raise ValueError(f"{what}: {N} row(s); a mean needs at least 2")
    if np.isinf(X).any():
        raise ValueError(f"{what}: column {names[int(np.nonzero(np.isinf(X).any(0))[0][0])]!r} holds inf")
    if np.isnan(X).any():
        raise ValueError(f"{what}: column {names[int(np.nonzero(np.isnan(X).any(0))[0][0])]!r} holds NaN "
                         "before corruption; give the data set a missing-value policy")
    mean = np.array(data.mean, dtype=float)
    if mean.shape != (n,) or not np.isfinite(mean).all():
        raise ValueError(f"{what}: true mean must be a finite ({n},) vector, got shape {mean.shape}")
    cov = None if data.cov is None else np.array(data.cov, dtype=float)
    if cov is not None and (cov.shape != (n, n) or not np.isfinite(cov).all()):
        raise ValueError(f"{what}: cov must be a finite ({n}, {n}) matrix, got shape {cov.shape}"
                         + ("" if cov.shape != (n, n) else " with NaN or inf"))
    A = None if data.structure is None else np.array(data.structure, dtype=float)
    if A is not None and (A.ndim != 2 or A.shape[0] != n or not np.isfinite(A).all()):
        raise ValueError(f"{what}: structure A must be a finite ({n}, r) matrix, got shape {A.shape}")
    # Loaded data are memoized per process and shared by every component: each array is
    # taken over read-only as a plugin's result is (`sealed`: no setflags can undo it, and a
    # write around numpy fails the call that made it, `untouched`). Not copied: a copy of a
    # full-size X (1.28 GB at d = 400) cost 2.4 s of a d = 400 unit and its peak memory.
    X, mean, cov, A = (None if a is None else sealed(a) for a in (X, mean, cov, A))
    return Data(X=X, mean=mean, cov=cov, structure=A, rank=data.rank, columns=tuple(names))


def readonly(X: np.ndarray) -> np.ndarray:
    view = X.view()
    view.setflags(write=False)
    return view


_DIGESTS: dict = {}  # id(array) -> (weak reference, digest): one digest per shared array


def _known_digest(a: np.ndarray) -> str:
    entry = _DIGESTS.get(id(a))
    if entry is not None and entry[0]() is a:
        return entry[1]
    key = id(a)
    value = digest(a)
    _DIGESTS[key] = (weakref.ref(a, lambda _, k=key: _DIGESTS.pop(k, None)), value)
    return value


def _before(*inputs: Optional[np.ndarray]) -> None:
    """Know the digest of every input a call is about to get (once per array: later calls reuse it)."""
    for a in inputs:
        if a is not None:
            _known_digest(a)


def untouched(outcome: Outcome, *inputs: Optional[np.ndarray]) -> Outcome:
    """Fail a call that changed a shared input array (its digest moved); its result is discarded.

    The arrays are immutable buffers, so only code that goes around numpy can
    get here; the check is cheap (one digest per call) and keeps a corrupted
    input out of every other component's cells and out of the cache.
    """
    for a in inputs:
        if a is not None and digest(a) != _known_digest(a):
            return Outcome(FAILED, "wrote into an input array shared with other components; its "
                                   "result is discarded", seconds=outcome.seconds)
    return outcome


def _real(value: Any) -> np.ndarray:
    array = np.asarray(value)
    if np.iscomplexobj(array):
        raise ValueError("returned complex values")
    return np.asarray(array, dtype=float)


def kept_rows(Y: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Which row of ``X`` each row of ``Y`` is: ``r`` with ``Y[i]`` bit for bit ``X[r[i]]``, the
    ``r[i]`` distinct (equal rows of ``X`` are matched in their order).

    A deleting adversary's result must be such a selection; `ValueError` says which row is not.
    Rows are compared as bytes, so NaN matches the same NaN and -0.0 does not match 0.0: each
    row is keyed by a 64-bit hash of its bit patterns (a sort of N keys, not of N rows of 8 n
    bytes: 0.07 s against 1.1 s at N = 5020, n = 500), and every match is then checked bit
    for bit; a hash collision falls back to sorting the rows themselves.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[1] != X.shape[1]:
        raise ValueError(f"returned shape {Y.shape}, expected ({X.shape[0]} or fewer, {X.shape[1]})")
    if Y.shape[0] > X.shape[0]:
        raise ValueError(f"returned {Y.shape[0]} rows, more than the {X.shape[0]} it was given")
    if Y.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    rows = _matched(_row_keys(X), _row_keys(Y))  # a row of Y whose key X lacks is no row of X: the error is raised here
    if np.array_equal(X[rows].view(np.uint64), Y.view(np.uint64)):
        return rows
    row = np.dtype((np.void, 8 * X.shape[1]))  # a hash collision: match the rows themselves
    return _matched(X.view(row).ravel(), Y.view(row).ravel())


def _row_keys(M: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's bit patterns: equal rows, equal keys (arithmetic modulo 2^64
    with fixed odd multipliers, one matrix product)."""
    mix = np.random.default_rng(0x5EED).integers(1, 2 ** 63, size=M.shape[1], dtype=np.uint64) | np.uint64(1)
    with np.errstate(over="ignore"):
        return M.view(np.uint64) @ mix


def _matched(xb: np.ndarray, yb: np.ndarray) -> np.ndarray:
    """The k-th occurrence of each key of ``yb`` matched to the k-th equal key of ``xb`` (the
    row of ``xb``); `ValueError` naming the first key of ``yb`` without a match."""
    order = np.argsort(xb, kind="stable")  # equal rows of X in their order
    xs = xb[order]
    first = np.searchsorted(xs, yb, side="left")
    # the k-th occurrence of a row in Y takes the k-th equal row of X
    yorder = np.argsort(yb, kind="stable")
    ys = yb[yorder]
    start = np.r_[True, ys[1:] != ys[:-1]]
    run = np.arange(ys.size) - np.maximum.accumulate(np.where(start, np.arange(ys.size), 0))
    rank = np.empty_like(run)
    rank[yorder] = run
    target = first + rank
    inside = target < xs.size
    ok = inside.copy()
    ok[inside] = xs[target[inside]] == yb[inside]
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"row {i} of its result is not a row of the input (or repeats one more often "
                         "than the input holds it); a deleting adversary may only remove rows")
    return order[target]


def check_corruption(Xc: Any, X: np.ndarray, adv: Entry,
                     budget: float) -> tuple[np.ndarray, Optional[np.ndarray], Optional[np.ndarray]]:
    """The adversary's contract: shape, mode, budget at its level and placement.

    A missing-mode adversary only hides; a replace-mode one only puts finite values in place of
    others (it may not hide an entry: a NaN would be recorded as a replacement while the
    estimators see a missing value; nor put inf, which a recoverer would be blamed for).

    Returns the corruption; for a deleting adversary, the row of ``X`` each of its rows is
    (`kept_rows`; None for the other modes); and, for the other modes, the entries it changed
    (`cmbench.theory.changed_entries`; None for a deletion), which the unit's measures reuse.
    """
    Xc = _real(Xc)
    N, n = X.shape
    if adv.decl.mode == "delete":
        rows = kept_rows(Xc, X)
        cap = budget_count(budget, N)
        if N - rows.size > cap:
            raise ValueError(f"exceeded its budget: {N - rows.size} rows deleted, at most {cap} allowed "
                             f"with budget {budget:g}")
        return Xc, rows, None
    if Xc.shape != X.shape:
        raise ValueError(f"returned shape {Xc.shape}, expected {X.shape}")
    changed = changed_entries(Xc, X)
    if adv.decl.mode == "missing" and (changed & ~np.isnan(Xc)).any():
        raise ValueError("is a missing-mode adversary but changed visible values")
    if adv.decl.mode == "missing" and (np.isnan(X) & ~np.isnan(Xc)).any():
        raise ValueError("is a missing-mode adversary but filled in an entry that was missing")
    if adv.decl.mode == "replace" and (np.isnan(Xc) & ~np.isnan(X)).any():
        raise ValueError("is a replace-mode adversary but hid an entry (NaN); it may only replace values")
    if adv.decl.mode == "replace" and not np.isfinite(Xc[changed]).all():
        raise ValueError("is a replace-mode adversary but put inf in place of a value")
    level = adv.decl.level
    if level == "sample":
        used, cap = int(changed.any(1).sum()), budget_count(budget, N)
        unit = "rows"
    elif level == "value":
        used, cap = int(changed.sum(0).max(initial=0)), budget_count(budget, N)
        unit = "entries in one column"
    else:
        used, cap = int(changed.sum()), budget_count(budget, N * n)
        unit = "entries"
    if used > cap:
        raise ValueError(f"exceeded its budget: {used} {unit} corrupted, at most {cap} allowed "
                         f"at {level} level with budget {budget:g}")
    if level == "sample" and adv.decl.placement_for(adv.params) == "last":
        early = np.flatnonzero(changed[:N - cap].any(1))
        if early.size:
            raise ValueError(f"places its rows last but corrupted row {int(early[0])}, before the last "
                             f"{cap} rows (of {N}) its budget {budget:g} buys")
    return Xc, None, changed


def check_recovery(out: Any, Xc: np.ndarray) -> tuple[np.ndarray, dict]:
    info = {}
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict):
        out, info = out
    Xr = _real(out)
    if Xr.shape != Xc.shape:
        raise ValueError(f"returned shape {Xr.shape}, expected {Xc.shape}")
    if np.isinf(Xr).any():
        raise ValueError("returned inf values")
    return Xr, {k: float(v) for k, v in info.items() if isinstance(v, (bool, int, float, np.number))}


def check_estimate(mu: Any, n: int) -> np.ndarray:
    mu = _real(mu)
    if mu.shape != (n,):
        raise ValueError(f"returned shape {mu.shape}, expected ({n},)")
    if not np.isfinite(mu).all():
        raise ValueError("returned a NaN or inf mean; raise cmbench.Undefined if the method "
                         "is not defined on this input")
    return mu


def guarded(check: Callable, outcome: Outcome, *args) -> Outcome:
    """Apply an output check to a successful call; a violation fails the cell."""
    if outcome.status != OK:
        return outcome
    try:
        outcome.value = check(outcome.value, *args)
    except Exception as exc:
        return Outcome(FAILED, str(exc), seconds=outcome.seconds)
    return outcome
