"""Built-in mean estimators.

The paper's baselines (Experiments section): Empirical Mean (``mean``), Data
Sanitization (``sanitize``) and Coordinate-wise Median (``cmedian``); and the
robust estimators its related work names, to plug into the two-step
meta-algorithm: ``trimmed-mean``, ``geometric-median``, ``tukey`` (an
approximate Tukey median) and ``filter`` (the iterative filter of Diakonikolas
et al.).

Missing entries (NaN) are handled in one of two ways, stated in each
docstring: the coordinate-wise estimators use every visible entry of a column;
the multivariate ones use the complete rows only (the paper's "discard all
unrecoverable samples") and raise `cmbench.Undefined` when none is left.
No estimator modifies its input or returns a non-finite value: a non-finite
result is reported as `cmbench.Undefined`.
"""
from __future__ import annotations

import math

import numpy as np

import cmbench
from cmbench.theory import BLOCK_ELEMENTS

from .estimator_docs import COMPLETE_ROWS, COORDINATE_WISE, contract_doc
from .rows import (as_matrix, by_columns, column_blocks, column_medians, complete_rows, finite, mean_cov, row_blocks,
                   spatial_median, subset_mean, unit_scale, GM_STARTS)

_MAD_TO_SD = 1.4826  # MAD of a standard normal is 1 / 1.4826


# ----------------------------------------------------------------- helpers


def _visible_counts(X: np.ndarray, name: str) -> tuple[bool, np.ndarray]:
    """Whether any entry is missing, and the visible count per column (n,);
    `Undefined` naming the columns with no visible entry. The missing mask is
    formed a row block at a time (an (N, n) bool mask is 1/8 of X)."""
    counts = np.full(X.shape[1], X.shape[0], dtype=np.int64)
    for sl in row_blocks(*X.shape):
        counts -= np.isnan(X[sl]).sum(axis=0)
    missing = bool(counts.sum() < X.size)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        shown = ", ".join(map(str, empty[:10])) + (", ..." if empty.size > 10 else "")
        raise cmbench.Undefined(f"{name}: column(s) {shown} have no visible entry")
    return missing, counts


def _sorted_columns(X: np.ndarray) -> np.ndarray:
    """Each column sorted ascending, NaN last; (N, n)."""
    return np.sort(X, axis=0)


def _median_mad(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column medians (k,) and median absolute deviations (k,) of the block ``B`` (N, k):
    the median is taken once and reused for the deviations."""
    med = np.median(B, axis=0)
    dev = np.abs(B - med)
    return med, np.median(dev, axis=0, overwrite_input=True)


def _robust_location_scale(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Coordinate-wise median (n,) and MAD scale (n,) of complete rows ``Y``.

    A column with MAD 0 (more than half its values equal) falls back to its
    standard deviation, then to 1, so the scale is always positive.
    """
    blocks = [_median_mad(Y[:, sl]) for sl in column_blocks(*Y.shape)]
    center = np.concatenate([c for c, _ in blocks])
    scale = _MAD_TO_SD * np.concatenate([m for _, m in blocks])
    flat = ~(scale > 0)
    if flat.any():
        sd = Y[:, flat].std(axis=0)
        scale[flat] = np.where(sd > 0, sd, 1.0)
    return center, scale


# ----------------------------------------------------- coordinate-wise ones


@contract_doc(**COORDINATE_WISE)
def empirical_mean(X: np.ndarray, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """Empirical Mean (the paper's baseline): per coordinate, the mean of the
    visible entries, exactly ``np.nanmean(X, axis=0)``.
    """
    X = as_matrix(X)
    missing, counts = _visible_counts(X, "mean")
    if not missing:
        return finite(X.mean(axis=0), "mean")
    total = by_columns(X, lambda B: np.nansum(B, axis=0))  # nanmean's copy, a block at a time
    return finite(total / counts, "mean")


@contract_doc(X=COMPLETE_ROWS["X"], undefined="When no row is complete (the paper: "
               "\"we do not report results ... because all samples get filtered\").")
def sanitized_mean(X: np.ndarray, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """Data Sanitization (the paper's baseline): drop every row with a missing
    entry, then take the mean of the remaining complete rows.
    """
    return finite(complete_rows(X, "sanitize").mean(axis=0), "sanitize")


@contract_doc(**COORDINATE_WISE)
def coordinate_median(X: np.ndarray, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """Coordinate-wise Median (the paper's C-Median): per coordinate, the
    median of the visible entries (the mean of the two middle ones for an even
    count), equal to ``np.nanmedian(X, axis=0)``.
    """
    X = as_matrix(X)
    missing, counts = _visible_counts(X, "cmedian")
    if not missing:  # partition, faster than a sort
        return finite(column_medians(X), "cmedian")
    # One sort per column block (NaN last) instead of nanmedian's loop per column.
    out = np.empty(X.shape[1])
    for sl in column_blocks(*X.shape):
        S = _sorted_columns(X[:, sl])
        c = counts[sl]
        lo = np.take_along_axis(S, ((c - 1) // 2)[None, :], axis=0)[0]
        hi = np.take_along_axis(S, (c // 2)[None, :], axis=0)[0]
        out[sl] = (lo + hi) / 2.0
    return finite(out, "cmedian")


TRIM_CUTS = ("symmetric", "floor-ceil")


@contract_doc(**COORDINATE_WISE)
def trimmed_mean(X: np.ndarray, *, rng: np.random.Generator | None = None,
                 proportion: float = 0.1, cut: str = "symmetric") -> np.ndarray:
    """Coordinate-wise trimmed mean: per column, cut ``floor(proportion * k)``
    values from each end of its ``k`` visible entries and average the rest
    (the convention of ``scipy.stats.trim_mean``), NaN ignored per column.

    Vectorized: one sort of all columns, then a masked sum over each column's
    kept rank window.

    ``cut = "floor-ceil"`` is Anderson & Phillips' ``coord_trimmed_mean``
    (with ``proportion`` their tau): ``floor(proportion * k)`` values cut at
    the bottom and ``ceil(proportion * k)`` at the top, one more at the top
    when ``proportion * k`` is not an integer.

    Parameters
    ----------
    proportion : fraction cut from each end, in [0, 0.5).
    cut : ``"symmetric"`` (floor at both ends) or ``"floor-ceil"``.
    """
    if not 0.0 <= proportion < 0.5:
        raise ValueError(f"trimmed-mean: proportion must be in [0, 0.5), got {proportion}")
    if cut not in TRIM_CUTS:
        raise ValueError(f"trimmed-mean: cut must be one of {TRIM_CUTS}, got {cut!r}")
    X = as_matrix(X)
    _, counts = _visible_counts(X, "trimmed-mean")
    low = np.floor(proportion * counts).astype(np.int64)
    high = np.ceil(proportion * counts).astype(np.int64) if cut == "floor-ceil" else low
    kept = counts - low - high
    if (kept < 1).any():  # floor-ceil with k * proportion < 1 < k: one value, cut at the top
        raise cmbench.Undefined(f"trimmed-mean: column(s) {np.flatnonzero(kept < 1)[:10].tolist()} keep no value")
    total = np.empty(X.shape[1])
    for sl in column_blocks(*X.shape):  # one block's sort in memory at a time
        S = _sorted_columns(X[:, sl])
        rank = np.arange(X.shape[0])[:, None]
        keep = (rank >= low[sl]) & (rank < counts[sl] - high[sl])  # NaN sit at ranks >= counts
        total[sl] = np.where(keep, S, 0.0).sum(axis=0)
    return finite(total / kept, "trimmed-mean")


# -------------------------------------------------------- multivariate ones




@contract_doc(**COMPLETE_ROWS)
def geometric_median(X: np.ndarray, *, rng: np.random.Generator | None = None,
                     tol: float = 1e-7, max_iter: int = 500, start: str = "cmedian") -> np.ndarray:
    """Geometric (spatial) median of the complete rows, by Weiszfeld's
    iterations with the Vardi-Zhang modification.

    Starts from the coordinate-wise median (``start = "cmedian"``) or from the
    mean (``start = "mean"``). DKK17's ``geoMedianGaussianMean`` is
    ``start = "mean", max_iter = 100, tol = 0``: 100 plain Weiszfeld steps
    from the mean (the Vardi-Zhang step only differs where an iterate lands
    on a data point, where the plain step divides by zero). Plain Weiszfeld divides by the
    distance to each point and stalls (or produces NaN) when an iterate lands
    on a data point; Vardi & Zhang (2000) treat the ``eta`` points at zero
    distance explicitly: ``y <- (1 - g) T(y) + g y`` with
    ``g = min(1, eta / ||R(y)||)``, where ``T`` is the Weiszfeld step over the
    other points and ``R`` their sum of unit vectors towards them, which also
    stops exactly at a data point that is the median.

    Parameters
    ----------
    tol : stop when a step is shorter than ``tol`` times the median distance
        of the points to the start (a relative, scale-free tolerance).
    max_iter : iteration cap, O(N n) each.
    start : ``"cmedian"`` or ``"mean"``.
    """
    return spatial_median(X, tol=tol, max_iter=max_iter, start=start)


class _Standardized:
    """``Z = (Y - center) / scale`` without forming it: projections of Z are
    those of Y on ``U / scale`` less a constant per direction (no (N, n) copy)."""

    def __init__(self, Y: np.ndarray, center: np.ndarray, scale: np.ndarray):
        self.Y, self.center, self.scale = Y, center, scale
        self.shape = Y.shape

    def project(self, U: np.ndarray) -> np.ndarray:
        """``(Z @ U).T``, (K, N)."""
        W = U / self.scale[:, None]
        return (W.T @ self.Y.T) - (self.center @ W)[:, None]


def _projections(Z, U: np.ndarray):
    """Yield ``(start, P)`` per block of directions: ``P = (Z @ U_block).T``,
    (block, N) C-ordered, of at most `cmbench.theory.BLOCK_ELEMENTS` entries. Z is an
    array or a `_Standardized`."""
    block = max(1, BLOCK_ELEMENTS // Z.shape[0])
    for start in range(0, U.shape[1], block):
        Ub = U[:, start:start + block]
        yield start, (Z.project(Ub) if isinstance(Z, _Standardized) else Ub.T @ Z.T)


def _projection_order_stats(Z: np.ndarray, U: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Order statistics of the projections of the rows of ``Z`` on ``U``.

    ``Z`` is (N, n), ``U`` (n, K) and ``ranks`` 0-based ranks (R,). Returns
    (K, R): entry (k, j) is the ``ranks[j]``-th smallest of ``Z @ U[:, k]``.
    One sort per block of directions, rather than ``np.partition`` per rank
    (slower even for a handful of ranks: benchmarks/README.md).
    """
    out = np.empty((U.shape[1], ranks.size))
    for start, P in _projections(Z, U):
        out[start:start + len(P)] = np.sort(P, axis=1)[:, ranks]
    return out


def _projection_window_stats(Z: np.ndarray, U: np.ndarray, windows: list) -> list:
    """Consecutive order statistics of the projections, in linear time.

    ``windows`` holds ``(r0, count, v0, v1)``: the ranks ``r0 .. r0+count-1``
    are wanted and ``v0``, ``v1`` (K,) are the known values at ranks ``r0``
    and ``r0+count-1`` of each direction. Returns one (K, count) array per
    window. The values in ``[v0, v1]`` are exactly those ranks (plus ties),
    so one comparison pass and a partial sort of that window replace a full
    sort: O(N K) plus the window sorts.
    """
    outs = [np.empty((U.shape[1], count)) for _, count, _, _ in windows]
    for start, P in _projections(Z, U):
        rows = slice(start, start + len(P))
        for out, (r0, count, v0, v1) in zip(outs, windows):
            lo, hi = v0[rows, None], v1[rows, None]
            below = (P < lo).sum(axis=1)  # rank of the first value equal to v0
            inside = (P >= lo) & (P <= hi)
            W = np.where(inside, P, np.inf)
            width = int(inside.sum(axis=1).max())
            if width < W.shape[1]:
                W = np.partition(W, width - 1, axis=1)[:, :width]
            W.sort(axis=1)
            out[rows] = np.take_along_axis(W, (r0 - below)[:, None] + np.arange(count), axis=1)
    return outs


def _deep_region_center(U: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                        norms: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Chebyshev centre of the polytope ``{y : lo <= U.T y <= hi}``.

    ``U`` is (n, K), ``lo`` and ``hi`` (K,), ``norms`` (K,) the norms of U's
    columns (None: unit columns). Solves the LP max r s.t.
    ``U.T y + r |u_k| <= hi``, ``-U.T y + r |u_k| <= -lo``; the polytope is
    non-empty iff the optimal radius r >= 0. Returns (r, y).
    """
    n, K = U.shape
    A = np.empty((2 * K, n + 1))
    A[:K, :n] = U.T
    A[K:, :n] = -U.T
    A[:, n] = 1.0 if norms is None else np.tile(norms, 2)
    b = np.concatenate([hi, -lo])
    cost = np.zeros(n + 1)
    cost[n] = -1.0
    from scipy import optimize  # imported where used: loading the plugins stays fast

    res = optimize.linprog(cost, A_ub=A, b_ub=b, bounds=[(None, None)] * (n + 1), method="highs")
    if res.status != 0:  # r is bounded only when the directions span R^n
        return -np.inf, np.zeros(n)
    return float(res.x[n]), res.x[:n]


def _deepest(U: np.ndarray, levels: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             norms: np.ndarray | None = None):
    """Binary search for the deepest non-empty region among ``levels``.

    ``levels`` (L,) ascending depth counts m; ``lo``, ``hi`` (K, L) the bounds
    ``S_k[m-1]``, ``S_k[N-m]`` of each; ``norms`` as in `_deep_region_center`.
    Returns ``(index, centre)`` of the largest non-empty level, or ``(-1, None)``
    when none is.
    """
    best = (-1, None)
    a, b = 0, levels.size  # levels[:a] non-empty, levels[b:] empty
    while a < b:
        mid = (a + b) // 2
        r, y = _deep_region_center(U, lo[:, mid], hi[:, mid], norms)
        if r >= -1e-9:
            best, a = (mid, y), mid + 1
        else:
            b = mid
    return best


@contract_doc(**COMPLETE_ROWS, rng="Draws the directions (deterministic for a fixed generator state).")
def tukey_median(X: np.ndarray, *, rng: np.random.Generator,
                 directions: int = 256, grid: int = 64) -> np.ndarray:
    """Approximate Tukey (halfspace) median of the complete rows.

    The exact Tukey median is intractable in high dimension. Approximation:
    the halfspace depth is taken over ``directions`` random unit directions
    u_k only: the depth of a point y is the minimum over k of the smaller
    tail fraction of the projections ``u_k . x_i`` on either side of
    ``u_k . y`` (an upper bound on the exact depth that tightens as
    ``directions`` grows). Its deep regions are polytopes,
    ``D_m = {y : S_k[m-1] <= u_k . y <= S_k[N-m] for all k}`` with ``S_k`` the
    sorted projections (depth >= m / N), nested and shrinking in m. The
    estimate is the Chebyshev centre (one LP) of the deepest non-empty
    ``D_m``, found by binary search on m. The candidates are thus all of R^n,
    not only the data points: a centroid of the deepest *data points* is
    much noisier (in 5-D few points lie near the centre). In one dimension
    this is exactly the sample median.

    Directions are drawn uniformly in coordinates centred at the
    coordinate-wise median and scaled by the MAD, so the result does not
    depend on column units (the exact depth is affine invariant; random
    directions in raw units are not).

    When the complete rows span less than R^n (fewer than n + 1 rows, a
    constant column, x = A z of low rank), the exact depth is 0 off their
    affine hull, so the deep regions are searched inside it (the LP in the
    hull's coordinates): the centre then lies in the rows' convex hull. A
    search in R^n followed by a projection onto the hull could leave the
    convex hull (three rows in R^5: a point of their plane outside their
    triangle, below a column's minimum).

    Cost: all N points are projected on all directions (one matmul per
    block of directions) and sorted per direction: O(N n K + K N log N),
    linear in N up to the log for fixed K; plus O(log N) LPs with 2K rows
    and n + 1 columns, independent of N. Only the order statistics the
    search needs are kept: every level of m when ``N K`` is small; else
    ``grid`` coarse levels, then the levels inside the bracket they leave,
    read off a second, linear-time pass (`_projection_window_stats`).

    Parameters
    ----------
    directions : number K of random directions (at least n are drawn), used
        beside the n coordinate axes.
    grid : number of coarse depth levels when N K is large.
    """
    Y = complete_rows(X, "tukey")
    N, n = Y.shape
    if N <= 2:
        return finite(Y.mean(axis=0), "tukey")
    center, scale = _robust_location_scale(Y)
    Z = _Standardized(Y, center, scale)
    K = max(int(directions), n)
    U = rng.standard_normal((n, K))
    U /= np.linalg.norm(U, axis=0)
    # The coordinate axes among the directions bound D_m by the coordinates'
    # order statistics, so the estimate never leaves the data's bounding box
    # (random directions alone leave a sliver outside the convex hull).
    U = np.concatenate([np.eye(n), U], axis=1)

    # Degenerate data (a constant column, x = A z of low rank) span an affine
    # subspace y = base + B t: the deep regions are searched inside it, so that
    # their centre lies in the data's convex hull, not only in its affine hull.
    base, B, inside = _standardized_hull(Z)
    if inside is None:  # every complete row is the same point
        return finite(Y[0].copy(), "tukey")
    search = _HullSearch(U, base, B, inside)

    m_max = (N + 1) // 2  # beyond, S_k[m-1] > S_k[N-m] in general
    if m_max * K <= BLOCK_ELEMENTS:
        levels = np.arange(1, m_max + 1)
        ostats = _projection_order_stats(Z, U, np.concatenate([levels - 1, N - levels]))
        i, y = search.deepest(levels, ostats[:, :m_max], ostats[:, m_max:])
    else:
        levels = np.unique(np.linspace(1, m_max, max(int(grid), 2)).astype(np.int64))
        L = levels.size
        ostats = _projection_order_stats(Z, U, np.concatenate([levels - 1, N - levels]))
        lo, hi = ostats[:, :L], ostats[:, L:]
        i, y = search.deepest(levels, lo, hi)
        if 0 <= i < L - 1 and levels[i + 1] - levels[i] > 1:
            # Refine between the deepest non-empty level and the next (empty) one.
            m_a, m_b = int(levels[i]), int(levels[i + 1])
            count = m_b - m_a + 1
            lo_f, hi_f = _projection_window_stats(Z, U, [
                (m_a - 1, count, lo[:, i], lo[:, i + 1]),   # ranks m - 1
                (N - m_b, count, hi[:, i + 1], hi[:, i]),   # ranks N - m, reversed
            ])
            fine = np.arange(m_a, m_b + 1)
            _, y_f = search.deepest(fine, lo_f, hi_f[:, ::-1])
            if y_f is not None:
                y = y_f
    if y is None:  # only when every LP failed (D_1 holds all data): the coordinate-wise median
        y = np.zeros(n)
    return finite(_onto_affine_hull(Y, center + scale * y), "tukey")


def _standardized_hull(Z: "_Standardized", rtol: float = 1e-10):
    """The affine hull of the standardized rows: ``(base (n,), B (n, d), inside)``.

    ``B`` has orthonormal columns spanning the rows' deviations from their mean
    ``base`` (eigenvalues of their scatter above ``rtol`` of the largest);
    ``inside`` is False when the hull is all of R^n (``d = n``: the search runs
    in the original coordinates, unchanged) and None when the rows coincide.
    """
    Y, center, scale = Z.Y, Z.center, Z.scale
    n = Y.shape[1]
    mean = subset_mean(Y, np.arange(Y.shape[0]))
    C = np.zeros((n, n))
    for sl in row_blocks(*Y.shape):
        D = (Y[sl] - mean) / scale
        C += D.T @ D
    evals, V = np.linalg.eigh(C)
    if not evals[-1] > 0.0:
        return None, None, None
    B = V[:, evals > rtol * evals[-1]]
    return (mean - center) / scale, B, (False if B.shape[1] == n else True)


class _HullSearch:
    """`_deepest` over the directions ``U`` (n, K), inside the affine subspace
    ``base + B t`` when ``inside`` (the slabs' bounds shifted by ``U.T base``,
    their normals ``B.T U``; directions orthogonal to the subspace bound nothing
    there and are left out), else in R^n as given."""

    def __init__(self, U: np.ndarray, base: np.ndarray, B: np.ndarray, inside: bool):
        self.inside, self.base, self.B = inside, base, B
        if inside:
            P = B.T @ U
            norms = np.linalg.norm(P, axis=0)
            self.keep = norms > 1e-8
            self.U, self.norms, self.shift = P[:, self.keep], norms[self.keep], U[:, self.keep].T @ base
        else:
            self.U = U

    def deepest(self, levels: np.ndarray, lo: np.ndarray, hi: np.ndarray):
        if not self.inside:
            return _deepest(self.U, levels, lo, hi)
        i, t = _deepest(self.U, levels, lo[self.keep] - self.shift[:, None], hi[self.keep] - self.shift[:, None],
                        self.norms)
        return i, (None if t is None else self.base + self.B @ t)


def _onto_affine_hull(Y: np.ndarray, point: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """Project ``point`` onto the affine hull of the rows of Y.

    The exact Tukey median lies there (depth is 0 off the hull); the
    random-direction polytope's centre can leave it by rounding when the data
    are degenerate (a constant column, or x = A z of low rank). One n x n
    covariance and its eigendecomposition: linear in N.
    """
    mean = subset_mean(Y, np.arange(Y.shape[0]))
    C = np.zeros((Y.shape[1], Y.shape[1]))
    for sl in row_blocks(*Y.shape):
        D = Y[sl] - mean
        C += D.T @ D
    evals, V = np.linalg.eigh(C)
    keep = V[:, evals > rtol * max(evals[-1], np.finfo(float).tiny)]
    return mean + keep @ (keep.T @ (point - mean))


def _sq_norms(Y: np.ndarray, center: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``||(Y_i - center) @ W||^2`` per row, (N,), in row chunks; a 1-D ``W`` is the diagonal
    of a diagonal W, applied entry by entry (the same numbers as the product, in O(N n))."""
    out = np.empty(Y.shape[0])
    for sl in row_blocks(*Y.shape):
        Z = Y[sl] - center
        Z = Z * W if W.ndim == 1 else Z @ W
        out[sl] = np.einsum("ij,ij->i", Z, Z)
    return out


def _robust_covariance(Y: np.ndarray, keep: float, steps: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Trimmed (MCD-style) location (n,) and covariance (n, n) of ``Y``.

    Start from the coordinate-wise median and MAD; keep the ``keep`` fraction
    of points nearest in that scaled distance; then ``steps`` concentration
    steps (as in FastMCD): mean and covariance of the kept points, keep the
    nearest in their Mahalanobis distance. The covariance of a Gaussian
    truncated to its ``keep`` chi-square quantile is shrunk; it is rescaled
    by the consistency factor ``keep / F_{chi2, r+2}(F^{-1}_{chi2, r}(keep))``,
    r the numerical rank of the covariance.
    """
    N, n = Y.shape
    h = max(min(N, n + 1), int(math.ceil(keep * N)))
    center, scale = _robust_location_scale(Y)
    dist = _sq_norms(Y, center, 1.0 / scale)
    for step in range(steps + 1):
        idx = np.argpartition(dist, h - 1)[:h] if h < N else np.arange(N)
        center, C = mean_cov(Y, idx)
        w, V = np.linalg.eigh(C)
        w = np.maximum(w, max(w.max(), 1e-300) * 1e-12)
        if step < steps:  # the last step's distances would pick nothing
            dist = _sq_norms(Y, center, V / np.sqrt(w))
    frac = h / N
    rank = int(np.sum(w > w.max() * 1e-9))  # x = A z: the chi-square has rank(A) dof
    if frac < 1.0 and rank > 0:
        from scipy import stats  # imported where used: loading the plugins stays fast
        C = C * frac / stats.chi2.cdf(stats.chi2.ppf(frac, rank), rank + 2)
    return center, C


FILTER_RULES = ("cmbench", "reference")

#: the filter's whitening on many rows: its trimmed covariance on a random subsample of
#: WHITEN_ROWS_PER_DIM rows per column, at least WHITEN_MIN_ROWS, and its MAD scales on up to
#: WHITEN_SCALE_FACTOR times as many other rows (`_whitening_rows`)
WHITEN_ROWS_PER_DIM = 25
WHITEN_MIN_ROWS = 5000
WHITEN_SCALE_FACTOR = 4


def _whitening_rows(N: int, n: int) -> tuple[int, int]:
    """Rows of the whitening's two disjoint subsamples of ``N`` rows of ``n`` columns.

    Parameters
    ----------
    N, n : int
        The shape of the complete rows.

    Returns
    -------
    tuple of (int, int)
        The rows of the trimmed covariance, ``m = max(WHITEN_MIN_ROWS, WHITEN_ROWS_PER_DIM
        * n)``, and of the MAD scales, ``min(N - m, WHITEN_SCALE_FACTOR * m)``; ``(N, N)``
        (every row, in both) when ``N <= 2 m``.
    """
    m = max(WHITEN_MIN_ROWS, WHITEN_ROWS_PER_DIM * n)
    return (N, N) if N <= 2 * m else (m, min(N - m, WHITEN_SCALE_FACTOR * m))


def _projection_scales(Y: np.ndarray, center: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Squared MAD scale (k,) of the rows' projections ``(Y - center) @ V`` on each column of
    ``V`` (n, k), about the projections' own median; a column block of projections at a time."""
    scale2 = np.empty(V.shape[1])
    block = max(1, BLOCK_ELEMENTS // max(1, Y.shape[0]))
    for start in range(0, V.shape[1], block):
        Vb = V[:, start:start + block]
        if Y.shape[0] * Y.shape[1] <= BLOCK_ELEMENTS:
            P = (Y - center) @ Vb
        else:  # filled a row block at a time: one (N, block) array, no list of pieces
            P = np.empty((Y.shape[0], Vb.shape[1]))
            for sl in row_blocks(*Y.shape):
                P[sl] = (Y[sl] - center) @ Vb
        P -= np.median(P, axis=0)
        np.abs(P, out=P)
        scale2[start:start + block] = (_MAD_TO_SD * np.median(P, axis=0, overwrite_input=True)) ** 2
    return scale2


def _spectral_whitening(Y: np.ndarray, eps: float,
                        rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Location (n,) and whitening matrix W (n, n) of ``Y`` for the filter; W is None
    when the trimmed points coincide (the location is then their centre).

    The directions are the eigenvectors of the MCD-style trimmed covariance
    (`_robust_covariance`); the scale along each is the MAD of the rows'
    projections on it, not the trimmed covariance's eigenvalue: noise lying
    inside the Gaussian shell (DKK17's hypercube and far point at d >= 200, a
    cluster at N(0.5 * 1, I)) survives the distance trim and inflates the
    eigenvalue along its direction, while the median of the absolute
    projections moves by O(eps) only, so the whitened data keep the excess
    variance the filter looks for.

    With more than ``2 m`` rows (`_whitening_rows`, ``m = max(5000, 25 n)``),
    the covariance is that of ``m`` rows drawn by ``rng`` and the scales are
    the MADs of up to ``4 m`` other rows. Not the same rows: MADs taken on the
    rows that chose the directions are inflated along the directions those
    rows happen to spread most (a top eigenvalue ``(1 + sqrt(n / m))^2`` of
    pure noise), which the whitening then shrinks in all the data (in a
    trial on DKK17's data, N = 100 d, with the same ``10 n`` rows for both,
    the filter's excess error was 7.7, 9.2, 18.7 at d = 100, 200, 400, against
    0.026, 0.005, 0.007 with ``10 n`` other rows for the scales). More rows for
    the scales than for the covariance because the whitened variances' error
    is the MAD's (about ``2.3 / sqrt(rows)`` of each, whatever n), and a MAD
    costs one product per row where the trimmed covariance costs seven.
    """
    N, n = Y.shape
    m, k = _whitening_rows(N, n)
    if m < N:
        picked = np.random.default_rng(rng).choice(N, size=m + k, replace=False)
        # sorted: the fancy-indexed copies read the rows in memory order
        A, B = Y[np.sort(picked[:m])], Y[np.sort(picked[m:])]
    else:
        A = B = Y
    center, cov = _robust_covariance(A, keep=1.0 - min(2.0 * eps, 0.5))
    w, V = np.linalg.eigh(cov)
    if not w.max() > 0.0:
        return center, None
    # A direction whose MAD is 0 (x = A z: no spread off A's span) keeps the floor.
    scale2 = np.maximum(_projection_scales(B, center, V), max(w.max(), 1e-300) * 1e-12)
    return center, V / np.sqrt(scale2)


@contract_doc(**COMPLETE_ROWS, rng="Draws the whitening's two row subsamples when there are more than "
              "2 max(5000, 25 n) complete rows (``whiten = true``); else unused (the faithful mode "
              "is deterministic).")
def filter_mean(X: np.ndarray, *, rng: np.random.Generator | None = None,
                eps: float = 0.1, C: float = 3.0, cher: float = 2.5, tau: float = 0.1,
                max_iter: int = 100, whiten: bool = True, rule: str = "cmbench") -> np.ndarray:
    """Iterative filtering of Diakonikolas et al. (2019, "Robust estimators in
    high dimensions without the computational intractability"), in the
    practical form of their reference code (``filterGaussianMean``).

    Faithful mode, ``whiten = false, rule = "reference"``: exactly DKK17's
    ``filterGaussianMean(data, eps, tau, cher)`` (tests/fixtures hold its
    outputs under Octave). On the remaining rows (N' x d): if the top
    eigenvalue lambda of their covariance (divisor N') is below
    ``1 + C eps ln(1/eps)`` return their mean; else, with v its eigenvector,
    sort the deviations ``|v . x - median(v . x)|``, take the first sorted
    position i (1-based) where ``N' - i > cher N' (P(Z > dev_i - 2 eps) + eps /
    (d ln(d eps / tau)))``, keep the rows up to and including i and repeat; if
    that position is the first or none qualifies, return the mean. No cap on
    the rounds (``max_iter`` is ignored). Ties in deviation among distinct rows
    (measure zero) may be ordered otherwise than MATLAB's ``sortrows``.

    Default (``whiten = true, rule = "cmbench"``), our variant, departs in
    three places:

    1. The reference assumes identity covariance; the default first whitens
       the complete rows, with the eigenvectors of an MCD-style trimmed
       covariance (the ``1 - 2 eps`` fraction nearest the coordinate-wise
       median, three concentration steps) and, along each, the squared MAD
       of the projections as the variance (`_spectral_whitening`): the
       trimmed covariance's own eigenvalues would absorb noise placed inside
       the Gaussian shell, and the filter would see nothing. Beyond
       ``2 max(5000, 25 n)`` rows, the covariance is that of a random
       subsample of ``m = max(5000, 25 n)`` rows and the MADs those of up to
       ``4 m`` other rows (drawn by ``rng``; see Notes). The
       scales are floored at 1e-12 of the largest eigenvalue, so rank-deficient data (x = A z)
       are whitened too and points leaving the data's subspace stand out.
    2. The slack of the tail test is divided by ``max(T^2, 1)``, as in the
       analysis (DKK+ 2016, Filter-Gaussian-Mean): the reference's constant
       slack never filters fewer than ``cher N' s`` rows (about 45 of 3000 in
       8-D) placed arbitrarily far.
    3. The cut is just below the qualifying position (the reference keeps the
       point there, so one far outlier can survive); the log term is clipped
       at 1 so the bound stays finite when ``n eps / tau <= e``; at most
       ``max_iter`` rounds.

    Either option may be set alone (e.g. ``whiten = false`` with the default
    rule). With fewer than 3 complete rows their mean is returned. Each round
    is O(N' n^2 + N' log N').

    Parameters
    ----------
    eps : assumed fraction of corrupted rows, in (0, 0.5).
    C : constant of the stopping eigenvalue bound (the reference's 3).
    cher : constant of the tail bound (the reference's 2.5).
    tau : failure probability in the slack term.
    max_iter : cap on the filtering rounds (rule ``"cmbench"`` only).
    whiten : whiten the rows first (see 1.).
    rule : ``"cmbench"`` (2. and 3.) or ``"reference"`` (DKK17's test and cut).

    Notes
    -----
    How the whitening of 1. was chosen. With the trimmed covariance's
    eigenvalues as variances, noise inside the Gaussian shell survives the trim
    and is absorbed into them. Measured on one draw per d at N = 100 d, eps =
    0.1 (``benchmarks/sample_level.py --whitening``), excess l2 error at d =
    100, 200, 400: on DKK17's data, eigenvalue whitening 0.195, 1.088, 1.497
    (the noisy mean's from d = 200 on), the MAD scale 0.020, 0.005, 0.006 (on
    every row as on subsamples), the reference filter 0.020, 0.016, 0.025; on
    N(0.5 * 1, I) contamination, eigenvalue whitening the noisy mean's (0.39,
    0.61, 0.90), the MAD scale 0.001, 0.007, 0.007 (0.006 at d = 400 on every
    row), the reference 0.012, 0.018, 0.020 (tests/test_sample_level.py checks
    within 2x of the reference at d = 100, on every row and on subsamples).
    Below d = 100 the bias of the MAD under a cluster on one side (about 1.2
    times the inliers' variance at eps = 0.1) is no longer small against the
    tolerated eigenvalue 1 + 3 eps ln(1/eps): at d = 40, 60 (N = 100 d, one
    draw) the default's excess error is 0.10, 0.11 on DKK17's data (reference
    0.10, 0.05) and 0.22, 0.29 on N(0.5 * 1, I) (reference 0.03, 0.03). The
    smaller of the two one-sided MADs fixed the latter but collapsed on the
    point mass of DKK17's noise (excess error 6.2 at d = 100), so it is not
    used.

    The subsamples (since the whitening cost about 90% of the default's time at
    d = 400, N = 400,000: 8 passes of N n^2 and medians of N n entries) change
    the default's numbers by about their own sampling noise. At d = 100, N =
    100,000, eps = 0.1, over 10 draws (``--whitening --dims 100 --per-dim 1000
    --seeds 10``), excess error mean (max): 0.0338 (0.0408) on DKK17's data
    against 0.0333 (0.0412) on every row (reference 0.0335 (0.0388)); on N(0.5 *
    1, I) 0.0124 (0.0168) against 0.0120 (0.0168) (reference 0.0327 (0.0379)).
    At eps = 0.2, N = 50,000 (Gao et al.'s size; ``--eps 0.2 --dims 100
    --per-dim 500 --seeds 4``, then d = 200 with ``--per-dim 250 --seeds 3``),
    on N(0.5 * 1, I): 0.0172 (0.0207) against 0.0147 (0.0192) at d = 100, 0.0105
    (0.0120) against 0.0091 (0.0103) at d = 200 (reference about 0.09); on
    DKK17's data 0.0066 (0.0076) against 0.0064 (0.0081) at d = 200, but at d =
    100 the default is far worse than the reference, with or without subsamples:
    0.459 (0.466) against 0.466 (0.481) on every row, reference 0.096 (0.101).
    The whitening then costs ``O(m n^2)``, ``m`` independent of N: on DKK17's
    data the default took 8.8 CPU-s at d = 200, N = 200,000 (the faithful
    filter 8.7; with the whitening on every row 32.0) and 15.3 CPU-s at
    d = 400, N = 400,000 (faithful 13.1; every row 124.0): medians of 3
    interleaved runs (``--filter-speed``) on a loaded machine.
    """
    if not 0.0 < eps < 0.5:
        raise ValueError(f"filter: eps must be in (0, 0.5), got {eps}")
    if rule not in FILTER_RULES:
        raise ValueError(f"filter: rule must be one of {FILTER_RULES}, got {rule!r}")
    Y = complete_rows(X, "filter")
    scale = 1.0
    if whiten:  # whitened, the filter's result scales with the data: huge or tiny entries are rescaled
        Y, scale = unit_scale(Y)
    N, n = Y.shape
    reference = rule == "reference"
    if N < 3 and not reference:
        return finite(Y.mean(axis=0) * scale, "filter")
    if whiten:
        center, W = _spectral_whitening(Y, eps, rng)
        if W is None:  # the trimmed points coincide: their centre is robust
            return finite(center * scale, "filter")
    else:
        center, W = np.zeros(n), None

    from scipy import linalg, special  # imported where used: loading the plugins stays fast
    top = 1.0 + C * (eps * math.log(1.0 / eps))  # the reference's 1 + 3 * threshold
    if reference:
        with np.errstate(divide="ignore"):  # d eps / tau = 1 gives an infinite slack, as in MATLAB
            slack = eps / (n * np.log(n * eps / tau))
    else:
        slack = eps / (n * max(1.0, math.log(n * eps / tau)))
    keep = np.arange(N)
    rounds = 0
    while reference or rounds < int(max_iter):
        rounds += 1
        m = len(keep)
        mean_k, cov_k = mean_cov(Y, keep)
        if not np.isfinite(cov_k).all():  # unwhitened rows of magnitude ~1e154 and above
            raise cmbench.Undefined("filter: the rows' covariance overflows (entries too large to square); "
                                    "whiten = true rescales them")
        # Only the top eigenpair is read: a subset solver (MRRR) costs a third of a full one.
        lam, vec = linalg.eigh(cov_k if W is None else W.T @ cov_k @ W, subset_by_index=[n - 1, n - 1])
        if (lam[-1] < top) if reference else (lam[-1] <= top):
            break
        a = vec[:, -1] if W is None else W @ vec[:, -1]
        proj = np.empty(m)
        for sl in row_blocks(m, n):
            B = Y[keep[sl]]  # a copy (fancy index): shifted in place
            B -= center
            proj[sl] = B @ a
        dev = np.abs(proj - np.median(proj))
        order = np.argsort(dev, kind="stable")
        T = dev[order] - 2.0 * eps
        if reference:
            tail = m - np.arange(1, m + 1)  # N - i, i the 1-based position
            bound = cher * m * (0.5 * special.erfc(T / math.sqrt(2.0)) + slack)
        else:
            # Cutting just below sorted deviation j removes the m - j points from
            # j on: the largest count a threshold in that gap can see.
            tail = m - np.arange(m)
            bound = cher * m * (0.5 * special.erfc(T / math.sqrt(2.0)) + slack / np.maximum(T * T, 1.0))
        hit = tail > bound
        j = int(np.argmax(hit))
        if not hit[j] or j == 0:
            break
        if reference and j == m - 1:  # the last position: the reference returns the mean
            break
        keep = keep[order[:j + 1] if reference else order[:j]]
    return finite(subset_mean(Y, keep) * scale, "filter")


# ------------------------------------------------------------ registration


@cmbench.hookimpl
def register_estimators():
    # cost: a call's CPU seconds against the mean's on DKK17's data at d = 400, N = 400,000
    # (one full-size unit, `benchmarks/lone_unit.py`); a hint for sharing a large unit's cells
    return [
        cmbench.Estimator("mean", empirical_mean, params={},
                          description="Empirical Mean: per-coordinate mean of the visible entries"),
        cmbench.Estimator("sanitize", sanitized_mean, params={},
                          description="Data Sanitization: mean of the rows without a missing entry"),
        cmbench.Estimator("cmedian", coordinate_median, params={}, cost=7,
                          description="C-Median: per-coordinate median of the visible entries"),
        cmbench.Estimator("trimmed-mean", trimmed_mean, ranges={"proportion": (0.0, 0.5, "[)")},
                          choices={"cut": TRIM_CUTS},
                          description="Per-coordinate mean after cutting a proportion from each end"),
        cmbench.Estimator("geometric-median", geometric_median,
                          params={"tol": 1e-7, "max_iter": 500, "start": "cmedian"},
                          choices={"start": GM_STARTS}, ranges={"tol": (0.0, None), "max_iter": (0, None)},
                          cost=30, description="Geometric median of the complete rows (Weiszfeld, Vardi-Zhang)"),
        cmbench.Estimator("tukey", tukey_median, params={"directions": 256, "grid": 64},
                          ranges={"directions": (1, None), "grid": (1, None)},
                          description="Approximate Tukey median: deepest region over random directions (LP)"),
        cmbench.Estimator("filter", filter_mean,
                          ranges={"eps": (0.0, 0.5, "()"), "C": (0.0, None, "()"), "cher": (0.0, None, "()"),
                                  "tau": (0.0, 1.0, "()"), "max_iter": (0, None)},
                          choices={"rule": FILTER_RULES, "whiten": (True, False)}, cost=24,
                          description="Iterative spectral filter (Diakonikolas et al.) on robustly whitened rows"),
    ]
