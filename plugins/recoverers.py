"""Built-in recoverers: the *Recover* step of the paper's two-step meta-algorithm.

Missing entries (NaN):

- ``none``: the identity (the one-step baselines).
- ``exact``: Two-Step-E, least squares on the visible entries with the known A
  (supplementary, "Details of the Recovery Steps").
- ``ithsvd``: Two-Step-M, matrix completion by iterative hard-thresholded SVD
  exactly as the supplementary states it (median start, rank projection copied
  into the missing entries until the change is small), with optional jumps to
  the iteration's limit where that limit is unique (``limit_jumps``).
  cmbench's own completion, ``ppca-impute``, lives in plugins/ppca.py.

Replaced entries (known A):

- ``randomized``: Algorithm alg:approx (random r-row systems, keep the sparsest
  residual).
- ``basis-pursuit``: min ||e||_1 s.t. F e = F x~ with F A = 0 (supplementary,
  "Connection ... Sparse Recovery").
- ``omp``: orthogonal matching pursuit on the same system.

Every recoverer copies its input; NaN left in the output means "not recovered".
The linear algebra is batched (`cmbench.builtins.batched`): rows are grouped by
missing pattern, one small factorization per pattern (all patterns in one
batched call) serves all its rows, and no Python loop runs per row.
"""
from __future__ import annotations

import math

import numpy as np

import cmbench
from cmbench.builtins import batched

# scipy is imported where it is used: listing the plugins stays fast.

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
    return U[:, s > batched.rank_tol(s, rcond)]


def _polish(Xt: np.ndarray, E: np.ndarray, A: np.ndarray, tol: float) -> np.ndarray:
    """Refit x~ - e exactly on the entries the sparse error e leaves untouched.

    The LP / OMP solution is exact only to solver precision; treating e's
    support as missing and solving the known-structure least squares (as
    ``exact`` does) gives the sample to machine precision. Rows whose
    off-support entries no longer determine z keep ``x~ - e``.
    """
    support = np.abs(E) > _entry_tol(Xt, tol)
    fitted, ok = batched.fit_known(np.where(support, np.nan, Xt), A, rcond=1e-10)
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
    """No recovery: X as it is, as a read-only view (copied only to make it float).

    The baseline for the one-step estimators (empirical mean, C-median, ...).
    No copy: the runner shares a recovery equal to the corruption with it, and
    a copy made only to be dropped was one matrix more at the unit's peak (1.28
    GB at DKK17's d = 400); read-only, so that no caller writes into X through it.

    Parameters
    ----------
    X : (N, n) float, corrupted.

    Returns
    -------
    (N, n) float, X as it is.
    """
    out = np.asarray(X, dtype=float).view()
    out.setflags(write=False)
    return out


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
    fitted, ok = batched.fit_known(X, A, rcond, max_missing)
    out = np.where(np.isnan(X) & ok[:, None], fitted, X)
    if unrecovered == "drop":
        out[~ok] = np.nan
    return out


# Sketch width beyond the rank and power iterations of the randomized range
# finder (Halko, Martinsson & Tropp 2011; scikit-learn's defaults).
_OVERSAMPLE = 10


def _power_iterations(rank: int, n: int) -> int:
    return 7 if rank < 0.1 * n else 4


def _top_eigenvectors(G: np.ndarray, k: int) -> np.ndarray:
    """(n, k) eigenvectors of the symmetric G for its k largest eigenvalues."""
    n = G.shape[0]
    if n >= 32 and k < n // 2:  # LAPACK's MRRR on the top k only: several times faster than all n
        import scipy.linalg

        return scipy.linalg.eigh(G, subset_by_index=[n - k, n - 1], check_finite=False)[1]
    return np.linalg.eigh(G)[1][:, n - k:]


# `limit_jumps`: identifiability is checked every _CHECK_EVERY iterations; a row
# counts as identifiable when every eigenvalue of its P_MM is at most 1 - margin,
# margin = max(_MARGIN, _FREE_RATIO * residual^2) (see `ithsvd`). Rows per
# batched eigen/solve call: _ROWS_PER_BATCH.
_CHECK_EVERY, _MARGIN, _FREE_RATIO, _ROWS_PER_BATCH = 10, 1e-7, 1.0, 4096
# Jumps at most before giving up on a certified fixed point (and restoring the
# plain iteration where they began).
_MAX_JUMPS = 200



class _HardImpute:
    """State of the supplementary's iteration, and one iteration of it.

    The top-``rank`` right singular vectors of the filled N x n matrix Z are
    the top eigenvectors of the n x n Gram matrix ``Z^T Z``: the same
    projection as a thin SVD, for an n x n eigenproblem. Rows without a
    missing entry never change, so their part of the Gram matrix is computed
    once; the rows that hold one are kept filled (``R x n``), updated in
    place, in chunks of a few MB.
    """

    def __init__(self, X: np.ndarray, rank: int, svd: str, rng):
        N, n = X.shape
        self.rank, self.svd, self.rng = rank, svd, rng
        incomplete = np.zeros(N, bool)
        self.G_fixed = np.zeros((n, n))
        for sl in batched.row_chunks(N, n):
            miss = np.isnan(X[sl]).any(axis=1)
            incomplete[sl] = miss
            C = X[sl][~miss]
            self.G_fixed += C.T @ C
        self.rows = np.flatnonzero(incomplete)
        Z = X[self.rows]
        mask = np.isnan(Z)
        self.Z = np.where(mask, batched.column_medians(X), Z)
        # flat positions of the missing entries, per chunk of rows (bounded temporaries)
        self.chunks = [(sl, np.flatnonzero(mask[sl])) for sl in batched.row_chunks(len(self.rows), n)]

    def basis(self) -> np.ndarray:
        """(n, rank) orthonormal basis of the top right singular subspace of Z."""
        Z = self.Z
        self.G = G = self.G_fixed + Z.T @ Z
        n, k = G.shape[0], self.rank
        if self.svd == "exact":
            return _top_eigenvectors(G, k)
        # Randomized range finder on Z's row space: Q spans (Z^T Z)^q Z^T Z Omega,
        # then Rayleigh-Ritz (the SVD of Z Q, through Q^T Z^T Z Q).
        width = min(n, k + _OVERSAMPLE)
        Q = np.linalg.qr(G @ self.rng.standard_normal((n, width)))[0]
        for _ in range(_power_iterations(k, n)):
            Q = np.linalg.qr(G @ Q)[0]
        W = np.linalg.eigh(Q.T @ G @ Q)[1][:, width - k:]
        return Q @ W

    def step(self) -> tuple[float, float]:
        """One iteration: project, copy into the missing entries.

        Returns ``||new - old||`` and ``||old||`` over the missing entries.
        """
        V = self.basis()
        self.P = P = V @ V.T
        change = scale = 0.0
        for sl, at in self.chunks:
            Zc = self.Z[sl]
            new = (Zc @ P).take(at)
            old = Zc.take(at)
            d = new - old
            change += float(d @ d)
            scale += float(old @ old)
            Zc.put(at, new)
        return np.sqrt(change), np.sqrt(scale)

    def _buckets(self) -> list:
        """Each incomplete row's missing columns, rows grouped by their count:
        ``[(rows, cols (len(rows), m)), ...]``, computed once."""
        if not hasattr(self, "_by_count"):
            mask = np.zeros(self.Z.shape, bool)
            for sl, at in self.chunks:
                mask[sl].ravel()[at] = True
            count = mask.sum(axis=1)
            self._by_count = [(rows, np.nonzero(mask[rows])[1].reshape(-1, m))
                              for m in np.unique(count) for rows in [np.flatnonzero(count == m)]]
        return self._by_count

    def residual(self) -> float:
        """Relative distance of the filled matrix from rank ``rank`` at the last
        `step`: ``||Z (I - P)||_F / ||Z||_F``, from the Gram matrix."""
        G, P = self.G, self.P
        return float(np.sqrt(max(0.0, 1.0 - np.sum(P * G) / np.trace(G))))

    def margin(self) -> float:
        """The gap below 1 that `identifiable` asks of every eigenvalue:
        ``max(_MARGIN, _FREE_RATIO * residual^2)``. A row free along a
        direction of the limit's subspace shows, under a projector that
        leaves a relative residual e, a gap of at most about e^2."""
        return max(_MARGIN, _FREE_RATIO * self.residual() ** 2)

    def identifiable(self, P: np.ndarray, margin: float) -> bool:
        """Whether every incomplete row's missing entries are determined by its
        visible ones under the projector P: every eigenvalue of every row's
        ``P_MM`` is at most ``1 - margin``.

        An eigenvalue 1 of ``P_MM`` is a direction of range(P) supported on
        the missing entries: a row free to move along it while agreeing with
        its visible entries, whose limit then depends on the iteration's path.
        """
        for rows, cols in self._buckets():
            for lo in range(0, len(rows), _ROWS_PER_BATCH):
                c = cols[lo:lo + _ROWS_PER_BATCH]
                if np.linalg.eigvalsh(P[c[:, :, None], c[:, None, :]])[:, -1].max() > 1.0 - margin:
                    return False
        return True

    def jump(self, P: np.ndarray) -> float:
        """Move every incomplete row to the limit of the plain iteration with P held fixed.

        With P fixed, a row's missing entries follow ``x_M <- P_MM x_M + b``,
        ``b = P_MV x_V``: alternating projection between range(P) and the
        points that agree with the row's visible entries. Where every
        eigenvalue of ``P_MM`` is below 1 (`identifiable`), it converges from
        any start to the one solution of ``(I - P_MM) x_M = b``, which this
        solves for directly.

        Returns
        -------
        float
            ``||new - old||`` over the missing entries.
        """
        change = 0.0
        for rows, cols in self._buckets():
            for lo in range(0, len(rows), _ROWS_PER_BATCH):
                r, c = rows[lo:lo + _ROWS_PER_BATCH], cols[lo:lo + _ROWS_PER_BATCH]
                x = self.Z[r]
                old = np.take_along_axis(x, c, 1)
                PMM = P[c[:, :, None], c[:, None, :]]
                b = np.take_along_axis(x @ P, c, 1) - np.einsum("rij,rj->ri", PMM, old)
                new = np.linalg.solve(np.eye(c.shape[1]) - PMM, b[:, :, None])[:, :, 0]
                change += float(np.sum((new - old) ** 2))
                np.put_along_axis(x, c, new, 1)
                self.Z[r] = x
        return float(np.sqrt(change))

    def result(self, X: np.ndarray) -> np.ndarray:
        """A copy of X with the incomplete rows replaced by their current fill."""
        out = np.array(X, dtype=float, copy=True)
        out[self.rows] = self.Z
        return out


def ithsvd(X: np.ndarray, *, rng=None, structure=None, rank=None, tol: float = 1e-6,
           max_iter: int = 100, svd: str = "exact", init: str = "median", limit_jumps: bool = False):
    """Two-Step-M: matrix completion by iterative hard-thresholded SVD, as the supplementary states it.

    The supplementary ("Details of the Recovery Steps"): fill the missing
    entries with the coordinate-wise medians of the visible ones, then repeat
    "compute the rank projection, replace the entries that are missing
    initially with the corresponding entries from the projection" until
    convergence. The projection is the best rank-``rank`` approximation of
    the filled N x n matrix Z (uncentred: its truncated SVD,
    ``U_r S_r V_r^T = Z V_r V_r^T``). The iteration stops after the first
    iteration whose relative change over the missing entries,
    ``||new - old|| / ||old||`` (old: their values before that iteration's
    copy), is at most ``tol``, or after ``max_iter`` iterations. Visible
    entries are never changed; every missing entry is filled, rows whose
    every entry is missing included (they take the median row's projection).

    V_r comes from the n x n Gram matrix ``Z^T Z`` (its top eigenvectors are
    Z's top right singular vectors, so the projection is the thin SVD's, to
    rounding); the rows without a missing entry enter it once. With
    ``svd="randomized"`` (the paper's acceleration) V_r comes instead from a
    randomized range finder of Z's row space (oversampling 10, 4-7 power
    iterations, Rayleigh-Ritz), drawn from ``rng`` at each iteration.

    ``limit_jumps=True`` goes beyond the paper's text (off by default) to
    reach the same limit sooner. Where the plain iteration crawls (a row
    whose visible entries barely determine its missing ones approaches its
    limit at a rate close to 1), it moves every incomplete row to the limit
    the plain iteration would reach with the current projector P held fixed
    (`_HardImpute.jump`: one small linear solve per row), then alternates
    plain iterations and jumps. It does so only while every incomplete row
    is identifiable under P: every eigenvalue of its ``P_MM`` (the rows and
    columns of its missing entries) is at most ``1 - margin``, so that the
    fixed-projector limit is unique whatever the path; the margin is the
    larger of 1e-7 and the squared relative residual of the filled matrix
    off rank ``rank`` (a row free along a direction shows about that gap
    while P still moves). Checks come every 10 iterations. It stops, with
    ``converged``, at a fixed point of the plain map: the iteration's plain
    step and the jump both change the missing entries by at most ``tol``
    relative, every row identifiable there. If identifiability is lost, or
    no such point is reached within ``max_iter`` iterations or 200 jumps in
    all, the jumps are undone and the plain iteration continues from where
    they began, under the same stopping rule. So the result is either such
    a certified fixed point or exactly the plain iteration's result (with
    ``svd="exact"``; with ``"randomized"`` the undone iterations have drawn
    from ``rng``, so the later sketches are other draws). Where
    the visible entries leave a row free along a direction of the subspace,
    the plain limit depends on the path and no jump is kept.

    Parameters
    ----------
    X : (N, n) float, NaN = missing.
    rank : the rank of the projection (the data set's hint; required).
    tol : relative change of the missing entries at which it stops.
    max_iter : iterations at most (0: the median fill).
    svd : ``"exact"`` or ``"randomized"``.
    init : the start; ``"median"`` (the supplementary's) is the one there is.
    limit_jumps : jump to the fixed-projector limit where every row is
        identifiable (beyond the paper; see above).

    Returns
    -------
    X_filled : (N, n) float.
    info : ``{"converged": bool, "iterations": int}``, and with
        ``limit_jumps`` also ``"jumps"``: how many jumps the returned fill
        took (0: it is the plain iteration's).

    Raises
    ------
    cmbench.NotApplicable
        Without a rank hint.
    cmbench.Undefined
        When a column has no visible entry (no median to start from).
    ValueError
        For a rank outside 1..n or an unknown ``svd`` or ``init``.
    """
    X = np.asarray(X, dtype=float)
    N, n = X.shape
    k = batched.check_rank(rank, n, "ithsvd")
    if svd not in ("exact", "randomized"):
        raise ValueError(f"ithsvd: svd must be 'exact' or 'randomized', got {svd!r}")
    if init != "median":
        raise ValueError(f"ithsvd: init must be 'median', got {init!r}")
    seen = np.zeros(n, bool)
    any_missing = False
    for sl in batched.row_chunks(N, n):
        miss = np.isnan(X[sl])
        seen |= ~miss.all(axis=0)
        any_missing = any_missing or bool(miss.any())
    if not any_missing:
        return np.array(X, copy=True), {"converged": True, "iterations": 0}
    if not seen.all():
        raise cmbench.Undefined(f"ithsvd: column(s) {np.flatnonzero(~seen).tolist()} have no visible entry")
    state = _HardImpute(X, k, svd, _as_rng(rng))
    max_iter = int(max_iter)
    converged, it, jumps, spent, saved = False, 0, 0, 0, None
    while it < max_iter:
        it += 1
        change, scale = state.step()
        if saved is None:
            if change <= tol * scale:
                converged = True
                break
            if (limit_jumps and spent < _MAX_JUMPS and it % _CHECK_EVERY == 0
                    and state.identifiable(state.P, state.margin())):
                saved = (it, state.Z.copy())
                state.jump(state.P)
                jumps, spent = 1, spent + 1
            continue
        # Jumping: done at a fixed point of the plain map, where the plain step
        # and the jump to the fixed-projector limit both leave the fill in place,
        # with every row identifiable there.
        if state.identifiable(state.P, state.margin()):
            change = max(change, state.jump(state.P))
            jumps, spent = jumps + 1, spent + 1
            if change <= tol * scale:
                converged, saved = True, None
                break
            if it < max_iter and spent < _MAX_JUMPS:
                continue
        # No certified fixed point: back to the plain iteration where the jumps began.
        (it, state.Z), saved, jumps = saved, None, 0
    if saved is not None:  # the first jump came at the last iteration
        (it, state.Z), jumps = saved, 0
    info = {"converged": converged, "iterations": it}
    if limit_jumps:
        info["jumps"] = jumps
    return state.result(X), info


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


def _sparse_error_problem(X, structure, name: str, tol: float):
    """The sparse-error view of ``X`` shared by basis pursuit and OMP.

    Parameters
    ----------
    X : (N, n) array-like, corrupted by replacements.
    structure : (n, r) the known A.
    name : the recoverer's name, for `_structure`'s error message.
    tol : relative tolerance of "in range(A)".

    Returns
    -------
    X : (N, n) float.
    A : (n, r) the checked structure.
    F : (p, n) rows spanning the null space of A^T (`_null_space_rows`).
    rows : indices of the rows off range(A) (`_replaced_rows`).
    """
    X = np.asarray(X, dtype=float)
    A = _structure(structure, X.shape[1], name)
    return X, A, _null_space_rows(A), _replaced_rows(X, _orthonormal_range(A), tol)


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

    X, A, F, rows = _sparse_error_problem(X, structure, "basis-pursuit", tol)
    out = X.copy()
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
    X, A, F, rows = _sparse_error_problem(X, structure, "omp", tol)
    out = X.copy()
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
    """The built-in recoverers: ``none``, ``exact``, ``ithsvd`` (missing entries) and
    ``randomized``, ``basis-pursuit``, ``omp`` (replaced entries)."""
    return [
        cmbench.Recoverer(
            "none", none, params={}, modes=("missing", "replace", "delete"), rank_hint=False,
            description="no recovery: the data as corrupted (one-step baselines)"),
        cmbench.Recoverer(
            "exact", exact, choices={"rule": ("rank", "m_a"), "unrecovered": ("keep", "drop")},
            ranges={"rcond": (0.0, None)},
            modes=("missing",), needs_structure=True, rank_hint=False,
            description="Two-Step-E: least squares on the visible entries with the known A"),
        cmbench.Recoverer(
            "ithsvd", ithsvd,
            params={"tol": 1e-6, "max_iter": 100, "svd": "exact", "init": "median", "limit_jumps": False},
            choices={"svd": ("exact", "randomized"), "init": ("median",), "limit_jumps": (True, False)},
            ranges={"tol": (0.0, None), "max_iter": (0, None), "rank": (1, None)},
            modes=("missing",),
            description="Two-Step-M: the supplementary's iterative hard-thresholded SVD (median start, rank hint)"),
        cmbench.Recoverer(
            "randomized", randomized, params={"c": 2.0, "trials": 1000, "tol": 1e-9},
            ranges={"c": (0.0, None, "()"), "trials": (1, None), "tol": (0.0, None)},
            modes=("replace",), needs_structure=True, rank_hint=False,
            description="Algorithm alg:approx: best of r^c random r-row systems (sparsest residual)"),
        cmbench.Recoverer(
            "basis-pursuit", basis_pursuit, params={"tol": 1e-9, "chunk": 128, "polish": True},
            choices={"polish": (True, False)}, ranges={"tol": (0.0, None), "chunk": (1, None)},
            modes=("replace",), needs_structure=True, rank_hint=False,
            description="basis pursuit: min ||e||_1 s.t. F e = F x (F A = 0), by LP"),
        cmbench.Recoverer(
            "omp", omp, params={"tol": 1e-9, "max_sparsity": 0, "polish": True},
            choices={"polish": (True, False)}, ranges={"tol": (0.0, None), "max_sparsity": (0, None)},
            modes=("replace",), needs_structure=True, rank_hint=False,
            description="orthogonal matching pursuit on F e = F x (F A = 0)"),
    ]
