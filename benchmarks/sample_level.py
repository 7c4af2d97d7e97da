"""Sample-level estimators: timings against plain NumPy, and direct runs of the suites.

Three modes (none is a test):

``--timing [--d 400 --per-dim 1000 --repeats 3]``
    Each faithful estimator (DKK17's reference algorithms: filter with
    ``whiten = false, rule = "reference"``, prune, geometric median from the
    mean, LRV, RANSAC) and the coordinate-wise median on DKK17's data at d = 400, N = 400,000, against a plain
    NumPy transcription of the same algorithm (below: whole-matrix operations,
    copies of the kept rows, as one would first write it), interleaved, in one
    process; medians of wall and CPU seconds, and the ratio.

``--whitening [--dims 100,200,400 --per-dim 100 --seeds 1 --eps 0.1]``
    The filter's default against its faithful mode, the default with its
    whitening on every row (before subsamples) and the former whitening (the
    trimmed covariance's eigenvalues) on DKK17's data and on N(0.5 * 1, I)
    contamination: excess l2 error, mean (max) over the draws (the figures in
    the filter's docstring).

``--filter-speed [--dims 200,400 --per-dim 1000 --repeats 3]``
    The default filter (its whitening on two subsamples), the same with its
    whitening on every row (as before subsamples) and the faithful filter on
    DKK17's data, interleaved, in one process: medians of wall and CPU seconds,
    the ratio default / faithful, and each one's excess l2 error.

``--table SUITE.toml``
    A quick sample-level suite's estimators run directly on its data (the
    runner's seeds are not used: each instance draws its own), excess l2 error
    per method and d as mean (sd) over instances. Supports the suites' own
    form: a `gaussian` grid over d, `replace-mixture` adversaries, budgets,
    estimators with ``"@budget"``.

Usage: ``.venv/bin/python benchmarks/sample_level.py --timing``.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
from scipy import special

import cmbench

# ------------------------------------------------------- plain NumPy versions


def plain_filter(X, eps, tau=0.1, cher=2.5):
    """filterGaussianMean, written plainly (recursion as a loop, copies of the kept rows)."""
    while True:
        N, d = X.shape
        mu = X.mean(axis=0)
        C = np.cov(X, rowvar=False, bias=True)
        lam, V = np.linalg.eigh(C)
        if lam[-1] < 1 + 3 * (eps * math.log(1 / eps)):
            return mu
        p = X @ V[:, -1]
        dev = np.abs(p - np.median(p))
        order = np.argsort(dev, kind="stable")
        i = np.arange(1, N + 1)
        T = dev[order] - 2 * eps
        hit = (N - i) > cher * N * (special.erfc(T / math.sqrt(2)) / 2 + eps / (d * math.log(d * eps / tau)))
        j = int(np.argmax(hit)) + 1 if hit.any() else N
        if j == 1 or j == N:
            return mu
        X = X[order[:j]]


def plain_prune(X, eps):
    N, d = X.shape
    med = np.median(X, axis=0)
    keep = np.linalg.norm(X - med, axis=1) < 0.33 * math.sqrt(d * math.log(N / eps))
    return X[keep].mean(axis=0)


def plain_geomedian(X, iters=100):
    y = X.mean(axis=0)
    for _ in range(iters):
        w = 1.0 / np.linalg.norm(X - y, axis=1)
        y = (w @ X) / w.sum()
    return y


def plain_lrv(X, eta):
    n = X.shape[1]
    if n <= 1:
        z = np.sort(X[:, 0])
        w = math.floor(z.size * (1 - eta) ** 2)
        i = int(np.argmin(z[w - 1:] - z[:z.size - w + 1]))
        return np.array([z[i:i + w].mean()])
    T = ((X - np.median(X, axis=0)) ** 2).sum(axis=1)
    newX = X[T <= np.percentile(T, 100 * (1 - eta) ** 2, method="hazen")]
    _, V = np.linalg.eigh(np.cov(newX, rowvar=False))
    P = V[:, :n // 2] @ V[:, :n // 2].T
    Q = V[:, n // 2:]
    return (newX @ P).mean(axis=0) + plain_lrv(X @ Q, eta) @ Q.T


def plain_ransac(X, eps, rng, tau=0.1, iters=100):
    N, d = X.shape
    mu = X.mean(axis=0)
    s = math.ceil(2 * (d * math.log(4) + math.log(2 / tau)) / eps ** 2)
    if s > N:
        return mu
    t = d + 2 * (math.sqrt(d * math.log(N / tau)) + math.log(N / tau)) + eps ** 2 * math.log(1 / eps) ** 2
    count = lambda m: int((((X - m) ** 2).sum(axis=1) <= t).sum())  # noqa: E731
    best, best_count = mu, count(mu)
    for _ in range(iters):
        m = X[rng.choice(N, size=s, replace=False)].mean(axis=0)
        c = count(m)
        if c > best_count:
            best, best_count = m, c
    return best


# ----------------------------------------------------------------- helpers

REG = None


def registry():
    global REG
    if REG is None:
        REG = cmbench.load_plugins()
    return REG


def dkk17_data(d, per_dim, seed=0, eps=0.1, components=None, mean=1.0):
    reg = registry()
    data = reg.datasets["gaussian"].fn(instance=0, rng=np.random.default_rng(seed), d=d,
                                       samples_per_dim=per_dim, mean=mean)
    adv = reg.adversaries["replace-mixture"]
    Xc = adv.fn(data.X, eps, rng=np.random.default_rng(seed + 1),
                components=components or adv.params["components"])
    inliers = (Xc == data.X).all(axis=1)
    sampling = float(np.linalg.norm(data.X[inliers].mean(axis=0) - data.mean))
    return data, Xc, sampling


def estimator(name, **params):
    decl = registry().estimators[name]
    return lambda X, rng=None: decl.fn(X, rng=rng, **{**decl.params, **params})


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


# ------------------------------------------------------------------- modes


def timing(d, per_dim, repeats):
    _, X, _ = dkk17_data(d, per_dim)
    eps = 0.1
    pairs = {
        "filter (reference)": (estimator("filter", eps=eps, whiten=False, rule="reference"),
                               lambda X, rng: plain_filter(X, eps)),
        "prune": (estimator("prune", eps=eps), lambda X, rng: plain_prune(X, eps)),
        "geometric-median (mean start)": (estimator("geometric-median", start="mean", max_iter=100, tol=0.0),
                                          lambda X, rng: plain_geomedian(X)),
        "lrv": (estimator("lrv", eps=eps), lambda X, rng: plain_lrv(X, eps)),
        "ransac (intended)": (estimator("ransac", eps=eps, count="intended"),
                              lambda X, rng: plain_ransac(X, eps, rng)),
        "cmedian": (estimator("cmedian"), lambda X, rng: np.median(X, axis=0)),
    }
    print(f"d = {d}, N = {X.shape[0]:,}; medians of {repeats} interleaved runs (wall s / CPU s)")
    print(f"{'estimator':32s} {'cmbench':>17s} {'plain NumPy':>17s} {'ratio':>6s}  max |diff|")
    for name, (ours, plain) in pairs.items():
        times = {"ours": [], "plain": []}
        diff = 0.0
        for _ in range(repeats):
            a, w1, c1 = timed(lambda: ours(X, np.random.default_rng(5)))
            b, w2, c2 = timed(lambda: plain(X, np.random.default_rng(5)))
            times["ours"].append((w1, c1))
            times["plain"].append((w2, c2))
            diff = max(diff, float(np.abs(a - b).max()))
        wo, co = (statistics.median(t[k] for t in times["ours"]) for k in (0, 1))
        wp, cp = (statistics.median(t[k] for t in times["plain"]) for k in (0, 1))
        print(f"{name:32s} {wo:8.2f} / {co:6.2f} {wp:8.2f} / {cp:6.2f} {wo / wp:6.2f}  {diff:.2e}", flush=True)


def eigenvalue_whitening(Y, eps, rng=None):
    """The filter's former whitening: the trimmed covariance's own eigenvalues as variances."""
    from cmbench.builtins import estimators

    center, cov = estimators._robust_covariance(Y, keep=1.0 - min(2.0 * eps, 0.5))
    w, V = np.linalg.eigh(cov)
    if not w.max() > 0.0:
        return center, None
    return center, V / np.sqrt(np.maximum(w, w.max() * 1e-12))


@contextlib.contextmanager
def whitening_on_every_row():
    """The default filter as it was before its whitening read subsamples (bit for bit: no
    subsample is drawn when `_whitening_rows` gives every row)."""
    from cmbench.builtins import estimators

    before = estimators.WHITEN_MIN_ROWS
    estimators.WHITEN_MIN_ROWS = sys.maxsize
    try:
        yield
    finally:
        estimators.WHITEN_MIN_ROWS = before


def whitening(dims, per_dim, seeds, eps):
    from cmbench.builtins import estimators

    print(f"excess l2 error at eps = {eps}, N = {per_dim} d" + (
        f"; mean (max) over {seeds} draws" if seeds > 1 else "; one draw"))
    for label, comps, mean in (("DKK17 noise", None, 1.0),
                               ("N(0.5 * 1, I)", [{"kind": "gaussian", "shift": 0.5, "sd": 1.0}], 0.0)):
        for d in dims:
            rows = {}
            for seed in range(d, d + seeds):  # one draw: seed d, as before --seeds
                data, Xc, s = dkk17_data(d, per_dim, seed=seed, eps=eps, components=comps, mean=mean)
                ex = lambda m: float(np.linalg.norm(m - data.mean)) - s  # noqa: E731
                default = estimator("filter", eps=eps)
                row = {"default": ex(default(Xc, np.random.default_rng(seed))),
                       "reference": ex(estimator("filter", eps=eps, whiten=False, rule="reference")(Xc)),
                       "noisy mean": ex(Xc.mean(axis=0))}
                with whitening_on_every_row():
                    row["every row"] = ex(default(Xc, np.random.default_rng(seed)))
                mad = estimators._spectral_whitening
                estimators._spectral_whitening = eigenvalue_whitening
                try:
                    row["eigenvalue whitening"] = ex(default(Xc))
                finally:
                    estimators._spectral_whitening = mad
                for k, v in row.items():
                    rows.setdefault(k, []).append(v)
            shown = (f"{np.mean(v):.4f}" + (f" ({np.max(v):.4f})" if seeds > 1 else "") for v in rows.values())
            print(f"{label}, d = {d}: " + ", ".join(f"{k} {v}" for k, v in zip(rows, shown)), flush=True)


def filter_speed(dims, per_dim, repeats):
    eps = 0.1
    default, faithful = estimator("filter", eps=eps), estimator("filter", eps=eps, whiten=False, rule="reference")
    print(f"DKK17's data, eps = {eps}; medians of {repeats} interleaved runs (wall s / CPU s of this process)")
    print(f"{'d':>4s} {'N':>9s} {'default':>15s} {'every row':>15s} {'faithful':>15s} "
          f"{'ratio default':>14s} {'ratio every row':>16s}  excess error (default, every row, faithful)")
    for d in dims:
        data, X, s = dkk17_data(d, per_dim)
        runs = {"default": [], "every row": [], "faithful": []}
        err = {}
        default(X[:2000]), faithful(X[:2000])  # imports (scipy) and first calls outside the timings
        for r in range(repeats):
            for name in runs:
                with whitening_on_every_row() if name == "every row" else contextlib.nullcontext():
                    est = faithful if name == "faithful" else default
                    mu, w, c = timed(lambda: est(X, np.random.default_rng(r)))
                runs[name].append((w, c))
                err[name] = float(np.linalg.norm(mu - data.mean)) - s
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
        cell = {k: f"{w:7.2f} / {c:5.2f}" for k, (w, c) in med.items()}
        f_w, f_c = med["faithful"]
        ratio = {k: f"{med[k][0] / f_w:.2f} / {med[k][1] / f_c:.2f}" for k in ("default", "every row")}
        print(f"{d:4d} {X.shape[0]:9,d} {cell['default']:>15s} {cell['every row']:>15s} {cell['faithful']:>15s} "
              f"{ratio['default']:>14s} {ratio['every row']:>16s}  "
              + ", ".join(f"{err[k]:.4f}" for k in runs), flush=True)


def table(path):
    suite = tomllib.loads(Path(path).read_text())
    reg = registry()
    for exp in suite["experiment"]:
        ds = exp["datasets"][0]
        dims = ds["d"] if isinstance(ds["d"], list) else [ds["d"]]
        labels = {}
        for e in exp["estimators"]:
            e = {"name": e} if isinstance(e, str) else dict(e)
            labels[e.pop("label", e["name"])] = e
        methods = exp.get("methods") or {k: ["none", k] for k in labels}
        advs = [({"name": a} if isinstance(a, str) else dict(a)) for a in exp["adversaries"]]
        print(f"## {suite['name']} / {exp['name']}: excess l2 error, mean (sd) over {exp['instances']} instances")
        for adv in advs:
            for budget in exp["budgets"]:
                rows = {m: {} for m in methods}
                for d in dims:
                    errs = {m: [] for m in methods}
                    for inst in range(exp["instances"]):
                        params = {k: v for k, v in ds.items() if k not in ("name", "label", "d")}
                        data = reg.datasets["gaussian"].fn(instance=inst, rng=np.random.default_rng([d, inst]),
                                                           d=d, **params)
                        a = reg.adversaries[adv["name"]]
                        ap = {k: v for k, v in adv.items() if k not in ("name", "label")}
                        Xc = a.fn(data.X, budget, rng=np.random.default_rng([d, inst, 1]), structure=None,
                                  **{**a.params, **ap})
                        inl = (Xc == data.X).all(axis=1)
                        s = np.linalg.norm(data.X[inl].mean(axis=0) - data.mean)
                        for m, (_, est) in methods.items():
                            e = dict(labels[est])
                            decl = reg.estimators[e.pop("name")]
                            e = {k: (budget if v == "@budget" else v) for k, v in e.items()}
                            mu = decl.fn(Xc, rng=np.random.default_rng([d, inst, 2]), **{**decl.params, **e})
                            errs[m].append(float(np.linalg.norm(mu - data.mean) - s))
                    for m in methods:
                        v = np.array(errs[m])
                        rows[m][d] = f"{v.mean():.4f} ({v.std(ddof=1) if v.size > 1 else 0.0:.4f})"
                    print(f"  ... d = {d} done", file=sys.stderr, flush=True)
                print(f"\n{adv.get('label', adv['name'])}, eps = {budget}\n")
                print("| method | " + " | ".join(f"d = {d}" for d in dims) + " |")
                print("|---|" + "---|" * len(dims))
                for m, r in rows.items():
                    print(f"| {m} | " + " | ".join(r[d] for d in dims) + " |")
                print(flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--whitening", action="store_true")
    ap.add_argument("--filter-speed", action="store_true")
    ap.add_argument("--dims", help="dimensions (--whitening: 100,200,400; --filter-speed: 200,400)")
    ap.add_argument("--seeds", type=int, default=1, help="--whitening's draws per dimension")
    ap.add_argument("--eps", type=float, default=0.1, help="--whitening's contamination")
    ap.add_argument("--table", metavar="SUITE")
    ap.add_argument("--d", type=int, default=400)
    ap.add_argument("--per-dim", type=int, help="rows per dimension (--whitening: 100; else 1000)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    dims = lambda default: [int(x) for x in (args.dims or default).split(",")]  # noqa: E731
    if args.timing:
        timing(args.d, args.per_dim or 1000, args.repeats)
    if args.whitening:
        whitening(dims("100,200,400"), args.per_dim or 100, args.seeds, args.eps)
    if args.filter_speed:
        filter_speed(dims("200,400"), args.per_dim or 1000, args.repeats)
    if args.table:
        table(args.table)


if __name__ == "__main__":
    main()
