"""What a unit measures: the metrics of an estimate, the quality of a recovery, the size of a corruption."""
from __future__ import annotations

import traceback
from typing import Optional

import numpy as np

from ..components import Data, Undefined
from ..errors import describe_error
from ..suite import bind
from ..theory import changed_entries, d_entry_bound
from . import guard
from .contracts import readonly


#: an entry counts as recovered within this many standard deviations of its column
#: (clean data) of the clean value; stored in each cube's ``recovered_tolerance``
RECOVERED_TOLERANCE = 0.1


def recovery_fractions(X: np.ndarray, Xc: np.ndarray, Xr: np.ndarray, mode: str,
                       tol: float = RECOVERED_TOLERANCE) -> dict:
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
    """
    discarded = float(np.isnan(Xr).any(1).mean())
    if mode == "delete":  # no entry was hidden or replaced (``X`` is then the kept clean rows)
        return {"recovered_fraction": float("nan"), "recovery_rmse": float("nan"),
                "discarded_fraction": discarded}
    if mode == "missing":
        hidden = np.isnan(Xc) & ~np.isnan(X)
    else:
        hidden = changed_entries(Xc, X)
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


def column_nanstd(X: np.ndarray, width: int = 16) -> np.ndarray:
    """``np.nanstd(X, axis=0)``, a block of ``width`` columns at a time (the same numbers:
    each column is reduced alone), so that its copies are a block's, not the matrix's."""
    return np.concatenate([np.nanstd(X[:, j:j + width], axis=0) for j in range(0, X.shape[1], width)])


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
                        rows: Optional[np.ndarray] = None) -> dict:
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
    """
    if rows is not None:
        m = X.mean(axis=0)
        return {"d_entry1": float("nan"), "d_entry_inf": float("nan"),
                "d_tv": 1.0 - rows.size / X.shape[0], "inlier_l2": float(np.linalg.norm(m - mean)),
                "inlier_mean": [float(v) for v in m]}
    changed = changed_entries(Xc, X)
    out = {"d_entry1": float(d_entry_bound(X, Xc, 1)), "d_entry_inf": float(d_entry_bound(X, Xc, np.inf)),
           "d_tv": float(changed.any(1).mean())}
    m = inlier_mean(X, changed)
    out["inlier_l2"] = float(np.linalg.norm(m - mean)) if m is not None else float("nan")
    out["inlier_mean"] = None if m is None else [float(v) for v in m]
    return out
