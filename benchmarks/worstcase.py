"""Pipeline evaluations per second of a worst-case cell on the paper's synthetic data.

One worst-case cell = one adaptive adversary searching, at one budget, for the
corruption that maximizes one pipeline's error (plugins/worstcase.py). The
pipeline call should dominate; this prints, per pipeline, the evaluations per
second of the whole search, the share of the time spent inside the pipeline,
and the search's own overhead per evaluation, plus the error the search
reached against the fixed attack of the same level.

    python benchmarks/worstcase.py                       # A2 hide, rho = 0.1, 200 evaluations
    python benchmarks/worstcase.py --adversary worst-case-a3-hide --budget 0.05
    python benchmarks/worstcase.py --pipelines none+mean exact+mean --evaluations 400

Single-threaded BLAS (as the runner's units), N = 1000 (the paper's size).
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
from threadpoolctl import threadpool_limits

import cmbench
from cmbench.builtins import worstcase as wc

DEFAULT_PIPELINES = ("none+mean", "none+cmedian", "none+trimmed-mean", "none+geometric-median",
                     "none+filter", "exact+mean", "exact+cmedian", "ithsvd+mean")
#: the fixed attack shown next to the worst case, per (level, mode)
FIXED = {("value", "missing"): "hide-smallest", ("coordinate", "missing"): "hide-structured",
         ("sample", "missing"): "hide-samples", ("value", "replace"): "replace-values",
         ("coordinate", "replace"): "replace-structured", ("sample", "replace"): "replace-samples"}


def make_pipeline(registry, data, pair: str):
    """``pipeline(X) -> l2 error`` for 'recoverer+estimator', timing its own calls."""
    rname, ename = pair.split("+", 1)
    rec, est = registry.recoverers[rname], registry.estimators[ename]

    def pipeline(Xc):
        t = time.perf_counter()
        try:
            out = rec.fn(Xc, rng=np.random.default_rng(1), structure=data.structure,
                         rank=data.rank, **rec.params)
            Xr = out[0] if isinstance(out, tuple) else out
            mu = est.fn(Xr, rng=np.random.default_rng(2), **est.params)
            return float(np.linalg.norm(mu - data.mean))
        except cmbench.Undefined:
            return math.nan
        finally:
            pipeline.seconds += time.perf_counter() - t
            pipeline.calls += 1

    pipeline.seconds, pipeline.calls = 0.0, 0
    return pipeline


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--adversary", default="worst-case-a2-hide")
    ap.add_argument("--budget", type=float, default=0.1)
    ap.add_argument("--evaluations", type=int, default=200)
    ap.add_argument("--dataset", default="synthetic-gaussian")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--pipelines", nargs="+", default=list(DEFAULT_PIPELINES),
                    help="recoverer+estimator pairs")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    registry = cmbench.load_plugins()
    ds = registry.datasets[args.dataset]
    params = dict(ds.params)
    if "N" in params:
        params["N"] = args.N
    data = ds.fn(instance=0, rng=np.random.default_rng(args.seed), **params)
    adv = registry.adversaries[args.adversary]
    fixed_name = FIXED[(adv.level, adv.mode)]
    fixed = registry.adversaries[fixed_name]
    N, n = data.X.shape
    print(f"{args.adversary} ({adv.level}, {adv.mode}) at budget {args.budget:g}, "
          f"{args.evaluations} evaluations, {args.dataset} N={N} n={n}")
    head = (f"{'pipeline':<24}{'evals':>6}{'seconds':>9}{'evals/s':>9}{'in pipeline':>13}"
            f"{'overhead/eval':>15}{fixed_name:>20}{'worst case':>12}  found by")
    print(head)
    print("-" * len(head))
    with threadpool_limits(limits=1):
        for pair in args.pipelines:
            pipe = make_pipeline(registry, data, pair)
            base = pipe(fixed.fn(data.X, args.budget, rng=np.random.default_rng(args.seed),
                                 structure=data.structure, **fixed.params))
            pipe.seconds, pipe.calls = 0.0, 0
            t = time.perf_counter()
            params = dict(adv.params, evaluations=args.evaluations)
            res = wc.search_worst_case(data.X, args.budget, level=adv.level, mode=adv.mode,
                                       rng=np.random.default_rng(args.seed), structure=data.structure,
                                       pipeline=pipe, **params)
            total = time.perf_counter() - t
            evals = max(pipe.calls, 1)
            how = res.start.label if res.start is not None else "-"
            if res.local.improved:
                how += f" + {res.local.improved} local moves"
            print(f"{pair:<24}{pipe.calls:>6}{total:>9.2f}{pipe.calls / total:>9.1f}"
                  f"{100 * pipe.seconds / total:>12.0f}%{1e3 * (total - pipe.seconds) / evals:>12.2f} ms"
                  f"{base:>20.4f}{res.error:>12.4f}  {how}")


if __name__ == "__main__":
    main()
