"""The paper's quantities: m_A, disc, d_TV, d_ENTRY and the recovery thresholds.

References are to "On Robust Mean Estimation under Coordinate-level
Corruption" (ICML 2021), whose numbering (Corollary 2, Lemma 3, ...) the
labels in `THRESHOLD_LABELS` use.

This module imports nothing of cmbench (NumPy and SciPy only), so reports,
tests and plugins can use it freely.

Conventions
-----------
* A structure matrix ``A`` is (n, r): x = A z, one row per coordinate.
* A sample ``X`` is (N, n) float; NaN marks a hidden entry. When two samples are
  compared entry by entry, NaN is a value of its own: NaN vs a number differs,
  NaN vs NaN is equal (a hidden entry equals a hidden entry).
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import math
from collections import OrderedDict
from typing import Union

import numpy as np

# SciPy is imported where used: a sweep's worker process imports this module and
# mostly needs none of it.

__all__ = [
    "m_a", "critical_rows", "disc", "d_tv_gaussian", "mahalanobis", "d_entry",
    "d_entry_bound", "d_tv_empirical", "thresholds", "THRESHOLD_LABELS",
    "general_position_m_a", "rho_learn", "general_position_label",
    "dis_compare_example", "DIS_COMPARE_PAPER", "EXAMPLES",
    "critical_set", "hidden_direction", "changed_entries", "budget_count",
    "CHUNK_ELEMENTS", "PASS_ELEMENTS", "BLOCK_ELEMENTS", "CACHE_ELEMENTS", "RANK_RTOL",
]

# --------------------------------------------------------------------------- #
# Memory blocks
# --------------------------------------------------------------------------- #
# Vectorized loops work on blocks of bounded size, so that their temporaries
# stay a few MB whatever N is (the N = 10^6 cells keep their peak near the
# data's own size). The built-in plugins size their blocks with these too.

#: Elements of one temporary array of a batched computation (a stack of small
#: matrices, a block of subsets or of sort keys): 16 MB of float64.
CHUNK_ELEMENTS = 1 << 21
#: Elements of one row chunk when a pass walks over the data: 8 MB of float64.
#: Smaller chunks pay NumPy's per-call overhead more often (benchmarks/README.md).
PASS_ELEMENTS = 1 << 20
#: Elements of an estimator's column block or row chunk (and of its block of
#: projections): about 32 MB of float64.
BLOCK_ELEMENTS = 4_000_000
#: Elements of a block of rows that stays in the processor's cache (2 MB of float64) while a
#: pass makes several operations over it (a difference and its squares, or three comparisons):
#: a whole-matrix expression writes and reads back each temporary through memory instead.
#: 512-1024 rows at n = 400 were fastest for `sq_dist` (benchmarks/README.md).
CACHE_ELEMENTS = 1 << 18

#: Relative rank threshold: singular values at most this times the largest count as zero.
RANK_RTOL = 1e-10


# --------------------------------------------------------------------------- #
# m_A (Definition def:ma)
# --------------------------------------------------------------------------- #

_EPS = float(np.finfo(float).eps)
_SLACK = 1e3  # rounding allowance, in units of (eps x the conditioning involved)


class _RowGeometry:
    """Rows of A as unit vectors of its row space, grouped by direction.

    Attributes
    ----------
    n, k : rows and rank of A.
    U : (n, k) left singular vectors; S : (k,) singular values.
    unit : (n, k) unit row directions in row-space coordinates (zero rows stay 0).
    nonzero : (n,) bool, rows that are not numerically zero.
    cls : (n,) int, direction class of each row (-1 for zero rows); parallel
        rows share a class.
    dirs : (d, k) one unit vector per class; weight : (d,) rows per class.
    tol : fixed sine threshold, or None for the adaptive one (`member_tol`).
    indep_tol : smallest Gram-Schmidt residual of a spanning row.
    row_err : rounding error of a unit row direction.
    """

    def __init__(self, A: np.ndarray, tol: float | None):
        n, r = A.shape
        U, S, Vt = np.linalg.svd(A, full_matrices=False)
        rank_tol = RANK_RTOL if tol is None else tol
        k = int(np.sum(S > rank_tol * S[0])) if S.size and S[0] > 0 else 0
        self.n, self.k, self.tol = n, k, tol
        self.U, self.S = U[:, :k], S[:k]
        # Full column rank: use A's rows as given (no rounding from the SVD).
        B = A if k == r else A @ Vt[:k].T
        norms = np.linalg.norm(B, axis=1)
        self.nonzero = norms > rank_tol * (S[0] if S.size else 0.0)
        self.unit = np.zeros((n, k))
        self.unit[self.nonzero] = B[self.nonzero] / norms[self.nonzero, None]
        cond = S[0] / S[k - 1] if 0 < k < r else 0.0
        self.row_err = _SLACK * _EPS * (1.0 + cond)
        self.indep_tol = 1e-6 if tol is None else tol
        idx = np.flatnonzero(self.nonzero)
        par_tol = 2 * self.row_err if tol is None else tol
        reps, inv = np.unique(_parallel_representatives(self.unit[idx], par_tol),
                              return_inverse=True)
        self.cls = np.full(n, -1)
        self.cls[idx] = inv.ravel()
        self.dirs = self.unit[idx][reps]
        self.weight = np.bincount(inv.ravel(), minlength=reps.size)

    def member_tol(self, min_resid: np.ndarray) -> np.ndarray:
        """Sine threshold per spanning subset: the rounding error of its normal
        (about eps * k / smallest Gram-Schmidt residual) plus that of a row."""
        if self.tol is not None:
            return np.full(min_resid.shape, self.tol)
        return _SLACK * _EPS * self.k / np.maximum(min_resid, 1e-300) + self.row_err


def _parallel_representatives(V: np.ndarray, tol: float) -> np.ndarray:
    """Index of the first row of V (unit rows) parallel to each row: sine <= tol.

    Pairs with |cos| clearly below 1 are dismissed at once; for the rest the
    sine is measured as min(|u - v|, |u + v|), which keeps its precision near
    zero (1 - |cos| would not).
    """
    m = V.shape[0]
    out = np.arange(m)
    near = 1.0 - max(tol, 1e-3)  # sine <= tol implies 1 - |cos| <= tol^2 / 2
    step = max(1, CHUNK_ELEMENTS // max(m, 1))
    for s in range(0, m, step):
        cos = V[s: s + step] @ V.T
        i, j = np.nonzero(np.abs(cos) >= near)
        sign = np.where(cos[i, j] >= 0, 1.0, -1.0)
        ok = np.linalg.norm(V[s + i] - sign[:, None] * V[j], axis=1) <= tol
        np.minimum.at(out, s + i[ok], j[ok])
    return out


def _combinations(pool: int, size: int, chunk: int):
    """Yield (c, size) int arrays: the size-subsets of range(pool), in chunks."""
    it = itertools.combinations(range(pool), size)
    while True:
        flat = np.fromiter(itertools.chain.from_iterable(itertools.islice(it, chunk)),
                           dtype=np.intp)
        if flat.size == 0:
            return
        yield flat.reshape(-1, size)


def _hyperplane_counts(geo: _RowGeometry, subsets: np.ndarray):
    """Rows of A in the hyperplane spanned by each (k-1)-subset of directions.

    Returns (counts, members): counts (c,) number of nonzero rows in the
    hyperplane (-1 when the subset is not linearly independent), members
    (c, d) bool class membership.
    """
    k = geo.k
    V = geo.dirs[subsets]  # (c, k-1, k)
    c = V.shape[0]
    Q = np.zeros_like(V)
    resid = np.empty((c, k - 1))
    for i in range(k - 1):
        v = V[:, i]
        for _ in range(2):  # Gram-Schmidt twice: orthogonal to machine precision
            if i:
                coef = np.einsum("cjk,ck->cj", Q[:, :i], v)
                v = v - np.einsum("cj,cjk->ck", coef, Q[:, :i])
        resid[:, i] = np.sqrt(np.einsum("ck,ck->c", v, v))  # distance from the others' span
        Q[:, i] = v / np.where(resid[:, i] > 0, resid[:, i], 1.0)[:, None]
    min_resid = resid.min(axis=1)
    # The normal spans the complement of span(Q): project the basis vector e_j
    # with the largest projection (diag(I - Q^T Q) sums to 1, so it is >= 1/k).
    j = np.argmax(1.0 - np.einsum("cik,cik->ck", Q, Q), axis=1)
    rows = np.arange(c)
    w = -np.einsum("cik,ci->ck", Q, Q[rows, :, j])
    w[rows, j] += 1.0
    w /= np.sqrt(np.einsum("ck,ck->c", w, w))[:, None]
    members = np.abs(w @ geo.dirs.T) <= geo.member_tol(min_resid)[:, None]
    counts = np.where(min_resid > geo.indep_tol, members @ geo.weight, -1)
    return counts, members


def _search_hyperplanes(geo: _RowGeometry, subsets_iter) -> np.ndarray:
    """Row mask (n,) of the hyperplane holding the most rows among the subsets."""
    best_count, best_members = -1, None
    for subsets in subsets_iter:
        counts, members = _hyperplane_counts(geo, subsets)
        i = int(np.argmax(counts))
        if counts[i] > best_count:
            best_count, best_members = int(counts[i]), members[i]
    in_h = ~geo.nonzero  # zero rows lie in every hyperplane
    if best_members is not None:
        in_h = in_h | (geo.nonzero & best_members[np.maximum(geo.cls, 0)])
    return in_h


def _chunk_size(geo: _RowGeometry) -> int:
    return max(1, CHUNK_ELEMENTS // max(geo.dirs.shape[0], geo.k * geo.k, 1))


def _critical_by_hyperplanes(geo: _RowGeometry) -> np.ndarray:
    """Exact: enumerate the hyperplanes spanned by (k-1) independent directions."""
    if geo.k == 1:  # the only hyperplane of a line is {0}
        return np.flatnonzero(geo.nonzero)
    subsets = _combinations(geo.dirs.shape[0], geo.k - 1, _chunk_size(geo))
    return np.flatnonzero(~_search_hyperplanes(geo, subsets))


def _spans_hyperplane(geo: _RowGeometry, rest: np.ndarray) -> bool:
    """Do the rows `rest` lie in one hyperplane (same test as the enumeration)?"""
    classes = np.unique(geo.cls[rest][geo.cls[rest] >= 0])
    if geo.k == 1:
        return classes.size == 0
    if classes.size < geo.k - 1:
        return True
    # k-1 well-conditioned spanning directions: column-pivoted QR
    import scipy.linalg

    _, _, piv = scipy.linalg.qr(geo.dirs[classes].T, pivoting=True, mode="economic")
    counts, members = _hyperplane_counts(geo, classes[piv[: geo.k - 1]][None, :])
    return bool(counts[0] >= 0 and members[0][classes].all())


def _critical_by_removals(geo: _RowGeometry, budget: float):
    """Exact: smallest row set R with rank(A without R) < k, by increasing |R|.

    With U (n, k) orthonormal, U[-R]^T U[-R] = I - U_R^T U_R, so the rank
    drops iff the top eigenvalue of U_R U_R^T is 1: a vectorized screen; a
    candidate is accepted when the remaining rows pass the hyperplane test of
    the enumeration. Returns (rows or None, largest size fully checked).
    """
    rows = np.flatnonzero(geo.nonzero)
    G = geo.U[rows] @ geo.U[rows].T
    all_rows = np.arange(rows.size)
    spent = 0
    for m in range(1, rows.size + 1):
        cost = math.comb(rows.size, m)
        if spent + cost > budget:
            return None, m - 1
        spent += cost
        for R in _combinations(rows.size, m, max(1, CHUNK_ELEMENTS // (m * m))):
            lam = np.linalg.eigvalsh(G[R[:, :, None], R[:, None, :]])[:, -1]
            # loose screen (1 - lam is the squared smallest singular value of
            # U[-R]); the hyperplane test decides
            for c in np.flatnonzero(lam >= 1.0 - 1e-8):
                rest = rows[np.setdiff1d(all_rows, R[c])]
                if _spans_hyperplane(geo, rest):
                    return np.sort(rows[R[c]]), m
    return None, rows.size


def _critical_by_sampling(geo: _RowGeometry, n_draws: int, seed: int) -> np.ndarray:
    """Upper bound on m_A: the best of `n_draws` random hyperplanes."""
    if geo.k == 1:
        return np.flatnonzero(geo.nonzero)
    rng = np.random.default_rng(seed)
    rows = np.flatnonzero(geo.nonzero)
    chunk = _chunk_size(geo)

    def draws():
        left = n_draws
        while left > 0:
            c = min(chunk, left)
            left -= c
            # k-1 distinct rows, uniformly: directions weighted by multiplicity,
            # so crowded hyperplanes are the likely ones to be hit.
            keys = rng.random((c, rows.size))
            picks = np.argpartition(keys, geo.k - 2, axis=1)[:, : geo.k - 1]
            yield geo.cls[rows[picks]]

    return np.flatnonzero(~_search_hyperplanes(geo, draws()))


def _validated_matrix(A) -> np.ndarray:
    A = np.asarray(A, dtype=float)
    if A.ndim != 2:
        raise ValueError(f"A must be a 2-D (n, r) array, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("A must be finite (no NaN or inf)")
    return A


def _critical(A, tol, method, max_subsets, n_draws, seed) -> np.ndarray:
    A = _validated_matrix(A)
    if method not in ("auto", "search"):
        raise ValueError(f"method must be 'auto' or 'search', got {method!r}")
    tol = None if tol is None else float(tol)
    draws = (int(n_draws), int(seed)) if method == "search" else None
    return _critical_of(A.shape, A.tobytes(), tol, method, float(max_subsets), draws)


@functools.lru_cache(maxsize=64)
def _critical_of(shape, data: bytes, tol, method, max_subsets, draws) -> np.ndarray:
    """`_critical` of the matrix of these bytes, cached (read-only result)."""
    A = np.frombuffer(data).reshape(shape)
    geo = _RowGeometry(A, tol)
    if geo.k == 0:
        raise ValueError("A has rank 0: its row space has no dimension to lose, m_A is undefined")
    n_hyper = math.comb(geo.dirs.shape[0], geo.k - 1)
    # m_A = 1 (a row outside the span of the others) costs n tests: try it first.
    single = _critical_by_removals(geo, geo.n)[0]
    if single is not None:
        crit = single
    elif method == "search":
        crit = _critical_by_sampling(geo, *draws)
    elif n_hyper <= max_subsets:
        crit = _critical_by_hyperplanes(geo)
    else:
        crit, checked = _critical_by_removals(geo, max_subsets)
        if crit is None:
            raise ValueError(
                f"m_A of this {A.shape[0]}x{A.shape[1]} matrix (rank {geo.k}) needs "
                f"C({geo.dirs.shape[0]}, {geo.k - 1}) = {n_hyper:.3g} hyperplanes, more than "
                f"max_subsets={max_subsets:.3g}; enumerating removal sets within that "
                f"budget only showed m_A > {checked}. Raise max_subsets, or use "
                f"method='search' for an upper bound on m_A.")
    crit = np.asarray(crit, dtype=np.intp)
    crit.setflags(write=False)
    return crit


def critical_rows(A, *, tol: float | None = None, method: str = "auto",
                  max_subsets: float = 2e6, n_draws: int = 100_000,
                  seed: int = 0) -> np.ndarray:
    """One minimal set of rows whose removal lowers the rank of A.

    Parameters
    ----------
    A : (n, r) array. Its rank k is used, so a rank-deficient A is fine.
    tol : None (default) for adaptive tolerances: rank = singular values above
        1e-10 times the largest; a row lies in a hyperplane when the sine of
        their angle is within the rounding error of the computation (about
        1e3 * eps * (k / smallest Gram-Schmidt residual of the spanning rows +
        condition of the projection)); spanning rows need Gram-Schmidt
        residuals above 1e-6. Exact structure (zeros, repeated or summed rows)
        is found and a generic A is not mistaken for a degenerate one, even
        over millions of hyperplanes. A float sets all of these thresholds
        to that value instead.
    method : ``"auto"`` (exact, see `m_a`) or ``"search"`` (random hyperplanes:
        the set returned lowers the rank but may not be minimal).
    max_subsets, n_draws, seed : see `m_a`.

    Returns
    -------
    (m_A,) sorted int array of row indices. Removing them leaves rows that lie
    in a hyperplane of the row space, so the rank drops by exactly one; this is
    the construction of Theorem thm:lowerBoundStructure (hide these coordinates
    and the sample cannot be recovered).
    """
    return _critical(A, tol, method, max_subsets, n_draws, seed).copy()


def m_a(A, *, tol: float | None = None, method: str = "auto",
        max_subsets: float = 2e6, n_draws: int = 100_000, seed: int = 0) -> int:
    """m_A (Definition def:ma): fewest rows to remove from A to lower its rank.

    The rows left after removing a minimal set lie in a hyperplane of the row
    space, so m_A = n - (most rows of A inside one hyperplane of its row space).
    A hyperplane holding the most rows can be taken spanned by k-1 linearly
    independent rows (k = rank), so:

    * ``method="auto"``, when there are at most ``max_subsets`` (k-1)-subsets
      of row directions (parallel rows are merged, zero rows lie in every
      hyperplane and are never removed): enumerate those hyperplanes, batched
      and vectorized (throughput in benchmarks/README.md). Exact.
    * otherwise it enumerates removal sets R of size 1, 2, ... (rank drops iff
      the top eigenvalue of U_R U_R^T is 1, U the left singular vectors),
      which is cheap when m_A is small, within the same budget. Exact. (Size
      1 is always tried first: it costs n tests.)
    * if neither fits the budget: ValueError saying why (both counts).
    * ``method="search"``: the best of ``n_draws`` random hyperplanes spanned by
      k-1 rows (drawn with ``seed``). An upper bound on m_A (exact when a
      largest hyperplane is hit, e.g. always for generic A, where m_A = n-k+1).

    Results are cached by A's bytes and the arguments.

    Parameters
    ----------
    A : (n, r) array, finite, rank >= 1.
    tol : see `critical_rows`.

    Returns
    -------
    int in [1, n].

    Raises
    ------
    ValueError : A has rank 0, is not finite, or is too large for ``"auto"``.
    """
    return int(_critical(A, tol, method, max_subsets, n_draws, seed).size)


# --------------------------------------------------------------------------- #
# The structured attack of Theorem thm:lowerBoundStructure
# --------------------------------------------------------------------------- #

def critical_set(A, *, max_subsets: float = 2e5, n_draws: int = 20_000, seed: int = 0) -> np.ndarray:
    """A set of m_A rows of A whose loss makes a sample unrecoverable, at a bounded cost.

    The coordinates an adversary hides (or moves) in the construction of
    Theorem thm:lowerBoundStructure. `critical_rows` is exact but may need to
    enumerate more subsets than a sweep can afford (a generic estimated
    77 x 10 structure has C(77, 9) hyperplanes); this is the exact set when
    ``max_subsets`` subsets suffice, else the best of ``n_draws`` seeded
    random hyperplanes, a set that also lowers the rank but may hold more
    than m_A rows (an attack then costs more per sample).

    Parameters
    ----------
    A : (n, r) array_like
        The structure, x = A z.
    max_subsets : float, default 2e5
        Most subsets the exact search may enumerate (see `m_a`).
    n_draws, seed : int
        Random hyperplanes of the fallback search, and its seed.

    Returns
    -------
    ndarray of intp, shape (m,)
        Sorted row indices; removing them lowers the rank of A.

    Raises
    ------
    ValueError
        A is not a finite 2-D array or has rank 0 (no row set to lose).

    See Also
    --------
    critical_rows : the exact set, with its tolerances.
    hidden_direction : the direction that moves only these coordinates.
    """
    try:
        rows = critical_rows(A, max_subsets=max_subsets)
    except ValueError:  # too many subsets for the exact search (a rank 0 or an A not finite: raised again)
        rows = critical_rows(A, method="search", n_draws=n_draws, seed=seed)
    return np.sort(np.asarray(rows, dtype=np.intp))


def hidden_direction(A, rows) -> np.ndarray:
    """A unit vector of range(A) that is zero outside ``rows`` (exactly).

    Moving a sample x = A z along it changes only the coordinates ``rows``
    and leaves it structured (x + t w = A z' for some z'), so a sample whose
    ``rows`` are replaced this way cannot be told from a clean one (Lemma
    lemma:corruptionRecover). It exists when removing ``rows`` lowers the
    rank of A, as for `critical_set`: with Q an orthonormal basis of
    range(A), w = Q y for y in the null space of Q restricted to the other
    rows.

    Parameters
    ----------
    A : (n, r) array_like
        The structure.
    rows : sequence of int
        Rows whose removal lowers the rank of A (e.g. `critical_set`).

    Returns
    -------
    ndarray, shape (n,)
        Unit norm, exactly zero outside ``rows``; its sign is arbitrary.

    Raises
    ------
    ValueError
        A has rank 0, or no direction of range(A) lives on ``rows``.
    """
    A = np.asarray(A, dtype=float)
    U, s, _ = np.linalg.svd(A, full_matrices=False)
    if not s.size or s[0] == 0:
        raise ValueError("the structure A has rank 0: range(A) has no direction")
    Q = U[:, s > RANK_RTOL * s[0]]
    rest = np.setdiff1d(np.arange(A.shape[0]), rows)
    # full_matrices: when fewer rest rows than columns the null vectors are the extra ones
    _, _, Vt = np.linalg.svd(Q[rest], full_matrices=True)
    w = Q @ Vt[-1]
    if np.linalg.norm(w[rest]) > 1e-6:  # Q[rest] has no null vector: the rank did not drop
        raise ValueError("no direction of range(A) is zero outside the given rows "
                         "(removing them does not lower the rank of A)")
    w[rest] = 0.0  # numerically ~0 already; exact zeros keep the other coordinates untouched
    return w / np.linalg.norm(w)


def changed_entries(X, Y) -> np.ndarray:
    """Entry-wise ``X != Y`` where NaN equals NaN: the entries a corruption changed.

    A hidden entry equals a hidden entry, and a number that became NaN (or the
    reverse) changed; this is how cmbench counts what an adversary spent and
    what a component wrote into its input.

    Parameters
    ----------
    X, Y : array_like
        Arrays of broadcastable shapes (e.g. a sample and its corruption).

    Returns
    -------
    ndarray of bool
        True where the entries differ.
    """
    X, Y = np.asarray(X), np.asarray(Y)
    if X.ndim != 2 or X.shape != Y.shape:
        return ~((X == Y) | (np.isnan(X) & np.isnan(Y)))
    # a full-size sample (1.28 GB at d = 400): a cache-sized row block at a time, 2-3x faster
    out = np.empty(X.shape, dtype=bool)
    step = max(1, CACHE_ELEMENTS // max(1, X.shape[1]))
    for i in range(0, X.shape[0], step):
        a, b, o = X[i:i + step], Y[i:i + step], out[i:i + step]
        np.equal(a, b, out=o)
        o |= np.isnan(a) & np.isnan(b)
        np.logical_not(o, out=o)
    return out


def budget_count(budget: float, total: int) -> int:
    """``floor(budget * total)``: how many rows or entries a corruption budget buys.

    The budget of A1^eps is ``floor(eps N)`` rows, of A2^rho ``floor(rho N)``
    entries per column and of A3^alpha ``floor(alpha N n)`` entries
    (Section sec:corruptionModels); ``total`` is N or N n. The product is
    rounded up by a relative 1e-12 first, so that round-off does not lose a
    unit: ``0.29 * 100`` buys 29, not 28.

    Parameters
    ----------
    budget : float
        The fraction eps, rho or alpha, in [0, 1].
    total : int
        What the fraction is of.

    Returns
    -------
    int
        In [0, total].

    Raises
    ------
    ValueError
        ``budget`` is outside [0, 1].
    """
    budget = float(budget)
    if not (0.0 <= budget <= 1.0):
        raise ValueError(f"budget must be a fraction in [0, 1], got {budget!r}")
    return min(int(total), math.floor(budget * total * (1.0 + 1e-12)))


# --------------------------------------------------------------------------- #
# disc (section 3.3)
# --------------------------------------------------------------------------- #

def _vertices(m: int) -> np.ndarray:
    """(2**m, m) all sign vectors in {-1, 1}^m."""
    return (((np.arange(2 ** m)[:, None] >> np.arange(m)) & 1) * 2 - 1).astype(float)


def _normalized(M) -> np.ndarray:
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"M must be a non-empty square matrix, got shape {M.shape}")
    M = (M + M.T) / 2  # x^T M x only sees the symmetric part
    d = np.diag(M)
    if not np.all(d > 0):
        raise ValueError("disc needs a positive diagonal: s(M)_ij = M_ij / sqrt(M_ii M_jj)")
    s = M / np.sqrt(np.outer(d, d))
    if np.linalg.eigvalsh(s)[0] < -1e-8 * s.shape[0]:
        raise ValueError("disc is defined for positive semi-definite M")
    return s


def _disc_exact(s: np.ndarray) -> float:
    """max of x^T s x over {-1,1}^n, meet in the middle: x = (x_L, x_H).

    q = x_L^T s_LL x_L + 2 x_L^T s_LH x_H + x_H^T s_HH x_H; the cross term for
    all pairs is one matrix product. x_0 = 1 by the symmetry x ~ -x.
    """
    n = s.shape[0]
    a = (n + 1) // 2
    L, H = np.arange(a), np.arange(a, n)
    XL = _vertices(a - 1)
    XL = np.hstack([np.ones((XL.shape[0], 1)), XL])
    XH = _vertices(n - a)
    qL = np.einsum("ij,jk,ik->i", XL, s[np.ix_(L, L)], XL)
    qH = np.einsum("ij,jk,ik->i", XH, s[np.ix_(H, H)], XH)
    cross = XL @ s[np.ix_(L, H)]  # (2^(a-1), n-a)
    best = -np.inf
    step = max(1, CHUNK_ELEMENTS // XH.shape[0])
    for i in range(0, XL.shape[0], step):
        q = qL[i: i + step, None] + 2.0 * cross[i: i + step] @ XH.T + qH[None, :]
        best = max(best, float(q.max()))
    return best


def _disc_local(s: np.ndarray, n_starts: int, seed: int) -> float:
    """Best-improvement single-flip ascent over vertices from many starts.

    Flipping x_j changes x^T s x by 4 (s_jj - x_j (s x)_j) = 4 (1 - x_j g_j).
    At a local optimum x_j g_j >= 1 for all j, so the value is >= n: the
    result respects Lemma lm:psd_bounds' lower bound sqrt(n).
    """
    n = s.shape[0]
    rng = np.random.default_rng(seed)
    _, vecs = np.linalg.eigh(s)
    top = np.sign(vecs[:, -min(n, 4):].T)  # signs of the leading eigenvectors
    top[top == 0] = 1.0
    X = np.vstack([top, rng.choice([-1.0, 1.0], size=(max(n_starts - top.shape[0], 1), n))])
    G = X @ s
    rows = np.arange(X.shape[0])
    for _ in range(10 * n * n):
        gain = 1.0 - X * G
        j = np.argmax(gain, axis=1)
        move = gain[rows, j] > 1e-12
        if not move.any():
            break
        r, jj = rows[move], j[move]
        X[r, jj] = -X[r, jj]
        G[r] += 2.0 * X[r, jj, None] * s[jj]
    return float(np.max(np.sum(X * G, axis=1)))


def disc(M, *, method: str = "auto", exact_max_n: int = 24, n_starts: int = 64,
         seed: int = 0) -> float:
    """disc(M) = max over x in [-1,1]^n of sqrt(x^T s(M) x) (section 3.3).

    s(M)_ij = M_ij / sqrt(M_ii M_jj). x -> x^T s x is convex (s is PSD), so
    the maximum over the cube is at a vertex.

    * ``method="exact"`` (``"auto"`` when n <= ``exact_max_n``): all 2^(n-1)
      vertices up to sign, evaluated by a meet-in-the-middle split whose cross
      term is a matrix product (its time at n = 24: benchmarks/README.md).
    * ``method="local"`` (``"auto"`` beyond): best-improvement single-flip
      ascent from the signs of the leading eigenvectors and ``n_starts`` random
      vertices (``seed``). A lower bound on disc, and always >= sqrt(n).

    Parameters
    ----------
    M : (n, n) positive semi-definite with positive diagonal (e.g. Sigma^-1).

    Returns
    -------
    float in [sqrt(n), n] (Lemma lm:psd_bounds).
    """
    s = _normalized(M)
    n = s.shape[0]
    if method == "auto":
        method = "exact" if n <= exact_max_n else "local"
    if method == "exact":
        q = _disc_exact(s) if n > 1 else 1.0
    elif method == "local":
        q = _disc_local(s, n_starts, seed)
    else:
        raise ValueError(f"method must be 'auto', 'exact' or 'local', got {method!r}")
    return math.sqrt(max(q, 0.0))


# --------------------------------------------------------------------------- #
# Gaussians: Mahalanobis distance and d_TV
# --------------------------------------------------------------------------- #

def _range_basis(cov, rcond: float | None):
    """The eigenvectors spanning the range of ``cov`` and their eigenvalues (read-only).

    Memoized by a digest of the matrix (not its bytes, which for a wide data set
    would be kept 16 times): a metric asks for the same data set's covariance at
    every estimate of a sweep.
    """
    cov = np.ascontiguousarray(cov, dtype=float)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValueError(f"cov must be square, got shape {cov.shape}")
    key = (hashlib.sha256(cov.data).digest(), cov.shape[0], rcond)
    basis = _BASES.get(key)
    if basis is not None:
        _BASES.move_to_end(key)  # evicted last: 20 data set instances in the paper suite
    else:
        w, V = np.linalg.eigh((cov + cov.T) / 2)
        cut = 1e-10 if rcond is None else rcond
        top = w[-1] if w.size else 0.0
        keep = (w > cut * top) & (w > 0)
        basis = V[:, keep], w[keep]
        for a in basis:
            a.setflags(write=False)
        _BASES[key] = basis
        while len(_BASES) > 16:
            _BASES.popitem(last=False)
    return basis


_BASES: OrderedDict = OrderedDict()  # (digest, n, rcond) -> (V, w), the 16 used last


def mahalanobis(mu_hat, mu, cov, *, rcond: float | None = None) -> Union[float, np.ndarray]:
    """sqrt((mu_hat - mu)^T cov^+ (mu_hat - mu)), cov^+ the pseudo-inverse.

    The synthetic data x = A z has a singular covariance A Sigma_z A^T, so the
    pseudo-inverse is used: the part of mu_hat - mu outside the range of cov
    is ignored (it is measured by `d_tv_gaussian`, which is then 1).

    Parameters
    ----------
    mu_hat : (n,) or (k, n) estimates (a batch gives a (k,) array).
    mu : (n,) true mean. cov : (n, n) PSD covariance.
    rcond : eigenvalues below rcond * largest count as zero (default 1e-10).
    """
    V, w = _range_basis(cov, rcond)
    diff = np.asarray(mu_hat, dtype=float) - np.asarray(mu, dtype=float)
    d = np.sqrt(np.sum((diff @ V) ** 2 / w, axis=-1))
    return float(d) if np.ndim(d) == 0 else d


def d_tv_gaussian(mu1, mu2, cov, *, rcond: float | None = None,
                  range_tol: float = 1e-8) -> float:
    """Total variation distance between N(mu1, cov) and N(mu2, cov).

    d_TV = 2 Phi(delta/2) - 1 = erf(delta / (2 sqrt 2)), delta the Mahalanobis
    distance (proof of Corollary cor:upperBoundStructure). For a singular cov
    (x = A z) the two laws live on mu + range(cov): delta uses the
    pseudo-inverse, and d_TV = 1 when mu1 - mu2 leaves the range (relative
    residual above ``range_tol``), the supports being disjoint.

    Parameters
    ----------
    mu1, mu2 : (n,) means. cov : (n, n) PSD. rcond : see `mahalanobis`.
    """
    mu1, mu2 = np.asarray(mu1, dtype=float), np.asarray(mu2, dtype=float)
    V, w = _range_basis(cov, rcond)
    diff = mu1 - mu2
    c = diff @ V
    residual = np.linalg.norm(diff - V @ c)
    noise = 100 * np.finfo(float).eps * (np.linalg.norm(mu1) + np.linalg.norm(mu2))
    if residual > range_tol * np.linalg.norm(diff) and residual > noise:
        return 1.0
    delta = math.sqrt(float(np.sum(c * c / w)))
    return math.erf(delta / (2.0 * math.sqrt(2.0)))


# --------------------------------------------------------------------------- #
# Empirical samples: d_TV and d_ENTRY (Definition def:dentry)
# --------------------------------------------------------------------------- #

def _samples(X, Y, same_size: bool):
    X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ValueError(f"X and Y must be (N, n) with the same n, got {X.shape} and {Y.shape}")
    if X.shape[0] == 0 or Y.shape[0] == 0:
        raise ValueError("X and Y must hold at least one row")
    if same_size and X.shape[0] != Y.shape[0]:
        raise ValueError(f"d_ENTRY compares samples of equal size, got {X.shape[0]} and {Y.shape[0]}")
    return X, Y


def _row_labels(X: np.ndarray, Y: np.ndarray):
    """Integer label per row of X and of Y; equal rows (NaN-aware) share one."""
    Z = np.concatenate([X, Y]) + 0.0  # -0.0 -> 0.0: equal numbers, one label
    Z[np.isnan(Z)] = np.nan  # one NaN bit pattern
    Z = np.ascontiguousarray(Z)
    rows = Z.view(np.dtype((np.void, Z.dtype.itemsize * Z.shape[1]))).ravel()
    _, inv = np.unique(rows, return_inverse=True)
    inv = inv.ravel()
    return inv[: X.shape[0]], inv[X.shape[0]:], int(inv.max()) + 1


def d_tv_empirical(X, Y) -> float:
    """TV distance between the empirical distributions of X and Y.

    1 - sum over distinct rows v of min(count_X(v)/N_X, count_Y(v)/N_Y): the
    fraction of samples a sample-level (A1) adversary must change to turn one
    sample into the other, against which d_ENTRY is compared (Section sec:dentry).

    Parameters
    ----------
    X : array_like of shape (N_X, n)
    Y : array_like of shape (N_Y, n)
        Rows are compared NaN-aware (a NaN equals a NaN).

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    ValueError
        X and Y are not 2-D with the same n, or one of them is empty.
    """
    X, Y = _samples(X, Y, same_size=False)
    lx, ly, L = _row_labels(X, Y)
    cx = np.bincount(lx, minlength=L) / X.shape[0]
    cy = np.bincount(ly, minlength=L) / Y.shape[0]
    return float(max(0.0, 1.0 - np.minimum(cx, cy).sum()))


def _unmatched(X: np.ndarray, Y: np.ndarray):
    """Indices of the rows of X and Y left after pairing equal rows.

    Pairing equal rows at cost zero loses nothing: I(x, y) <= I(x, v) + I(v, y)
    entry-wise, so swapping partners to pair x_i = y_j never raises
    E[I]; the optimal coupling of the rest is then computed on fewer rows.
    """
    lx, ly, L = _row_labels(X, Y)
    common = np.minimum(np.bincount(lx, minlength=L), np.bincount(ly, minlength=L))

    def left(lab):
        order = np.argsort(lab, kind="stable")
        sl = lab[order]
        rank = np.arange(sl.size) - np.searchsorted(sl, sl, side="left")
        return np.sort(order[rank >= common[sl]])

    return left(lx), left(ly)


def _indicators(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """(n, N, N) bool: I(x_a, y_b)_j for all pairs."""
    return np.stack([changed_entries(X[:, j, None], Y[None, :, j]) for j in range(X.shape[1])])


def _hamming(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """(N, N) int: number of differing entries of every pair (x_a, y_b)."""
    C = np.zeros((X.shape[0], Y.shape[0]), dtype=np.int32)
    for j in range(X.shape[1]):
        C += changed_entries(X[:, j, None], Y[None, :, j])
    return C


def _column_fractions(X, Y, N) -> np.ndarray:
    """(n,) changed entries per column of the row-by-row pairing, over N."""
    return changed_entries(X, Y).sum(axis=0) / N


def _dentry_inf_lp(I: np.ndarray, N: int) -> float:
    """min over doubly-stochastic P of max_j sum_ab P_ab I_jab, divided by N.

    Variables: P (m*m, row-major) and t; minimize t subject to the n
    column constraints <I_j, P> <= t and unit row and column sums.
    """
    n, m, _ = I.shape
    c = np.zeros(m * m + 1)
    c[-1] = 1.0
    A_ub = np.hstack([I.reshape(n, m * m).astype(float), -np.ones((n, 1))])
    import scipy.sparse

    ones = scipy.sparse.csr_matrix(np.ones((1, m)))
    eye = scipy.sparse.identity(m, format="csr")
    A_eq = scipy.sparse.hstack([
        scipy.sparse.vstack([scipy.sparse.kron(eye, ones), scipy.sparse.kron(ones, eye)]),
        scipy.sparse.csr_matrix((2 * m, 1)),
    ]).tocsr()
    from scipy.optimize import linprog

    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(n), A_eq=A_eq,
                                 b_eq=np.ones(2 * m), bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"d_ENTRY^inf linear program failed: {res.message}")
    return float(res.fun) / N


def _p_arg(p):
    if p == 1:
        return 1
    if p == "inf" or p == np.inf:
        return np.inf
    raise ValueError(f"p must be 1, 'inf' or numpy.inf, got {p!r}")


def d_entry_bound(X, Y, p=1) -> float:
    """d_ENTRY of the row-by-row coupling: row i of Y paired with row i of X.

    This is how every cmbench adversary corrupts (row i of its output is the
    corruption of row i of its input), so it is the shift the adversary spent:
    the fraction of changed entries (p=1) or the largest fraction of changed
    entries in a column (p=inf). An upper bound on `d_entry`. NaN-aware.

    Parameters
    ----------
    X, Y : (N, n) samples. p : 1, "inf" or numpy.inf.
    """
    p = _p_arg(p)
    X, Y = _samples(X, Y, same_size=True)
    frac = _column_fractions(X, Y, X.shape[0])
    return float(frac.mean() if p == 1 else frac.max())


def d_entry(X, Y, p=1, *, method: str = "auto", max_assignment: int = 4000,
            max_lp: int = 150) -> float:
    """d_ENTRY^p (Definition def:dentry) between two empirical samples.

    The infimum over couplings of the uniform empirical laws of X and Y of
    (1/n) ||E[I(x, y)]||_1 (p=1) or ||E[I(x, y)]||_inf (p=inf), where
    I(x, y)_j = 1[x_j != y_j] and NaN equals NaN only. Equal rows are first
    paired at cost zero (optimal: I obeys the triangle inequality entry-wise),
    leaving N' unmatched rows on each side (N' / N = d_TV of the samples).

    * p=1: an assignment problem on the Hamming cost of the N' rows (a
      doubly-stochastic optimum sits at a permutation); exact.
    * p=inf: a min-max over couplings, a linear program (HiGHS) over the
      doubly-stochastic N' x N' coupling; exact. Its optimum may be a
      fractional coupling, below every permutation.
    * ``method="bound"``: the best of the row-by-row pairing (`d_entry_bound`),
      the in-order pairing of the unmatched rows and, for p=inf, the p=1
      optimal permutation (when N' <= ``max_assignment``). An upper bound.
    * ``method="auto"``: exact when N' <= ``max_assignment`` (p=1) or
      N' <= ``max_lp`` (p=inf), else ``"bound"``.
    * ``method="exact"``: exact whatever N'.

    Bounds that always hold: d_entry^1 <= d_entry^inf <= d_TV, and for samples
    of a distribution supported on range(A), d_entry^1 >= (m_A / n) d_TV
    (Theorem linear).

    Parameters
    ----------
    X, Y : (N, n) samples of equal size; NaN = hidden entry.
    p : 1, "inf" or numpy.inf.

    Returns
    -------
    float in [0, 1].
    """
    p = _p_arg(p)
    if method not in ("auto", "exact", "bound"):
        raise ValueError(f"method must be 'auto', 'exact' or 'bound', got {method!r}")
    X, Y = _samples(X, Y, same_size=True)
    N, n = X.shape
    ix, iy = _unmatched(X, Y)
    m = ix.size
    if m == 0:
        return 0.0
    Xr, Yr = X[ix], Y[iy]
    limit = max_assignment if p == 1 else max_lp
    exact = method == "exact" or (method == "auto" and m <= limit)

    perm = None
    if (p == 1 and exact) or (p == np.inf and not exact and m <= max_assignment):
        C = _hamming(Xr, Yr)
        from scipy.optimize import linear_sum_assignment

        rows, perm = linear_sum_assignment(C)
        if p == 1:
            return float(C[rows, perm].sum()) / (N * n)
    if p == np.inf and exact:
        val = _dentry_inf_lp(_indicators(Xr, Yr), N)
        return float(min(val, m / N))
    # Upper bounds: couplings that are easy to evaluate.
    cands = [_column_fractions(X, Y, N), _column_fractions(Xr, Yr, N)]
    if perm is not None:
        cands.append(_column_fractions(Xr, Yr[perm], N))
    agg = (lambda f: f.mean()) if p == 1 else (lambda f: f.max())
    return float(min(agg(f) for f in cands))


# --------------------------------------------------------------------------- #
# Thresholds
# --------------------------------------------------------------------------- #

#: Short labels of the `thresholds` keys, naming the paper's result.
THRESHOLD_LABELS: dict[str, str] = {
    "m_a/2n": "m_A/2n (missing, Cor. 2)",
    "m_a/4n": "m_A/4n (replace, Cor. 2)",
    "rho_learn": "(m_A-1)/(n+(m_A-1)(m_A-2)) (A2 learnable, Lemma 3)",
    "rho_unlearnable": "(m_A-1)/n (A2 unrecoverable, Lemma 3)",
    "1/n": "1/n (A3 unknown A, Lemma 2)",
}


def thresholds(A, **m_a_kwargs) -> dict[str, float]:
    """Budgets at which the paper's guarantees for structure A change.

    With n = rows of A and m = m_A:

    * ``"m_a/2n"`` = m/(2n): below it, missing entries leave at most half of
      the samples unrecoverable, and the error is O(alpha n/m_A) (note after
      Corollary cor:upperBoundStructure).
    * ``"m_a/4n"`` = m/(4n): the same for replaced entries.
    * ``"rho_learn"`` = (m-1)/(n+(m-1)(m-2)): below it an A2 adversary leaves
      an unknown structure learnable (Lemma lm:recovery_rho).
    * ``"rho_unlearnable"`` = (m-1)/n: at or above it, no corrupted sample is
      recoverable with unknown structure (Lemma lm:recovery_rho).
    * ``"1/n"``: an A3 adversary with unknown structure hides a whole
      coordinate at or above it (Lemma lemma:metaUnknownA3).

    Lemma lm:recovery_rho assumes A of full column rank; m_A uses the rank
    of A either way.

    Parameters
    ----------
    A : array_like of shape (n, r)
        The structure.
    **m_a_kwargs
        Passed to `m_a`.

    Returns
    -------
    dict of str to float
        The keys of `THRESHOLD_LABELS`; values in [0, 1], ordered
        rho_learn <= rho_unlearnable and m_a/4n <= m_a/2n <= 1/2.

    Raises
    ------
    ValueError
        As `m_a`.
    """
    m = m_a(A, **m_a_kwargs)  # validates A
    n = np.shape(A)[0]
    return {
        "m_a/2n": m / (2 * n),
        "m_a/4n": m / (4 * n),
        "rho_learn": rho_learn(n, m),
        "rho_unlearnable": (m - 1) / n,
        "1/n": 1 / n,
    }


def rho_learn(n: int, m: int) -> float:
    """(m-1)/(n+(m-1)(m-2)): the A2 budget below which an unknown structure is learnable.

    The bound of Lemma lm:recovery_rho (and Theorem thm:metaUnknownA2).

    Parameters
    ----------
    n : int
        Coordinates.
    m : int
        m_A of the structure.

    Returns
    -------
    float
    """
    return (m - 1) / (n + (m - 1) * (m - 2))


def general_position_m_a(A) -> int:
    """n - rank(A) + 1: m_A of an A whose every rank(A) rows are linearly independent.

    It is the largest m_A an n-row A of that rank can have (removing n - r + 1
    rows leaves r - 1, of rank below r), and the value the proof of Lemma
    lm:recovery_rho takes for A "of full rank". An A with structure (zeros,
    blocks) has a smaller m_A, for which the lemma's bounds are not proven; the
    paper's block-diagonal A (two 8 x 4 blocks) has m_A = 5 against
    n - r + 1 = 9.

    Parameters
    ----------
    A : (n, r) array.
    """
    A = _validated_matrix(A)
    return int(A.shape[0] - np.linalg.matrix_rank(A) + 1)


def general_position_label(n_minus_r_plus_1: int, m: int) -> str:
    """Legend label of `rho_learn` at m_A = n - r + 1, for an A whose m_A is ``m``.

    Parameters
    ----------
    n_minus_r_plus_1 : int
        `general_position_m_a` of the structure.
    m : int
        Its actual m_A.

    Returns
    -------
    str
    """
    return (f"(m_A-1)/(n+(m_A-1)(m_A-2)) at m_A = n-r+1 = {n_minus_r_plus_1}, as Lemma 3 "
            f"assumes (this A has m_A = {m})")


# --------------------------------------------------------------------------- #
# Figure fig:disCompare: d_TV against d_ENTRY on a two-dimensional uniform
# --------------------------------------------------------------------------- #

#: The values section sec:dentry states for the example of `dis_compare_example`.
DIS_COMPARE_PAPER = {"D2": {"d_tv": 3 / 4, "d_entry1": 1 / 2},
                     "D3": {"d_tv": 3 / 4, "d_entry1": 3 / 8}}


def dis_compare_example(k: int = 16, *, seed: int = 0, shift: float = 1.0) -> dict[str, np.ndarray]:
    """Samples of the example of Figure fig:disCompare (section sec:dentry).

    D1 is uniform on the unit square. D2 corrupts both coordinates of the
    samples in the upper-left quadrant and one coordinate of those in the
    lower-left (the horizontal one) and upper-right (the vertical one)
    quadrants; D3 corrupts the horizontal coordinate of the samples in the
    left-most 3/4 of the square. A corrupted coordinate is moved by ``shift``
    out of [0, 1] (a horizontal one to the left, a vertical one up), so that
    it equals no value of D1; then d_TV(D1, D2) = d_TV(D1, D3) = 3/4, while
    d_ENTRY^1(D1, D2) = 1/2 and d_ENTRY^1(D1, D3) = 3/8 (the paper's numbers,
    `DIS_COMPARE_PAPER`), and d_ENTRY^inf is 1/2 and 3/4.

    The sample of D1 is stratified: one uniform point in each cell of a k x k
    grid. It is still a sample of the uniform law, and with k a multiple of 4
    every quadrant and the left-most 3/4 hold exactly their share of the
    points, so the empirical distances (`d_tv_empirical`, `d_entry`) equal the
    population ones.

    Parameters
    ----------
    k : grid side; N = k * k points.
    seed : seed of the points inside their cells.
    shift : how far a corrupted coordinate moves (> 1 keeps it out of [0, 1]
        whatever its value; 1 suffices for the half-open cells used here).

    Returns
    -------
    ``{"D1": X, "D2": Y2, "D3": Y3}``, each (k * k, 2); row i of Y2 and Y3 is
    the corruption of row i of X.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not shift >= 1.0:
        raise ValueError(f"shift must be at least 1 to move a value out of [0, 1], got {shift}")
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    cells = np.stack([i.ravel(), j.ravel()], axis=1).astype(float)
    X = (cells + rng.random(cells.shape)) / k  # in [0, 1)
    left, up = X[:, 0] < 0.5, X[:, 1] >= 0.5
    Y2 = X.copy()
    Y2[left, 0] -= shift  # upper-left and lower-left: the horizontal coordinate
    Y2[up, 1] += shift  # upper-left and upper-right: the vertical coordinate
    Y3 = X.copy()
    Y3[X[:, 0] < 0.75, 0] -= shift
    return {"D1": X, "D2": Y2, "D3": Y3}


#: The paper's worked examples by figure label (a suite's ``theory_figures`` names them).
EXAMPLES = {"fig:disCompare": dis_compare_example}
