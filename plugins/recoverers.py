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
    if max_missing is not None:
        rows = rows[mask[rows].sum(axis=1) <= max_missing]
    if rank_A == A.shape[1]:
        done = _fit_normal_equations(X, mask, A, rows, fitted)
        ok[rows[done]] = True
        rows = rows[~done]
    if rows.size == 0:
        return fitted, ok
    patterns, inverse = _patterns(mask[rows])
    pinv, rank_p = _masked_pinv(A, ~patterns, tol)
    sel = (rank_p == rank_A)[inverse]
    rows, inverse = rows[sel], inverse[sel]
    if rows.size:
        Z = _apply_per_row(pinv, inverse, np.where(mask[rows], 0.0, X[rows]))
        fitted[rows] = Z @ A.T
        ok[rows] = True
    return fitted, ok


# A row's normal equations are trusted when every Cholesky pivot keeps this
# fraction of its diagonal (roughly cond(A_V)^2 <= 1 / _NORMAL_PIVOT); the
# others (rank lost, or nearly) take the SVD route, whose rank test is exact.
_NORMAL_PIVOT = 1e-8


def _fit_normal_equations(X, mask, A, rows, fitted) -> np.ndarray:
    """Least squares on the visible entries by batched normal equations.

    Per row ``(A_V^T A_V) z = A_V^T x_V``; the Gram matrices of all rows come
    from one matmul (``visible @ [a_j a_j^T]``), the solves from one batched
    Cholesky vectorised across rows, and one step of iterative refinement
    (residual on the visible entries) restores the accuracy the squared
    condition number costs. Writes ``fitted[rows]`` for the rows it trusts.

    Returns
    -------
    (len(rows),) bool, the rows fitted here.
    """
    n, r = A.shape
    KA = (A[:, :, None] * A[:, None, :]).reshape(n, r * r)
    done = np.zeros(rows.size, bool)
    step = max(1, _CHUNK_ELEMENTS // (r * r + 2 * n))
    for lo in range(0, rows.size, step):
        sel = rows[lo:lo + step]
        vis = ~mask[sel]
        x0 = np.where(vis, X[sel], 0.0)
        G = (vis.astype(float) @ KA).reshape(-1, r, r).transpose(1, 2, 0).copy()
        L, skip = _psd_factor(G, _NORMAL_PIVOT)
        z = _psd_solve(L, skip, (x0 @ A).T)
        resid = np.where(vis, x0 - z.T @ A.T, 0.0)
        z += _psd_solve(L, skip, (resid @ A).T)
        good = ~skip.any(axis=0)
        fitted[sel[good]] = z.T[good] @ A.T
        done[lo:lo + step] = good
    return done


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


def _replaced_rows(X: np.ndarray, B: np.ndarray, tol: float) -> np.ndarray:
    """Rows a replacement recoverer works on: without NaN (others are left as
    they are) and off range(B) (`_off_subspace`; rows in it need no correction)."""
    rows = np.flatnonzero(~np.isnan(X).any(axis=1))
    return rows[_off_subspace(X[rows], B, tol)]


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


# Rows per chunk of a pass over the data: bounds every per-row temporary to
# ~8 MB whatever N is (the N = 10^6 cell keeps its peak near the data's size).
# Smaller chunks pay numpy's per-call overhead more often: 2 MB chunks made a
# pass over 10^5 x 50 rows 1.35x slower.
_PASS_ELEMENTS = 1 << 20


def _row_chunks(count: int, width: int):
    """Slices of ``range(count)`` holding about ``_PASS_ELEMENTS / width`` rows each."""
    step = max(1, _PASS_ELEMENTS // max(1, width))
    for lo in range(0, count, step):
        yield slice(lo, min(count, lo + step))


def _psd_factor(A: np.ndarray, tau: float, floor: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Batched Cholesky of symmetric PSD matrices, skipping dependent columns.

    The batch is the LAST axis, so each of the m column steps is a contiguous
    vector operation over all systems (numpy's batched LAPACK calls pay ~1-5 us
    per small matrix; this pays per column, not per matrix). A column whose
    pivot is at most ``tau`` times its diagonal depends (numerically) on the
    earlier ones: it is skipped (0 below the diagonal, 1 on it) and flagged,
    so L is the Cholesky factor of the kept columns' submatrix.

    Parameters
    ----------
    A : (m, m, R) symmetric positive semidefinite.
    tau : relative pivot threshold.
    floor : absolute pivot threshold (a column is skipped below either).

    Returns
    -------
    L : (m, m, R) lower triangular; the strict upper triangle is left unset
        (never read: it would cost a zeroed allocation per call).
    skip : (m, R) bool, the skipped columns.
    """
    m = A.shape[0]
    L = np.empty_like(A)
    skip = np.zeros(A.shape[1:], bool)
    for j in range(m):
        Lj = L[j, :j]
        pivot = A[j, j] - np.einsum("kr,kr->r", Lj, Lj) if j else A[j, j].copy()
        bad = skip[j]
        np.less_equal(pivot, np.maximum(tau * A[j, j], floor), out=bad)
        bad |= np.isnan(pivot)
        np.copyto(pivot, 1.0, where=bad)
        d = np.sqrt(pivot, out=L[j, j])
        if j + 1 < m:
            col = L[j + 1:, j]
            if j:
                np.subtract(A[j + 1:, j], np.einsum("akr,kr->ar", L[j + 1:, :j], Lj), out=col)
            else:
                col[...] = A[j + 1:, j]
            col /= d
            np.copyto(col, 0.0, where=bad)
    return L, skip


def _psd_solve(L: np.ndarray, skip: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``A x = b`` with `_psd_factor`'s factor; x is 0 on skipped columns.

    When b is in the range of A (it is here up to rounding) x is a solution;
    `_null_basis` gives the directions it leaves free. b : (m, R) -> (m, R).
    """
    m = L.shape[0]
    y = np.empty_like(b)
    for j in range(m):
        if j:
            np.subtract(b[j], np.einsum("kr,kr->r", L[j, :j], y[:j]), out=y[j])
        else:
            y[j] = b[j]
        y[j] /= L[j, j]
    np.copyto(y, 0.0, where=skip)
    x = np.empty_like(b)
    for j in range(m - 1, -1, -1):
        if j + 1 < m:
            np.subtract(y[j], np.einsum("kr,kr->r", L[j + 1:, j], x[j + 1:]), out=x[j])
        else:
            x[j] = y[j]
        x[j] /= L[j, j]
    np.copyto(x, 0.0, where=skip)
    return x


def _null_basis(L: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """Orthonormal bases of the null spaces the skipped columns reveal.

    A skipped column j is a combination of the kept columns before it,
    ``A e_j = A_{:,<j} c``, so ``e_j - c`` spans one null direction (c by back
    substitution from the row L[j, :j]). Gram-Schmidt makes each system's
    directions orthonormal.

    Returns
    -------
    (q, m, R): q = most skipped columns of any system; a system with fewer
    has zero vectors in the remaining slots.
    """
    m, R = skip.shape
    cols = np.flatnonzero(skip.any(axis=1))
    basis = np.zeros((len(cols), m, R))
    slot = np.zeros(R, np.intp)
    for j in cols:
        rows = np.flatnonzero(skip[j])
        Lr = L[:, :, rows]
        v = np.zeros((m, rows.size))
        v[j] = 1.0
        for i in range(j - 1, -1, -1):
            v[i] = -(Lr[j, i] + np.einsum("kr,kr->r", Lr[i + 1:j, i], v[i + 1:j])) / Lr[i, i]
        v[:j][skip[:j][:, rows]] = 0.0
        for q in basis[:, :, rows]:  # earlier directions of the same systems
            v -= q * np.einsum("kr,kr->r", q, v)
        v /= np.sqrt(np.einsum("kr,kr->r", v, v))
        basis[slot[rows], :, rows] = v.T
        slot[rows] += 1
    return basis[: int(slot.max(initial=0))]


class _Completion:
    """ithsvd's refill map: moments of the filled data -> refilled data -> moments.

    The state is the filled matrix itself (``out``, whose missing entries are
    overwritten in place) and the moments ``theta`` = (mean, second moment)
    of the filled rows, in coordinates shifted by the column medians. Each
    pass walks the rows in order, in chunks of a few MB (contiguous reads,
    bounded temporaries). Within a chunk the rows holding a missing entry are
    bucketed by their count m of missing entries; a bucket is solved either
    on the m side (an m x m system in the missing entries, cheap when few are
    missing) or on the k side (a k x k system in the latent coefficients,
    cheap when many are), each bucket one batched Cholesky padded to its
    widest row. `_plan` picks the buckets that minimise a cost model of
    numpy's per-call overhead plus the flops.
    """

    # Cost model (seconds): a numpy call, a flop in a vectorised batch, a BLAS flop.
    _CALL, _FLOP, _BLAS = 3e-6, 2e-9, 3e-10
    # Rows whose P_MM has a pivot below this (relative) go to the k side:
    # near-singular, the m side would amplify rounding by 1 / pivot.
    _TAU_M = 1e-6

    def __init__(self, X: np.ndarray, out: np.ndarray, k: int, shrink: float, center: bool,
                 rcond: float, ref: Optional[np.ndarray] = None):
        N, n = X.shape
        self.X, self.out, self.n, self.k = X, out, n, k
        self.shrink, self.center, self.tau = shrink, center, rcond * rcond
        count = np.zeros(N, np.intp)
        for sl in _row_chunks(N, n):
            count[sl] = np.isnan(X[sl]).sum(axis=1)
        self.n_live = int((count < n).sum())
        # the shift of the coordinates; a coarse level shares its fine level's
        self.ref = _column_medians(X) if ref is None else ref
        self.groups = self._plan(count)
        self.chunks = []
        for sl in _row_chunks(N, n):
            self.chunks.append((sl, self._chunk_buckets(sl, count[sl])))

    def _plan(self, count: np.ndarray) -> list:
        """Buckets as ``(lo, hi, side)``: rows with lo < m <= hi, side "m" or "k".

        Dynamic programming over the distinct counts (sorted): each group of
        consecutive counts costs its calls (per chunk) plus its flops.
        """
        n, k = self.n, self.k
        hist = np.bincount(count[(count > 0) & (count < n)], minlength=n)
        ms = np.flatnonzero(hist)
        if ms.size == 0:
            return []
        chunks = max(1, -(-len(count) // max(1, _PASS_ELEMENTS // n)))
        rows_le = np.cumsum(hist)

        def cost(i, j):  # group ms[i..j] (inclusive), best side
            rows = rows_le[ms[j]] - (rows_le[ms[i] - 1] if ms[i] > 0 else 0)
            w = ms[j]
            m_side = chunks * self._CALL * (12 * w + 25) + rows * (self._FLOP * (w ** 3 / 3 + 3 * w * w)
                                                                    + self._BLAS * 2 * n * n)
            k_side = chunks * self._CALL * (12 * k + 40) + rows * (self._FLOP * (k ** 3 / 3 + 3 * k * k)
                                                                    + self._BLAS * (2 * n * k * k + 6 * n * k))
            return (m_side, "m") if m_side <= k_side else (k_side, "k")

        best = [0.0] + [np.inf] * ms.size
        choice = [None] * (ms.size + 1)
        for j in range(ms.size):
            for i in range(j + 1):
                c, side = cost(i, j)
                if best[i] + c < best[j + 1]:
                    best[j + 1], choice[j + 1] = best[i] + c, (i, side)
        groups, j = [], ms.size
        while j > 0:
            i, side = choice[j]
            groups.append((int(ms[i - 1]) if i > 0 else 0, int(ms[j - 1]), side))
            j = i
        return groups[::-1]

    def _chunk_buckets(self, sl: slice, count: np.ndarray) -> list:
        """Per bucket of `_plan`: side, local rows and the side's index arrays
        (fixed for the whole run, so built once): `_m_columns` for the m
        side, `_k_entries` for the k side."""
        buckets = []
        miss = np.isnan(self.X[sl]) if self.groups else None
        for lo, hi, side in self.groups:
            rows = np.flatnonzero((count > lo) & (count <= hi))
            if rows.size == 0:
                continue
            if side == "m":
                aux = self._m_columns(miss[rows], count[rows])
            else:
                aux = self._k_entries(miss[rows], rows)
            buckets.append((side, rows, aux))
        dead = np.flatnonzero(count == self.n)
        return buckets, dead

    @staticmethod
    def _m_columns(miss: np.ndarray, count: np.ndarray) -> np.ndarray:
        """Missing columns of each row as (width, R) int32, padded with -1."""
        width = int(count.max())
        order = np.argsort(~miss, axis=1, kind="stable")[:, :width]
        pad = np.arange(width)[None, :] >= count[:, None]
        return np.where(pad, -1, order).T.astype(np.int32)

    def _k_entries(self, miss: np.ndarray, rows: np.ndarray):
        """The k side's view of rows: visible mask as (n, R) float, and each
        missing entry's column, its flat position in the chunk and in an
        (n, R) array (the k side works with rows along the last axis)."""
        R = len(rows)
        r, c = np.nonzero(miss)
        visT = np.ascontiguousarray(~miss.T, dtype=float)
        return visT, c, rows[r] * self.n + c, c * R + r, self.ref[c]

    def theta(self, S: np.ndarray, s: np.ndarray) -> np.ndarray:
        return np.concatenate([s, S.ravel()]) / self.n_live

    def start(self) -> np.ndarray:
        """Fill every missing entry with its column median; the moments of that."""
        n = self.n
        S, s = np.zeros((n, n)), np.zeros(n)
        for sl, (buckets, dead) in self.chunks:
            Y = self.out[sl] - self.ref
            np.nan_to_num(Y, copy=False, nan=0.0)
            if buckets:
                block = self.out[sl]
                np.copyto(block, self.ref, where=np.isnan(block))
            if dead.size:
                block = self.out[sl]
                block[dead] = np.nan  # all-missing rows stay NaN
                Y[dead] = 0.0
            S += Y.T @ Y
            s += _column_sums(Y)
        return self.theta(S, s)

    def model(self, theta: np.ndarray):
        """Mean mu, eigenvectors V (descending), loadings' variances ell and ridge lam."""
        n, k = self.n, self.k
        m1, M2 = theta[:n], theta[n:].reshape(n, n)
        # Without centring the subspace passes through the true origin,
        # which sits at -ref in these shifted coordinates.
        mu = m1 if self.center else -self.ref
        C = (M2 + M2.T) / 2 - np.outer(m1, mu) - np.outer(mu, m1) + np.outer(mu, mu)
        evals, V = np.linalg.eigh(C)
        evals, V = evals[::-1], V[:, ::-1]
        total = max(float(evals.clip(min=0).sum()), np.finfo(float).tiny)
        s2 = max(float(evals[k:].mean()), 0.0) if k < n else 0.0
        ell = np.maximum(evals[:k] - s2, 1e-12 * total)
        return mu, V, ell, self.shrink * s2

    def apply(self, theta: np.ndarray):
        """Refill from the model of ``theta`` (one pass over the data).

        Returns the new moments, the norm of the change of the filled
        entries and the norm of the filled entries about the mean.
        """
        n, k = self.n, self.k
        mu, V, ell, lam = self.model(theta)
        # m side: the conditional mean of N(mu, Sigma), Sigma = B B^T + lam I,
        # B = U sqrt(ell), is d_M = -P_MM^{-1} P_MV d_V for any multiple P of
        # Sigma^{-1}; P scaled to eigenvalues in [0, 1] stays finite as lam -> 0
        # (then P = I - U U^T: plain least squares).
        sig = np.full(n, lam)
        sig[:k] = ell + lam
        p = np.where(sig > 0, sig.min() / np.where(sig > 0, sig, 1.0), 1.0)
        U = V[:, :k]
        # Extended by a dummy column n (identity) that pads the buckets.
        Pext = np.zeros((n + 1, n + 1))
        Pext[:n, :n] = (V * p) @ V.T
        Pext[n, n] = 1.0
        P = np.ascontiguousarray(Pext[:n, :n])
        Pflat = np.append(Pext.ravel(), 0.0)  # a last 0 for the pads' off-diagonal
        B = U * np.sqrt(ell)
        KBt = (B.T[:, None, :] * B.T[None, :, :]).reshape(k * k, n)
        W = U / np.sqrt(ell)
        # The k side cuts directions with sigma(B_V)^2 <= tau ||B||^2; P_MM's
        # pivots measure sigma(U_V)^2, unweighted by ell. Rows near either
        # cut go to the k side (a direction just above a cut amplifies
        # rounding by 1 / pivot and keeps the iteration from converging).
        tau_m = max(self.tau * float(ell.max() / ell.min()), self._TAU_M)
        kside = (mu, W, B, KBt, ell, lam)
        S, s = np.zeros((n, n)), np.zeros(n)
        sums = np.zeros(2)  # squared change, squared scale
        for sl, (buckets, dead) in self.chunks:
            block = self.out[sl]
            Y = block - self.ref
            if dead.size:
                Y[dead] = 0.0
            D = None
            for side, rows, aux in buckets:
                if D is None:
                    D = Y - mu
                    G = D @ P
                if side == "m":
                    self._refill_m(Y, D, G, block, sl, rows, aux, mu, Pflat, tau_m, kside, sums)
                else:
                    self._refill_k(Y, D, block, rows, aux, *kside, sums)
            S += Y.T @ Y
            s += _column_sums(Y)
        return self.theta(S, s), float(np.sqrt(sums[0])), float(np.sqrt(sums[1]))

    # Index arrays of a bucket chunk are cached while their total stays small.
    _INDEX_CACHE_ELEMENTS = 1 << 22

    def _m_indices(self, rows: np.ndarray, cols: np.ndarray):
        """Pad mask, flat pad positions, columns (pads repeat the first), flat
        positions in the chunk, and gather indices of P_MM (into `Pflat`)."""
        key = (id(cols), rows.size)
        cache = self.__dict__.setdefault("_index_cache", {})
        if key in cache:
            return cache[key][1:]
        n = self.n
        pad = cols < 0
        pads = np.flatnonzero(pad) if pad.any() else None
        # Pads index a dummy column n of the extended P (identity there, 0
        # elsewhere: their unknowns come out 0; pad-pad off-diagonals point at
        # a 0 past the end); for the data they repeat the row's first missing
        # column, so every gather and write stays in range.
        dummy = np.where(pad, n, cols).astype(np.intp)
        c = np.where(pad, cols[0], cols).astype(np.intp)
        at = rows * n + c
        Aidx = dummy[:, None, :] * (n + 1) + dummy[None, :, :]
        if pads is not None:
            w = cols.shape[0]
            off = (pad[:, None, :] & pad[None, :, :]) & ~np.eye(w, dtype=bool)[:, :, None]
            Aidx[off] = (n + 1) ** 2
        entry = (cols, pad, pads, c, at, Aidx)  # cols kept alive: its id is the key
        used = self.__dict__.get("_index_cache_used", 0) + Aidx.size + 2 * at.size
        if used <= self._INDEX_CACHE_ELEMENTS:
            cache[key] = entry
            self._index_cache_used = used
        return entry[1:]

    def _refill_m(self, Y, D, G, block, sl, rows, cols, mu, Pflat, tau_m, kside, sums):
        """Missing entries by an m x m solve per row, in correction form.

        ``d_M <- d_M - P_MM^{-1} (P d)_M``: rounding scales with the
        correction, which vanishes at the fixed point. Rows whose P_MM is
        (nearly) singular (lam ~ 0 and the visible entries leave latent
        directions free) are handed to `_refill_k`, whose cut sets those
        directions to 0 as the textbook iteration does. Writes Y (shifted)
        and the chunk ``block`` of ``out`` in place.
        """
        R = len(rows)
        pad, pads, c, at, Aidx = self._m_indices(rows, cols)
        g = np.take(G, at)
        if pads is not None:
            g.ravel()[pads] = 0.0
        A = np.take(Pflat, Aidx)
        L, skip = _psd_factor(A, tau_m)
        old = np.take(D, at)
        dM = old - _psd_solve(L, skip, g)
        # A row whose P_MM is singular (lam ~ 0 and latent directions its
        # visible entries leave free) goes to the k side, whose cut sets
        # those directions to the prior mean, as the lam -> 0 ridge does.
        bad = skip.any(axis=0)
        if bad.any():
            dM[:, bad] = old[:, bad]
        if pads is not None:
            # pads carry entry 0's value, so repeated writes agree
            dM.ravel()[pads] = dM.ravel()[pads % R]
            old.ravel()[pads] = old.ravel()[pads % R]
        change = dM - old
        if pads is not None or bad.any():  # count each entry once, k-side rows not here
            weight = ~pad & ~bad[None, :]
            sums[0] += np.einsum("ij,ij,ij->", change, change, weight)
            sums[1] += np.einsum("ij,ij,ij->", dM, dM, weight)
        else:
            sums[0] += np.einsum("ij,ij->", change, change)
            sums[1] += np.einsum("ij,ij->", dM, dM)
        new = dM + np.take(mu, c)
        np.put(Y, at, new)
        block.ravel()[at] = new + np.take(self.ref, c)
        if bad.any():
            entries = self._k_entries(np.isnan(self.X[sl][rows[bad]]), rows[bad])
            self._refill_k(Y, D, block, rows[bad], entries, *kside, sums)

    def _refill_k(self, Y, D, block, rows, entries, mu, W, B, KBt, ell, lam, sums):
        """Missing entries from the latent coefficients, a k x k solve per row.

        v = argmin ||B_V v - d_V||^2 + lam ||v||^2 in correction form around
        the current coefficients v0 (as in the ridge of the docstring);
        directions of v the visible entries do not determine are set to 0.
        Rows run along the last axis (contiguous batches for `_psd_factor`);
        only the missing entries are read back and written.
        """
        k = self.k
        visT, c, at, atT, ref_c = entries
        Dr = D[rows]
        v0 = W.T @ Dr.T                                   # (k, R)
        resid = (Dr.T - B @ v0) * visT                    # (n, R), visible part
        rhs = B.T @ resid - lam * v0
        G = (KBt @ visT).reshape(k, k, -1)
        diag = np.arange(k)
        G[diag, diag] += lam
        # as the eigen-cut of the docstring: sigma(B_V)^2 <= rcond^2 ||B||^2
        L, skip = _psd_factor(G, self.tau, floor=self.tau * float(ell.max()))
        v = v0 + _psd_solve(L, skip, rhs)
        if skip.any():
            for q in _null_basis(L, skip):
                v -= q * np.einsum("kr,kr->r", q, v)
        dev = np.take(B @ v, atT)                         # the missing entries only
        new = dev + np.take(mu, c)
        change = new - np.take(Y, at)
        sums[0] += change @ change
        sums[1] += dev @ dev
        np.put(Y, at, new)
        new += ref_c
        np.put(block, at, new)


def _column_sums(Y: np.ndarray) -> np.ndarray:
    """``Y.sum(axis=0)`` by a BLAS product: several times faster on narrow
    arrays, where numpy's reduction walks the rows one short stride at a time."""
    return np.ones(len(Y)) @ Y


def _column_medians(X: np.ndarray) -> np.ndarray:
    """``np.nanmedian(X, axis=0)`` in column blocks (its sort copy stays small)."""
    N, n = X.shape
    width = max(1, (1 << 22) // max(1, N))
    return np.concatenate([np.nanmedian(X[:, j:j + width], axis=0) for j in range(0, n, width)])


class _Anderson:
    """Anderson acceleration (type II) of a fixed-point iteration x <- g(x).

    Keeps the last ``memory`` differences of iterates and residuals and
    extrapolates ``x = g - dG gamma`` with gamma the least-squares fit of the
    current residual by the residual differences (Tikhonov-regularised: the
    differences grow collinear as it converges). Restarts (drops its history)
    when the residual grows past twice the best seen, which keeps it from
    wandering off on the iteration's non-linear start.
    """

    def __init__(self, memory: int):
        self.memory = int(memory)
        self.dF, self.dG = [], []
        self.last = None
        self.best = np.inf

    def __call__(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        f = g - x
        norm = float(np.linalg.norm(f))
        if self.memory <= 0:
            return g
        if self.last is not None and norm > 2.0 * self.best:
            self.dF, self.dG, self.last = [], [], None
        if self.last is not None:
            self.dF.append(f - self.last[0])
            self.dG.append(g - self.last[1])
            del self.dF[:-self.memory], self.dG[:-self.memory]
        self.last = (f, g)
        self.best = min(self.best, norm)
        if not self.dF:
            return g
        dF, dG = np.array(self.dF).T, np.array(self.dG).T
        scale = np.linalg.norm(dF, axis=0)
        scale[scale == 0] = 1.0
        dFs = dF / scale
        gram = dFs.T @ dFs
        ridge = 1e-12 * np.trace(gram)
        if not ridge > 0:  # no residual differences to fit (or non-finite ones): plain step
            return g
        gram[np.diag_indices_from(gram)] += ridge
        x = g - dG @ (np.linalg.solve(gram, dFs.T @ f) / scale)
        if not np.isfinite(x).all():
            self.dF, self.dG, self.last = [], [], None
            return g
        return x


def ithsvd(X: np.ndarray, *, rng=None, structure=None, rank=None,
           tol: float = 1e-10, max_iter: int = 1000, shrink: float = 1.0,
           center: bool = True, rcond: float = 1e-6, memory: int = 5, coarse: int = 1000):
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
    2. Completion, missing entries only: with d = y - mu,
       ``w = argmin ||U_V w - d_V||^2 + sum_j R_j w_j^2`` and
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
       (singular value of U_V below ``rcond``) get w_j = 0 (the mean) when
       s2 = 0, the ridge's limit.

    Speed (the same fixed points as the textbook iteration, reached sooner):
    a row with m missing entries is completed by an m x m solve in its
    missing entries (the conditional mean ``-P_MM^{-1} P_MV d_V`` with P the
    precision matrix) or, when m is large, by the k x k solve above,
    whichever is cheaper; rows are bucketed by m and each bucket is one
    batched Cholesky vectorised across rows. Steps 1 and 2 share one chunked
    pass over the data per iteration, so temporaries stay a few MB. The
    iteration is a fixed-point map on the moments (mean, second moment) of
    the filled data; with ``memory`` > 0, Anderson acceleration extrapolates
    those n + n^2 numbers from the last ``memory`` iterations: on the paper's
    real data sets it halves the passes (1.3-3x) and converges in cells where
    the plain iteration stops at ``max_iter``. Where the plain iteration
    converges, both reach the same fixed point (to ``tol``); where it does not
    (the paper's synthetic data beyond rho ~ 0.25, which no method recovers),
    the two stop at different points. With ``memory=0`` the iterates are the
    textbook iteration's (to rounding).

    Coarse start: with N >= 4 ``coarse`` rows, the iteration first runs to
    convergence on every (N // ``coarse``)-th row and starts the full data
    from those moments instead of the medians' (the fixed point is the full
    data's; only the start changes). On exactly low-rank data the coarse
    rows already determine the subspace and the full data converge in a few
    passes (2 for a generic x = A z at rho = 0.1, against 38 from the
    medians); on real data it saves little. ``coarse=0`` turns it off.

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
    max_iter : iterations (passes over the data) at most.
    shrink : weight of the probabilistic-PCA prior in the completion.
    center : subtract the mean before the projection.
    rcond : relative singular value below which a direction counts as not
        determined by a row's visible entries.
    memory : Anderson acceleration depth (0: the plain iteration).
    coarse : rows of the coarse start (0: none).

    Returns
    -------
    X_filled : (N, n) float.
    info : ``{"converged": bool, "iterations": int}`` (passes over the full
        data), plus ``"coarse_iterations"`` when the coarse start ran.
    """
    X = np.asarray(X, dtype=float)
    N, n = X.shape
    if rank is None:
        raise cmbench.NotApplicable("ithsvd needs a rank: the data set gives no rank hint")
    k = int(rank)
    if not 1 <= k <= n:
        raise ValueError(f"ithsvd: rank must be in 1..{n}, got {rank}")
    out = X.copy()
    seen = np.zeros(n, bool)  # columns with a visible entry
    any_missing = False
    for sl in _row_chunks(N, n):
        miss = np.isnan(X[sl])
        seen |= ~miss.all(axis=0)
        any_missing = any_missing or bool((miss.any(axis=1) & ~miss.all(axis=1)).any())
    if not any_missing:
        return out, {"converged": True, "iterations": 0}
    if not seen.all():
        raise cmbench.Undefined(f"ithsvd: column(s) {np.flatnonzero(~seen).tolist()} have no visible entry")

    comp = _Completion(X, out, k, shrink, center, rcond)
    theta = comp.start()
    info = {}
    step = N // coarse if coarse and N >= 4 * coarse else 1
    if step > 1:
        Xs = np.ascontiguousarray(X[::step])
        if not np.isnan(Xs).all(axis=0).any():  # else the coarse model lacks a column
            small = _Completion(Xs, Xs.copy(), k, shrink, center, rcond, ref=comp.ref)
            theta, _, info["coarse_iterations"] = _iterate(small, small.start(), tol, max_iter, memory)
    _, converged, iterations = _iterate(comp, theta, tol, max_iter, memory)
    return out, {"converged": converged, "iterations": iterations, **info}


def _iterate(comp: _Completion, theta: np.ndarray, tol: float, max_iter: int, memory: int):
    """Refill until the filled entries change by at most ``tol`` (relative).

    Returns the last moments, whether it converged, and the passes made.
    """
    accelerate = _Anderson(memory)
    new = theta  # max_iter < 1: no pass, the start stands
    for it in range(1, max_iter + 1):
        new, change, scale = comp.apply(theta)
        if change <= tol * max(scale, np.finfo(float).tiny):
            return new, True, it
        theta = accelerate(theta, new)
    return new, False, max(0, max_iter)


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
    rows = _replaced_rows(X, B, tol)
    if r == 0 or rows.size == 0:
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
    rows = _replaced_rows(X, _orthonormal_range(A), tol)
    if F.shape[0] == 0 or rows.size == 0:
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
    rows = _replaced_rows(X, _orthonormal_range(A), tol)
    p, n = F.shape
    if p == 0 or rows.size == 0:
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
            params={"tol": 1e-10, "max_iter": 1000, "shrink": 1.0, "center": True, "rcond": 1e-6,
                    "memory": 5, "coarse": 1000},
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
