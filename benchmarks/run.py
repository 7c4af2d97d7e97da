"""cmbench kernel benchmarks: each target times a kernel against a baseline in the same run.

    python benchmarks/run.py                 # every target
    python benchmarks/run.py --only exact    # one target (repeatable)
    python benchmarks/run.py --quick         # smaller sizes: a smoke run

Ratios, not absolute times: this machine is shared and noisy, so each target
times the fast kernel and its baseline back to back (best of ``--repeat`` for
the short ones) and prints both timings, their ratio, the errors where they
matter and PASS or FAIL against its target (each `Result` states it, e.g.
"workers 2 < 60 s and >= 1.6x workers 1" for the paper suite). It is a report,
not a test: it exits 0 whatever FAILs; the test suite checks only that the fast
kernels give the simple kernels' results.

Kernels run with BLAS limited to one thread, as the runner calls them (each
unit runs under ``threadpool_limits(1)``); the suite target uses the CLI in a
subprocess with a fresh output folder and ``--no-resume``.
"""
from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cmbench  # noqa: E402
from baselines import ithsvd_svd_loop, per_row_lstsq  # noqa: E402


@dataclass
class Result:
    name: str
    target: str
    passed: Optional[bool]  # None: could not run
    lines: list = field(default_factory=list)
    summary: str = ""


def best_time(fn: Callable, repeat: int = 1):
    """(best wall time over ``repeat`` calls, the last call's value)."""
    best, value = np.inf, None
    for _ in range(max(1, repeat)):
        gc.collect()
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


def plugins():
    reg = cmbench.load_plugins()
    return reg.adversaries, reg.recoverers, reg.estimators, reg.datasets


def low_rank(N: int, n: int, r: int, seed: int) -> np.ndarray:
    """x = A z: a generic Gaussian A (n x r), z ~ N(1, I) (not centred)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, r))
    return (1.0 + rng.standard_normal((N, r))) @ A.T, A


def hide(X: np.ndarray, budget: float) -> np.ndarray:
    adv = plugins()[0]["hide-smallest"]
    return adv.fn(X, budget, rng=np.random.default_rng(0), structure=None, **adv.params)


def recoverer_call(name: str, Xm: np.ndarray, rank: int, **params):
    decl = plugins()[1][name]
    return decl.fn(Xm, rng=np.random.default_rng(0), structure=None, rank=rank, **{**decl.params, **params})


def ithsvd_call(Xm: np.ndarray, rank: int, **params):
    return recoverer_call("ithsvd", Xm, rank, **params)


def suite_params(experiment: str, recoverer: str) -> dict:
    """The parameters ``suites/paper.toml`` gives a recoverer in an experiment."""
    from cmbench.suite import load_suite

    exp = {e.name: e for e in load_suite("paper").experiments}[experiment]
    (entry,) = [r for r in exp.recoverers if r.name == recoverer]
    return dict(entry.params)


def hidden_error(Y: np.ndarray, X: np.ndarray, Xm: np.ndarray) -> float:
    """Relative l2 error on the hidden entries."""
    hidden = np.isnan(Xm)
    return float(np.linalg.norm(Y[hidden] - X[hidden]) / np.linalg.norm(X[hidden]))


def fmt_t(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


# --------------------------------------------------------------------------- targets

def _paper_cell(experiment: str, name: str, instance: int, budget: float):
    """(data, corrupted matrix) of one cell of ``suites/paper.toml``, built as the runner builds it."""
    from cmbench.runner.seeds import rng_for
    from cmbench.suite import load_suite

    suite = load_suite("paper")
    exp = {e.name: e for e in suite.experiments}[experiment]
    (ds,) = [d for d in exp.datasets if d.label == name]
    (adv,) = exp.adversaries
    data = ds.decl.fn(instance=instance, rng=rng_for(suite.seed, "load", name, instance), **ds.params)
    rng = rng_for(suite.seed, "corrupt", name, instance, adv.label, budget)
    return data, adv.decl.fn(np.asarray(data.X), budget, rng=rng, structure=data.structure, **adv.params)


# The plain loop run to its limit on the synthetic cell: a change of at most
# 1e-13 per iteration (its slowest rows there approach the limit at a rate of
# about 1 - 3e-3, so it stops within ~1e-10 of it).
LIMIT_TOL, LIMIT_ITER = 1e-13, 1_000_000


def target_ithsvd_vs_svd_loop(quick: bool, repeat: int) -> Result:
    lines, ratios, oks = [], [], []
    # wearable-sensor: the suite's real-data rule (plain iteration, 100 iterations);
    # synthetic-uniform, instance 2: a cell where the suite's Two-Step-M keeps
    # its limit jumps, against the plain loop run to its limit.
    cells = [("realworld", "wearable-sensor", 0, 0.1, suite_params("realworld", "ithsvd"), {}),
             ("synthetic", "synthetic-uniform", 2, 0.05, suite_params("synthetic", "ithsvd"),
              {"tol": LIMIT_TOL, "max_iter": LIMIT_ITER})]
    for experiment, name, instance, budget, params, to_limit in cells:
        data, Xm = _paper_cell(experiment, name, instance, budget)
        base = {"tol": params["tol"], "max_iter": params["max_iter"], **to_limit}
        t_fast, (Y, info) = best_time(lambda: ithsvd_call(Xm, data.rank, **params), repeat)
        t_base, (Yb, binfo) = best_time(lambda: ithsvd_svd_loop(Xm, data.rank, **base), 1)
        hidden = np.isnan(Xm)
        diff = float(np.linalg.norm(Y[hidden] - Yb[hidden]) / np.linalg.norm(Yb[hidden]))
        e_fast = float(np.linalg.norm(Y.mean(axis=0) - data.mean))
        e_base = float(np.linalg.norm(Yb.mean(axis=0) - data.mean))
        ratio = t_base / t_fast
        ok = ratio >= 20 and diff <= 1e-6 and abs(e_fast - e_base) <= 1e-3 * e_base
        ratios.append(f"{name} {ratio:.1f}x")
        oks.append(ok)
        rule = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in params.items())
        lines += [f"{name} (instance {instance}), hide-smallest {budget}, rank {data.rank}: the suite's {rule}",
                  f"  ithsvd           {fmt_t(t_fast):>10}  iterations {info['iterations']:>7} "
                  f"converged {bool(info['converged'])}  l2 {e_fast:.6f}  {_extra(info)}",
                  f"  np.linalg.svd    {fmt_t(t_base):>10}  iterations {binfo['iterations']:>7} "
                  f"converged {binfo['converged']}  l2 {e_base:.6f}  (tol {base['tol']:g}, max_iter {base['max_iter']}"
                  f"{': to the limit' if to_limit else ''})",
                  f"  ratio {ratio:.1f}x; filled entries differ by {diff:.1e} (relative)"]
    return Result("ithsvd-vs-svd-loop", ">= 20x faster, same result (1e-6 filled, 1e-3 error)", all(oks), lines,
                  ", ".join(ratios))


def _extra(info: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in info.items() if k not in ("converged", "iterations"))


def target_ithsvd_vs_iterative_imputer(quick: bool, repeat: int) -> Result:
    N, n, r, budget = (4000 if quick else 20000), 32, 16, 0.1
    X, _ = low_rank(N, n, r, seed=1)
    Xm = hide(X, budget)
    peer = plugins()[1]["iterative-imputer"]
    # with its accelerations (Anderson, coarse start), as the paper suite runs it on real data
    t_fast, (Y, info) = best_time(lambda: recoverer_call("ppca-impute", Xm, r, memory=5, coarse=1000), repeat)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_base, Yb = best_time(lambda: peer.fn(Xm, rng=np.random.default_rng(0), structure=None, rank=None,
                                               **peer.params), 1)
    e_fast, e_base = hidden_error(Y, X, Xm), hidden_error(Yb, X, Xm)
    ratio = t_base / t_fast
    ok = ratio >= 50 and e_fast < e_base
    passes = f"{info['iterations']} passes"
    return Result("ppca-impute-vs-iterative-imputer", ">= 50x faster, lower error", ok, [
        f"data: x = A z, N = {N}, n = {n}, rank {r}, hide-smallest {budget}; "
        f"IterativeImputer{tuple(peer.params.items())}",
        f"ppca-impute       {fmt_t(t_fast):>10}  hidden-entry error {e_fast:.2e}  ({passes})",
        f"IterativeImputer  {fmt_t(t_base):>10}  hidden-entry error {e_base:.2e}",
    ], f"{ratio:.1f}x, err {e_fast:.1e} vs {e_base:.1e}")


def _ppca_suite_params(experiment: str) -> dict:
    decl = plugins()[1]["ppca-impute"]
    return {**decl.params, **suite_params(experiment, "ppca-impute")}


def target_ppca_vs_row_by_row(quick: bool, repeat: int) -> Result:
    from unittest import mock

    from cmbench.builtins import batched, ppca

    fn = plugins()[1]["ppca-impute"].fn

    def rows_only(Xm, rank, params):  # the row-by-row pass everywhere: the implementation before patterns
        with mock.patch.object(ppca._PatternCompletion, "worth_it", staticmethod(lambda pats, inverse: False)):
            return fn(Xm, rng=None, structure=None, rank=rank, **params)

    cells = [("realworld", "wearable-sensor", 0, b) for b in (0.1, 0.3, 0.45)]
    cells += [("synthetic", "synthetic-exponential", 0, b) for b in (0.1, 0.3)]
    lines, oks, parts = [], [], []
    for experiment, name, instance, budget in cells:
        data, Xm = _paper_cell(experiment, name, instance, budget)
        params = _ppca_suite_params(experiment)
        t_fast, (Y, info) = best_time(lambda: fn(Xm, rng=None, structure=None, rank=data.rank, **params), repeat)
        t_base, (Yb, binfo) = best_time(lambda: rows_only(Xm, data.rank, params), repeat)
        hidden = np.isnan(Xm) & ~np.isnan(Yb)
        diff = float(np.abs(Y[hidden] - Yb[hidden]).max() / np.abs(Yb[hidden]).max())
        e_fast = float(np.linalg.norm(np.nanmean(Y, axis=0) - data.mean))
        e_base = float(np.linalg.norm(np.nanmean(Yb, axis=0) - data.mean))
        ratio = t_base / t_fast
        pats, inverse = batched.patterns(np.isnan(Xm))
        per_pattern = ppca._PatternCompletion.worth_it(pats, inverse)
        same = diff <= 1e-5 and abs(e_fast - e_base) <= 1e-6 * e_base
        ok = same and (ratio >= 2 if per_pattern else True)
        oks.append(ok)
        parts.append(f"{name.split('-')[0]} {budget:g} {ratio:.1f}x")
        lines += [f"{name} (instance {instance}), hide-smallest {budget}, rank {data.rank}, "
                  f"{'per pattern' if per_pattern else 'row by row (few rows per pattern)'}",
                  f"  ppca-impute   {fmt_t(t_fast):>10}  iterations {info['iterations']:>4}  l2 {e_fast:.9f}",
                  f"  row by row    {fmt_t(t_base):>10}  iterations {binfo['iterations']:>4}  l2 {e_base:.9f}",
                  f"  ratio {ratio:.2f}x; filled entries differ by {diff:.1e} (max, relative to the largest)"]
    return Result("ppca-impute-vs-row-by-row", ">= 2x where per pattern, same result (1e-5 filled, 1e-6 l2)",
                  all(oks), lines, ", ".join(parts))


def _exact_vs_loop(name: str, data, Xm: np.ndarray, label: str, repeat: int) -> Result:
    decl = plugins()[1]["exact"]
    A = data.structure
    t_fast, Y = best_time(lambda: decl.fn(Xm, rng=None, structure=A, rank=None, **decl.params), repeat)
    t_base, Yb = best_time(lambda: per_row_lstsq(Xm, A), 1)
    same_nan = bool(np.array_equal(np.isnan(Y), np.isnan(Yb)))
    diff = float(np.nanmax(np.abs(Y - Yb)) / np.nanmax(np.abs(Yb)))
    ratio = t_base / t_fast
    ok = ratio >= 20 and same_nan and diff < 1e-8
    return Result(name, ">= 20x faster (goal 50x), same result", ok, [
        f"data: synthetic-gaussian (A 16 x 8 block diagonal), N = {len(Xm)}, {label}",
        f"exact (batched)       {fmt_t(t_fast):>10}",
        f"np.linalg.lstsq loop  {fmt_t(t_base):>10}",
        f"same unrecovered rows: {same_nan}; max relative difference {diff:.1e}",
    ], f"{ratio:.1f}x, diff {diff:.0e}")


def _synthetic(N: int):
    datasets = plugins()[3]
    return datasets["synthetic-gaussian"].fn(instance=0, rng=np.random.default_rng(0), N=N)


def target_exact_vs_loop(quick: bool, repeat: int) -> Result:
    budget = 0.2
    data = _synthetic(10000 if quick else 100000)
    return _exact_vs_loop("exact-vs-row-loop", data, hide(data.X, budget), f"hide-smallest {budget}", repeat)


def target_exact_mcar_vs_loop(quick: bool, repeat: int) -> Result:
    frac = 0.1
    data = _synthetic(10000 if quick else 100000)
    rng = np.random.default_rng(0)
    Xm = np.where(rng.random(data.X.shape) < frac, np.nan, data.X)
    return _exact_vs_loop("exact-mcar-vs-row-loop", data, Xm, f"{frac:.0%} of entries missing at random (MCAR)",
                          repeat)


def target_linear_in_n(quick: bool, repeat: int) -> Result:
    sizes = (2000, 20000) if quick else (10000, 100000)
    n = 16
    ests = plugins()[2]
    rng = np.random.default_rng(3)
    big = rng.standard_normal((sizes[1], n)) + 1.0
    bad = rng.random(sizes[1]) < 0.1
    big[bad] += 8.0  # 10% outlying rows, so the robust methods have work to do
    lines, oks, parts = [f"data: N(1, I) in n = {n}, 10% of rows shifted by 8; times at N = {sizes}"], [], []
    for name in ("tukey", "geometric-median", "filter"):
        decl = ests[name]
        times = []
        for N in sizes:
            X = big[:N]
            t, _ = best_time(lambda: decl.fn(X, rng=np.random.default_rng(0), **decl.params), repeat)
            times.append(t)
        ratio = times[1] / times[0]
        # 10x the rows: linear is 10; allow log factors and timer noise.
        ok = ratio <= 15
        oks.append(ok)
        parts.append(f"{name} {ratio:.1f}")
        lines.append(f"{name:<17} {fmt_t(times[0]):>10} -> {fmt_t(times[1]):>10}  ratio {ratio:5.1f}  "
                     f"{'PASS' if ok else 'FAIL'}")
    return Result("robust-estimators-linear-in-N", "t(10N)/t(N) <= 15 (linear: 10)", all(oks), lines,
                  ", ".join(parts))


MILLION_PASSES = 20


def target_million_cell(quick: bool, repeat: int) -> Result:
    N = 100_000 if quick else 1_000_000
    blocks = [[10, 5]] * 5  # n = 50, rank 25
    budget = 0.1
    adv, recs, ests, datasets = plugins()
    data = datasets["synthetic-gaussian"].fn(instance=0, rng=np.random.default_rng(0), N=N, blocks=blocks)
    X = np.ascontiguousarray(data.X)
    X.setflags(write=False)
    base = X.nbytes
    lines = [f"data: synthetic-gaussian, blocks {blocks[0]} x {len(blocks)} (n = 50, rank 25), N = {N}, "
             f"X = {base / 2**20:.0f} MiB; hide-smallest {budget}, ithsvd (at most {MILLION_PASSES} passes), every estimator"]
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    a = adv["hide-smallest"]
    Xc = a.fn(X, budget, rng=np.random.default_rng(0), structure=data.structure, **a.params)
    Xc.setflags(write=False)
    steps = [("corrupt", time.perf_counter() - t0, tracemalloc.get_traced_memory()[1])]
    tracemalloc.reset_peak()
    t = time.perf_counter()
    # The peak is reached in the first pass; more passes only take time.
    Xr, info = ithsvd_call(Xc, data.rank, max_iter=MILLION_PASSES)
    Xr.setflags(write=False)
    steps.append((f"ithsvd ({info['iterations']} it.)", time.perf_counter() - t, tracemalloc.get_traced_memory()[1]))
    errs = {}
    for name, decl in ests.items():
        tracemalloc.reset_peak()
        t = time.perf_counter()
        try:
            mu = decl.fn(Xr, rng=np.random.default_rng(0), **decl.params)
            errs[name] = float(np.linalg.norm(mu - data.mean))
        except (cmbench.Undefined, cmbench.NotApplicable) as exc:
            errs[name] = f"{type(exc).__name__}"
        steps.append((name, time.perf_counter() - t, tracemalloc.get_traced_memory()[1]))
    total = time.perf_counter() - t0
    tracemalloc.stop()
    peak = max(p for _, _, p in steps)
    ratio = peak / base
    for label, secs, p in steps:
        lines.append(f"{label:<22} {fmt_t(secs):>10}  peak traced {p / 2**20:8.0f} MiB = {p / base:.2f} x X")
    lines.append("l2 errors: " + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                                          for k, v in errs.items()))
    lines.append(f"whole cell {fmt_t(total)}; peak is of allocations made in the cell "
                 "(Xc and Xr included, X itself not)")
    return Result("million-row-cell-memory", "peak < 3x X.nbytes", ratio < 3, lines, f"{ratio:.2f}x X")


def _suite_env() -> dict:
    env = dict(os.environ)
    shared = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"  # ../shared/datasets
    if "CMBENCH_DATA_DIR" not in env and shared.is_dir():
        env["CMBENCH_DATA_DIR"] = str(shared)
    return env


SUITE_TIMEOUT = 900.0


class SuiteTimeout(Exception):
    pass


def _run_suite(suite: str, workers: int) -> float:
    with tempfile.TemporaryDirectory(prefix="cmbench-bench-") as out:
        cmd = [sys.executable, "-m", "cmbench.cli", "suite", suite, "--out", out,
               "--workers", str(workers), "--no-resume"]
        t = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=_suite_env(), capture_output=True, text=True,
                                  timeout=SUITE_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise SuiteTimeout(f"--workers {workers}: stopped after --suite-timeout {SUITE_TIMEOUT:g} s") from None
        seconds = time.perf_counter() - t
        if proc.returncode != 0 or not list(Path(out).glob("*.pdf")):
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
        return seconds


def target_paper_suite(quick: bool, repeat: int) -> Result:
    suite = str(Path(__file__).resolve().parent / "quick_suite.toml") if quick else "paper"
    target = "workers 2 < 60 s and >= 1.6x workers 1"
    try:
        t2 = _run_suite(suite, 2)  # the target's number first: workers 1 takes longer
        t1 = _run_suite(suite, 1)
    except SuiteTimeout as exc:
        return Result("paper-suite", target, False, [str(exc)], f"> {SUITE_TIMEOUT:g} s")
    except RuntimeError as exc:
        return Result("paper-suite", target, None, [str(exc)], "error")
    speedup = t1 / t2
    ok = t2 < 60 and speedup >= 1.6
    return Result("paper-suite", target, ok, [
        f"suite {Path(suite).stem}, report included, fresh output folder, --no-resume",
        f"--workers 1  {fmt_t(t1):>10}",
        f"--workers 2  {fmt_t(t2):>10}  speed-up {speedup:.2f}x",
    ], f"{t2:.0f} s, {speedup:.2f}x")


TARGETS = {
    "ithsvd": target_ithsvd_vs_svd_loop,
    "imputer": target_ithsvd_vs_iterative_imputer,
    "ppca": target_ppca_vs_row_by_row,
    "exact": target_exact_vs_loop,
    "exact-mcar": target_exact_mcar_vs_loop,
    "linear": target_linear_in_n,
    "memory": target_million_cell,
    "suite": target_paper_suite,
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(TARGETS), help="run only this target")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--repeat", type=int, default=3, help="timings of the fast kernels: best of this many")
    parser.add_argument("--suite-timeout", type=float, default=SUITE_TIMEOUT,
                        help="seconds after which a suite run is stopped (a FAIL)")
    args = parser.parse_args(argv)
    globals()["SUITE_TIMEOUT"] = args.suite_timeout
    blas = [f"{i['internal_api']} {i.get('version')} ({i.get('architecture')}, {i['num_threads']} threads)"
            for i in threadpool_info() if i["user_api"] == "blas"]
    print(f"cmbench {cmbench.__version__}, numpy {np.__version__}, {os.cpu_count()} cores; BLAS: "
          f"{'; '.join(blas)}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '-')}"
          f"{' (quick sizes)' if args.quick else ''}")
    results = []
    for key in args.only or TARGETS:
        print(f"\n== {key}", flush=True)
        try:
            with threadpool_limits(limits=1):
                res = TARGETS[key](args.quick, args.repeat)
        except Exception as exc:  # a report, not a test: record and go on
            res = Result(key, "", None, [f"error: {type(exc).__name__}: {exc}"], "error")
        results.append(res)
        for line in res.lines:
            print("  " + line)
        print(f"  -> {'PASS' if res.passed else 'FAIL' if res.passed is False else 'ERROR'} ({res.target})",
              flush=True)
    print("\nsummary")
    width = max(len(r.name) for r in results)
    for r in results:
        status = "PASS" if r.passed else "FAIL" if r.passed is False else "ERROR"
        print(f"  {r.name:<{width}}  {status:<5}  {r.summary:<32}  target: {r.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
