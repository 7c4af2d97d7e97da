"""Batched small linear algebra shared by the built-in recoverers (declares no hooks).

Rows of a data matrix are grouped (by missing pattern, or by count of missing
entries) and each group's small least-squares problems are solved in one
vectorised call, never in a Python loop per row: pattern-wise pseudo-inverses,
least squares against a known basis on each row's visible entries, and a
Cholesky factorisation batched along the last axis.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

import cmbench
from cmbench.theory import BLOCK_ELEMENTS, CHUNK_ELEMENTS, PASS_ELEMENTS


def check_rank(rank, n: int, method: str) -> int:
    """The rank a completion method uses: the data set's hint, required, in 1..n.

    Parameters
    ----------
    rank : the rank hint (None when the data set gives none).
    n : the number of columns.
    method : the recoverer's name, for the messages.

    Returns
    -------
    int
        The rank.

    Raises
    ------
    cmbench.NotApplicable
        Without a rank hint.
    ValueError
        For a rank outside 1..n.
    """
    if rank is None:
        raise cmbench.NotApplicable(f"{method} needs a rank: the data set gives no rank hint")
    k = int(rank)
    if not 1 <= k <= n:
        raise ValueError(f"{method}: rank must be in 1..{n}, got {rank}")
    return k


def rank_tol(s: np.ndarray, rcond: float) -> float:
    """Absolute singular-value threshold: ``rcond`` times the largest one.

    Parameters
    ----------
    s : singular values.
    rcond : relative threshold.

    Returns
    -------
    float
        ``rcond * max(s)``, 0 when ``s`` is empty.
    """
    return float(rcond * s.max()) if s.size else 0.0


def patterns(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def masked_pinv(B: np.ndarray, visible: np.ndarray, tol: float):
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


def apply_per_row(ops: np.ndarray, which: np.ndarray, V: np.ndarray) -> np.ndarray:
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
    step = max(1, CHUNK_ELEMENTS // max(1, k * n))
    for lo in range(0, R, step):
        sl = slice(lo, lo + step)
        out[sl] = np.matmul(ops[which[sl]], V[sl, :, None])[:, :, 0]
    return out


def fit_known(X: np.ndarray, A: np.ndarray, rcond: float, max_missing: Optional[int] = None):
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
    tol = rank_tol(s_A, rcond)
    rank_A = int((s_A > tol).sum())
    ok = ~mask.any(axis=1)  # complete rows need no fit
    fitted = np.where(ok[:, None], X, np.nan)
    rows = np.flatnonzero(~ok)
    if rows.size == 0:
        return fitted, ok
    count = mask[rows].sum(axis=1)
    if max_missing is not None:
        rows, count = rows[count <= max_missing], count[count <= max_missing]
    few = count <= rank_A
    if few.any():
        done = _fit_missing_side(X, mask, A, rows[few], count[few], tol, fitted)
        ok[rows[few][done]] = True
        rows = np.concatenate([rows[few][~done], rows[~few]])
    if rows.size and rank_A == A.shape[1]:
        done = _fit_normal_equations(X, mask, A, rows, fitted)
        ok[rows[done]] = True
        rows = rows[~done]
    if rows.size == 0:
        return fitted, ok
    pats, inverse = patterns(mask[rows])
    pinv, rank_p = masked_pinv(A, ~pats, tol)
    sel = (rank_p == rank_A)[inverse]
    rows, inverse = rows[sel], inverse[sel]
    if rows.size:
        Z = apply_per_row(pinv, inverse, np.where(mask[rows], 0.0, X[rows]))
        fitted[rows] = Z @ A.T
        ok[rows] = True
    return fitted, ok


# A row's normal equations are trusted when every Cholesky pivot keeps this
# fraction of its diagonal (roughly cond(A_V)^2 <= 1 / _NORMAL_PIVOT); the
# others (rank lost, or nearly) take the SVD route, whose rank test is exact.
_NORMAL_PIVOT = 1e-8


# Q_MM's pivots below this (relative and absolute: Q's eigenvalues are 0 and
# 1) send a row to the r side: one refinement step then leaves errors ~1e-14.
_MISSING_PIVOT = 1e-3


def _smallest_eigenvalue(L: np.ndarray, skip: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Estimates of each system's smallest eigenvalue from its `psd_factor` factor.

    Two steps of inverse iteration from a random start: exact enough to flag
    the systems whose smallest eigenvalue is far below the others', which are
    the ones that matter. (R,) from L (m, m, R).
    """
    v = rng.standard_normal(L.shape[::2])
    for _ in range(2):
        v /= np.sqrt(np.einsum("mr,mr->r", v, v))
        v = psd_solve(L, skip, v)
    return 1.0 / np.sqrt(np.einsum("mr,mr->r", v, v))


def _fit_missing_side(X, mask, A, rows, count, tol, fitted) -> np.ndarray:
    """Least squares on the visible entries, solved in the m missing entries.

    With P the orthogonal projector onto range(A) and Q = I - P,
    ``min_z ||A_V z - x_V||`` equals ``min_{x_M} ||Q x||`` (the missing
    entries free), whose normal equations are ``Q_MM x_M = -Q_MV x_V``: an
    m x m system per row instead of an r x r one, cheap when few entries are
    missing. Q_MM is singular exactly when A_V loses A's rank. The fitted row
    is ``A z = P x`` with x completed. Rows are grouped by m; each group is
    one batched Cholesky (`psd_factor`) plus one step of iterative
    refinement. Q_MM's condition is the square of B_V's (B an orthonormal
    basis of range A: lambda_min(Q_MM) = sigma_min(B_V)^2), and refinement
    cannot undo the rounding of Q itself, so only rows whose Q_MM keeps
    every pivot and its smallest eigenvalue above ``_MISSING_PIVOT`` are
    fitted here; the others are left to the r side and the SVD route.

    Returns
    -------
    (len(rows),) bool, the rows fitted here.
    """
    n = A.shape[0]
    U, s, _ = np.linalg.svd(A, full_matrices=False)
    B = U[:, s > tol]
    P = B @ B.T
    Q = np.eye(n) - P
    rng = np.random.default_rng(0)  # the start of `_smallest_eigenvalue`: the result does not depend on it
    done = np.zeros(rows.size, bool)
    for m in np.unique(count):
        at = np.flatnonzero(count == m)
        step = max(1, CHUNK_ELEMENTS // (m * m + 3 * n))
        for lo in range(0, at.size, step):
            pos = at[lo:lo + step]
            sel = rows[pos]
            miss = mask[sel]
            cols = np.nonzero(miss)[1].reshape(-1, m)  # each row's missing columns, in order
            x = np.where(miss, 0.0, X[sel])
            QMM = Q[cols.T[:, None, :], cols.T[None, :, :]]  # (m, m, R): the batch is the last axis
            L, skip = psd_factor(QMM, _MISSING_PIVOT, floor=_MISSING_PIVOT)
            xm = -psd_solve(L, skip, np.take_along_axis(x @ Q, cols, 1).T)
            np.put_along_axis(x, cols, xm.T, 1)
            # refinement: the gradient (Q x)_M vanishes at the solution
            xm -= psd_solve(L, skip, np.take_along_axis(x @ Q, cols, 1).T)
            np.put_along_axis(x, cols, xm.T, 1)
            good = ~skip.any(axis=0) & (_smallest_eigenvalue(L, skip, rng) > _MISSING_PIVOT)
            fitted[sel[good]] = x[good] @ P
            done[pos[good]] = True
    return done


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
    step = max(1, CHUNK_ELEMENTS // (r * r + 2 * n))
    for lo in range(0, rows.size, step):
        sel = rows[lo:lo + step]
        vis = ~mask[sel]
        x0 = np.where(vis, X[sel], 0.0)
        G = (vis.astype(float) @ KA).reshape(-1, r, r).transpose(1, 2, 0).copy()
        L, skip = psd_factor(G, _NORMAL_PIVOT)
        z = psd_solve(L, skip, (x0 @ A).T)
        resid = np.where(vis, x0 - z.T @ A.T, 0.0)
        z += psd_solve(L, skip, (resid @ A).T)
        good = ~skip.any(axis=0)
        fitted[sel[good]] = z.T[good] @ A.T
        done[lo:lo + step] = good
    return done




def row_chunks(count: int, width: int):
    """Slices of ``range(count)`` holding about ``PASS_ELEMENTS / width`` rows each.

    Parameters
    ----------
    count : the number of rows.
    width : the number of columns (floats per row).

    Yields
    ------
    slice
        Consecutive row ranges covering ``range(count)``.
    """
    step = max(1, PASS_ELEMENTS // max(1, width))
    for lo in range(0, count, step):
        yield slice(lo, min(count, lo + step))


def psd_factor(A: np.ndarray, tau: float, floor: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Batched Cholesky of symmetric PSD matrices, skipping dependent columns.

    The batch is the LAST axis, so each of the m column steps is a contiguous
    vector operation over all systems (numpy's batched LAPACK calls pay a
    fixed cost per small matrix; this pays per column, not per matrix). A column whose
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


def psd_solve(L: np.ndarray, skip: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``A x = b`` with `psd_factor`'s factor; x is 0 on skipped columns.

    When b is in the range of A (it is here up to rounding) x is a solution;
    `null_basis` gives the directions it leaves free.

    Parameters
    ----------
    L, skip : `psd_factor`'s factor and skipped columns, (m, m, R) and (m, R).
    b : (m, R) right-hand sides.

    Returns
    -------
    (m, R) the solutions.
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


def null_basis(L: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """Orthonormal bases of the null spaces the skipped columns reveal.

    A skipped column j is a combination of the kept columns before it,
    ``A e_j = A_{:,<j} c``, so ``e_j - c`` spans one null direction (c by back
    substitution from the row L[j, :j]). Gram-Schmidt makes each system's
    directions orthonormal.

    Parameters
    ----------
    L, skip : `psd_factor`'s factor and skipped columns, (m, m, R) and (m, R).

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


def column_sums(Y: np.ndarray) -> np.ndarray:
    """``Y.sum(axis=0)`` by a BLAS product.

    On narrow arrays numpy's reduction walks the rows one short stride at a
    time; the product reads them in one pass.

    Parameters
    ----------
    Y : (N, n).

    Returns
    -------
    (n,) the column sums.
    """
    return np.ones(len(Y)) @ Y


def column_medians(X: np.ndarray) -> np.ndarray:
    """``np.nanmedian(X, axis=0)`` in column blocks (its sort copy stays small).

    Parameters
    ----------
    X : (N, n), NaN = missing.

    Returns
    -------
    (n,) the medians of the visible entries (NaN for a column with none).
    """
    N, n = X.shape
    width = max(1, BLOCK_ELEMENTS // max(1, N))
    return np.concatenate([np.nanmedian(X[:, j:j + width], axis=0) for j in range(0, n, width)])


