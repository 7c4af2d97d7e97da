"""Built-in recoverers: the *Recover* step of the paper's two-step meta-algorithm.

Missing entries (NaN):

- ``none``: the identity (the one-step baselines).
- ``exact``: Two-Step-E, least squares on the visible entries with the known A
  (supplementary, "Details of the Recovery Steps").
- ``ithsvd``: Two-Step-M, matrix completion by iterative hard-thresholded SVD
  (hard-impute, Mazumder et al. 2010), accelerated by least-squares completion
  against the learned subspace (regularised by the residual variance, which
  vanishes on exactly low-rank data).

Replaced entries (known A):

- ``randomized``: Algorithm alg:approx (random r-row systems, keep the sparsest
  residual).
- ``basis-pursuit``: min ||e||_1 s.t. F e = F x~ with F A = 0 (supplementary,
  "Connection ... Sparse Recovery").
- ``omp``: orthogonal matching pursuit on the same system.

Every recoverer copies its input; NaN left in the output means "not recovered".
The linear algebra is batched: rows are grouped by missing pattern, one small
factorization per pattern (all patterns in one batched call) serves all its
rows, and no Python loop runs per row.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

import cmbench

# scipy is imported where it is used: listing the plugins stays fast.

# Rows per chunk when an operator is gathered per row: bounds the temporary
# (chunk, k, n) stack to a few MB whatever N is.
_CHUNK_ELEMENTS = 1 << 21


# ----------------------------------------------------------------------------
# shared helpers
# ----------------------------------------------------------------------------

def _as_rng(rng) -> np.random.Generator:
    return np.random.default_rng(rng)


def _structure(structure, n: int, name: str) -> np.ndarray:
    """The known A as a float (n, r) array, or `NotApplicable` when there is none."""
    if structure is None:
        raise cmbench.NotApplicable(f"{name} needs the structure A (x = A z); this data set has none")
    A = np.asarray(structure, dtype=float)
    if A.ndim != 2 or A.shape[0] != n:
        raise ValueError(f"{name}: structure has shape {A.shape}; expected ({n}, r) for {n} columns")
    return A


def _rank_tol(s: np.ndarray, rcond: float) -> float:
    """Absolute singular-value threshold: ``rcond`` times the largest one (0 for a zero matrix)."""
    return float(rcond * s.max()) if s.size else 0.0


def _patterns(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a boolean mask.

    Parameters
    ----------
    mask : (N, n) bool

    Returns
    -------
    patterns : (P, n) bool, the distinct rows.
    inverse : (N,) int, ``patterns[inverse] == mask``.
    """
    if mask.shape[0] == 0:
        return np.zeros((0, mask.shape[1]), bool), np.zeros(0, np.intp)
    # One opaque key per row (its packed bits): np.unique then sorts N scalars
    # instead of comparing N x n booleans.
    packed = np.ascontiguousarray(np.packbits(mask, axis=1))
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return mask[first], inverse.ravel()


def _masked_pinv(B: np.ndarray, visible: np.ndarray, tol: float):
    """Pseudo-inverses of B restricted to each pattern's visible rows, batched.

    Zeroing B's hidden rows instead of deleting them keeps one shape for every
    pattern (one batched SVD) and puts zeros in the hidden columns of the
    pseudo-inverse, so it applies directly to a zero-filled row.

    Parameters
    ----------
    B : (n, k) basis.
    visible : (P, n) bool, True where the entry is visible.
    tol : absolute singular-value threshold for the rank.

    Returns
    -------
    pinv : (P, k, n), ``pinv[p] @ x0 = argmin_w ||B_V w - x_V||`` (minimum norm).
    rank : (P,) int, rank of B_V.
    """
    stack = visible[:, :, None] * B[None, :, :]
    U, s, Vt = np.linalg.svd(stack, full_matrices=False)
    keep = s > tol
    inv_s = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    pinv = np.matmul(Vt.transpose(0, 2, 1) * inv_s[:, None, :], U.transpose(0, 2, 1))
    return pinv, keep.sum(axis=1)


def _apply_per_row(ops: np.ndarray, which: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``out[i] = ops[which[i]] @ V[i]`` for every row, in chunks.

    Parameters
    ----------
    ops : (P, k, m) one operator per pattern.
    which : (R,) pattern index of each row.
    V : (R, m) the rows.

    Returns
    -------
    (R, k)
    """
    R = len(which)
    k, n = ops.shape[1:]
    out = np.empty((R, k))
    step = max(1, _CHUNK_ELEMENTS // max(1, k * n))
    for lo in range(0, R, step):
        sl = slice(lo, lo + step)
        out[sl] = np.matmul(ops[which[sl]], V[sl, :, None])[:, :, 0]
    return out


def _ridge_ops(B: np.ndarray, visible: np.ndarray, lam: float, rcond: float = 1e-6) -> np.ndarray:
    """Per pattern, the operator that maps ``[v0, B_V^T r_V - lam v0]`` to the ridge solution.

    ``v = argmin ||B_V v - d_V||^2 + lam ||v||^2`` written as a correction to
    the current coefficients v0 (r_V = d_V - B_V v0): rounding then scales
    with the correction, which vanishes at convergence. Directions of v the
    visible entries do not determine (singular value of B_V below ``rcond``
    times B's largest) are set to 0, the prior mean, whatever lam is.

    Parameters
    ----------
    B : (n, k) loadings.
    visible : (P, n) float, 1 where visible.
    lam : ridge weight (>= 0).

    Returns
    -------
    (P, k, 2k): ``[P_seen, (G + lam I)^+]`` with G = B_V^T B_V.
    """
    G = np.matmul((visible[:, :, None] * B[None]).transpose(0, 2, 1), B)
    gamma, Q = np.linalg.eigh(G)
    seen = gamma > (rcond * np.linalg.norm(B, 2)) ** 2
    filt = np.where(seen, 1.0 / np.where(seen, gamma + lam, 1.0), 0.0)
    Qt = Q.transpose(0, 2, 1)
    return np.concatenate([np.matmul(Q * seen[:, None, :], Qt), np.matmul(Q * filt[:, None, :], Qt)], axis=2)


def _fit_known(X: np.ndarray, A: np.ndarray, rcond: float, max_missing: Optional[int] = None):
    """Least-squares fit x ~ A z on the visible entries of every row, batched by pattern.

    Parameters
    ----------
    X : (N, n) with NaN = unknown.
    A : (n, r).
    rcond : relative singular-value threshold (to A's largest) for the ranks.
    max_missing : rows with more unknown entries than this are not fitted.

    Returns
    -------
    fitted : (N, n) A z for the fitted rows (NaN elsewhere).
    ok : (N,) bool, rows fitted: rank(A_V) == rank(A) (and the ``max_missing`` rule).
    """
    N, n = X.shape
    mask = np.isnan(X)
    s_A = np.linalg.svd(A, compute_uv=False)
    tol = _rank_tol(s_A, rcond)
    rank_A = int((s_A > tol).sum())
    ok = ~mask.any(axis=1)  # complete rows need no fit
    fitted = np.where(ok[:, None], X, np.nan)
    rows = np.flatnonzero(~ok)
    if rows.size == 0:
        return fitted, ok
    patterns, inverse = _patterns(mask[rows])
    pinv, rank_p = _masked_pinv(A, ~patterns, tol)
    good = rank_p == rank_A
    if max_missing is not None:
        good &= patterns.sum(axis=1) <= max_missing
    sel = good[inverse]
    rows, inverse = rows[sel], inverse[sel]
    if rows.size:
        Z = _apply_per_row(pinv, inverse, np.where(mask[rows], 0.0, X[rows]))
        fitted[rows] = Z @ A.T
        ok[rows] = True
    return fitted, ok


def _off_subspace(X: np.ndarray, B: np.ndarray, tol: float) -> np.ndarray:
    """Rows of X (no NaN) not numerically in range(B), B with orthonormal columns.

    A row is off when ``||x - B B^T x|| > tol * ||x||``.
    """
    resid = X - (X @ B) @ B.T
    return np.linalg.norm(resid, axis=1) > tol * np.linalg.norm(X, axis=1)


def _entry_tol(X: np.ndarray, tol: float) -> np.ndarray:
    """Per-entry threshold for "this entry differs": ``tol * (|x_i| + median_j |x_j|)``.

    The row median keeps the threshold meaningful for entries near 0, and a
    minority of corrupted (large) entries does not move it.
    """
    return tol * (np.abs(X) + np.median(np.abs(X), axis=1, keepdims=True))


def _orthonormal_range(A: np.ndarray, rcond: float = 1e-10) -> np.ndarray:
    """(n, rank A) orthonormal basis of range(A)."""
    U, s, _ = np.linalg.svd(A, full_matrices=False)
    return U[:, s > _rank_tol(s, rcond)]


def _polish(Xt: np.ndarray, E: np.ndarray, A: np.ndarray, tol: float) -> np.ndarray:
    """Refit x~ - e exactly on the entries the sparse error e leaves untouched.

    The LP / OMP solution is exact only to solver precision; treating e's
    support as missing and solving the known-structure least squares (as
    ``exact`` does) gives the sample to machine precision. Rows whose
    off-support entries no longer determine z keep ``x~ - e``.
    """
    support = np.abs(E) > _entry_tol(Xt, tol)
    fitted, ok = _fit_known(np.where(support, np.nan, Xt), A, rcond=1e-10)
    return np.where(ok[:, None], fitted, Xt - E)


def _split_nan_rows(X: np.ndarray) -> np.ndarray:
    """Rows a replacement recoverer works on: those without NaN (others are left as they are)."""
    return np.flatnonzero(~np.isnan(X).any(axis=1))


# ----------------------------------------------------------------------------
# missing entries
# ----------------------------------------------------------------------------

def none(X: np.ndarray, *, rng=None, structure=None, rank=None) -> np.ndarray:
    """No recovery: return a copy of X, shape (N, n).

    The baseline for the one-step estimators (empirical mean, C-median, ...).
    """
    return np.array(X, dtype=float, copy=True)


def exact(X: np.ndarray, *, rng=None, structure=None, rank=None,
          rule: str = "rank", rcond: float = 1e-10, unrecovered: str = "keep") -> np.ndarray:
    """Two-Step-E: complete each row by least squares with the known structure A.

    For a row x with visible entries V, ``z = argmin ||A_V z - x_V||`` and the
    missing entries become ``(A z)_M``; visible entries are kept as they are.
    When x = A z exactly and A_V has A's rank, this is the true row (Theorem
    metaAlgThm's proof). Rows are grouped by missing pattern: one batched SVD
    per pattern gives the pseudo-inverse every row of that pattern uses.

    Parameters
    ----------
    X : (N, n) float, NaN = missing.
    structure : (n, r) the known A.
    rule : which rows are recovered.
        ``"rank"``: those with rank(A_V) == rank(A), i.e. all rows whose z is
        determined up to A's null space. ``"m_a"``: as the supplementary, also
        discard rows with >= m_A missing entries (`cmbench.theory.m_a`); rows
        below m_A always pass the rank test, so this only drops rows the rank
        rule would recover by luck of their pattern.
    rcond : singular values below ``rcond * sigma_max(A)`` count as zero.
    unrecovered : what an unrecovered row becomes. ``"keep"``: its visible
        entries stay, its missing ones stay NaN (the paper's experiments: "do
        nothing", then estimate ignoring NaN). ``"drop"``: the whole row becomes
        NaN (Theorem metaAlgThm: "discard all unrecoverable samples").

    Returns
    -------
    (N, n) float.
    """
    X = np.asarray(X, dtype=float)
    A = _structure(structure, X.shape[1], "exact")
    if rule not in ("rank", "m_a"):
        raise ValueError(f"exact: rule must be 'rank' or 'm_a', got {rule!r}")
    if unrecovered not in ("keep", "drop"):
        raise ValueError(f"exact: unrecovered must be 'keep' or 'drop', got {unrecovered!r}")
    max_missing = None
    if rule == "m_a":
        from cmbench import theory

        try:
            max_missing = int(theory.m_a(A)) - 1
        except ValueError as exc:  # e.g. A too large to enumerate
            raise cmbench.NotApplicable(f"exact: rule='m_a' needs m_A: {exc}") from None
    fitted, ok = _fit_known(X, A, rcond, max_missing)
    out = np.where(np.isnan(X) & ok[:, None], fitted, X)
    if unrecovered == "drop":
        out[~ok] = np.nan
    return out


def ithsvd(X: np.ndarray, *, rng=None, structure=None, rank=None,
           tol: float = 1e-10, max_iter: int = 1000, shrink: float = 1.0,
           center: bool = True):
    """Two-Step-M: matrix completion by iterative hard-thresholded SVD, accelerated.

    Hard-impute (Mazumder, Hastie & Tibshirani 2010) alternates a rank-k
    projection of the filled matrix with refilling the missing entries from
    it; it starts, as in the supplementary, from the coordinate-wise medians.
    Plain hard-impute crawls on exactly low-rank data, so each iteration here
    refills every row by least squares against the learned subspace instead
    of copying the projection (alternating projections):

    1. Subspace: the mean mu and the top-k eigenvectors U (k = ``rank``) of
       the n x n covariance C of ALL filled rows, by ``np.linalg.eigh``: one
       pass over the data instead of a thin SVD of the N x n matrix (the rows
       without missing entries contribute a Gram matrix computed once). All
       rows, never the complete ones alone: under a value-level adversary
       those are the rows it chose to leave, a biased sample.
    2. Completion, missing entries only, batched by missing pattern (one
       k x k eigendecomposition per pattern, all in one batched call): with
       d = y - mu, ``w = argmin ||U_V w - d_V||^2 + sum_j R_j w_j^2`` and
       ``y_M = mu_M + U_M w``, where R_j = ``shrink`` * s2 / (l_j - s2), l_j
       the top eigenvalues of C and s2 the mean of the others: the
       conditional mean of probabilistic PCA. On exactly low-rank data s2 -> 0
       as the fill converges, leaving the exact least-squares completion,
       whose fixed points are hard-impute's (the true rows wherever the
       subspace and the row's visible entries determine them); on real data,
       only roughly low rank, it keeps directions that the visible entries
       barely determine from blowing up (unregularised least squares filled
       breast-cancer at budget 0.2 with values 500 standard deviations out
       and made Two-Step-M worse than the plain mean). ``shrink=0`` is plain
       least squares. Directions the visible entries do not determine at all
       get w_j = 0 (the mean).

    It stops when the filled entries change by less than ``tol`` relative to
    their centred norm.

    Choices the paper leaves open: the data are centred (mean) before the
    projection (``center=True``: an affine rank-k model, which also fits data
    x = A z whose mean is nonzero); ``center=False`` projects on a linear
    subspace through the origin, as the supplementary's plain "rank
    projection". The eigh route replaces the paper's randomized SVD. Rows
    whose every entry is missing are left NaN (nothing identifies them); a
    column with no visible entry raises `cmbench.Undefined`.

    Parameters
    ----------
    X : (N, n) float, NaN = missing.
    rank : k, the subspace dimension (the data set's hint; required).
    tol : relative change of the filled entries at which it stops.
    max_iter : iterations at most.
    shrink : weight of the probabilistic-PCA prior in the completion.
    center : subtract the mean before the projection.

    Returns
    -------
    X_filled : (N, n) float.
    info : ``{"converged": bool, "iterations": int}``.
    """
    X = np.asarray(X, dtype=float)
    N, n = X.shape
    if rank is None:
        raise cmbench.NotApplicable("ithsvd needs a rank: the data set gives no rank hint")
    k = int(rank)
    if not 1 <= k <= n:
        raise ValueError(f"ithsvd: rank must be in 1..{n}, got {rank}")
    mask = np.isnan(X)
    out = X.copy()
    live = ~mask.all(axis=1)  # all-missing rows stay NaN
    if not mask[live].any():
        return out, {"converged": True, "iterations": 0}
    empty_cols = np.flatnonzero(mask[live].all(axis=0))
    if empty_cols.size:
        raise cmbench.Undefined(f"ithsvd: column(s) {empty_cols.tolist()} have no visible entry")

    # Work shifted by the column medians (the starting fill): C is formed as
    # S/N - mu mu^T, and the shift keeps that free of cancellation.
    ref = np.nanmedian(X[live], axis=0)
    partial = live & mask.any(axis=1)
    Yc = X[live & ~partial] - ref
    S_complete, s_complete = Yc.T @ Yc, Yc.sum(axis=0)
    n_live = int(live.sum())
    Mp = mask[partial]
    Y = np.where(Mp, 0.0, X[partial] - ref)  # partial rows, median-filled
    patterns, inverse = _patterns(Mp)
    visible = (~patterns).astype(float)

    converged, it = False, 0
    for it in range(1, max_iter + 1):
        S = S_complete + Y.T @ Y
        s = s_complete + Y.sum(axis=0)
        # Without centring the subspace passes through the true origin,
        # which sits at -ref in these shifted coordinates.
        m = s / n_live
        mu = m if center else -ref
        C = S / n_live - np.outer(m, mu) - np.outer(mu, m) + np.outer(mu, mu)
        evals, V = np.linalg.eigh(C)
        evals, U = evals[::-1], V[:, ::-1][:, :k]
        total = max(float(evals.clip(min=0).sum()), np.finfo(float).tiny)
        s2 = max(float(evals[k:].mean()), 0.0) if k < n else 0.0
        ell = np.maximum(evals[:k] - s2, 1e-12 * total)
        B = U * np.sqrt(ell)  # loadings: x = mu + B v, v ~ N(0, I)
        D = Y - mu
        W0 = D @ U / np.sqrt(ell)  # coefficients of the current rows
        r0 = np.where(Mp, 0.0, D - W0 @ B.T)  # visible residuals
        ops = _ridge_ops(B, visible, shrink * s2)
        W = _apply_per_row(ops, inverse, np.hstack([W0, r0 @ B - shrink * s2 * W0]))
        new = mu + W @ B.T
        change = np.linalg.norm((new - Y)[Mp])
        Y[Mp] = new[Mp]
        scale = np.linalg.norm((Y - mu)[Mp])
        if change <= tol * max(scale, np.finfo(float).tiny):
            converged = True
            break
    out[partial] = np.where(Mp, Y + ref, X[partial])
    return out, {"converged": converged, "iterations": it}


# ----------------------------------------------------------------------------
# replaced entries (known structure)
# ----------------------------------------------------------------------------

def _independent_rows(B: np.ndarray, rng: np.random.Generator, attempts: int = 64,
                      rounds: int = 100) -> np.ndarray:
    """r row indices drawn uniformly among the r-subsets whose rows of B are independent.

    Rejection sampling, ``attempts`` candidate subsets per batched SVD. B has
    orthonormal columns, so its r x r blocks have singular values <= 1 and an
    absolute threshold on the smallest one is a condition-number bound.
    """
    n, r = B.shape
    for _ in range(rounds):
        cand = np.argsort(rng.random((attempts, n)), axis=1)[:, :r]
        smin = np.linalg.svd(B[cand], compute_uv=False)[:, -1]
        good = np.flatnonzero(smin > 1e-8)
        if good.size:
            return np.sort(cand[good[0]])
    raise cmbench.NotApplicable("randomized: could not draw r linearly independent rows of A")


def randomized(X: np.ndarray, *, rng=None, structure=None, rank=None,
               c: float = 2.0, trials: int = 1000, tol: float = 1e-9) -> np.ndarray:
    """Algorithm alg:approx: recovery from replaced entries by random r-row systems.

    A row x~ in range(A) is returned as it is. For the others, ``ceil(r^c)``
    times (at most ``trials``) draw r rows of A that are linearly independent,
    solve those r equations for z, and keep, per row, the z with the smallest
    ``||x~ - A z||_0``; return ``A z``. Entries count as differing when they do
    by more than ``tol * (|x~_i| + median_j |x~_j|)``. Each trial draws one row
    subset and solves it for all rows at once. A is replaced by an orthonormal
    basis of its range (same subspace, better conditioned systems); r is its
    rank. Rows holding NaN are left as they are.

    Parameters
    ----------
    X : (N, n) float, corrupted by replacements.
    structure : (n, r) the known A.
    c : the exponent of the number of trials, r^c.
    trials : cap on the number of trials.
    tol : relative tolerance of "in range(A)" and of the entry count.

    Returns
    -------
    (N, n) float.
    """
    rng = _as_rng(rng)
    X = np.asarray(X, dtype=float)
    A = _structure(structure, X.shape[1], "randomized")
    out = X.copy()
    B = _orthonormal_range(A)
    r = B.shape[1]
    rows = _split_nan_rows(X)
    if r == 0 or rows.size == 0:
        return out
    rows = rows[_off_subspace(X[rows], B, tol)]
    if rows.size == 0:
        return out
    Xo = X[rows]
    thr = _entry_tol(Xo, tol)
    n_trials = int(min(trials, math.ceil(r ** c)))
    best = np.full(len(rows), X.shape[1] + 1)
    best_fit = Xo.copy()
    for _ in range(n_trials):
        S = _independent_rows(B, rng)
        Z = np.linalg.solve(B[S], Xo[:, S].T).T
        fit = Z @ B.T
        count = (np.abs(Xo - fit) > thr).sum(axis=1)
        better = count < best
        best[better] = count[better]
        best_fit[better] = fit[better]
    out[rows] = best_fit
    return out


def _null_space_rows(A: np.ndarray) -> np.ndarray:
    """F (p, n) with orthonormal rows and F A = 0 (p = n - rank A)."""
    import scipy.linalg

    return scipy.linalg.null_space(A.T).T


def basis_pursuit(X: np.ndarray, *, rng=None, structure=None, rank=None,
                  tol: float = 1e-9, chunk: int = 128, polish: bool = True) -> np.ndarray:
    """Basis pursuit: ``min ||e||_1 s.t. F e = F x~``, then ``x_hat = x~ - e``.

    F spans the null space of A^T (F A = 0, so F x~ = F e for x~ = A z + e).
    Only rows off range(A) need the LP. ``e = e+ - e-`` with e+, e- >= 0 makes
    it a linear program, solved by HiGHS; ``chunk`` rows are stacked into one
    block-diagonal LP (one solver call instead of one per row). With
    ``polish``, x~ - e is refitted on the entries outside e's support (see
    `_polish`). Rows holding NaN, and rows whose LP fails, are left as they are.

    Parameters
    ----------
    X : (N, n) float, corrupted by replacements.
    structure : (n, r) the known A.
    tol : relative tolerance of "in range(A)" and of e's support.
    chunk : rows per LP.
    polish : refit the result on e's complement.

    Returns
    -------
    (N, n) float.
    """
    import scipy.optimize
    import scipy.sparse

    X = np.asarray(X, dtype=float)
    A = _structure(structure, X.shape[1], "basis-pursuit")
    out = X.copy()
    F = _null_space_rows(A)
    rows = _split_nan_rows(X)
    if F.shape[0] == 0 or rows.size == 0:
        return out
    rows = rows[_off_subspace(X[rows], _orthonormal_range(A), tol)]
    if rows.size == 0:
        return out
    p, n = F.shape
    block = scipy.sparse.csr_array(np.hstack([F, -F]))
    for lo in range(0, rows.size, chunk):
        sub = rows[lo:lo + chunk]
        Xt = X[sub]
        y = Xt @ F.T
        m = len(sub)
        res = scipy.optimize.linprog(
            np.ones(2 * n * m),
            A_eq=scipy.sparse.block_diag([block] * m, format="csr"),
            b_eq=y.ravel(),
            bounds=(0, None),
            method="highs",
        )
        if res.status != 0:
            continue
        u = res.x.reshape(m, 2 * n)
        E = u[:, :n] - u[:, n:]
        out[sub] = _polish(Xt, E, A, tol) if polish else Xt - E
    return out


def omp(X: np.ndarray, *, rng=None, structure=None, rank=None,
        tol: float = 1e-9, max_sparsity: int = 0, polish: bool = True) -> np.ndarray:
    """Orthogonal matching pursuit on ``F e = y = F x~``, then ``x_hat = x~ - e``.

    The supplementary's steps 1-4, run for all rows off range(A) in lockstep:
    pick the column of F most correlated with the residual (columns normalised
    to unit length, the usual OMP; the supplementary's plain inner product
    equals it when F's columns have equal norms), refit e on the chosen
    columns by least squares (one batched pseudo-inverse), and stop a row when
    ``||y - F e|| <= tol * ||y||``. Rows still unexplained after
    ``max_sparsity`` steps are left as they are, as are rows holding NaN.

    Parameters
    ----------
    X : (N, n) float, corrupted by replacements.
    structure : (n, r) the known A.
    tol : relative residual at which a row stops (also "in range(A)").
    max_sparsity : most entries of e; 0 means floor((n - rank A) / 2), the
        largest K with K < m_A / 2 for a generic A (m_A = n - r + 1).
    polish : refit the result on e's complement (see `_polish`).

    Returns
    -------
    (N, n) float.
    """
    X = np.asarray(X, dtype=float)
    A = _structure(structure, X.shape[1], "omp")
    out = X.copy()
    F = _null_space_rows(A)
    rows = _split_nan_rows(X)
    p, n = F.shape
    if p == 0 or rows.size == 0:
        return out
    rows = rows[_off_subspace(X[rows], _orthonormal_range(A), tol)]
    if rows.size == 0:
        return out
    cap = int(max_sparsity) if max_sparsity else max(1, p // 2)
    cap = min(cap, p)
    norms = np.linalg.norm(F, axis=0)
    Fn = F / np.where(norms > 0, norms, 1.0)
    Xt = X[rows]
    y = Xt @ F.T  # (R, p)
    R = len(rows)
    support = np.zeros((R, 0), np.intp)
    coef = np.zeros((R, 0))
    resid = y.copy()
    chosen = np.zeros((R, n), bool)
    done = np.zeros(R, bool)
    y_norm = np.linalg.norm(y, axis=1)
    for _ in range(cap):
        corr = np.abs(resid @ Fn)
        corr[chosen] = -1.0
        pick = corr.argmax(axis=1)
        chosen[np.arange(R), pick] = True
        support = np.column_stack([support, pick])
        cols = F.T[support]  # (R, l, p): the chosen columns of F, per row
        coef = np.matmul(np.linalg.pinv(cols.transpose(0, 2, 1)), y[:, :, None])[:, :, 0]
        resid = y - np.matmul(cols.transpose(0, 2, 1), coef[:, :, None])[:, :, 0]
        done = np.linalg.norm(resid, axis=1) <= tol * y_norm
        if done.all():
            break
    E = np.zeros((R, n))
    np.put_along_axis(E, support, coef, axis=1)
    # A row stops at its first small residual: rows that finished early keep
    # refitting on a larger support, which leaves their coefficients exact
    # (the extra ones come out ~0) and is cheaper than tracking each row.
    fixed = _polish(Xt, E, A, tol) if polish else Xt - E
    out[rows[done]] = fixed[done]
    return out


@cmbench.hookimpl
def register_recoverers():
    return [
        cmbench.Recoverer(
            "none", none, params={}, modes=("missing", "replace"),
            description="no recovery: the data as corrupted (one-step baselines)"),
        cmbench.Recoverer(
            "exact", exact, params={"rule": "rank", "rcond": 1e-10, "unrecovered": "keep"},
            modes=("missing",), needs_structure=True,
            description="Two-Step-E: least squares on the visible entries with the known A"),
        cmbench.Recoverer(
            "ithsvd", ithsvd,
            params={"tol": 1e-10, "max_iter": 1000, "shrink": 1.0, "center": True},
            modes=("missing",),
            description="Two-Step-M: iterative hard-thresholded SVD completion (rank hint)"),
        cmbench.Recoverer(
            "randomized", randomized, params={"c": 2.0, "trials": 1000, "tol": 1e-9},
            modes=("replace",), needs_structure=True,
            description="Algorithm alg:approx: best of r^c random r-row systems (sparsest residual)"),
        cmbench.Recoverer(
            "basis-pursuit", basis_pursuit, params={"tol": 1e-9, "chunk": 128, "polish": True},
            modes=("replace",), needs_structure=True,
            description="basis pursuit: min ||e||_1 s.t. F e = F x (F A = 0), by LP"),
        cmbench.Recoverer(
            "omp", omp, params={"tol": 1e-9, "max_sparsity": 0, "polish": True},
            modes=("replace",), needs_structure=True,
            description="orthogonal matching pursuit on F e = F x (F A = 0)"),
    ]
