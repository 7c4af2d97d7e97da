"""Estimators of Anderson & Phillips' empirical study, each as their code computes it.

C. Anderson, J. M. Phillips, "Robust High-Dimensional Mean Estimation With
Low Data Size, an Empirical Study" (TMLR 2025; code cullena20/RobustMeanEstimation,
commit 7c68ff4): ``lee-valiant`` (their simple Lee-Valiant), ``ev-pruning``
(eigenvalue pruning with their low-n threshold), ``que`` (quantum entropy
scoring) and ``pgd`` (the projected gradient descent of Cheng, Diakonikolas,
Ge, Soltanolkotabi 2020). Each docstring states the algorithm step by step and
where it departs from their code. ``eps`` is their ``tau``: the corruption
fraction the estimator assumes (0 allowed, as in their eta sweep).
tests/test_ap25_estimators.py checks each against their code's outputs
(tests/fixtures/ap25/).

This built-in plugin registers them itself (`register_estimators`), listed after
`cmbench.builtins.sample_estimators`. Rows
holding a NaN are dropped (the complete rows are used); none modifies its input.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

import cmbench

from .estimator_docs import COMPLETE_ROWS, contract_doc
from .rows import complete_rows, contiguous_block_means, finite, sq_dist

THRESHOLDS = ("low-n", "original")
EV_THRESHOLDS = (*THRESHOLDS, "original-first")
EV_PRUNINGS = ("gaussian", "random", "fixed")
QUE_SCORES = ("sketch", "exact")

# The sketch's series for exp(x) on [-1, 1], as the original code holds it:
# exp(x) = I_0(1) + 2 sum_k I_k(1) T_k(x), cut after T_5, with the modified
# Bessel values I_1(1) .. I_5(1) and, for the constant term, 1.1266066 where
# I_0(1) = 1.266066 (a digit dropped in the code; kept, it is what it computes).
_BESSEL = (0.565159, 0.1357476, 0.0221684, 0.00273712, 0.00027146)
_BESSEL_0 = 1.1266066


def _check_tau(name: str, eps: float) -> float:
    if not 0.0 <= float(eps) < 0.5:
        raise ValueError(f"{name}: eps must be in [0, 0.5), got {eps}")
    return float(eps)


def _choice(name: str, key: str, value, allowed: tuple):
    if value not in allowed:
        raise ValueError(f"{name}: {key} must be one of {allowed}, got {value!r}")
    return value


def _low_n_threshold(n: int, d: int, t: float) -> float:
    """A&P's threshold on the top eigenvalue for small n: ``(1 + sqrt(d/n) + t/sqrt(n))^2``."""
    return (1.0 + math.sqrt(d / n) + t / math.sqrt(n)) ** 2


def _original_threshold(name: str, tau: float) -> float:
    """DKK17's ``1 + 3 tau ln(1/tau)``, for large n."""
    if tau == 0.0:
        raise ValueError(f"{name}: threshold = 'original' needs eps > 0 (it holds ln(1/eps))")
    return 1.0 + 3.0 * tau * math.log(1.0 / tau)


def _trace_scaled(fn: Callable[[np.ndarray], np.ndarray], Y: np.ndarray) -> np.ndarray:
    """A&P's scaling for an unknown covariance: run ``fn`` on ``Y / s`` and
    return its estimate times ``s``, where ``s^2 = tr(sample covariance) / d``
    (divisor N - 1)."""
    s = math.sqrt(float(np.var(Y, axis=0, ddof=1).sum()) / Y.shape[1])
    if not s > 0.0:
        return fn(Y)  # every row equal: nothing to scale
    return fn(Y / s) * s


def _top_eigenpair(M: np.ndarray) -> tuple[float, np.ndarray]:
    """Largest eigenvalue of the symmetric ``M`` and a unit eigenvector."""
    import scipy.linalg  # here: loading the plugins (every worker does) imports no scipy

    m = M.shape[0]
    lam, V = scipy.linalg.eigh(M, subset_by_index=[m - 1, m - 1])
    return float(lam[0]), V[:, 0]


def _top_cov_direction(C: np.ndarray) -> tuple[float, np.ndarray]:
    """Top eigenpair of ``C.T @ C`` (d, d), through the smaller Gram matrix when N < d."""
    N, d = C.shape
    if N >= d:
        return _top_eigenpair(C.T @ C)
    lam, u = _top_eigenpair(C @ C.T)
    v = C.T @ u
    nv = float(np.linalg.norm(v))
    return lam, (v / nv if nv > 0 else np.eye(d)[0])


# -------------------------------------------------------------- lee-valiant


@contract_doc(**COMPLETE_ROWS)
def lee_valiant(X: np.ndarray, *, rng: np.random.Generator | None = None,
                eps: float = 0.1, blocks: int = 10) -> np.ndarray:
    """Lee-Valiant, the simple form A&P run (``lee_valiant_simple`` with
    ``median_of_means(data, 10)`` as pilot).

    1. Pilot: the median of means of ``blocks`` contiguous blocks of the rows
       in their given order, each of ``floor(N / blocks)`` rows (the last
       ``N mod blocks`` rows are left out), coordinate-wise median of the block
       means (`median-of-means` with ``split = "contiguous"``,
       ``median = "coordinate"``).
    2. Keep the ``ceil((1 - eps) N)`` rows nearest to the pilot (Euclidean)
       and return their mean.

    The row order matters through the pilot: outliers appended last all fall
    in the last block(s).

    Parameters
    ----------
    eps : the assumed corruption fraction (A&P's tau), in [0, 0.5).
    blocks : the pilot's number of blocks (A&P: 10; at most N).
    """
    eps = _check_tau("lee-valiant", eps)
    if int(blocks) < 1:
        raise ValueError(f"lee-valiant: blocks must be >= 1, got {blocks}")
    Y = complete_rows(X, "lee-valiant")
    N = Y.shape[0]
    pilot = np.median(contiguous_block_means(Y, int(blocks)), axis=0)
    dist = np.sqrt(sq_dist(Y, pilot))
    s = math.ceil((1.0 - eps) * N)
    keep = np.arange(N) if s >= N else np.argpartition(dist, s - 1)[:s]
    return finite(Y[keep].mean(axis=0), "lee-valiant")


# --------------------------------------------------------------- ev-pruning


def _ev_pruning(Y: np.ndarray, tau: float, gamma: float, t: float, threshold: str, pruning: str,
                uniform: Callable[[], float], deeper_threshold: str | None = None) -> np.ndarray:
    """The pruning loop of `ev_pruning` (its docstring states it); ``uniform``
    draws U(0, 1) for the random rule. ``deeper_threshold`` replaces
    ``threshold`` after the first level (``"original-first"``)."""
    from scipy.special import erfc  # here: loading the plugins (every worker does) imports no scipy

    d = Y.shape[1]
    level = 0
    while True:
        n = Y.shape[0]
        mean = Y.mean(axis=0)
        rule = threshold if (level == 0 or deeper_threshold is None) else deeper_threshold
        bound = _original_threshold("ev-pruning", tau) if rule == "original" else _low_n_threshold(n, d, t)
        lam, v = _top_cov_direction((Y - mean) / math.sqrt(n))
        if lam < bound:
            return mean
        p = Y @ v
        proj = np.abs(p - np.median(p))
        order = np.argsort(proj)
        proj = proj[order]
        if pruning == "random":
            z = math.sqrt(uniform())  # density 2z on [0, 1]
            i = int(np.argmax(proj >= z * proj[-1]))  # the last one always qualifies
        elif pruning == "fixed":
            if tau == 0.0:
                return mean
            i = math.floor(n * (1.0 - 0.5 * tau))
        else:
            log = math.log(d * tau / 0.1) if tau > 0.0 else 0.0
            slack = tau / (d * log) if log != 0.0 else 0.0  # the original divides by zero at d tau = 0.1
            tail = gamma * n * (erfc((proj - 2.0 * tau) / math.sqrt(2.0)) / 2.0 + slack)
            fails = (n - np.arange(n)) > tail
            i = int(np.argmax(fails)) if fails.any() else n - 1
        if i == 0:
            return mean
        Y = Y[order[:i]]
        level += 1


@contract_doc(**COMPLETE_ROWS, rng="Draws the random rule's thresholds (``pruning = \"random\"``); else unused.")
def ev_pruning(X: np.ndarray, *, rng: np.random.Generator | None = None, eps: float = 0.1,
               gamma: float = 5.0, t: float = 10.0, threshold: str = "low-n", pruning: str = "gaussian",
               trace_scaling: bool = False) -> np.ndarray:
    """Eigenvalue pruning (the filter of Diakonikolas, Kamath, Kane, Li,
    Moitra, Stewart 2017) with A&P's threshold for low data size
    (``eigenvalue_pruning(data, tau, gamma=5, t=10)``).

    Repeat on the current rows (n of them, mean m):

    1. ``lambda, v``: the top eigenvalue and eigenvector of the covariance
       ``(1/n) sum (x - m)(x - m)^T``.
    2. If ``lambda < B`` return m, with ``B = (1 + sqrt(d/n) + t/sqrt(n))^2``
       (``threshold = "low-n"``) or ``1 + 3 tau ln(1/tau)`` (``"original"``;
       ``"original-first"``: at the first pass only, low-n after).
    3. Score each row by ``|x.v - median_j x_j.v|`` and sort ascending, s_0 <= ... <= s_{n-1}.
    4. Cut: ``"gaussian"``: the first i with
       ``n - i > gamma n (erfc((s_i - 2 tau)/sqrt 2)/2 + tau/(d ln(10 d tau)))``
       (the slack term 0 at tau = 0), ``i = n - 1`` when none;
       ``"random"``: the first i with ``s_i >= Z s_{n-1}``, Z = sqrt(U) for
       U ~ U(0, 1) from ``rng``; ``"fixed"``: ``i = floor(n (1 - tau/2))``
       (return m at tau = 0).
    5. If i = 0 return m; else keep the i rows of smallest score and repeat.

    ``trace_scaling`` runs it on ``X / s`` and scales the estimate back by s,
    ``s^2 = tr(sample covariance) / d``: A&P's treatment of an unknown
    spherical covariance (they apply it to this estimator and QUE only).

    Where the original code departs from this: its recursion does not pass
    ``threshold`` on, so with ``"original"`` only the first level uses
    ``1 + 3 tau ln(1/tau)`` and every later one the low-n bound. Here
    ``"original"`` holds at every level, as meant, and ``"original-first"``
    is what the code did (what A&P's threshold comparison ran). They differ
    a lot at small n: on A&P's inputs at n = 500, d = 100, tau = 0.1 (below
    the Marchenko-Pastur edge the original bound keeps failing) the meant
    rule prunes on and on, error 3.5 to 9.2 against 0.44 to 0.62 for the
    coded one (the tests measure it). Its ``early_halt`` never takes effect (it tests
    ``min_n is None`` against a default of -inf) and is not offered.
    At ``d tau = 0.1`` (e.g. d = 1, tau = 0.1) the slack ``tau / (d ln(10 d tau))``
    divides by zero and the original stops with an error; here the slack is
    then 0.

    Parameters
    ----------
    eps : the assumed corruption fraction (A&P's tau), in [0, 0.5).
    gamma : the tail bound's multiplier (A&P: 5; larger prunes less).
    t : the low-n threshold's failure-probability term (A&P: 10).
    threshold : ``"low-n"``, ``"original"`` or ``"original-first"``.
    pruning : ``"gaussian"``, ``"random"`` or ``"fixed"``.
    trace_scaling : scale by the sample trace first (unknown covariance).
    """
    tau = _check_tau("ev-pruning", eps)
    _choice("ev-pruning", "threshold", threshold, EV_THRESHOLDS)
    _choice("ev-pruning", "pruning", pruning, EV_PRUNINGS)
    first = None
    if threshold != "low-n":
        _original_threshold("ev-pruning", tau)
        threshold, first = "original", ("low-n" if threshold == "original-first" else None)
    Y = complete_rows(X, "ev-pruning")
    gen = np.random.default_rng(rng) if pruning == "random" else None
    uniform = (lambda: float(gen.uniform())) if gen is not None else None

    def run(Z):
        return _ev_pruning(Z, tau, float(gamma), float(t), threshold, pruning, uniform, first)

    return finite(_trace_scaled(run, Y) if trace_scaling else run(Y), "ev-pruning")


# ---------------------------------------------------------------------- que


def _power_eigenvalue(C: np.ndarray, v0: np.ndarray) -> float:
    """The original's estimate of the top eigenvalue of ``C.T C / n``: five
    power steps from ``v0``, then the Rayleigh quotient (a lower bound)."""
    Ct = C.T / C.shape[0]  # divided first, as the original (the same rounding)
    v = v0
    for _ in range(5):
        v = Ct @ (C @ v)
    v = v / math.sqrt(float(v @ v))
    return float(v @ (Ct @ (C @ v))) / float(v @ v)


def _sketch_rows(d: int, signs: np.ndarray) -> np.ndarray:
    """The sketch (k, d): rows 0, f, 2f, ... of the Sylvester-Hadamard matrix
    of size D = 2^ceil(log2 d), f = floor(D / log2 D), over sqrt(D), times the
    Rademacher ``signs`` (D,), restricted to the first d columns (the data are
    zero-padded to D columns)."""
    D = 1 << max(0, math.ceil(math.log2(d))) if d > 1 else 1
    f = int(D / math.log2(D)) if D > 1 else 1
    rows = np.arange(0, D, f)
    cols = np.arange(d)
    # H[r, c] = (-1)^popcount(r & c)
    bits = np.bitwise_and(rows[:, None], cols[None, :])
    parity = np.zeros(bits.shape, dtype=np.int64)
    while bits.any():
        parity ^= bits & 1
        bits >>= 1
    return np.where(parity == 1, -1.0, 1.0) * signs[:d] / math.sqrt(D)


def _log_sketch_series(x: np.ndarray, J: int) -> np.ndarray:
    """``log f_J(x)`` per eigenvalue x, without overflow.

    The original applies ``p(xB)`` J times to the sketch, but its constant
    term multiplies the sketch itself, not the running product: per
    eigenvalue ``f_0 = 1, f_{j+1} = q(x) f_j + r`` with ``q(x) = 2 sum_k I_k
    (T_k(x) - T_k(0))`` and ``r = 2 (I_4 - I_2) + 1.1266066``, whose closed form
    is ``f_J = q^J + r (q^J - 1)/(q - 1)``.
    """
    T = [np.ones_like(x), x]
    for _ in range(4):
        T.append(2.0 * x * T[-1] - T[-2])
    T0 = (1.0, 0.0, -1.0, 0.0, 1.0, 0.0)
    q = 2.0 * sum(b * (T[k] - T0[k]) for k, b in enumerate(_BESSEL, start=1))
    r = 2.0 * (_BESSEL[3] - _BESSEL[1]) + _BESSEL_0
    out = np.empty_like(x)
    big = q > 1.0
    if big.any():  # q^J (1 + a (1 - q^-J)), a = r / (q - 1): in logs
        L = J * np.log(q[big])
        out[big] = L + np.log1p(r / (q[big] - 1.0) * -np.expm1(-L))
    mid = (q > 0.0) & ~big
    if mid.any():  # bounded: q^J + r (1 - q^J) / (1 - q), the ratio -> J at q = 1
        qm = q[mid]
        L = J * np.log(qm)
        ratio = np.where(qm < 1.0, -np.expm1(L) / np.where(qm < 1.0, 1.0 - qm, 1.0), float(J))
        out[mid] = np.log(np.exp(L) + r * ratio)
    low = ~(big | mid)
    if low.any():  # q <= 0 (eigenvalues at or just below 0)
        qJ = q[low] ** J
        out[low] = np.log(qJ + r * (1.0 - qJ) / (1.0 - q[low]))
    return out


def _que_scores(C: np.ndarray, alpha: float, scores: str, normal, signs) -> np.ndarray:
    """Quantum entropy scores of the centred rows ``C`` up to a common factor
    (only their order is used)."""
    n, d = C.shape
    lam, U = np.linalg.eigh(C.T @ C / n)
    P = C @ U  # the rows in the eigenbasis
    if scores == "exact":
        g = np.exp(alpha * (lam - lam[-1]))  # exp(alpha Sigma) / its largest eigenvalue
        return (P * P) @ g
    est = _power_eigenvalue(math.sqrt(alpha) * C, normal(d)) if alpha > 0 else 1.0
    J = int(est)
    if J > 1:
        J -= 1 - J % 2  # odd, as the original: "scale up when odd power"
    else:
        J = 1
    x = alpha * lam / J
    logf = _log_sketch_series(x, J)
    W = (_sketch_rows(d, signs(1 << max(0, math.ceil(math.log2(d))))) @ U) * np.exp(logf - logf.max())
    S = P @ W.T
    return np.einsum("ij,ij->i", S, S)


def _que(Y: np.ndarray, tau: float, alpha: float, t: float, early_halt: bool, threshold: str,
         scores: str, normal: Callable[[int], np.ndarray], signs: Callable[[int], np.ndarray]) -> np.ndarray:
    """The pruning loop of `que` (its docstring states it). ``normal(m)``
    draws m standard normals (the power method's start), ``signs(m)`` m
    Rademacher signs (the sketch), in the original's order of draws."""
    n0, d = Y.shape
    min_n = max(math.floor(n0 * 0.51), math.floor(n0 * (1 - 2 * tau)))

    def bound(n):
        return _original_threshold("que", tau) if threshold == "original" else _low_n_threshold(n, d, t)

    lam = _power_eigenvalue(Y - Y.mean(axis=0), normal(d))
    while lam > bound(Y.shape[0]) and tau > 0.0:
        n = Y.shape[0]
        sc = _que_scores(Y - Y.mean(axis=0), alpha, scores, normal, signs)
        keep = np.argsort(sc, kind="stable")[:int(n * (1 - 0.5 * tau))]
        Y = Y[keep]
        lam = _power_eigenvalue(Y - Y.mean(axis=0), normal(d))
        if early_halt and Y.shape[0] < min_n:
            break
    return Y.mean(axis=0)


@contract_doc(**COMPLETE_ROWS, rng="Draws the power method's starts and the sketch's signs.")
def que(X: np.ndarray, *, rng: np.random.Generator | None = None, eps: float = 0.1, alpha: float = 4.0,
        t: float = 10.0, early_halt: bool = True, threshold: str = "low-n", scores: str = "sketch",
        trace_scaling: bool = False) -> np.ndarray:
    """QUE: quantum entropy scoring (Dong, Hopkins, Li 2019) as A&P run it
    (``que_mean(data, tau, fast=True, early_halt=True)``).

    With n0 rows at the start and ``n_min = max(floor(0.51 n0), floor(n0 (1 - 2 tau)))``:

    1. ``lambda``: the top eigenvalue of the covariance (divisor n) as the
       original estimates it: five power steps from a standard normal start
       (drawn from ``rng``), then the Rayleigh quotient.
    2. While ``lambda > B`` (B as in `ev-pruning`, from the current n) and
       tau > 0: score each row (below), keep the ``int(n (1 - tau/2))`` rows
       of smallest score, re-estimate lambda; stop early once fewer than
       n_min rows remain (``early_halt``).
    3. Return the mean of the rows kept.

    Scores, with ``Sigma`` the current covariance and x the centred rows:
    ``"exact"``: ``x^T exp(alpha Sigma) x`` (up to a common factor).
    ``"sketch"`` (the original's ``fast=True``): ``||S f(Sigma) x||^2`` where
    S is a k x d sketch (rows 0, f, 2f, ... of the D x D Sylvester-Hadamard
    matrix over sqrt(D), times random signs from ``rng``; D the next power of
    2 >= d, f = floor(D / log2 D)) and f(Sigma) the original's stand-in for
    ``exp(alpha Sigma)`` (so the score stands for ``x^T exp(2 alpha Sigma) x``
    seen through the sketch): with J the power-method
    estimate of alpha lambda, truncated and made odd (J >= 1), and
    ``x = alpha mu / J`` per eigenvalue mu of Sigma, ``f = f_J`` with
    ``f_0 = 1, f_{j+1} = q(x) f_j + r``, ``q(x) = 2 sum_{k=1..5} I_k(1)
    (T_k(x) - T_k(0))`` (Chebyshev T_k, Bessel I_k) and
    ``r = 2 (I_4(1) - I_2(1)) + 1.1266066``: the code applies its degree-5
    Chebyshev series of exp J times, but adds the constant term to the
    sketch instead of to the running product, and writes I_0(1) = 1.266066
    as 1.1266066; both are kept, they are what it computes.

    Where this departs from the original code: it evaluates that sketch in
    closed form per eigenvalue of Sigma (one eigendecomposition) instead of
    J rounds of products, and scales all scores by a common factor (only
    their order is used). The original overflows when J is large (about
    4 lambda rounds, each multiplying the top direction by q(1) ~ 1.7): on
    far outliers (A&P's ``obvious``) every score becomes NaN and it prunes
    an arbitrary subset, in minutes. Measured on their ``obvious`` input
    (n = 500, d = 100, seed 0): all its scores NaN in each of its five
    rounds, its estimate 13.4 from the inliers' mean (the sample mean's
    10.3); here 0.12, in 0.02 s of CPU. Here the scores are finite and
    equal to the original's (up to the common factor) wherever those are
    finite: on every fixture input but ``obvious`` the estimates are identical.
    ``"exact"`` likewise cannot overflow (the original's asserts instead).

    Parameters
    ----------
    eps : the assumed corruption fraction (A&P's tau), in [0, 0.5).
    alpha : the entropy parameter (A&P: 4).
    t : the low-n threshold's term (A&P: 10).
    early_halt : stop once more than about 2 tau of the rows are pruned.
    threshold : ``"low-n"`` or ``"original"`` (``1 + 3 tau ln(1/tau)``).
    scores : ``"sketch"`` or ``"exact"``.
    trace_scaling : scale by the sample trace first (as `ev-pruning`).
    """
    tau = _check_tau("que", eps)
    _choice("que", "threshold", threshold, THRESHOLDS)
    _choice("que", "scores", scores, QUE_SCORES)
    if threshold == "original":
        _original_threshold("que", tau)
    if not float(alpha) >= 0.0:
        raise ValueError(f"que: alpha must be >= 0, got {alpha}")
    Y = complete_rows(X, "que")
    gen = np.random.default_rng(rng)

    def run(Z):
        return _que(Z, tau, float(alpha), float(t), bool(early_halt), threshold, scores,
                    gen.standard_normal, lambda m: gen.integers(0, 2, m) * 2.0 - 1.0)

    return finite(_trace_scaled(run, Y) if trace_scaling else run(Y), "que")


# ---------------------------------------------------------------------- pgd


def _capped_simplex(w: np.ndarray, cap: float) -> np.ndarray:
    """A&P's projection onto ``{w : 0 <= w_i <= cap, sum w = 1}``: 50 bisection
    steps on the shift t in ``clip(w - t, 0, cap)`` from [min w - 1, max w],
    the last midpoint's clip returned (its sum is 1 to about 2^-50 of the bracket)."""
    lo, hi = float(w.min()) - 1.0, float(w.max())
    for _ in range(50):
        t = (lo + hi) / 2
        if np.sum(np.minimum(np.maximum(w - t, 0), cap)) < 1:
            hi = t
        else:
            lo = t
    return np.minimum(np.maximum(w - t, 0), cap)


def _weighted_top(Y: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray]:
    """Top eigenpair of ``Sigma_w = sum w_i x_i x_i^T - mu_w mu_w^T``, ``mu_w = sum w_i x_i``."""
    mu = w @ Y
    # sum w_i x_i x_i^T as Z^T Z with Z = sqrt(w) x: NumPy takes A^T A to the symmetric
    # rank-k update (half the products of a general Y^T (w Y)); weights are >= 0.
    Z = Y * np.sqrt(w)[:, None]
    S = Z.T @ Z
    S -= np.outer(mu, mu)
    return _top_eigenpair(S)


@contract_doc(**COMPLETE_ROWS)
def pgd(X: np.ndarray, *, rng: np.random.Generator | None = None, eps: float = 0.1,
        iterations: int = 15) -> np.ndarray:
    """Projected gradient descent (Cheng, Diakonikolas, Ge, Soltanolkotabi
    2020) as A&P run it (``grad_descent(data, tau, nItr=15)``).

    Weights w on the N rows, from uniform; step ``s = 1/N``;
    ``cap = 1 / (N - round(tau N))`` (round half to even, as Python's). Each
    of ``iterations`` rounds:

    1. ``u``: the top eigenvector of ``Sigma_w = sum_i w_i x_i x_i^T - mu_w mu_w^T``
       (``mu_w = sum_i w_i x_i``), lambda its eigenvalue.
    2. Gradient ``g_i = (x_i.u)^2 - 2 (mu_w.u)(x_i.u)``; candidate
       ``w' = P(w - s g / ||g||)`` with P the projection onto the capped
       simplex ``{0 <= w_i <= cap, sum w_i = 1}`` by 50 bisection steps on
       the shift (A&P's; it is exact to about 2^-50).
    3. If the top eigenvalue of ``Sigma_w'`` is below lambda: accept w',
       ``s <- 2 s``; else keep w, ``s <- s / 4``.

    Return ``mu_w = sum_i w_i x_i``. The eigenpairs come from a dense
    symmetric eigensolver (A&P use ARPACK on the operator): the same
    values to rounding; a rejected step reuses the previous eigenpair.

    Parameters
    ----------
    eps : the assumed corruption fraction (A&P's tau), in [0, 0.5).
    iterations : gradient rounds (A&P: 15).
    """
    tau = _check_tau("pgd", eps)
    if int(iterations) < 0:
        raise ValueError(f"pgd: iterations must be >= 0, got {iterations}")
    Y = complete_rows(X, "pgd")
    N = Y.shape[0]
    cap = 1.0 / (N - round(tau * N))
    step = 1.0 / N
    w = np.full(N, 1.0 / N)
    lam, u = _weighted_top(Y, w)
    for _ in range(int(iterations)):
        Yu = Y @ u
        g = Yu ** 2 - 2.0 * (w @ Yu) * Yu
        norm = float(np.linalg.norm(g))
        if norm == 0.0:  # no direction to move (e.g. all rows equal)
            break
        cand = _capped_simplex(w - step * g / norm, cap)
        lam_c, u_c = _weighted_top(Y, cand)
        if lam_c < lam:
            step *= 2
            w, lam, u = cand, lam_c, u_c
        else:
            step /= 4
    return finite(Y.T @ w, "pgd")


@cmbench.hookimpl
def register_estimators() -> list:
    """This module's estimators, after those of `cmbench.builtins.estimators`."""
    E = cmbench.Estimator
    tau = {"eps": (0.0, 0.5, "[)")}
    return [
        E("lee-valiant", lee_valiant, ranges={**tau, "blocks": (1, None)},
          description="Lee-Valiant, simple (A&P): mean of the (1 - eps) N rows nearest a contiguous median of means"),
        E("ev-pruning", ev_pruning, choices={"threshold": EV_THRESHOLDS, "pruning": EV_PRUNINGS,
                                             "trace_scaling": (False, True)},
          ranges={**tau, "gamma": (0.0, None, "()"), "t": (0.0, None)},
          description="Eigenvalue pruning (DKK17) with A&P's low-n threshold"),
        E("que", que, choices={"threshold": THRESHOLDS, "scores": QUE_SCORES, "early_halt": (True, False),
                               "trace_scaling": (False, True)},
          ranges={**tau, "alpha": (0.0, None), "t": (0.0, None)},
          description="Quantum entropy scoring (Dong, Hopkins, Li) with A&P's low-n threshold, overflow-free"),
        E("pgd", pgd, ranges={**tau, "iterations": (0, None)},
          description="Projected gradient descent on row weights (Cheng, Diakonikolas, Ge, Soltanolkotabi 2020)"),
    ]
