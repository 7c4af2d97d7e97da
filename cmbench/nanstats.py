"""Column statistics of a sample with hidden entries (NaN), for estimator plugins.

``np.nanquantile(X, q, axis=0)`` calls a Python function per column
(``apply_along_axis``): on the paper suite's 1000 x 16 matrices it takes 1.1-1.6 ms
where one sort of all columns takes 0.2 ms. `nanquantile` gives the same
numbers from that one sort (equal as floats; see `nanquantile` for the sign of
a zero).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def nanquantile(X: ArrayLike, q: ArrayLike) -> np.ndarray:
    """Quantiles of each column of ``X`` over its visible (non-NaN) entries.

    The same numbers as ``np.nanquantile(X, q, axis=0)`` (its default
    ``method="linear"``), from one sort of all columns instead of a Python
    call per column: equal as floats, NaN where numpy gives NaN. Not bit for
    bit: where a column holds both ``-0.0`` and ``0.0``, which of the two a
    quantile lands on depends on the order the sort leaves equal entries in,
    and numpy's own sort and partition kernels differ by version and CPU
    (numpy 2.4.6 gave ``0.0`` where this gave ``-0.0`` on one machine).

    Parameters
    ----------
    X : (N, n) array, NaN = hidden; taken as float64.
    q : a quantile or a sequence of them (k,), each in [0, 1].

    Returns
    -------
    (n,) array for a scalar ``q``, else (k, n): row ``i`` holds quantile
    ``q[i]`` of every column. A column with no visible entry gets NaN (with
    no warning: numpy warns "All-NaN slice encountered").

    Raises
    ------
    ValueError
        ``X`` is not 2-D, or a quantile is outside [0, 1].
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"nanquantile: X must be 2-D (N, n), got shape {X.shape}")
    q = np.asarray(q, dtype=np.float64)
    if not ((q >= 0) & (q <= 1)).all():
        raise ValueError(f"nanquantile: quantiles must be in [0, 1], got {q.tolist()}")
    N, n = X.shape
    S = np.sort(X, axis=0)  # NaN sort last: column j's visible entries are S[:count[j], j]
    if N and not np.isnan(S[-1]).any():  # nothing hidden (a recovered matrix): no count to take
        last = np.full(n, N - 1)
    else:  # index of each column's largest visible entry
        last = N - np.isnan(S).sum(axis=0) - 1
    # numpy's interpolation for the 1-D array of visible entries, on all columns at once: the
    # virtual index (count - 1) * q, the entries at its floor and the next (the last at most)
    virtual = last * q.reshape(-1, 1)  # (k, n)
    floor = np.floor(virtual)
    gamma = virtual - floor
    below = np.maximum(floor.astype(np.intp), 0)
    upper = np.minimum(below + 1, np.maximum(last, 0))
    a = np.take_along_axis(S, below, axis=0)
    b = np.take_along_axis(S, upper, axis=0)
    with np.errstate(invalid="ignore"):  # inf - inf, as in numpy's own interpolation
        diff = b - a
        out = a + diff * gamma
        np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    out[:, last < 0] = np.nan
    return out.reshape(q.shape + (n,))
