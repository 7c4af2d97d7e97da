"""Anderson & Phillips' estimators: timings against plain NumPy (not a test).

Each estimator of plugins/ap25_estimators.py (and the damped `lrv`) at
n = d = 500 on A&P-like data (N(5 * 1, I), the last 10% of rows a Gaussian
cluster at distance sqrt(d) in a random direction, covariance I/10: their
``gaus-one``), with eps = 0.1, against a plain NumPy transcription of the same
algorithm (below: whole-matrix SVD / full eigendecompositions, the sketch as
the original's J rounds of products), interleaved in one process; medians of
wall and CPU seconds over the rounds, and the ratio cmbench / plain.

``--obvious`` also runs QUE's sketch on A&P's ``obvious`` outliers (two far
clusters at 10 sqrt(d) and 20 sqrt(d)): the closed form's time and error
against the inliers' mean, and the size the original's rounds reach there
(beyond float64: its scores turn NaN).

``--ref PATH --ref-python PYTHON`` times the original code (its checkout
at PATH, run by PYTHON, which has torch) on the same matrix, for reference.

Usage: ``.venv/bin/python benchmarks/ap25_estimators.py [--repeats 5] [--obvious]``.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import special

from cmbench.builtins import ap25_estimators as ap
from cmbench.builtins.sample_estimators import lrv_mean

# ------------------------------------------------------- plain NumPy versions


def plain_lee_valiant(X, tau, blocks=10):
    n = X.shape[0]
    size = n // blocks
    pilot = np.median(np.array([X[i * size:(i + 1) * size].mean(axis=0) for i in range(blocks)]), axis=0)
    order = np.argsort(np.linalg.norm(X - pilot, axis=1))
    return X[order[:math.ceil((1 - tau) * n)]].mean(axis=0)


def plain_ev_pruning(X, tau, gamma=5.0, t=10.0):
    while True:
        n, d = X.shape
        mu = X.mean(axis=0)
        _, S, Vt = np.linalg.svd((X - mu) / math.sqrt(n), full_matrices=False)
        if S[0] ** 2 < (1 + math.sqrt(d / n) + t / math.sqrt(n)) ** 2:
            return mu
        p = X @ Vt[0]
        proj = np.abs(p - np.median(p))
        order = np.argsort(proj)
        proj = proj[order]
        T = proj - 2 * tau
        slack = tau / (d * math.log(d * tau / 0.1))
        hit = (n - np.arange(n)) > gamma * n * (special.erfc(T / math.sqrt(2)) / 2 + slack)
        i = int(np.argmax(hit)) if hit.any() else n - 1
        if i == 0:
            return mu
        X = X[order[:i]]


def _power(C, v):
    n = C.shape[0]
    for _ in range(5):
        v = C.T @ (C @ v) / n
    v = v / np.linalg.norm(v)
    return float(v @ (C.T @ (C @ v) / n)) / float(v @ v)


def _plain_sketch_scores(C, alpha, rng):
    """The original's sketch, as its rounds of products (float64)."""
    n, d = C.shape
    D = 1 << (d - 1).bit_length()
    f = int(D / math.log2(D))
    Cp = np.zeros((n, D))
    Cp[:, :d] = C
    J = int(alpha * _power(Cp, rng.standard_normal(D)))
    J = J - 1 + J % 2 if J > 1 else 1
    H = np.array([[1.0]])
    while H.shape[0] < D:
        H = np.block([[H, H], [H, -H]])
    S = (H / math.sqrt(D) * (rng.integers(0, 2, D) * 2.0 - 1.0))[::f]
    Xs = Cp / n / J
    bessel = ap._BESSEL
    cheb = {1: ([1], [1]), 2: ([2, -1], [2, 0]), 3: ([4, -3], [3, 1]), 4: ([8, -8, 1], [4, 2, 0]),
            5: ([16, -20, 5], [5, 3, 1])}
    A = S
    for _ in range(J):
        mono = [S, (A @ Cp.T) @ Xs]
        for _ in range(2, 6):
            mono.append((mono[-1] @ Cp.T) @ Xs)
        M = 0
        for k in range(1, 6):
            c, dg = cheb[k]
            M = M + bessel[k - 1] * sum(ci * alpha ** di * mono[di] for ci, di in zip(c, dg))
        A = 2 * M + ap._BESSEL_0 * S
    return ((A @ Cp.T) ** 2).sum(axis=0)


def plain_que(X, tau, scores="sketch", alpha=4.0, t=10.0, rng=None):
    rng = np.random.default_rng(rng)
    n0, d = X.shape
    min_n = max(math.floor(n0 * 0.51), math.floor(n0 * (1 - 2 * tau)))
    lam = _power(X - X.mean(axis=0), rng.standard_normal(d))
    while lam > (1 + math.sqrt(d / X.shape[0]) + t / math.sqrt(X.shape[0])) ** 2:
        n = X.shape[0]
        C = X - X.mean(axis=0)
        if scores == "exact":
            w, V = np.linalg.eigh(C.T @ C / n)
            M = (V * np.exp(alpha * (w - w[-1]))) @ V.T
            sc = np.einsum("ij,jk,ik->i", C, M, C)
        else:
            with np.errstate(all="ignore"):
                sc = _plain_sketch_scores(C, alpha, rng)
        X = X[np.argsort(sc, kind="stable")[:int(n * (1 - 0.5 * tau))]]
        lam = _power(X - X.mean(axis=0), rng.standard_normal(d))
        if X.shape[0] < min_n:
            break
    return X.mean(axis=0)


def plain_pgd(X, tau, iterations=15):
    N, d = X.shape
    cap = 1 / (N - round(tau * N))
    step = 1 / N
    w = np.ones(N) / N

    def top(w):
        mu = X.T @ w
        lam, V = np.linalg.eigh(X.T @ (X * w[:, None]) - np.outer(mu, mu))
        return lam[-1], V[:, -1]

    for _ in range(iterations):
        lam, u = top(w)
        Xu = X @ u
        g = Xu ** 2 - 2 * (w @ Xu) * Xu
        cand = ap._capped_simplex(w - step * g / np.linalg.norm(g), cap)
        if top(cand)[0] < lam:
            step *= 2
            w = cand
        else:
            step /= 4
    return X.T @ w


def plain_lrv_damped(X, C=1.0):
    n, d = X.shape
    if d <= 2:
        return np.median(X, axis=0)
    med = np.median(X, axis=0)
    Z = X - med
    width = np.quantile(Z, 0.6, axis=0) - np.quantile(Z, 0.4, axis=0)
    s2 = np.sum((width / (special.ndtri(0.6) - special.ndtri(0.4))) ** 2)
    w = np.maximum(np.exp(-np.sum(Z ** 2, axis=1) / (C * s2)), 1e-10)
    m = w @ X / n
    B = (X - m) * np.sqrt(w)[:, None]
    _, V = np.linalg.eigh(B.T @ B / n)
    low, high = V[:, :d // 2], V[:, d // 2:]
    return m @ low @ low.T + plain_lrv_damped(X @ high, C) @ high.T


# ------------------------------------------------------------------- data


def ap25_data(n=500, d=500, eta=0.1, scheme="gaus-one", seed=0):
    rng = np.random.default_rng(seed)
    k = math.floor(eta * n)
    mu = np.full(d, 5.0)
    X = mu + rng.standard_normal((n, d))
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    if scheme == "gaus-one":
        X[n - k:] = mu + math.sqrt(d) * u + rng.standard_normal((k, d)) / math.sqrt(10)
    else:  # obvious: 70% at 10 sqrt(d) along u, 30% at 20 sqrt(d) at 75 degrees from it
        v = rng.standard_normal(d)
        v -= (v @ u) * u
        v /= np.linalg.norm(v)
        a = math.radians(75)
        k0 = round(0.7 * k)
        X[n - k:n - k + k0] = mu + 10 * math.sqrt(d) * u + rng.standard_normal((k0, d)) / math.sqrt(10)
        X[n - k + k0:] = (mu + 20 * math.sqrt(d) * (math.cos(a) * u + math.sin(a) * v)
                          + rng.standard_normal((k - k0, d)) / math.sqrt(10))
    return X, k


PAIRS = {
    "lee-valiant": (lambda X: ap.lee_valiant(X, eps=0.1), lambda X: plain_lee_valiant(X, 0.1)),
    "ev-pruning": (lambda X: ap.ev_pruning(X, eps=0.1), lambda X: plain_ev_pruning(X, 0.1)),
    "que (sketch)": (lambda X: ap.que(X, eps=0.1, rng=1), lambda X: plain_que(X, 0.1, rng=1)),
    "que (exact)": (lambda X: ap.que(X, eps=0.1, scores="exact", rng=1),
                    lambda X: plain_que(X, 0.1, "exact", rng=1)),
    "pgd": (lambda X: ap.pgd(X, eps=0.1), lambda X: plain_pgd(X, 0.1)),
    "lrv (damped)": (lambda X: lrv_mean(X, variant="damped"), lambda X: plain_lrv_damped(X)),
}

_REF_SNIPPET = """
import sys, time, json, statistics, numpy as np
sys.path[:0] = [sys.argv[1] + '/Algorithms', sys.argv[1] + '/DataGeneration']
import os; os.chdir(sys.argv[4])
from lee_valiant import lee_valiant_simple
from simple_estimators import median_of_means
from eigenvalue_pruning import eigenvalue_pruning
from que import que_mean
from pgd import grad_descent
from lrv import lrv
X = np.load(sys.argv[2]); reps = int(sys.argv[3])
runs = {'lee-valiant': lambda: lee_valiant_simple(X, 0.1, lambda Z: median_of_means(Z, 10)),
        'ev-pruning': lambda: eigenvalue_pruning(X, tau=0.1, gamma=5, t=10),
        'que (sketch)': lambda: que_mean(X, tau=0.1, fast=True, early_halt=True),
        'que (exact)': lambda: que_mean(X, tau=0.1, fast=False, early_halt=True),
        'pgd': lambda: grad_descent(X, tau=0.1, nItr=15),
        'lrv (damped)': lambda: lrv(X, C=1, trace_est_option='robust')}
out = {}
for name, f in runs.items():
    w, c = [], []
    for _ in range(reps):
        t0, p0 = time.perf_counter(), time.process_time(); f()
        w.append(time.perf_counter() - t0); c.append(time.process_time() - p0)
    out[name] = (statistics.median(w), statistics.median(c))
print(json.dumps(out))
"""


def _timed(fn, X):
    t0, c0 = time.perf_counter(), time.process_time()
    mu = fn(X)
    return time.perf_counter() - t0, time.process_time() - c0, mu


def timing(repeats: int, ref: str | None, ref_python: str | None) -> None:
    X, k = ap25_data()
    inl = X[:X.shape[0] - k].mean(axis=0)
    walls = {name: ([], [], [], []) for name in PAIRS}
    agree = {}
    for _ in range(repeats):  # interleaved: load drifts hit both alike
        for name, (ours, plain) in PAIRS.items():
            w1, c1, m1 = _timed(ours, X)
            w2, c2, m2 = _timed(plain, X)
            for lst, v in zip(walls[name], (w1, c1, w2, c2)):
                lst.append(v)
            agree[name] = (float(np.max(np.abs(m1 - m2))), float(np.linalg.norm(m1 - inl)))
    ref_times = {}
    if ref:
        with tempfile.TemporaryDirectory() as tmp:
            np.save(Path(tmp) / "X.npy", X)
            proc = subprocess.run([ref_python or sys.executable, "-c", _REF_SNIPPET, ref, str(Path(tmp) / "X.npy"),
                                   str(max(1, repeats // 2)), tmp], capture_output=True, text=True)
            if proc.returncode:
                print(proc.stderr[-2000:], file=sys.stderr)
            else:
                ref_times = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"n = d = 500, eps = 0.1, gaus-one; medians of {repeats} interleaved rounds (seconds)")
    print(f"{'estimator':<14} {'ours wall':>9} {'ours cpu':>9} {'plain wall':>10} {'plain cpu':>9} "
          f"{'ratio':>6} {'max |ours-plain|':>16} {'err vs inliers':>14} {'original wall':>13}")
    for name, (w1, c1, w2, c2) in walls.items():
        r = statistics.median(w1) / statistics.median(w2)
        o = ref_times.get(name)
        print(f"{name:<14} {statistics.median(w1):9.3f} {statistics.median(c1):9.3f} {statistics.median(w2):10.3f} "
              f"{statistics.median(c2):9.3f} {r:6.2f} {agree[name][0]:16.2e} {agree[name][1]:14.4f} "
              f"{(f'{o[0]:.3f}' if o else '-'):>13}")


def obvious(ref: str | None, ref_python: str | None) -> None:
    X, k = ap25_data(scheme="obvious")
    inl = X[:X.shape[0] - k].mean(axis=0)
    w1, c1, m1 = _timed(lambda Z: ap.que(Z, eps=0.1, rng=1), X)
    print(f"obvious, n = d = 500: que (closed form) {w1:.2f} s wall {c1:.2f} s CPU, "
          f"error vs inliers' mean {np.linalg.norm(m1 - inl):.4f}; sample mean's {np.linalg.norm(X.mean(0) - inl):.2f}")
    # The rounds' growth along the top direction, from the closed form (running them takes hours here)
    C = X - X.mean(axis=0)
    lam = np.linalg.eigvalsh(C.T @ C / C.shape[0])[-1]
    J = int(4.0 * lam)
    J = J - 1 + J % 2 if J > 1 else 1
    top = float(ap._log_sketch_series(np.array([4.0 * lam / J]), J)[0]) / math.log(10)
    print(f"  the sketch's first round: J = {J} rounds, top factor f_J = 1e{top:.0f} "
          f"(float64 ends at 1e308: the original's scores overflow to NaN)")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--obvious", action="store_true")
    p.add_argument("--ref")
    p.add_argument("--ref-python")
    a = p.parse_args(argv)
    timing(a.repeats, a.ref, a.ref_python)
    if a.obvious:
        obvious(a.ref, a.ref_python)


if __name__ == "__main__":
    main()
