"""Estimators of the sample-level studies (an eps fraction of whole rows replaced).

The baselines of Diakonikolas, Kamath, Kane, Li, Moitra, Stewart, "Being Robust
(in High Dimensions) Can Be Practical" (ICML 2017), Figure 1, each as its
reference code (github.com/hoonose/robust-filter, ``comparisonCode/``) computes
it: naive pruning (``prune``), RANSAC (``ransac``); the "General" agnostic mean
of Lai, Rao, Vempala (FOCS 2016; github.com/kal2000/AgnosticMeanAndCovarianceCode,
``agnosticMeanGeneral.m``) as ``lrv``; and the median of means (``median-of-means``).
tests/fixtures/sample_level_reference.json holds the reference code's outputs
under GNU Octave on fixed matrices; tests/test_sample_level_reference.py checks
these functions against them.

This built-in plugin registers them itself (`register_estimators`), listed after
`cmbench.builtins.estimators`. Rows holding a NaN are dropped (the complete rows are used), as for
the other multivariate estimators; none modifies its input.
"""
from __future__ import annotations

import functools
import math

import numpy as np

import cmbench

from .estimator_docs import COMPLETE_ROWS, contract_doc
from .rows import (block_rows, column_medians, complete_rows, contiguous_block_means, finite, mean_cov, row_blocks,
                   spatial_median, sq_dist, subset_mean, unit_scale)

RANSAC_COUNTS = ("reference", "intended")
MOM_MEDIANS = ("geometric", "coordinate")
MOM_SPLITS = ("shuffle", "contiguous")
LRV_VARIANTS = ("general", "damped")


@functools.cache
def _middle_20() -> float:
    """Phi^-1(0.6) - Phi^-1(0.4): the width of a standard normal's middle 20%. Computed when
    first needed: loading the plugins (every worker does) then imports no scipy (0.4 CPU-s)."""
    from scipy.special import ndtri

    return 2.0 * float(ndtri(0.6))


def _check_eps(name: str, eps: float) -> float:
    if not 0.0 < float(eps) < 0.5:
        raise ValueError(f"{name}: eps must be in (0, 0.5), got {eps}")
    return float(eps)


# -------------------------------------------------------------------- prune


@contract_doc(**COMPLETE_ROWS)
def pruned_mean(X: np.ndarray, *, rng: np.random.Generator | None = None,
                eps: float = 0.1, radius: float = 0.33) -> np.ndarray:
    """Naive pruning (DKK17, ``pruneGaussianMean.m``): keep the rows strictly
    closer than ``radius * sqrt(d ln(N / eps))`` to the coordinate-wise median
    and average them.

    The radius is about ``0.33 sqrt(d ln(N/eps))``: it grows with sqrt(d) like
    the norm of a standard Gaussian sample, so in high dimension it passes any
    fixed far point (DKK17's (12, -2, 0, ..., 0) once d ln(N/eps) > 1500), which
    is then kept and the result equals the noisy mean. When no row is inside
    (a few rows in many dimensions), the reference code returns NaN (the mean
    of no rows); here the ball's centre, the coordinate-wise median.

    Parameters
    ----------
    eps : the contamination level in the radius, in (0, 0.5).
    radius : the reference code's constant 0.33.
    """
    eps = _check_eps("prune", eps)
    Y = complete_rows(X, "prune")
    N, d = Y.shape
    r = radius * math.sqrt(d * math.log(N / eps))
    center = column_medians(Y)  # MATLAB's median too: the mean of the middle two for even N
    keep = np.flatnonzero(np.sqrt(sq_dist(Y, center)) < r)
    if keep.size == 0:  # the reference's mean of nothing is NaN: return the ball's centre
        return finite(center, "prune")
    return finite(subset_mean(Y, keep), "prune")


# ------------------------------------------------------------------- ransac


@contract_doc(**COMPLETE_ROWS, rng="Draws the random subsets (without replacement).")
def ransac_mean(X: np.ndarray, *, rng: np.random.Generator | None = None,
                eps: float = 0.1, tau: float = 0.1, iterations: int = 100,
                count: str = "intended") -> np.ndarray:
    """RANSAC as DKK17 run it (``ransacGaussianMean.m``).

    With ``s = ceil(2 (d ln 4 + ln(2/tau)) / eps^2)`` (the noisy mean if s > N)
    and the threshold ``t = d + 2 (sqrt(d ln(N/tau)) + ln(N/tau)) + eps^2 ln^2(1/eps)``:
    the noisy mean counts as the first candidate; each of ``iterations``
    candidates is the mean of s rows drawn without replacement; a candidate
    whose inlier count (rows j with ``||m - x_j||^2 <= t``) is strictly larger
    than the best so far replaces it.

    ``count = "reference"`` reproduces the reference code's counting, which
    indexes ``data(j)`` with one index: in MATLAB that is the j-th entry of the
    matrix in column order, i.e. ``x_j1``, so it counts the j with
    ``||m - x_j1 * 1||^2 <= t``. ``count = "intended"`` counts rows, as the
    method states.

    The candidates are drawn first (the same draws, in the same order, as one
    at a time), then computed together in two passes over the rows: their
    means as one matrix product of a 0/1 membership matrix with the rows, and
    (``"intended"``) their squared distances as ``||x||^2 - 2 x.m + ||m||^2``
    with one matrix product for all of them. One candidate at a time (as the
    reference code goes) costs a gather of its s rows and a pass over all the
    rows each, 100 passes over a 1.28 GB matrix at DKK17's d = 400 (s =
    111,503 of N = 400,000); together they cost about two (at d = 200: 9.67 ->
    1.06 CPU-s, benchmarks/README.md). It differs from a direct computation by
    rounding only: the means in about the 14th digit, and a row lying at the
    threshold within about 1e-12 relative could be counted on the other side.

    Parameters
    ----------
    eps : the contamination level, in (0, 0.5).
    tau : the failure probability in the subset size and threshold.
    iterations : number of random candidates (the reference's 100).
    count : ``"intended"`` (rows) or ``"reference"`` (the reference code's linear index).
    """
    eps = _check_eps("ransac", eps)
    if count not in RANSAC_COUNTS:
        raise ValueError(f"ransac: count must be one of {RANSAC_COUNTS}, got {count!r}")
    Y = complete_rows(X, "ransac")
    N, d = Y.shape
    rng = np.random.default_rng(rng)
    mean = subset_mean(Y, np.arange(N))
    s = math.ceil(2.0 * (d * math.log(4.0) + math.log(2.0 / tau)) / eps ** 2)
    if s > N:
        return finite(mean, "ransac")
    t = d + 2.0 * (math.sqrt(d * math.log(N / tau)) + math.log(N / tau)) + eps ** 2 * math.log(1.0 / eps) ** 2
    member = np.zeros((int(iterations), N), bool)  # row k: the rows drawn for candidate k
    for k in range(len(member)):
        member[k, rng.choice(N, size=s, replace=False)] = True
    # the noisy mean is the first candidate: a later one replaces it only with more inliers
    candidates = np.vstack([mean[None, :], _member_means(Y, member)])
    counts = (_reference_counts(Y[:, 0], candidates, t) if count == "reference"
              else _row_counts(Y, candidates, t))
    # the first of the most inliers: a later candidate replaces one only with more
    return finite(candidates[int(np.argmax(counts))], "ransac")


def _member_means(Y: np.ndarray, member: np.ndarray) -> np.ndarray:
    """The mean of the rows of ``Y`` (N, n) that each row of ``member`` (K, N),
    0/1, selects: (K, n), in one pass over ``Y`` (a matrix product a row block
    at a time) instead of K gathers of the selected rows."""
    N, n = Y.shape
    K = len(member)
    total = np.zeros((K, n))
    for sl in row_blocks(N, max(n, K)):
        total += member[:, sl].astype(np.float64) @ Y[sl]
    return total / np.count_nonzero(member, axis=1)[:, None]


def _row_counts(Y: np.ndarray, M: np.ndarray, t: float) -> np.ndarray:
    """For each row m of ``M`` (K, n), the number of rows x of ``Y`` with
    ``||x||^2 - 2 x.m + ||m||^2 <= t``: one matrix product per row block."""
    N, n = Y.shape
    mm = np.einsum("ij,ij->i", M, M)
    counts = np.zeros(len(M), np.int64)
    for sl in row_blocks(N, max(n, len(M))):
        B = Y[sl]
        sq = np.einsum("ij,ij->i", B, B)[:, None] - 2.0 * (B @ M.T) + mm
        counts += np.count_nonzero(sq <= t, axis=0)
    return counts


def _reference_counts(c: np.ndarray, M: np.ndarray, t: float) -> np.ndarray:
    """The reference code's count for each row m of ``M``: the j with
    ``||m - c_j 1||^2 <= t``, ``c`` the first column (``data(j)``)."""
    d = M.shape[1]
    return np.array([np.count_nonzero(m @ m - 2.0 * c * m.sum() + d * c * c <= t) for m in M])


# ---------------------------------------------------------------------- lrv


def _shortest_window_mean(z: np.ndarray, eta: float) -> float:
    """``estGeneral1D``: the mean of the shortest window of ``floor(m (1 - eta)^2)``
    consecutive sorted values (the first, if several are shortest)."""
    z = np.sort(z)
    m = z.size
    w = max(1, math.floor(m * (1.0 - eta) ** 2))
    lengths = z[w - 1:] - z[:m - w + 1]
    i = int(np.argmin(lengths))
    return float(z[i:i + w].mean())


def _lrv(Y: np.ndarray, eta: float) -> np.ndarray:
    """The recursion of ``agnosticMeanGeneral``, as a loop over the levels.

    Level k works on the rows projected on the top half of the previous level's
    eigenvectors, Z_k (N, n_k). Z_1 = Y @ high_0 gets one buffer (half of Y's
    size) and each later Z_{k+1} = Z_k @ high_k is written, a row block at a
    time, over the start of that same buffer (row block b of Z_{k+1} only covers
    rows of Z_k up to b's end, already read): scratch about 0.5 Y instead of a
    new array per level (0.5 + 0.25 + ... = 1 Y).
    """
    N = Y.shape[0]
    parts = []  # (est1, high) per level, outermost first
    Z, buf = Y, None
    while Z.shape[1] > 1:
        n = Z.shape[1]
        T = sq_dist(Z, column_medians(Z))
        # MATLAB's prctile: the i-th smallest value sits at 100 (i - 0.5) / N, linear between.
        thresh = np.percentile(T, 100.0 * (1.0 - eta) ** 2, method="hazen")
        keep = np.flatnonzero(T <= thresh)
        del T
        mean, S = mean_cov(Z, keep)
        del keep
        _, V = np.linalg.eigh(S)  # ascending, as MATLAB's eig of a symmetric matrix
        h = n // 2
        low, high = V[:, :h], V[:, h:]
        parts.append(((mean @ low) @ low.T, high))  # kept rows' mean on the bottom half
        if buf is None:
            buf = np.empty(N * high.shape[1])
        out = buf[:N * high.shape[1]].reshape(N, high.shape[1])
        for sl in row_blocks(N, n):
            out[sl] = Z[sl] @ high
        Z = out
    est = np.array([_shortest_window_mean(Z[:, 0], eta)])
    del Z, buf
    for est1, high in reversed(parts):
        est = est1 + est @ high.T
    return est


def _damping_weights(Y: np.ndarray, C: float) -> np.ndarray:
    """Anderson & Phillips' Gaussian outlier damping: ``w_i = max(exp(-||x_i -
    med||^2 / (C s2)), 1e-10)`` with med the coordinate-wise median and
    ``s2 = sum_j ((q_0.6 - q_0.4)(x_.j - med_j) / (Phi^-1(0.6) - Phi^-1(0.4)))^2``
    the robust trace (numpy's linear quantiles of each centred column)."""
    med = np.median(Y, axis=0)
    Z = Y - med
    q = np.quantile(Z, [0.4, 0.6], axis=0)
    s2 = sum((((q[1] - q[0]) / _middle_20()) ** 2).tolist())  # in column order, as their loop adds
    T = np.einsum("ij,ij->i", Z, Z)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.exp(-T / (C * s2))
    return np.maximum(np.nan_to_num(w, nan=1.0), 1e-10)  # s2 = 0 and T = 0: 0/0, weight 1


def _lrv_damped(Y: np.ndarray, C: float) -> np.ndarray:
    """The recursion of Anderson & Phillips' ``lrv`` (`lrv_mean`, ``variant = "damped"``)."""
    n, d = Y.shape
    if d <= 2:
        return np.median(Y, axis=0)
    w = _damping_weights(Y, C)
    wY = (w @ Y) / n  # their mu_hat: divided by n, not by sum(w)
    B = (Y - wY) * np.sqrt(w)[:, None]
    lam, V = np.linalg.eigh(B.T @ B / n)  # ascending
    h = d // 2
    low, high = V[:, :h], V[:, h:]
    return (wY @ low) @ low.T + _lrv_damped(Y @ high, C) @ high.T


@contract_doc(**COMPLETE_ROWS)
def lrv_mean(X: np.ndarray, *, rng: np.random.Generator | None = None,
             eps: float = 0.1, variant: str = "general", C: float = 1.0) -> np.ndarray:
    """LRV: the agnostic mean estimator of Lai, Rao, Vempala (2016), in the
    "General" variant of its reference code (``agnosticMeanGeneral.m``).

    In dimension n > 1: trim to the ball around the coordinate-wise median
    holding the ``(1 - eps)^2`` quantile of the squared distances (MATLAB's
    ``prctile``, numpy's ``method="hazen"``; the rows at most that far are
    kept); take the covariance of the kept rows; the estimate on the span of
    its ``floor(n/2)`` smallest eigenvectors is the kept rows' mean projected
    there; on the span of the others, recurse on all rows projected there. In
    one dimension: the mean of the shortest window of ``floor(m (1-eps)^2)``
    sorted values. Cost O(N n^2) per level, log2(n) levels.

    ``variant = "damped"`` is the LRV Anderson & Phillips run (their
    ``lrv(data, C=1, trace_est_option="robust")``, after the Gaussian
    variant of the reference code), which ignores ``eps``: in dimension
    d <= 2 return the coordinate-wise median; else weight each row by
    ``w_i = max(exp(-||x_i - med||^2 / (C s2)), 1e-10)`` (med the coordinate-wise
    median, s2 the robust trace: the sum over coordinates of the squared
    width of the 40-60% quantiles of the centred column over
    ``Phi^-1(0.6) - Phi^-1(0.4)``); with ``m = sum_i w_i x_i / N`` (divided by
    N, not by the weights' sum, as their code) take
    ``S = sum_i w_i (x_i - m)(x_i - m)^T / N``; on the span P of its
    ``floor(d/2)`` smallest eigenvectors the estimate is ``P m``; on the span
    of the others, recurse on all rows projected there. Their code takes the
    eigenvectors from the general ``eig`` and floors the eigenvalues at 1e-10
    before ordering them; here the symmetric solver: the same subspaces to
    rounding (the floor only reorders eigenvalues already below 1e-10, all in
    the lower half unless more than half are).

    Parameters
    ----------
    eps : the contamination level (the reference's eta), in (0, 0.5).
    variant : ``"general"`` (the reference code's General) or ``"damped"`` (A&P's).
    C : the damping's scale (``"damped"``; A&P: 1).
    """
    eps = _check_eps("lrv", eps)
    if variant not in LRV_VARIANTS:
        raise ValueError(f"lrv: variant must be one of {LRV_VARIANTS}, got {variant!r}")
    if not float(C) > 0.0:
        raise ValueError(f"lrv: C must be > 0, got {C}")
    Y, scale = unit_scale(complete_rows(X, "lrv"))  # entries near 1e300 would overflow the covariance
    if variant == "damped":
        return finite(_lrv_damped(Y, float(C)) * scale, "lrv")
    return finite(_lrv(Y, eps) * scale, "lrv")


# --------------------------------------------------------- median of means


@contract_doc(**COMPLETE_ROWS, rng="Shuffles the rows into blocks (``split = \"shuffle\"``); else unused.")
def median_of_means(X: np.ndarray, *, rng: np.random.Generator | None = None,
                    blocks: int = 0, eps: float = 0.1, median: str = "geometric",
                    split: str = "shuffle") -> np.ndarray:
    """Median of means: split the rows at random into ``blocks`` blocks of
    nearly equal size, average each, and take the median of the block means:
    their geometric median (Minsker 2015; Weiszfeld as `geometric-median`) or
    their coordinate-wise median.

    ``blocks = 0`` takes ``2 floor(eps N) + 1`` blocks (at most N): the fewest
    for which the corrupted rows, however placed, spoil fewer than half of them.

    ``split = "contiguous"`` is Anderson & Phillips' split (their
    ``median_of_means(data, 10)`` is ``blocks = 10, median = "coordinate",
    split = "contiguous"``): blocks of ``floor(N / blocks)`` consecutive rows
    in the given order, the last ``N mod blocks`` rows left out. Rows
    corrupted at the end then fall in the last block(s) only.

    Parameters
    ----------
    blocks : number of blocks (0: from eps).
    eps : the contamination level used when ``blocks = 0``, in (0, 0.5).
    median : ``"geometric"`` or ``"coordinate"``.
    split : ``"shuffle"`` (random blocks) or ``"contiguous"`` (given order).
    """
    eps = _check_eps("median-of-means", eps)
    if median not in MOM_MEDIANS:
        raise ValueError(f"median-of-means: median must be one of {MOM_MEDIANS}, got {median!r}")
    if split not in MOM_SPLITS:
        raise ValueError(f"median-of-means: split must be one of {MOM_SPLITS}, got {split!r}")
    Y, scale = unit_scale(complete_rows(X, "median-of-means"))  # block sums of ~1e300 would overflow
    N = Y.shape[0]
    k = int(blocks) if int(blocks) > 0 else 2 * math.floor(eps * N) + 1
    k = min(k, N)
    if split == "contiguous":
        means = contiguous_block_means(Y, k)
        if median == "coordinate":
            return finite(np.median(means, axis=0) * scale, "median-of-means")
        return finite(spatial_median(means) * scale, "median-of-means")
    order = np.random.default_rng(rng).permutation(N)
    edges = np.linspace(0, N, k + 1).round().astype(np.int64)
    # The block sums, gathering a run of whole blocks (about a row block) at a
    # time: no shuffled (N, n) copy of Y; each block summed as reduceat on Y[order].
    means = np.empty((k, Y.shape[1]))
    step = block_rows(Y.shape[1])
    g = 0
    while g < k:
        g2 = min(k, max(g + 1, int(np.searchsorted(edges, edges[g] + step, side="right")) - 1))
        means[g:g2] = np.add.reduceat(Y[order[edges[g]:edges[g2]]], edges[g:g2] - edges[g], axis=0)
        g = g2
    means /= np.diff(edges)[:, None]
    if not np.isfinite(means).all():  # named here, not by the geometric median it would reach
        raise cmbench.Undefined("median-of-means: a block mean is not finite (does X hold inf, or values "
                                "whose sum overflows?)")
    if median == "coordinate":
        return finite(np.median(means, axis=0) * scale, "median-of-means")
    return finite(spatial_median(means) * scale, "median-of-means")


@cmbench.hookimpl
def register_estimators() -> list:
    """This module's estimators, after those of `cmbench.builtins.estimators` (``cost``
    measured as theirs)."""
    E = cmbench.Estimator
    eps = {"eps": (0.0, 0.5, "()")}
    return [
        E("prune", pruned_mean, ranges={**eps, "radius": (0.0, None, "()")}, cost=10,
          description="Naive pruning (DKK17): mean of the rows within 0.33 sqrt(d ln(N/eps)) of the coordinate median"),
        E("ransac", ransac_mean, choices={"count": RANSAC_COUNTS},
          ranges={**eps, "tau": (0.0, 1.0, "()"), "iterations": (0, None)}, cost=9,
          description="RANSAC (DKK17): best of 100 random subset means by inlier count"),
        E("lrv", lrv_mean, ranges={**eps, "C": (0.0, None, "()")}, choices={"variant": LRV_VARIANTS}, cost=32,
          description="Agnostic mean of Lai, Rao, Vempala (General variant): ball trim and recursive halving"),
        E("median-of-means", median_of_means, choices={"median": MOM_MEDIANS, "split": MOM_SPLITS},
          ranges={**eps, "blocks": (0, None)}, cost=8,
          description="Median (geometric or coordinate-wise) of the means of random blocks"),
    ]
