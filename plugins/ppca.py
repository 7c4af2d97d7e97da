"""``ppca-impute``: cmbench's own matrix completion, beside the paper's Two-Step-M.

The paper's Two-Step-M is ``ithsvd`` (plugins/recoverers.py), the
supplementary's iteration as it states it. This module holds an improvement
of it that runs under its own name: hard-impute whose refill is a least-squares
completion against a probabilistic-PCA prior (see `ppca_impute` for where it
departs from the paper). The batched linear algebra it shares with ``exact``
lives in `cmbench.builtins.batched`.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

import cmbench
from cmbench.builtins import batched
from cmbench.theory import BLOCK_ELEMENTS


class _Completion:
    """ppca-impute's refill map: moments of the filled data -> refilled data -> moments.

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
        for sl in batched.row_chunks(N, n):
            count[sl] = np.isnan(X[sl]).sum(axis=1)
        self.n_live = int((count < n).sum())
        # the shift of the coordinates; a coarse level shares its fine level's
        self.ref = batched.column_medians(X) if ref is None else ref
        self.groups = self._plan(count)
        self.chunks = []
        for sl in batched.row_chunks(N, n):
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
        chunks = max(1, -(-len(count) // max(1, batched.PASS_ELEMENTS // n)))
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
            s += batched.column_sums(Y)
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

    def finish(self) -> None:
        """Nothing to do: each pass writes the filled rows as it goes."""

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
            s += batched.column_sums(Y)
        return self.theta(S, s), float(np.sqrt(sums[0])), float(np.sqrt(sums[1]))

    # Index arrays of a bucket chunk are cached while their total stays within
    # one estimator block (int64 indices: the block's bytes); beyond it they are rebuilt.
    _INDEX_CACHE_ELEMENTS = BLOCK_ELEMENTS

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
        L, skip = batched.psd_factor(A, tau_m)
        old = np.take(D, at)
        dM = old - batched.psd_solve(L, skip, g)
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
        Rows run along the last axis (contiguous batches for `batched.psd_factor`);
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
        L, skip = batched.psd_factor(G, self.tau, floor=self.tau * float(ell.max()))
        v = v0 + batched.psd_solve(L, skip, rhs)
        if skip.any():
            for q in batched.null_basis(L, skip):
                v -= q * np.einsum("kr,kr->r", q, v)
        dev = np.take(B @ v, atT)                         # the missing entries only
        new = dev + np.take(mu, c)
        change = new - np.take(Y, at)
        sums[0] += change @ change
        sums[1] += dev @ dev
        np.put(Y, at, new)
        new += ref_c
        np.put(block, at, new)



class _PatternCompletion(_Completion):
    """The same refill map, computed once per missing pattern instead of once per row.

    A row's refill is affine in its visible entries, with coefficients that
    depend only on its missing pattern and the model: ``y_M = mu_M + T (y_V -
    mu_V)``, with ``T = -P_MM^{-1} P_MV`` on the m side and ``T = B_M (B_V^T
    B_V + lam I)^+ B_V^T`` on the k side (the same map; directions the visible
    entries leave free cut as there). So a pass needs one map per pattern
    and, per pattern, the count, mean and centred scatter of its rows'
    visible entries, computed once: the moments of the filled data, the
    change of the filled entries and their scale follow from those (equal
    to the row-by-row sums up to rounding) without reading the rows. The
    filled entries are written once, by `finish`, from the last pass's maps.
    Worth it when many rows share each pattern (`worth_it`).
    """

    @staticmethod
    def worth_it(pats: np.ndarray, inverse: np.ndarray) -> bool:
        """Whether the per-pattern pass is the cheaper one.

        A pass costs about as many numpy calls either way; per row, its
        arrays grow with the rows, per pattern with patterns x n^2. So: at
        least 8 incomplete rows per incomplete pattern, and the maps within
        one block of memory.

        Parameters
        ----------
        pats, inverse : `batched.patterns` of the missing mask.

        Returns
        -------
        bool
        """
        n = pats.shape[1]
        count = pats.sum(axis=1)
        live = (count > 0) & (count < n)
        patterns = int(live.sum())
        rows = int(live[inverse].sum())
        return patterns > 0 and rows >= 8 * patterns and patterns * n * n <= BLOCK_ELEMENTS

    def __init__(self, X: np.ndarray, out: np.ndarray, k: int, shrink: float, center: bool,
                 rcond: float, pats: np.ndarray, inverse: np.ndarray, ref: Optional[np.ndarray] = None):
        N, n = X.shape
        self.out, self.n, self.k = out, n, k
        self.shrink, self.center, self.tau = shrink, center, rcond * rcond
        count = pats.sum(axis=1)
        self.ref = batched.column_medians(X) if ref is None else ref
        # the row engine's sides, so both engines solve each pattern alike
        self.groups = self._plan(count[inverse])
        live = np.flatnonzero(count < n)  # patterns of rows with a visible entry (complete ones included)
        keep = np.zeros(len(pats), bool)
        keep[live] = True
        order = np.argsort(inverse, kind="stable")
        order = order[keep[inverse[order]]]  # the live rows, grouped by pattern
        self.miss, self.vis, self.count = pats[live], ~pats[live], count[live]
        sizes = np.bincount(inverse, minlength=len(pats))[live]
        self.bounds = np.concatenate([[0], np.cumsum(sizes)])
        self.order, self.n_live, P = order, int(order.size), len(live)
        self.cnt = sizes.astype(float)
        # The live rows in shifted coordinates, grouped by pattern, missing entries 0:
        # the statistics below, and the rows `finish` fills.
        self.Ys = X[order] - self.ref
        np.nan_to_num(self.Ys, copy=False, nan=0.0)
        self.ybar = np.add.reduceat(self.Ys, self.bounds[:-1], axis=0) / self.cnt[:, None]
        self.C = np.empty((P, n, n))
        for p in range(P):
            E = self.Ys[self.bounds[p]:self.bounds[p + 1]] - self.ybar[p]
            self.C[p] = E.T @ E
        self.T, self.g = np.zeros((P, n, n)), np.zeros((P, n))  # the start: every missing entry at ref
        # Each bucket's patterns and, on the m side, its gather indices (fixed for the run).
        self.buckets = []
        for lo, hi, side in self.groups:
            at = np.flatnonzero((self.count > lo) & (self.count <= hi))
            if at.size == 0:
                continue
            if side == "k":
                self.buckets.append(("k", at, None, None))
                continue
            cols = self._m_columns(self.miss[at], self.count[at])  # (w, R), pads -1
            w = cols.shape[0]
            pad = cols < 0
            # pads index a dummy column n of the extended P (identity there, 0 elsewhere:
            # their unknowns come out 0); pad-pad off-diagonals point at a 0 past the end
            dummy = np.where(pad, n, cols).astype(np.intp)
            Aidx = dummy[:, None, :] * (n + 1) + dummy[None, :, :]
            off = (pad[:, None, :] & pad[None, :, :]) & ~np.eye(w, dtype=bool)[:, :, None]
            Aidx[off] = (n + 1) ** 2
            self.buckets.append(("m", at, dummy, Aidx))

    def start(self) -> np.ndarray:
        """Fill every missing entry with its column median; the moments of that."""
        rows = self.order
        block = self.out[rows]
        np.copyto(block, self.ref, where=np.isnan(block))
        self.out[rows] = block  # all-missing rows are not among them: they stay NaN
        S = np.einsum("p,pi,pj->ij", self.cnt, self.ybar, self.ybar) + self.C.sum(axis=0)
        return self.theta(S, self.cnt @ self.ybar)

    def _maps(self, mu, V, ell, lam) -> np.ndarray:
        """Each pattern's map T (P, n, n): rows on its missing entries, columns on its visible ones."""
        n, k = self.n, self.k
        sig = np.full(n, lam)
        sig[:k] = ell + lam
        p = np.where(sig > 0, sig.min() / np.where(sig > 0, sig, 1.0), 1.0)
        U = V[:, :k]
        Pext = np.zeros((n + 1, n + 1))  # a dummy column n (identity) pads the buckets
        Pext[:n, :n] = (V * p) @ V.T
        Pext[n, n] = 1.0
        Pflat = np.append(Pext.ravel(), 0.0)  # a last 0 for the pads' off-diagonal
        B = U * np.sqrt(ell)
        tau_m = max(self.tau * float(ell.max() / ell.min()), self._TAU_M)
        T = np.zeros((len(self.count), n + 1, n))  # row n: the pads' scratch
        kside = []
        for side, at, dummy, Aidx in self.buckets:
            if side == "k":
                kside.append(at)
                continue
            # m side: -P_MM^{-1} P_M, whose columns on M are then cut (the map reads d_V only)
            L, skip = batched.psd_factor(np.take(Pflat, Aidx), tau_m)
            X = _solve_columns(L, skip, Pext[dummy, :n])  # pads' rows of Pext are 0
            bad = skip.any(axis=0)
            if bad.any():  # P_MM (nearly) singular: the k side's cut decides
                kside.append(at[bad])
                at, dummy, X = at[~bad], dummy[:, ~bad], X[:, ~bad]
            T[at[None, :], dummy, :] = -X
        if kside:
            at = np.concatenate(kside)
            vis = self.vis[at].astype(float)
            KBt = (B.T[:, None, :] * B.T[None, :, :]).reshape(k * k, n)
            G = (KBt @ vis.T).reshape(k, k, -1)
            diag = np.arange(k)
            G[diag, diag] += lam
            L, skip = batched.psd_factor(G, self.tau, floor=self.tau * float(ell.max()))
            coef = _solve_columns(L, skip, B.T[:, None, :] * vis[None, :, :])  # (k, R, n)
            if skip.any():
                for q in batched.null_basis(L, skip):
                    coef -= q[:, :, None] * np.einsum("kr,krj->rj", q, coef)[None]
            T[at, :n, :] = np.einsum("ik,krj->rij", B, coef) * self.miss[at][:, :, None]
        T = T[:, :n, :]
        T *= self.vis[:, None, :]  # columns on the visible entries only
        return T

    def apply(self, theta: np.ndarray):
        """One pass of the refill map, from the patterns' statistics.

        Returns the new moments, the norm of the change of the filled
        entries and the norm of the filled entries about the mean.
        """
        mu, V, ell, lam = self.model(theta)
        T = self._maps(mu, V, ell, lam)
        n, P = self.n, len(self.count)
        g = self.miss * mu - T @ mu  # filled = y + T y + g on each pattern's missing entries
        zbar = self.ybar + np.einsum("pij,pj->pi", T, self.ybar) + g  # the filled rows' mean
        TC = T @ self.C
        # sum over patterns of F C F^T, F = diag(visible) + T, as one product
        F = T + self.vis[:, :, None] * np.eye(n)
        S = (np.einsum("p,pi,pj->ij", self.cnt, zbar, zbar)
             + (self.C + TC).transpose(1, 0, 2).reshape(n, P * n) @ F.transpose(0, 2, 1).reshape(P * n, n))
        s = self.cnt @ zbar
        dT, dg = T - self.T, g - self.g
        r = np.einsum("pij,pj->pi", dT, self.ybar) + dg
        change2 = self.cnt @ np.einsum("pi,pi->p", r, r) + np.vdot(dT @ self.C, dT)
        dev = np.einsum("pij,pj->pi", T, self.ybar - mu)
        scale2 = self.cnt @ np.einsum("pi,pi->p", dev, dev) + np.vdot(TC, T)
        self.T, self.g = T, g
        return self.theta(S, s), float(np.sqrt(max(change2, 0.0))), float(np.sqrt(max(scale2, 0.0)))

    def finish(self) -> None:
        """Write the filled entries of the last pass into ``out``."""
        filled = np.empty_like(self.Ys)
        for p in range(len(self.count)):
            rows = slice(self.bounds[p], self.bounds[p + 1])
            np.matmul(self.Ys[rows], self.T[p].T, out=filled[rows])
            filled[rows] += self.g[p]
        filled += self.ref
        block = self.out[self.order]
        miss = np.repeat(self.miss, self.cnt.astype(np.intp), axis=0)
        block[miss] = filled[miss]
        self.out[self.order] = block


def _solve_columns(L: np.ndarray, skip: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`batched.psd_solve` for several right-hand sides per system: b (m, R, q) -> (m, R, q)."""
    m, R, q = b.shape
    x = batched.psd_solve(np.repeat(L, q, axis=2), np.repeat(skip, q, axis=1), b.reshape(m, R * q))
    return x.reshape(m, R, q)


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


def ppca_impute(X: np.ndarray, *, rng=None, structure=None, rank=None,
                tol: float = 1e-10, max_iter: int = 1000, shrink: float = 1.0,
                center: bool = True, rcond: float = 1e-6, memory: int = 0, coarse: int = 0):
    """cmbench's matrix completion: hard-impute with a least-squares refill against a PPCA prior.

    Goes beyond the paper's Two-Step-M (`ithsvd`, the supplementary's
    iteration), and runs beside it under its own name. Where it departs:

    - **Refill**: each iteration refills every row's missing entries by
      (regularised) least squares against the learned subspace, instead of
      copying the rank projection into them. On exactly low-rank data this
      is alternating projection carried to each row's limit within one pass,
      so it reaches in tens of passes what the copy reaches in thousands.
    - **Prior**: the least squares is the conditional mean of probabilistic
      PCA; on real data it keeps the directions the visible entries barely
      determine from blowing up. It also fills rows that no method can
      identify (too many entries missing) with a conditional mean, where the
      paper's iteration leaves them near the median start: on the paper's
      synthetic data this makes its error lower than the paper's Two-Step-M
      and even than Two-Step-E (the known-A oracle), which leaves such rows
      unrecovered, so it is not a reproduction of the paper's figure.
    - **Centring** (``center=True``): an affine rank-k model about the mean
      of the filled data, where the supplementary projects on a linear
      subspace through the origin.
    - **No randomized SVD**: the subspace is the top eigenvectors of the n x n
      covariance (exact).
    - **Accelerations, both off by default**: Anderson acceleration
      (``memory`` > 0) and a coarse start (``coarse`` > 0). The iteration's
      fixed points are not unique on real data (the completion and the
      subspace determine each other); both accelerations change the path and
      can land on another fixed point than the plain iteration's, reported
      as converged as well. The defaults run the plain iteration.

    How much each departure moves the paper's numbers is measured in
    benchmarks/README.md ("ithsvd and ppca-impute on the paper's data").

    The iteration, per pass:

    1. Subspace: the mean mu and the top-k eigenvectors U (k = ``rank``) of
       the n x n covariance C of ALL filled rows, by ``np.linalg.eigh``: one
       pass over the data (the rows without missing entries contribute a
       Gram matrix computed once). All rows, never the complete ones alone:
       under a value-level adversary those are the rows it chose to leave, a
       biased sample.
    2. Completion, missing entries only: with d = y - mu,
       ``w = argmin ||U_V w - d_V||^2 + sum_j R_j w_j^2`` and
       ``y_M = mu_M + U_M w``, where R_j = ``shrink`` * s2 / (l_j - s2), l_j
       the top eigenvalues of C and s2 the mean of the others: the
       conditional mean of probabilistic PCA. On exactly low-rank data s2 -> 0
       as the fill converges, leaving the exact least-squares completion.
       ``shrink`` must be positive: without the prior (plain least squares)
       the iteration diverges on the paper's data. Directions the visible
       entries do not determine at all (singular value of U_V below
       ``rcond``) get w_j = 0 (the mean) when s2 = 0, the ridge's limit.

    Speed: a row with m missing entries is completed by an m x m solve in its
    missing entries (the conditional mean ``-P_MM^{-1} P_MV d_V`` with P the
    precision matrix) or, when m is large, by the k x k solve above,
    whichever is cheaper; rows are bucketed by m and each bucket is one
    batched Cholesky vectorised across rows. Steps 1 and 2 share one chunked
    pass over the data per iteration, so temporaries stay a few MB. Where
    many rows share each missing pattern (at least 8 incomplete rows per
    pattern, as on a data set with few columns and many rows), a pass is
    computed per pattern instead: a row's refill is affine in its visible
    entries with coefficients set by its pattern, so the moments of the
    filled data and the change of the filled entries follow from each
    pattern's count, mean and scatter of visible entries (computed once),
    equal to the row-by-row pass up to rounding, and the rows are written
    once, after the last pass (from a copy of the data grouped by pattern,
    held for the run: one more array the size of X). The
    iteration is a fixed-point map on the moments (mean, second moment) of
    the filled data; with ``memory`` > 0, Anderson acceleration extrapolates
    those n + n^2 numbers from the last ``memory`` iterations. With
    ``coarse`` > 0 and N >= 4 ``coarse`` rows, the iteration first runs on
    every (N // ``coarse``)-th row and starts the full data from those
    moments instead of the medians'.

    It stops when the filled entries change by less than ``tol`` relative to
    their centred norm. Rows whose every entry is missing are left NaN
    (nothing identifies them); a column with no visible entry raises
    `cmbench.Undefined`.

    Parameters
    ----------
    X : (N, n) float, NaN = missing.
    rank : k, the subspace dimension (the data set's hint; required).
    tol : relative change of the filled entries at which it stops.
    max_iter : iterations (passes over the data) at most.
    shrink : weight (> 0) of the probabilistic-PCA prior in the completion.
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

    Raises
    ------
    cmbench.NotApplicable
        Without a rank hint.
    cmbench.Undefined
        When a column has no visible entry.
    ValueError
        For a rank outside 1..n or ``shrink`` <= 0.
    """
    X = np.asarray(X, dtype=float)
    N, n = X.shape
    k = batched.check_rank(rank, n, "ppca-impute")
    if not shrink > 0:
        # shrink = 0 (plain least squares) diverges on the paper's data: directions
        # the visible entries barely determine blow up.
        raise ValueError(f"ppca-impute: shrink must be > 0, got {shrink}")
    out = X.copy()
    seen = np.zeros(n, bool)  # columns with a visible entry
    any_missing = False
    for sl in batched.row_chunks(N, n):
        miss = np.isnan(X[sl])
        seen |= ~miss.all(axis=0)
        any_missing = any_missing or bool((miss.any(axis=1) & ~miss.all(axis=1)).any())
    if not any_missing:
        return out, {"converged": True, "iterations": 0}
    if not seen.all():
        raise cmbench.Undefined(f"ppca-impute: column(s) {np.flatnonzero(~seen).tolist()} have no visible entry")

    comp = _completion(X, out, k, shrink, center, rcond)
    theta = comp.start()
    info = {}
    step = N // coarse if coarse and N >= 4 * coarse else 1
    if step > 1:
        Xs = np.ascontiguousarray(X[::step])
        if not np.isnan(Xs).all(axis=0).any():  # else the coarse model lacks a column
            small = _completion(Xs, Xs.copy(), k, shrink, center, rcond, ref=comp.ref)
            theta, _, info["coarse_iterations"] = _iterate(small, small.start(), tol, max_iter, memory)
    _, converged, iterations = _iterate(comp, theta, tol, max_iter, memory)
    if iterations:  # else the start's medians stand
        comp.finish()
    return out, {"converged": converged, "iterations": iterations, **info}


def _completion(X: np.ndarray, out: np.ndarray, k: int, shrink: float, center: bool, rcond: float,
                ref: Optional[np.ndarray] = None) -> _Completion:
    """The refill map of X: per pattern where many rows share each missing pattern, else per row."""
    pats, inverse = batched.patterns(np.isnan(X))
    if _PatternCompletion.worth_it(pats, inverse):
        return _PatternCompletion(X, out, k, shrink, center, rcond, pats, inverse, ref=ref)
    return _Completion(X, out, k, shrink, center, rcond, ref=ref)


def _iterate(comp: _Completion, theta: np.ndarray, tol: float, max_iter: int, memory: int):
    """Refill until the filled entries change by at most ``tol`` (relative).

    Parameters
    ----------
    comp : the completion (its ``apply`` refills and returns the new moments).
    theta : the starting moments.
    tol : relative change of the filled entries at which it stops.
    max_iter : passes at most.
    memory : Anderson acceleration depth (0: the plain iteration).

    Returns
    -------
    theta : the last moments.
    converged : bool.
    iterations : the passes made.
    """
    accelerate = _Anderson(memory)
    new = theta  # max_iter < 1: no pass, the start stands
    for it in range(1, max_iter + 1):
        new, change, scale = comp.apply(theta)
        if change <= tol * max(scale, np.finfo(float).tiny):
            return new, True, it
        theta = accelerate(theta, new)
    return new, False, max(0, max_iter)



@cmbench.hookimpl
def register_recoverers():
    """``ppca-impute``, cmbench's own completion (beyond the paper)."""
    return [
        cmbench.Recoverer(
            "ppca-impute", ppca_impute,
            params={"tol": 1e-10, "max_iter": 1000, "shrink": 1.0, "center": True, "rcond": 1e-6,
                    "memory": 0, "coarse": 0},
            choices={"center": (True, False)},
            ranges={"tol": (0.0, None), "max_iter": (0, None), "shrink": (0.0, None, "()"), "rcond": (0.0, None),
                    "memory": (0, None), "coarse": (0, None), "rank": (1, None)},
            modes=("missing",),
            description="cmbench's completion: hard-impute refilled by least squares against a PPCA prior "
                        "(beyond the paper)"),
    ]
