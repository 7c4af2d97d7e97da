"""Built-in adversaries: the corruption models of "On Robust Mean Estimation
under Coordinate-level Corruption" (ICML 2021), Section sec:corruptionModels.

Every adversary has the signature ``corrupt(X, budget, *, rng, structure,
**params) -> X_corrupted`` and declares its ``level``, which fixes what the
budget means (see `budget_count` for the rounding):

- ``"sample"`` (A1^eps): at most ``floor(eps * N)`` rows are touched;
- ``"value"`` (A2^rho): at most ``floor(rho * N)`` entries of each column;
- ``"coordinate"`` (A3^alpha): at most ``floor(alpha * N * n)`` entries in all.

Common rules: the input is never modified; row i of the output is the
corruption of row i of the input; hidden entries become NaN, replaced entries
are finite; entries already NaN in the input count as already hidden (they are
never picked again and cost nothing); a budget of 0 returns an unchanged copy.

Several adversaries pick "the samples that shift the mean most" as the rows
with the largest projection on the top principal direction ``v`` of the clean
data. Sign rule (``side`` parameter): ``v`` is first normalised so that its
largest-magnitude entry is positive (ties, up to a relative 1e-8: lowest
index); ``side="auto"`` then
flips it when the ``k`` largest projections on ``-v`` sum to strictly more
than those on ``v`` (``k`` = the number of rows the adversary will touch), i.e.
it attacks the heavier tail; ``"positive"`` and ``"negative"`` force a sign.
Ties in projection are broken by lower row index. NaN entries are mean-imputed
for the principal direction only.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

import cmbench
from cmbench.theory import CHUNK_ELEMENTS, budget_count, critical_set, hidden_direction

__all__ = [
    "hide_smallest", "hide_random", "hide_samples", "replace_samples", "replace_mixture",
    "hide_tail", "hide_structured", "replace_values", "replace_structured",
    "register_adversaries",
]

_SIDES = ("auto", "positive", "negative")


# --------------------------------------------------------------------------- helpers

def _as_data(X: np.ndarray) -> np.ndarray:
    """A float64 copy of X (so the caller's array is never touched)."""
    out = np.array(X, dtype=np.float64, copy=True)
    if out.ndim != 2:
        raise ValueError(f"X must be a 2-D (N, n) array, got shape {out.shape}")
    return out


def _copy_and_count(X: np.ndarray, budget: float, unit: str) -> tuple[np.ndarray, int]:
    """A float64 copy of X and what ``budget`` buys of it: ``floor(budget * N)`` for
    ``unit="rows"`` (A1 rows, A2 entries per column), ``floor(budget * N * n)`` for
    ``unit="entries"`` (A3)."""
    out = _as_data(X)
    return out, budget_count(budget, out.shape[0] if unit == "rows" else out.size)


def _centered(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(X - column means) with NaN set to 0 (mean imputation), and the means.

    Columns without a visible entry get mean 0.
    """
    visible = ~np.isnan(X)
    count = visible.sum(axis=0)
    mu = np.where(visible, X, 0.0).sum(axis=0) / np.maximum(count, 1)
    return np.where(visible, X - mu, 0.0), mu


def _principal(Xc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending, as variances) and eigenvectors of the covariance of Xc.

    The n x n scatter matrix is decomposed rather than the N x n data: N >> n here.
    """
    N = Xc.shape[0]
    w, V = np.linalg.eigh(Xc.T @ Xc / max(N - 1, 1))
    return np.clip(w[::-1], 0.0, None), V[:, ::-1]


def _canonical(v: np.ndarray) -> np.ndarray:
    """v with its largest-magnitude entry positive.

    Ties (magnitudes within a relative 1e-8 of the largest, so that round-off
    cannot flip the choice) go to the lowest index.
    """
    a = np.abs(v)
    i = int(np.argmax(a >= a.max() * (1 - 1e-8)))
    return v if v[i] >= 0 else -v


def _topk_sum(p: np.ndarray, k: int) -> float:
    if k <= 0 or p.size == 0:
        return 0.0
    k = min(k, p.size)
    return float(np.partition(p, p.size - k)[p.size - k:].sum())


def _orient(p: np.ndarray, eligible: np.ndarray, k: int, side: str) -> float:
    """The sign (+1 or -1) applied to projections ``p`` by the sign rule."""
    if side == "positive":
        return 1.0
    if side == "negative":
        return -1.0
    if side != "auto":
        raise ValueError(f"side must be one of {', '.join(_SIDES)}, got {side!r}")
    q = p[eligible]
    return -1.0 if _topk_sum(-q, k) > _topk_sum(q, k) else 1.0


def _priority(p: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Indices of the eligible rows by decreasing ``p``, ties by lower row index."""
    idx = np.flatnonzero(eligible)
    return idx[np.argsort(-p[idx], kind="stable")]


def _column_ranks(key: np.ndarray) -> np.ndarray:
    """rank[i, j] = position of row i when column j of ``key`` is sorted ascending.

    One stable argsort for all columns: equal keys keep row order (lower row
    index first) and NaN/inf keys come last.
    """
    order = np.argsort(key, axis=0, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(key.shape[0])[:, None], key.shape), axis=0)
    return rank


def _tail_mask(X: np.ndarray, quota: np.ndarray, largest: bool) -> np.ndarray:
    """Mask of the ``quota[j]`` smallest (or largest) visible values of each column j.

    Columns are sorted a block at a time, so the int64 order and rank arrays
    never reach the size of X (at N = 10^6 they would be twice its size).
    """
    mask = np.empty(X.shape, dtype=bool)
    step = max(1, CHUNK_ELEMENTS // max(1, X.shape[0]))
    for lo in range(0, X.shape[1], step):
        block = X[:, lo:lo + step]
        rank = _column_ranks(-block if largest else block)  # -NaN is NaN: hidden entries still sort last
        mask[:, lo:lo + step] = (rank < quota[None, lo:lo + step]) & ~np.isnan(block)
    return mask


def _estimate_structure(var: np.ndarray, V: np.ndarray, rank: Optional[int],
                        explained: float) -> np.ndarray:
    """A_hat (n x k): the top-k principal directions (``_principal``'s output).

    k = ``rank`` when given, else the smallest k whose components explain at
    least ``explained`` of the total variance (k = 1 for constant data).
    """
    n = V.shape[0]
    if rank is None:
        total = var.sum()
        if total <= 0:
            k = 1
        else:
            k = int(np.searchsorted(np.cumsum(var) / total, explained - 1e-12) + 1)
    else:
        k = int(rank)
    k = min(max(k, 1), n)
    return V[:, :k]


def _structure_plan(X: np.ndarray, budget: float, structure, side: str, rank, explained):
    """Shared by the structured adversaries: which rows, which columns, which direction.

    Returns ``(rows, cols, v, Xc, A)``: the chosen sample indices, the critical
    coordinates ``critical_rows(A)`` (m_A of them), the oriented top principal direction, the
    centred data and the structure used; ``rows`` is empty when the budget buys
    less than one critical set.
    """
    N, n = X.shape
    total = budget_count(budget, N * n)
    Xc, _ = _centered(X)
    var, V = _principal(Xc)
    if structure is None:
        A = _estimate_structure(var, V, rank, explained)
    else:
        A = np.asarray(structure, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != n:
        raise ValueError(f"structure must be an (n={n}) x r matrix, got shape {A.shape}")
    try:
        cols = critical_set(A)
    except ValueError as exc:  # rank 0 or not finite: the attack does not exist
        raise cmbench.NotApplicable(str(exc)) from None
    m = cols.size
    v = _canonical(V[:, 0])
    p = Xc @ v
    # A row costs its visible critical entries; rows whose critical entries are
    # all hidden already are unrecoverable and cost nothing, so they are skipped.
    cost = (~np.isnan(X[:, cols])).sum(axis=1)
    eligible = cost > 0
    sign = _orient(p, eligible, total // max(m, 1), side)
    order = _priority(sign * p, eligible)
    rows = order[np.cumsum(cost[order]) <= total]  # a prefix: the cumulative cost only grows
    return rows, cols, sign * v, Xc, A


# --------------------------------------------------------------------------- A2: value level

def hide_smallest(X: np.ndarray, budget: float, *, rng=None, structure=None) -> np.ndarray:
    """Hide the ``floor(rho * N)`` smallest values of each coordinate (A2^rho, missing).

    The corruption of the paper's experiments (Section sec:experiments: "we
    inject missing values by hiding the smallest eps fraction of each
    dimension"), the worst A2 corruption for the empirical mean or median of a
    Gaussian. Budget rule: at most ``floor(rho * N)`` entries per column.
    Ties are broken deterministically by a stable sort (lower row index first).
    Entries already NaN are not picked again; a column with fewer visible
    values than the quota is hidden entirely.

    Parameters
    ----------
    X : (N, n) float array, NaN = missing. Not modified.
    budget : rho in [0, 1].
    rng, structure : unused (deterministic, structure-agnostic).

    Returns
    -------
    ndarray of shape (N, n)
        The smallest visible values of each column hidden (NaN).
    """
    out, k = _copy_and_count(X, budget, "rows")
    if k == 0:
        return out
    out[_tail_mask(out, np.full(out.shape[1], k), largest=False)] = np.nan
    return out


def hide_random(X: np.ndarray, budget: float, *, rng=None, structure=None) -> np.ndarray:
    """Hide ``floor(rho * N)`` uniformly random entries of each coordinate (A2^rho, MCAR).

    The non-adversarial baseline of the value-fraction adversary of Section
    sec:corruptionModels: missing completely at random, independently per
    column. Budget rule: at most ``floor(rho * N)`` entries per column, drawn
    without replacement among the visible entries (fewer when fewer are visible).

    Parameters
    ----------
    X : (N, n) float array, NaN = missing. Not modified.
    budget : rho in [0, 1].
    rng : numpy Generator (or a seed) driving the choice.
    structure : unused.

    Returns
    -------
    ndarray of shape (N, n)
        A random draw of visible entries per column hidden (NaN).
    """
    out, k = _copy_and_count(X, budget, "rows")
    if k == 0:
        return out
    keys = np.random.default_rng(rng).random(out.shape)
    keys[np.isnan(out)] = np.inf  # already hidden: never among the k first
    out[(_column_ranks(keys) < k) & ~np.isnan(out)] = np.nan
    return out


def replace_values(X: np.ndarray, budget: float, *, rng=None, structure=None,
                   shift: float = 3.0) -> np.ndarray:
    """Push the ``floor(rho * N)`` largest values of each coordinate further out (A2^rho, replace).

    The replacement analogue of `hide_smallest` (paper, Section
    sec:corruptionModels: A2 "is allowed to corrupt up to a rho-fraction of
    values in each coordinate"): each chosen value x_ij becomes
    ``x_ij + shift * s_j`` with s_j the column's standard deviation (over
    visible entries; 1 for a constant column), which biases the mean upward
    by about ``rho * shift * s_j``. Budget rule: at most ``floor(rho * N)``
    entries per column; ties by lower row index; NaN entries are not picked.

    Parameters
    ----------
    X : (N, n) float array, NaN = missing. Not modified.
    budget : rho in [0, 1].
    rng, structure : unused (deterministic).
    shift : displacement in units of each column's standard deviation.

    Returns
    -------
    ndarray of shape (N, n)
        The largest values of each column moved ``shift`` standard deviations further out.
    """
    out, k = _copy_and_count(X, budget, "rows")
    if k == 0:
        return out
    mask = _tail_mask(out, np.full(out.shape[1], k), largest=True)
    Xc, _ = _centered(out)
    count = np.maximum((~np.isnan(out)).sum(axis=0), 1)
    scale = np.sqrt((Xc ** 2).sum(axis=0) / count)
    scale[scale == 0] = 1.0
    out = np.where(mask, out + float(shift) * scale, out)
    return out


# --------------------------------------------------------------------------- A1: sample level

def hide_samples(X: np.ndarray, budget: float, *, rng=None, structure=None,
                 side: str = "auto") -> np.ndarray:
    """Hide whole rows: the ``floor(eps * N)`` samples that shift the mean most (A1^eps, missing).

    The sample-level adversary of the strong contamination model (paper,
    Section sec:background, A1^eps), restricted to deletions: it removes the
    rows with the largest projection on the top principal direction of the
    clean data (sign rule in the module docstring), which biases the mean of
    the rest along that direction. Budget rule: at most ``floor(eps * N)``
    rows touched. Rows already entirely NaN are not picked.

    Parameters
    ----------
    X : (N, n) float array, NaN = missing. Not modified.
    budget : eps in [0, 1].
    rng, structure : unused (deterministic).
    side : ``"auto"``, ``"positive"`` or ``"negative"`` (the sign rule).

    Returns
    -------
    ndarray of shape (N, n)
        The chosen rows entirely NaN.
    """
    out, k = _copy_and_count(X, budget, "rows")
    if k == 0:
        return out
    rows = _extreme_rows(out, k, side)[0]
    out[rows] = np.nan
    return out


def replace_samples(X: np.ndarray, budget: float, *, rng=None, structure=None,
                    side: str = "auto", shift: float = 3.0, noise: float = 0.1) -> np.ndarray:
    """Replace whole rows by a shifted cluster (A1^eps, replace: strong contamination).

    The adversary of the strong contamination model (paper, Section
    sec:background; Diakonikolas & Kane 2019). It takes the ``floor(eps * N)``
    rows with the largest projection on the top principal direction v of the
    clean data (sign rule in the module docstring) and replaces each by
    ``mean - shift * s * v + noise * (x_j - mean)``, with s the standard
    deviation of the data along v and x_j a clean row drawn at random from
    ``rng``. The cluster sits on the side opposite to the removed tail, so
    removal and insertion bias the mean the same way; its noise is a scaled
    copy of real deviations, so the fake rows stay in the data's affine span
    (structure-aware methods cannot flag them by a residual alone).
    Budget rule: at most ``floor(eps * N)`` rows touched. Rows entirely NaN
    are not picked; a replaced row is entirely finite.

    Parameters
    ----------
    X : (N, n) float array, NaN = missing. Not modified.
    budget : eps in [0, 1].
    rng : numpy Generator (or a seed) drawing the noise rows.
    structure : unused.
    side : ``"auto"``, ``"positive"`` or ``"negative"`` (the sign rule).
    shift : distance of the cluster from the mean, in units of s.
    noise : scale of the cluster's spread relative to the data's.

    Returns
    -------
    ndarray of shape (N, n)
        The chosen rows replaced by finite cluster points.
    """
    out, k = _copy_and_count(X, budget, "rows")
    if k == 0:
        return out
    rows, v, s, Xc, mu = _extreme_rows(out, k, side)
    donors = np.random.default_rng(rng).integers(0, out.shape[0], size=rows.size)
    out[rows] = mu - float(shift) * s * v + float(noise) * Xc[donors]
    return out


MIXTURE_KINDS = ("hypercube", "point", "gaussian", "cauchy")
#: DKK17's noise (Figure 1): half uniform on {0, 1}^d, half the point (12, -2, 0, ..., 0).
DKK17_NOISE = ({"kind": "hypercube", "weight": 0.5, "low": 0.0, "high": 1.0},
               {"kind": "point", "weight": 0.5, "point": [12.0, -2.0]})
_MIXTURE_KEYS = {"hypercube": {"low", "high"}, "point": {"point"}, "gaussian": {"shift", "sd"},
                 "cauchy": {"shift", "scale"}}


def _mixture_vector(value, n: int, where: str, pad: bool) -> np.ndarray:
    """A number (every coordinate) or a vector of length n; with ``pad``, a vector
    of another length is zero-padded, or cut to its first n coordinates."""
    v = np.asarray(value, dtype=np.float64)
    if v.ndim == 0:
        return np.full(n, float(v))
    if v.ndim != 1 or (v.size != n and not pad) or not np.all(np.isfinite(v)):
        raise ValueError(f"replace-mixture: {where} must be a finite number or a vector of length "
                         f"{n}; got {value!r}")
    return np.concatenate([v, np.zeros(max(0, n - v.size))])[:n]


def _mixture_counts(weights: np.ndarray, k: int) -> np.ndarray:
    """Rows per component: floor of the weighted share, the rest by largest remainder
    (ties to the first), so the counts sum to k and follow the weights exactly when they can."""
    share = weights / weights.sum() * k
    counts = np.floor(share).astype(np.int64)
    rest = k - int(counts.sum())
    if rest:
        counts[np.argsort(-(share - counts), kind="stable")[:rest]] += 1
    return counts


def replace_mixture(X: np.ndarray, budget: float, *, rng=None, structure=None,
                    components=DKK17_NOISE) -> np.ndarray:
    """Replace ``floor(eps N)`` rows chosen at random by draws from a weighted mixture
    (A1^eps, replace: Huber's or the strong contamination's noise models of the
    sample-level studies).

    The rows to replace are drawn uniformly without replacement; the k rows are
    shared among the components in proportion to their weights (floor of each
    share, the rest by largest remainder: exact halves when k is even), then
    each component draws its rows:

    - ``hypercube`` (``low``, ``high``): uniform on {low, high}^n;
    - ``point`` (``point``): a fixed point, zero-padded to n (cut to its
      first n coordinates when longer);
    - ``gaussian`` (``shift``, ``sd``): N(shift, sd^2 I);
    - ``cauchy`` (``shift``, ``scale``): the elliptical multivariate Cauchy,
      ``shift + scale * z / |g|`` with z ~ N(0, I_n), g ~ N(0, 1) (a
      multivariate t with one degree of freedom).

    ``shift``, ``low``, ``high`` are numbers (every coordinate) or vectors of
    length n. The default is DKK17's noise: half {0, 1}^n, half the point
    (12, -2, 0, ..., 0); with N(1_n, I_n) inliers (data set ``gaussian``,
    ``mean = 1``) it is their Figure 1. The reference code appends its noise
    to round(0.9 N) inliers instead of replacing rows; here exactly
    ``floor(eps N)`` of N rows are noise.

    Parameters
    ----------
    X : (N, n) float array. Not modified.
    budget : eps in [0, 1].
    rng : numpy Generator (or a seed): the rows and the noise.
    structure : unused.
    components : list of tables ``{kind, weight, ...}`` (weight default 1).

    Returns
    -------
    ndarray of shape (N, n)
        The chosen rows replaced by mixture draws (finite).
    """
    out, k = _copy_and_count(X, budget, "rows")
    N, n = out.shape
    specs = list(components) if isinstance(components, (list, tuple)) else None
    if not specs:
        raise ValueError(f"replace-mixture: components must be a non-empty list of tables "
                         f"{{kind = ..., weight = ...}}; got {components!r}")
    weights = []
    for i, spec in enumerate(specs):
        where = f"components[{i}]"
        if not isinstance(spec, dict) or spec.get("kind") not in MIXTURE_KINDS:
            raise ValueError(f"replace-mixture: {where} needs kind = one of {', '.join(MIXTURE_KINDS)}; "
                             f"got {spec!r}")
        extra = set(spec) - {"kind", "weight"} - _MIXTURE_KEYS[spec["kind"]]
        if extra:
            raise ValueError(f"replace-mixture: {where} ({spec['kind']}) has unknown key(s) "
                             f"{', '.join(sorted(extra))}; valid: weight, {', '.join(sorted(_MIXTURE_KEYS[spec['kind']]))}")
        w = spec.get("weight", 1.0)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not (w >= 0 and math.isfinite(w)):
            raise ValueError(f"replace-mixture: {where}.weight must be a number >= 0; got {w!r}")
        weights.append(float(w))
    weights = np.asarray(weights)
    if not weights.sum() > 0:
        raise ValueError("replace-mixture: the components' weights sum to 0")
    if k == 0:
        return out
    gen = np.random.default_rng(rng)
    rows = gen.choice(N, size=k, replace=False)
    first = 0
    for i, (spec, c) in enumerate(zip(specs, _mixture_counts(weights, k))):
        where, kind = f"components[{i}]", spec["kind"]
        if kind == "hypercube":
            low = _mixture_vector(spec.get("low", 0.0), n, f"{where}.low", pad=False)
            high = _mixture_vector(spec.get("high", 1.0), n, f"{where}.high", pad=False)
            draw = np.where(gen.integers(0, 2, size=(c, n), dtype=np.int8) == 1, high, low)
        elif kind == "point":
            if "point" not in spec:
                raise ValueError(f"replace-mixture: {where} (point) needs point = [x1, x2, ...]")
            draw = np.broadcast_to(_mixture_vector(spec["point"], n, f"{where}.point", pad=True), (c, n))
        elif kind == "gaussian":
            sd = float(spec.get("sd", 1.0))
            draw = _mixture_vector(spec.get("shift", 0.0), n, f"{where}.shift", pad=False) \
                + sd * gen.standard_normal((c, n))
        else:
            scale = float(spec.get("scale", 1.0))
            z = gen.standard_normal((c, n))
            g = np.maximum(np.abs(gen.standard_normal(c)), 1e-300)  # g = 0 has probability 0
            draw = _mixture_vector(spec.get("shift", 0.0), n, f"{where}.shift", pad=False) \
                + scale * z / g[:, None]
        out[rows[first:first + c]] = draw
        first += c
    return out


def _extreme_rows(X: np.ndarray, k: int, side: str):
    """The k rows (not entirely NaN) with the largest oriented projection on the top direction.

    Returns ``(rows, v, s, Xc, mu)``: the rows, the oriented unit direction,
    the data's standard deviation along it (1 when 0), the centred data and the means.
    """
    Xc, mu = _centered(X)
    var, V = _principal(Xc)
    v = _canonical(V[:, 0])
    p = Xc @ v
    eligible = ~np.isnan(X).all(axis=1)
    sign = _orient(p, eligible, k, side)
    rows = _priority(sign * p, eligible)[:k]
    return rows, sign * v, (math.sqrt(var[0]) if var[0] > 0 else 1.0), Xc, mu


# --------------------------------------------------------------------------- A3: coordinate level

def hide_tail(X: np.ndarray, budget: float, *, rng=None, structure=None,
              side: str = "largest") -> np.ndarray:
    """Hide the tail of the highest-variance coordinate(s) (A3^alpha, missing).

    "The worst A3 corruption for empirical mean or median is hiding the tail of
    the coordinate with the highest variance" (paper, Section sec:experiments).
    The ``floor(alpha * N * n)`` entries are spent coordinate by coordinate in
    order of decreasing variance (ties: lower column index): the largest (or
    smallest, ``side``) visible values of the first coordinate, and once it is
    entirely hidden (alpha >= 1/n with no NaN in the input) the rest on the
    next coordinate's tail, and so on. Budget rule: at most
    ``floor(alpha * N * n)`` entries in total; ties by lower row index.

    Parameters
    ----------
    X : (N, n) float array, NaN = missing. Not modified.
    budget : alpha in [0, 1].
    rng, structure : unused (deterministic).
    side : ``"largest"`` (upper tail) or ``"smallest"`` (lower tail).

    Returns
    -------
    ndarray of shape (N, n)
        The tails of the highest-variance columns hidden (NaN).
    """
    if side not in ("largest", "smallest"):
        raise ValueError(f"side must be 'largest' or 'smallest', got {side!r}")
    out, total = _copy_and_count(X, budget, "entries")
    if total == 0:
        return out
    N, n = out.shape
    Xc, _ = _centered(out)
    visible = (~np.isnan(out)).sum(axis=0)
    var = (Xc ** 2).sum(axis=0) / np.maximum(visible, 1)
    order = np.argsort(-var, kind="stable")
    spent_before = np.cumsum(visible[order]) - visible[order]
    quota = np.empty(n, dtype=np.intp)
    quota[order] = np.clip(total - spent_before, 0, visible[order])
    out[_tail_mask(out, quota, largest=side == "largest")] = np.nan
    return out


def hide_structured(X: np.ndarray, budget: float, *, rng=None, structure=None,
                    side: str = "auto", rank: Optional[int] = None,
                    explained: float = 0.95) -> np.ndarray:
    """The lower-bound adversary of Theorem thm:lowerBoundStructure (A3^alpha, missing).

    For data x = A z, hiding the m_A coordinates ``critical_rows(A)`` of a
    sample (Definition def:ma) leaves a visible system of lower rank, so the
    sample cannot be recovered; the proof of Theorem thm:lowerBoundStructure
    spends the A3 budget this way on ``floor(alpha * n * N / m_A)`` samples
    and shifts part of the distribution, forcing error Omega(alpha n / m_A).
    The samples chosen are those that shift the mean most: the largest
    projections on the top principal direction (sign rule in the module
    docstring). Budget rule: at most ``floor(alpha * N * n)`` entries in
    total; a sample costs its visible critical entries (m_A without prior
    NaN), samples are taken in priority order while the budget lasts.

    When ``structure`` is None, A is estimated as the top principal subspace
    of the clean data: ``rank`` directions when given, else the smallest
    number explaining ``explained`` (default 95%) of the variance. The
    critical set is `cmbench.theory.critical_set` (exact when affordable,
    else a seeded random search whose set lowers the rank but may exceed
    m_A). Raises `cmbench.NotApplicable` for A of rank 0.

    Parameters
    ----------
    X : (N, n) float array, NaN = missing. Not modified.
    budget : alpha in [0, 1].
    rng : unused (deterministic).
    structure : A (n x r), or None to estimate it.
    side : ``"auto"``, ``"positive"`` or ``"negative"`` (the sign rule).
    rank, explained : how A is estimated when ``structure`` is None.

    Returns
    -------
    ndarray of shape (N, n)
        The m_A critical coordinates of every chosen sample set to NaN.
    """
    out, total = _copy_and_count(X, budget, "entries")
    if total == 0:
        return out
    rows, cols, _, _, _ = _structure_plan(out, budget, structure, side, rank, explained)
    out[np.ix_(rows, cols)] = np.nan
    return out


def replace_structured(X: np.ndarray, budget: float, *, rng=None, structure=None,
                       side: str = "auto", shift: float = 3.0, rank: Optional[int] = None,
                       explained: float = 0.95) -> np.ndarray:
    """Replacement analogue of `hide_structured` (A3^alpha, replace).

    On the same samples as `hide_structured`, the m_A critical coordinates C
    are replaced so that the row becomes ``x + t w``, where w is a unit vector
    of range(A) that vanishes off C (it exists because A restricted to the
    other rows has lower rank). The corrupted row is therefore exactly
    structured, A z' for a shifted z', and agrees with the clean one outside
    C: no decoder can tell it from a clean sample (Lemma
    lemma:corruptionRecover needs fewer than m_A / 2 corrupted entries).
    t = ``shift`` times the standard deviation of the clean data along w;
    w's sign makes it point along the attacked tail (w . v >= 0). Budget
    rule: at most ``floor(alpha * N * n)`` entries in total, as for
    `hide_structured`; entries already NaN stay NaN and cost nothing.

    Parameters
    ----------
    X : (N, n) float array, NaN = missing. Not modified.
    budget : alpha in [0, 1].
    rng : unused (deterministic).
    structure : A (n x r), or None to estimate it (see `hide_structured`).
    side : ``"auto"``, ``"positive"`` or ``"negative"`` (the sign rule).
    shift : size of the displacement along w, in standard deviations.
    rank, explained : how A is estimated when ``structure`` is None.

    Returns
    -------
    ndarray of shape (N, n)
        The chosen samples moved along the hidden direction; all finite.
    """
    out, total = _copy_and_count(X, budget, "entries")
    if total == 0:
        return out
    rows, cols, v, Xc, A = _structure_plan(out, budget, structure, side, rank, explained)
    if rows.size == 0:
        return out
    w = hidden_direction(A, cols)
    if w @ v < 0:
        w = -w
    sd = float(np.std(Xc @ w))
    t = float(shift) * (sd if sd > 0 else 1.0)
    block = np.ix_(rows, cols)
    out[block] = out[block] + t * w[cols]  # NaN + t stays NaN: hidden entries stay hidden
    return out


# --------------------------------------------------------------------------- registration

@cmbench.hookimpl
def register_adversaries():
    """The built-in adversaries of the paper (A1, A2, A3; missing and replace)."""
    A = cmbench.Adversary
    return [
        A("hide-smallest", hide_smallest, params={}, level="value", mode="missing",
          description="A2: hide the rho-fraction smallest values of each coordinate (the paper's experiments)"),
        A("hide-random", hide_random, params={}, level="value", mode="missing",
          description="A2: hide a random rho-fraction of each coordinate (MCAR)"),
        A("replace-values", replace_values, params={"shift": 3.0}, level="value", mode="replace",
          description="A2: push the rho-fraction largest values of each coordinate out by shift std"),
        A("hide-samples", hide_samples, choices={"side": _SIDES}, level="sample", mode="missing",
          description="A1: hide the eps-fraction of rows with the largest top-principal projection"),
        A("replace-samples", replace_samples, choices={"side": _SIDES},
          ranges={"noise": (0.0, None)}, level="sample", mode="replace",
          description="A1: replace the eps-fraction most extreme rows by a shifted cluster (strong contamination)"),
        A("replace-mixture", replace_mixture, params={"components": [dict(c) for c in DKK17_NOISE]},
          level="sample", mode="replace",
          description="A1: replace a random eps-fraction of rows by mixture draws (hypercube, point, gaussian, cauchy)"),
        A("hide-tail", hide_tail, choices={"side": ("largest", "smallest")}, level="coordinate", mode="missing",
          description="A3: hide the tail of the highest-variance coordinate(s), the worst case for mean/median"),
        A("hide-structured", hide_structured, choices={"side": _SIDES},
          ranges={"rank": (1, None), "explained": (0.0, 1.0, "(]")}, level="coordinate", mode="missing",
          description="A3: hide m_A critical coordinates of the most mean-shifting samples (thm:lowerBoundStructure)"),
        A("replace-structured", replace_structured, choices={"side": _SIDES},
          ranges={"rank": (1, None), "explained": (0.0, 1.0, "(]")}, level="coordinate", mode="replace",
          description="A3: move the m_A critical coordinates of chosen samples to a structured wrong point"),
    ]
