"""Dask's trim threshold: estimators under the nanny's MALLOC_TRIM_THRESHOLD_, and the suite on a LocalCluster.

```
python benchmarks/dask_trim.py                        # lrv and the filter, d = 100, N = 20,000
python benchmarks/dask_trim.py --suite dkk17-quick    # the suite: --scheduler local against --workers 2
python benchmarks/dask_trim.py --suite dkk17-quick --cmd before=/tmp/old/bin/cmbench --cmd after=.venv/bin/cmbench
```

Part 1 runs two sample-level estimators (``lrv`` and the default ``filter``)
on DKK17's noise in fresh interpreters, one BLAS thread, with
``MALLOC_TRIM_THRESHOLD_`` unset (glibc's dynamic thresholds, as cmbench's
local workers run), at 65536 (what Dask's nanny sets by default) and at
268435456 (a "large" value): CPU seconds, system seconds and minor page faults
of the process, medians of interleaved rounds. Page faults do not depend on
the machine's load; seconds do.

Part 2 (``--suite``) runs ``cmbench suite NAME --scheduler local`` and
``--workers 2`` (fresh output folders, no report) in interleaved rounds, per
command given with ``--cmd`` (default: this interpreter's ``cmbench``): wall
seconds and CPU seconds of the whole process tree (workers included).
It is a report: it always exits 0.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETTINGS = {"unset": None, "65536 (Dask's)": "65536", "268435456": "268435456"}

KERNEL = """
import resource, time
import numpy as np
from threadpoolctl import threadpool_limits
import cmbench.builtins.estimators as est
from cmbench.builtins import sample_estimators as se
FILTER = next(e.fn for e in est.register_estimators() if e.name == "filter")  # the default filter
d, N = {d}, {N}
rng = np.random.default_rng(0)
X = rng.standard_normal((N, d)) + 1.0
X[: N // 10] = rng.integers(0, 2, (N // 10, d))
with threadpool_limits(1):
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
    for i in range(3):
        se.lrv_mean(X, eps=0.1, rng=np.random.default_rng(i))
        FILTER(X, eps=0.1, rng=np.random.default_rng(i))
    r1 = resource.getrusage(resource.RUSAGE_SELF)
print(time.process_time() - c0, r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt)
"""


def kernels(d: int, N: int, rounds: int) -> None:
    code = KERNEL.format(d=d, N=N)
    runs: dict = {k: [] for k in SETTINGS}
    for _ in range(rounds):
        for name, value in SETTINGS.items():
            env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
            if value is not None:
                env["MALLOC_TRIM_THRESHOLD_"] = value
            env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = "1"
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            if out.returncode:
                print(out.stderr, file=sys.stderr)
                return
            runs[name].append(tuple(float(x) for x in out.stdout.split()))
    print(f"lrv + filter x 3 on DKK17's noise, d = {d}, N = {N:,}; median of {rounds} interleaved rounds; "
          f"load average {os.getloadavg()[0]:.2f} (shared machine: seconds are noisy, page faults are not)")
    base = statistics.median(r[0] for r in runs["unset"])
    for name, rows in runs.items():
        cpu, sys_s, faults = (statistics.median(r[i] for r in rows) for i in range(3))
        print(f"  MALLOC_TRIM_THRESHOLD_ {name:16} CPU {cpu:6.2f} s ({cpu / base:4.2f}x)  system {sys_s:5.2f} s  "
              f"minor faults {faults:9,.0f}")


def suite_runs(suite: str, cmds: dict, rounds: int) -> None:
    runs: dict = {}
    for _ in range(rounds):
        for label, cmd in cmds.items():
            for how in (["--scheduler", "local", "--workers", "2"], ["--workers", "2"]):
                with tempfile.TemporaryDirectory() as tmp:
                    before, t0 = os.times(), time.perf_counter()
                    done = subprocess.run([*cmd.split(), "suite", suite, "--out", tmp, "--no-report",
                                           "--no-progress", *how], capture_output=True, text=True)
                    wall, after = time.perf_counter() - t0, os.times()
                if done.returncode:
                    print(done.stderr[-2000:], file=sys.stderr)
                cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
                runs.setdefault((label, " ".join(how)), []).append((wall, cpu))
    print(f"cmbench suite {suite}: median of {rounds} interleaved rounds, CPU over the process tree; "
          f"load average {os.getloadavg()[0]:.2f} (shared machine)")
    for label in cmds:
        local = runs[(label, "--workers 2")]
        lw, lc = statistics.median(w for w, _ in local), statistics.median(c for _, c in local)
        for (lab, how), rows in runs.items():
            if lab == label:
                w, c = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
                print(f"  {label:8} {how:36} wall {w:7.1f} s ({w / lw:4.2f}x)  CPU {c:7.1f} s ({c / lc:4.2f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--N", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--suite")
    ap.add_argument("--cmd", action="append", default=[], help="NAME=COMMAND running cmbench")
    args = ap.parse_args()
    if args.suite:
        cmds = dict(c.split("=", 1) for c in args.cmd) or {"here": str(Path(sys.executable).with_name("cmbench"))}
        suite_runs(args.suite, cmds, args.rounds)
    else:
        kernels(args.d, args.N, args.rounds)


if __name__ == "__main__":
    main()
