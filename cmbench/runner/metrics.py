"""What a unit measures: the metrics of an estimate, the quality of a recovery, the size of a corruption."""
from __future__ import annotations

import traceback
from typing import Optional

import numpy as np

from ..components import Data, Undefined
from ..errors import describe_error
from ..suite import bind
from ..theory import CACHE_ELEMENTS, changed_entries
from . import guard
from .contracts import readonly


#: an entry counts as recovered within this many standard deviations of its column
#: (clean data) of the clean value; stored in each cube's ``recovered_tolerance``
RECOVERED_TOLERANCE = 0.1


def recovery_fractions(X: np.ndarray, Xc: np.ndarray, Xr: np.ndarray, mode: str,
                       tol: float = RECOVERED_TOLERANCE, changed: Optional[np.ndarray] = None) -> dict:
    """How well the corrupted entries were recovered, and which rows were dropped.

    The corrupted entries are the hidden ones (missing mode: NaN in the
    corruption, a value in the clean data) or the replaced ones (replace mode:
    any entry that differs). Filling an entry is not recovering it: an entry
    counts as recovered when it is within ``tol`` standard deviations of its
    column (of the clean data) of the clean value, so a column-mean fill scores
    what it deserves, not 1.

    Returns
    -------
    dict with ``recovered_fraction`` (corrupted entries recovered within
    ``tol``; NaN when nothing was corrupted), ``recovery_rmse`` (root mean
    squared error, in the data's units, of the recovered array against the clean
    values over the corrupted entries the recoverer filled; NaN when it filled
    none) and ``discarded_fraction`` (rows still holding NaN).

    ``changed``: the corruption's ``changed_entries(Xc, X)``, when the caller has it
    (replace mode: the corrupted entries; not recomputed over the whole matrix).
    """
    discarded = float(np.isnan(Xr).any(1).mean())
    if mode == "delete":  # no entry was hidden or replaced (``X`` is then the kept clean rows)
        return {"recovered_fraction": float("nan"), "recovery_rmse": float("nan"),
                "discarded_fraction": discarded}
    if mode == "missing":
        hidden = np.isnan(Xc) & ~np.isnan(X)
    else:
        hidden = changed_entries(Xc, X) if changed is None else changed
    # only the filled entries, gathered (no (N, n) float temporaries: at d = 400 each is 1.28 GB)
    where = np.flatnonzero(hidden & ~np.isnan(Xr))
    total = int(hidden.sum())
    del hidden
    diff = Xr.reshape(-1)[where] - X.reshape(-1)[where]
    scale = column_nanstd(X) + 1e-12
    with np.errstate(invalid="ignore"):
        done = int(np.count_nonzero(np.abs(diff) <= tol * scale[where % X.shape[1]]))
    rmse = float(np.sqrt(np.mean(diff ** 2))) if where.size else float("nan")
    return {"recovered_fraction": done / total if total else float("nan"),
            "recovery_rmse": rmse, "discarded_fraction": discarded}


def column_nanstd(X: np.ndarray) -> np.ndarray:
    """``np.nanstd(X, axis=0)`` of an (N, n) sample, bit for bit, a row block at a time.

    For n >= 2, numpy reduces axis 0 of a C-ordered array row after row into
    one accumulator; this does the same, carrying the accumulator from block
    to block (prepended to the next block, so that every addition is the one
    numpy makes), for the column sums and then for the squared deviations
    from the mean: no (N, n) temporary, each block read from the cache (0.6
    against 4 CPU-s at N = 400,000, n = 400). A column holding NaN (or inf)
    comes out NaN here and is computed again by ``np.nanstd`` on a strided
    block of at least two columns, the layout numpy reduces row after row.
    """
    X = np.asarray(X, dtype=float)
    N, n = X.shape
    if n < 2:  # numpy sums a lone column pairwise
        return np.nanstd(X, axis=0)
    step = max(1, CACHE_ELEMENTS // n)
    total = np.zeros((1, n))
    for i in range(0, N, step):
        total = np.add.reduce(np.concatenate([total, X[i:i + step]]), axis=0, keepdims=True)
    mean = total / N
    squares = np.zeros((1, n))
    for i in range(0, N, step):
        D = X[i:i + step] - mean
        np.multiply(D, D, out=D)
        squares = np.add.reduce(np.concatenate([squares, D]), axis=0, keepdims=True)
    std = np.sqrt(squares[0] / N)
    for j in np.flatnonzero(np.isnan(std)):
        first = min(j, n - 2)  # a view of two columns, as numpy walks the whole matrix
        std[j] = np.nanstd(X[:, first:first + 2], axis=0)[j - first]
    return std


class MetricFailed(Exception):
    """A metric plugin raised or returned something that is not a number."""

    def __init__(self, message: str, traceback: str = "") -> None:
        super().__init__(message)
        self.traceback = traceback


def errors(mu: np.ndarray, data: Data, metrics=(), inliers: Optional[np.ndarray] = None,
           budget: float = float("nan"), post_mortem: bool = False) -> dict:
    """The value of every metric entry at the estimate ``mu``: label -> float.

    A metric whose declaration lists ``"inlier_mean"`` in its ``inputs`` gets
    ``inlier_mean=inliers`` (`inlier_mean`; all NaN when no row was left untouched);
    a parameter bound to the budget (`cmbench.suite.BUDGET`) gets ``budget``.
    ``cmbench.Undefined`` from a metric gives NaN; any other exception, or a
    value that is not a real number, raises `MetricFailed` naming the metric
    (``post_mortem``: after opening the debugger where the metric raised, ``--pdb``).
    """
    out = {}
    for entry in metrics:
        extra = {}
        if "inlier_mean" in (getattr(entry.decl, "inputs", None) or ()):
            if inliers is None:
                inliers = np.full(len(mu), np.nan)
            extra["inlier_mean"] = readonly(np.asarray(inliers, dtype=float))
        try:
            value = entry.decl.fn(readonly(mu), data, **extra, **bind(entry.params, budget))
        except Undefined:
            value = float("nan")
        except Exception as exc:
            if post_mortem:
                guard.post_mortem(exc)
            raise MetricFailed(f"metric {entry.label!r} ({entry.source}): {describe_error(exc, entry.decl.fn)}",
                               traceback.format_exc()) from None
        try:
            out[entry.label] = float(value)
        except (TypeError, ValueError):
            raise MetricFailed(f"metric {entry.label!r} ({entry.source}): returned {type(value).__name__} "
                               f"{value!r}, not a number") from None
    return out


def inlier_mean(X: np.ndarray, changed: np.ndarray) -> Optional[np.ndarray]:
    """The (n,) mean of the rows the adversary left untouched (no entry of ``changed``),
    over the clean sample ``X``; None when it touched every row.

    The sample-level studies' "sampling error" is this mean's error: what an
    estimator that knew the inliers would reach (`cmbench.Metric`'s
    ``inputs=("inlier_mean",)``).
    """
    keep = ~changed.any(1)
    count = int(keep.sum())
    if count == 0:
        return None
    # summed in place (no copy of the kept rows: at d = 400, N = 400,000 that would be 1 GB)
    return np.sum(X, axis=0, where=keep[:, None]) / count


def corruption_measures(X: np.ndarray, Xc: np.ndarray, mean: np.ndarray,
                        rows: Optional[np.ndarray] = None, changed: Optional[np.ndarray] = None) -> dict:
    """A corruption record's numbers: d_ENTRY (p = 1, inf) and d_TV between the clean and the
    corrupted sample, ``inlier_l2`` (the l2 error of `inlier_mean` against the true ``mean``;
    NaN when no row was left) and ``inlier_mean`` itself (a list, or None), which the record
    keeps for the metrics of later runs.

    The distances use the adversary's own row correspondence (row i of the corruption is
    row i of the clean data): an upper bound on the optimal coupling, exact for every
    built-in adversary that corrupts rows in place.

    A deletion (``rows``: the clean row each row of ``Xc`` is, `checks.kept_rows`) changes no
    entry: d_TV is the fraction of rows removed, d_ENTRY is NaN (the samples differ in size),
    and the inliers are the whole clean sample, whose mean is the reference its studies draw
    (Anderson and Phillips' ``good_sample_mean`` under subtractive corruption).

    ``changed``: ``changed_entries(Xc, X)`` when the caller has it (the contract check
    computed it); d_ENTRY is `cmbench.theory.d_entry_bound` from its column counts.
    """
    if rows is not None:
        m = X.mean(axis=0)
        return {"d_entry1": float("nan"), "d_entry_inf": float("nan"),
                "d_tv": 1.0 - rows.size / X.shape[0], "inlier_l2": float(np.linalg.norm(m - mean)),
                "inlier_mean": [float(v) for v in m]}
    if changed is None:
        changed = changed_entries(Xc, X)
    columns = changed.sum(axis=0) / X.shape[0]  # `d_entry_bound`'s fractions, counted once for p = 1 and inf
    out = {"d_entry1": float(columns.mean()), "d_entry_inf": float(columns.max()),
           "d_tv": float(changed.any(1).mean())}
    m = inlier_mean(X, changed)
    out["inlier_l2"] = float(np.linalg.norm(m - mean)) if m is not None else float("nan")
    out["inlier_mean"] = None if m is None else [float(v) for v in m]
    return out
