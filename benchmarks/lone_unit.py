"""One full-size sample-level unit alone on two workers: are both cores busy?

```
python benchmarks/lone_unit.py               # DKK17 at d = 200, N = 200,000, 3 interleaved rounds
python benchmarks/lone_unit.py --d 400 --rounds 1
```

A lone unit used to run in one process (the client's, with ``--workers 2``),
the second core idle. The runner now splits a sample-level unit larger than an
even share of the sweep into one part per worker, each estimating a share of
its cells balanced by the estimators' declared costs
(`cmbench.runner.jobs.balanced`). This runs the
``figure1`` unit of ``dkk17`` (one data set, one instance, its ten estimators;
`unit_memory.one_unit_suite`) with ``--workers 1`` (the baseline) and
``--workers 2``, interleaved, and prints the medians of wall and CPU (the
whole process tree: every worker is the CLI's child and is reaped), the ratio
wall / CPU (0.5 is both cores busy all along, 1.0 one core) and the peak RSS
of the largest process. Target: wall at most 0.7 x CPU with two workers.
It is a report: it always exits 0.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from unit_memory import run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cmbench", default=str(Path(sys.executable).with_name("cmbench")))
    args = ap.parse_args()
    runs: dict[int, list] = {1: [], 2: []}
    for _ in range(args.rounds):
        for workers in (1, 2):
            runs[workers].append(run(args.d, args.cmbench, workers))
    print(f"one dkk17 unit, d = {args.d}, N = {1000 * args.d:,}, ten estimators; medians of {args.rounds} "
          f"interleaved rounds, load average {os.getloadavg()[0]:.2f}")
    wall = {}
    for workers, rs in runs.items():
        wall[workers] = statistics.median(r[1] for r in rs)
        cpu = statistics.median(r[2] for r in rs)
        peak = max(r[0] for r in rs)
        codes = {r[3] for r in rs}
        print(f"  --workers {workers}: wall {wall[workers]:6.1f} s  CPU {cpu:6.1f} s  wall/CPU "
              f"{wall[workers] / cpu:.2f}  largest process {peak / 1e9:.2f} GB  exit {sorted(codes)}")
    print(f"  wall, 2 workers against 1: {wall[2] / wall[1]:.2f}x")


if __name__ == "__main__":
    main()
