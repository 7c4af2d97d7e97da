"""Row and column helpers the built-in estimators share.

The sample (N, n) is read a block of rows (or columns) at a time, about
`cmbench.theory.BLOCK_ELEMENTS` entries each, so that no helper forms an
(N, n) temporary beside the sample. `complete_rows` drops the rows holding a
missing entry (NaN), `finite` turns a non-finite estimate into
`cmbench.Undefined`, `unit_scale` rescales rows whose squares would overflow
or underflow, and `spatial_median` is the geometric median of the rows (the
``geometric-median`` estimator's computation, which ``median-of-means`` uses
on its block means).

`cmbench.builtins.estimators`, `cmbench.builtins.sample_estimators` and
`cmbench.builtins.ap25_estimators` import these; this module registers no
component and imports none of them.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

import cmbench
from cmbench.theory import BLOCK_ELEMENTS, CACHE_ELEMENTS

#: the magnitude beyond which (or below whose inverse) the rows are rescaled before sums of
#: squares: 2**400 is about 1e120, whose square summed over 1e6 rows is still finite
HUGE = 2.0 ** 400
#: where `spatial_median` starts: the coordinate-wise median or the mean
GM_STARTS = ("cmedian", "mean")


def as_matrix(X: np.ndarray) -> np.ndarray:
    """``X`` as a 2-D float64 array (no copy when it already is one).

    Parameters
    ----------
    X : array_like
        The sample, (N, n).

    Returns
    -------
    ndarray of shape (N, n), float64

    Raises
    ------
    ValueError
        When ``X`` is not 2-D.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (N, n), got shape {X.shape}")
    return X


def block_rows(n: int) -> int:
    """Rows of ``n`` columns in one block: about ``BLOCK_ELEMENTS / n`` (at least 1).

    Parameters
    ----------
    n : int
        The number of columns.

    Returns
    -------
    int
    """
    return max(1, BLOCK_ELEMENTS // max(1, n))


def row_blocks(N: int, n: int) -> list[slice]:
    """Slices of the ``N`` rows, `block_rows` of them each.

    Parameters
    ----------
    N, n : int
        The shape of the sample.

    Returns
    -------
    list of slice
        Consecutive, covering ``range(N)``; empty when ``N = 0``.
    """
    step = block_rows(n)
    return [slice(i, min(N, i + step)) for i in range(0, N, step)]


def column_blocks(N: int, n: int) -> list[slice]:
    """Slices of the ``n`` columns, about ``BLOCK_ELEMENTS / N`` columns each.

    Parameters
    ----------
    N, n : int
        The shape of the sample.

    Returns
    -------
    list of slice
        Consecutive, covering ``range(n)``.
    """
    width = max(1, BLOCK_ELEMENTS // max(1, N))
    return [slice(j, min(n, j + width)) for j in range(0, n, width)]


def by_columns(X: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``fn`` applied to column blocks of ``X`` (each a small copy), concatenated.

    Parameters
    ----------
    X : ndarray of shape (N, n)
    fn : callable
        Maps an (N, k) block to its k per-column values.

    Returns
    -------
    ndarray of shape (n,), float64
    """
    return np.concatenate([np.asarray(fn(X[:, sl]), dtype=np.float64)
                           for sl in column_blocks(*X.shape)])


def transposed(B: np.ndarray) -> np.ndarray:
    """``B.T`` as a new C-contiguous array, copied a tile of rows at a time.

    ``B.T.copy()`` walks each column of a strided block down all N rows, so every
    read misses the cache once the block is taller than the cache holds: on a
    400,000 x 10 block of a 400-column matrix that is 5x slower than copying
    tiles of 1024 rows, whose source lines stay cached while each destination
    row takes its part (`column_medians` of 400,000 x 400: 3.0 -> 1.35 s).

    Parameters
    ----------
    B : ndarray of shape (N, k)

    Returns
    -------
    ndarray of shape (k, N), C-contiguous
    """
    N, k = B.shape
    A = np.empty((k, N), dtype=B.dtype)
    step = 1024  # rows per tile: 512-2048 equally fast at N = 200,000-400,000 (4096: 1.3x slower)
    for i in range(0, N, step):
        A[:, i:i + step] = B[i:i + step].T
    return A


def column_medians(Y: np.ndarray) -> np.ndarray:
    """The median of each column, as ``np.median(Y, axis=0)`` gives it (the mean of
    the middle two for even N; NaN for a column holding one).

    Each column block is copied transposed (`transposed`) and partitioned in place at the
    upper middle only (the lower middle is then the largest value before it):
    numpy's median partitions a strided block at both middles and at the end
    (its NaN check). The same values, about 2.5x faster (400,000 x 100).

    Parameters
    ----------
    Y : ndarray of shape (N, n)

    Returns
    -------
    ndarray of shape (n,)
    """
    N = Y.shape[0]
    if N == 0:
        return np.median(Y, axis=0)  # numpy's NaN and warning
    k = N // 2

    def medians(B: np.ndarray) -> np.ndarray:
        A = transposed(B)
        A.partition(k, axis=1)
        mid = A[:, k] if N % 2 else (A[:, :k].max(axis=1) + A[:, k]) / 2.0
        return np.where(np.isnan(A).any(axis=1), np.nan, mid)

    return by_columns(Y, medians)


def complete_rows(X: np.ndarray, name: str) -> np.ndarray:
    """The rows of ``X`` without a missing entry.

    Parameters
    ----------
    X : array_like of shape (N, n)
        The sample; missing entries are NaN.
    name : str
        The estimator's name, for the message.

    Returns
    -------
    ndarray of shape (N', n)
        ``X`` itself (no copy) when every row is complete.

    Raises
    ------
    cmbench.Undefined
        When no row is complete (N' = 0).
    """
    X = as_matrix(X)
    complete = np.empty(X.shape[0], dtype=bool)
    for sl in row_blocks(*X.shape):  # no (N, n) mask: a block's at a time
        complete[sl] = ~np.isnan(X[sl]).any(axis=1)
    if not complete.any():
        raise cmbench.Undefined(
            f"{name}: no complete rows (all {X.shape[0]} rows hold a missing entry)")
    return X if complete.all() else X[complete]


def finite(mu: np.ndarray, name: str) -> np.ndarray:
    """``mu`` if every entry is finite.

    Parameters
    ----------
    mu : ndarray of shape (n,)
        An estimate.
    name : str
        The estimator's name, for the message.

    Returns
    -------
    ndarray
        ``mu`` itself.

    Raises
    ------
    cmbench.Undefined
        When an entry is not finite (e.g. X held inf).
    """
    if not np.all(np.isfinite(mu)):
        raise cmbench.Undefined(f"{name}: the estimate is not finite (does X hold inf?)")
    return mu


def unit_scale(Y: np.ndarray) -> tuple[np.ndarray, float]:
    """Rows rescaled where a sum of squares would overflow or underflow.

    For estimators whose result scales with the data (``mu(Y / s) = mu(Y) / s``):
    the caller multiplies its result back by ``s``.

    Parameters
    ----------
    Y : ndarray of shape (N, n)
        Complete rows.

    Returns
    -------
    tuple of (ndarray, float)
        ``(Y / s, s)`` with ``s`` a power of two (the division is exact) bringing the
        largest magnitude near 1 when it is above `HUGE` or below its inverse, where a
        covariance would overflow to inf or underflow to 0; else ``(Y, 1.0)`` without
        a copy.
    """
    top = 0.0
    for sl in row_blocks(*Y.shape):  # no (N, n) temporary
        if Y[sl].size:
            top = max(top, float(np.max(np.abs(Y[sl]))))
    if not math.isfinite(top) or HUGE ** -1 <= top <= HUGE or top == 0.0:
        return Y, 1.0  # inf is the estimator's to refuse (`finite`)
    s = math.ldexp(1.0, math.frexp(top)[1])
    return Y / s, s


def subset_mean(Y: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``Y[idx].mean(axis=0)`` in row blocks (no copy of the kept rows).

    Parameters
    ----------
    Y : ndarray of shape (N, n)
    idx : ndarray of int
        The kept rows' indices (not empty).

    Returns
    -------
    ndarray of shape (n,)
    """
    total = np.zeros(Y.shape[1])
    for sl in row_blocks(idx.size, Y.shape[1]):
        total += Y[idx[sl]].sum(axis=0)
    return total / idx.size


def mean_cov(Y: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of ``Y[idx]``, in row blocks.

    Parameters
    ----------
    Y : ndarray of shape (N, n)
    idx : ndarray of int
        The rows' indices.

    Returns
    -------
    tuple of (ndarray, ndarray)
        The mean (n,) and the covariance (n, n) with divisor ``len(idx)``.
    """
    n = Y.shape[1]
    first = Y[idx[:1]][0] if idx.size else np.zeros(n)  # a shift against cancellation
    s, S = np.zeros(n), np.zeros((n, n))
    for sl in row_blocks(idx.size, n):
        B = Y[idx[sl]]  # a copy (fancy index): shifted in place
        B -= first
        s += B.sum(axis=0)
        S += B.T @ B
    m = s / idx.size
    return first + m, S / idx.size - np.outer(m, m)


def sq_dist(Y: np.ndarray, center: np.ndarray) -> np.ndarray:
    """``||Y_i - center||^2`` per row, in cache-sized row blocks (no (N, n) temporary).

    Parameters
    ----------
    Y : ndarray of shape (N, n)
    center : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (N,)
    """
    out = np.empty(Y.shape[0])
    rows = max(1, CACHE_ELEMENTS // max(1, Y.shape[1]))  # the difference is read back from the cache
    for i in range(0, Y.shape[0], rows):
        D = Y[i:i + rows] - center
        out[i:i + rows] = np.einsum("ij,ij->i", D, D)
    return out


def contiguous_block_means(Y: np.ndarray, k: int) -> np.ndarray:
    """Means of ``k`` contiguous blocks of ``floor(N / k)`` rows in the given order.

    Parameters
    ----------
    Y : ndarray of shape (N, n)
    k : int
        The number of blocks; at most N are formed.

    Returns
    -------
    ndarray of shape (min(k, N), n)
        The last ``N mod k`` rows are left out.
    """
    N, n = Y.shape
    k = min(int(k), N)
    size = N // k
    return Y[:k * size].reshape(k, size, n).mean(axis=1)


def distances(Y: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``||Y_i - y||`` for every row, in row blocks (no (N, n) temporary).

    Parameters
    ----------
    Y : ndarray of shape (N, n)
    y : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (N,)
    """
    return np.sqrt(sq_dist(Y, y))


def _weiszfeld_sums(Y: np.ndarray, y: np.ndarray, zero_dist: float) -> tuple[np.ndarray, float, int]:
    """The sums of a Weiszfeld step from ``y``, in one pass over ``Y``.

    Returns ``(sum_i w_i Y_i, sum_i w_i, eta)`` with ``w_i = 1 / ||Y_i - y||``
    for the rows farther than ``zero_dist`` and 0 for the ``eta`` rows within
    it. A cache-sized row block at a time: its distances and its weighted sum
    are taken while the block is in the cache, one pass over memory per step
    instead of two (the step is memory-bound: 2x faster with the other core
    busy, 1.2x on an idle machine, at N = 200,000, n = 200).

    Parameters
    ----------
    Y : ndarray of shape (N, n)
    y : ndarray of shape (n,)
    zero_dist : float

    Returns
    -------
    tuple of (ndarray of shape (n,), float, int)
    """
    n = Y.shape[1]
    step = max(1, CACHE_ELEMENTS // max(1, n))
    wY, wsum, eta = np.zeros(n), 0.0, 0
    for i in range(0, Y.shape[0], step):
        B = Y[i:i + step]
        D = B - y
        dist = np.sqrt(np.einsum("ij,ij->i", D, D))
        at_y = dist <= zero_dist
        w = np.where(at_y, 0.0, 1.0 / np.where(at_y, 1.0, dist))
        eta += int(np.count_nonzero(at_y))
        wsum += float(w.sum())
        wY += w @ B
    return wY, wsum, eta


def spatial_median(X: np.ndarray, *, tol: float = 1e-7, max_iter: int = 500,
                   start: str = "cmedian") -> np.ndarray:
    """Geometric (spatial) median of the complete rows: Weiszfeld with Vardi and Zhang's step.

    The computation of the ``geometric-median`` estimator
    (`cmbench.builtins.estimators.geometric_median`, whose docstring states the
    algorithm), here so that an estimator taking a geometric median of its own
    points (``median-of-means``) computes the same thing; messages name
    ``geometric-median``.

    Parameters
    ----------
    X : array_like of shape (N, n)
        Rows holding a NaN are dropped.
    tol : float
        Stop when a step is shorter than ``tol`` times the median distance of
        the points to the start.
    max_iter : int
        Iteration cap. An iterate that repeats an earlier one (rounding can
        send the iterates round a cycle of a few points) ends the iteration
        with the iterate that step ``max_iter`` would reach.
    start : {"cmedian", "mean"}
        The starting point.

    Returns
    -------
    ndarray of shape (n,)
        Finite.

    Raises
    ------
    ValueError
        When ``start`` is not one of `GM_STARTS`.
    cmbench.Undefined
        When no row is complete or the median is not finite.
    """
    if start not in GM_STARTS:
        raise ValueError(f"geometric-median: start must be one of {GM_STARTS}, got {start!r}")
    Y = complete_rows(X, "geometric-median")
    y = (subset_mean(Y, np.arange(Y.shape[0])) if start == "mean"
         else column_medians(Y))
    dist = distances(Y, y)
    scale = float(np.median(dist)) or float(dist.max())
    if scale == 0.0:  # every point is the start
        return finite(y, "geometric-median")
    del dist
    zero_dist = 1e-12 * scale
    path, seen = [y], {y.tobytes(): 0}  # the iterates, to recognise a cycle
    for it in range(1, max_iter + 1):
        wY, wsum, eta = _weiszfeld_sums(Y, y, zero_dist)
        if wsum == 0.0:
            break
        T = wY / wsum
        if eta:
            r = float(np.linalg.norm(wY - wsum * y))  # = ||w @ (Y - y)||
            if r <= eta:  # optimality condition at a data point: y is the median
                break
            g = eta / r
            y_new = (1.0 - g) * T + g * y
        else:
            y_new = T
        step = float(np.linalg.norm(y_new - y))
        y = y_new
        if step <= tol * scale:
            break
        first = seen.setdefault(y.tobytes(), it)
        if first != it:
            # y is the iterate of step `first` again: the step is a function of y alone, so
            # the steps from `first` on repeat with period it - first, none of them short
            # enough to stop (each was just taken): the iteration would run to max_iter
            # and end at the iterate of the cycle that position falls on.
            y = path[first + (max_iter - first) % (it - first)]
            break
        path.append(y)
    return finite(y, "geometric-median")
