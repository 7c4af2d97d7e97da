"""Simple baselines the benchmarks time the fast kernels against."""
from __future__ import annotations

from typing import Optional

import numpy as np


def ithsvd_svd_loop(X: np.ndarray, rank: int, *, tol: float = 1e-6, max_iter: int = 100,
                    iterates: Optional[list] = None):
    """The supplementary's ITHSVD, written plainly with ``np.linalg.svd``.

    Fill the missing entries with the column medians of the visible ones,
    then repeat: a full thin SVD of the filled matrix, its rank-``rank``
    reconstruction copied into the missing entries; stop after the first
    iteration whose change over the missing entries is at most ``tol``
    times their norm before the copy, or after ``max_iter`` iterations.
    With ``iterates`` (a list), a copy of the filled matrix is appended
    after every iteration.

    Returns
    -------
    (N, n) filled copy, ``{"converged": bool, "iterations": int}``.
    """
    X = np.asarray(X, dtype=float)
    mask = np.isnan(X)
    Z = np.where(mask, np.nanmedian(X, axis=0), X)
    converged, it = False, 0
    for it in range(1, max_iter + 1):
        U, s, Vt = np.linalg.svd(Z, full_matrices=False)
        low = (U[:, :rank] * s[:rank]) @ Vt[:rank]
        old, new = Z[mask], low[mask]
        Z[mask] = new
        if iterates is not None:
            iterates.append(Z.copy())
        if np.linalg.norm(new - old) <= tol * np.linalg.norm(old):
            converged = True
            break
    return Z, {"converged": converged, "iterations": it}


def per_row_lstsq(X: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Two-Step-E by one ``np.linalg.lstsq`` per incomplete row (rows whose
    visible part of A loses rank stay as they are)."""
    out = X.copy()
    rank_a = np.linalg.matrix_rank(A)
    for i in np.flatnonzero(np.isnan(X).any(axis=1)):
        v = ~np.isnan(X[i])
        z, _, rank_v, _ = np.linalg.lstsq(A[v], X[i, v], rcond=None)
        if rank_v == rank_a:
            out[i, ~v] = A[~v] @ z
    return out
