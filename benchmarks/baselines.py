"""Simple baselines the benchmarks time the fast kernels against."""
from __future__ import annotations

import numpy as np


def hard_impute(X: np.ndarray, rank: int, *, tol: float = 1e-10, max_iter: int = 1000):
    """Textbook hard-impute (Mazumder, Hastie & Tibshirani 2010, hard-thresholded).

    Fill the missing entries with the column medians, then repeat: a full thin
    SVD of the filled matrix (``np.linalg.svd(full_matrices=False)``), its
    rank-k reconstruction, the missing entries replaced from it; stop when the
    filled matrix changes by less than ``tol`` relative to its norm, or after
    ``max_iter`` iterations.

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
        change = np.linalg.norm(low[mask] - Z[mask])
        Z[mask] = low[mask]
        if change <= tol * np.linalg.norm(Z):
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
