"""Peak memory of one full-size sample-level unit against its data matrix.

```
python benchmarks/unit_memory.py              # DKK17 at d = 400, N = 400,000, all methods of `dkk17`
python benchmarks/unit_memory.py --d 200      # a smaller look
```

Target: one unit of the full ``dkk17`` suite at d = 400 (one data
set, one instance, DKK17's noise at eps = 0.1, the ten estimators of its
``figure1`` experiment) peaks below three times its data matrix
(N x d float64, 1.28 GB) in every process.

It runs ``cmbench suite`` on a one-unit copy of ``figure1`` with ``--workers 1``
(the sweep runs in one worker process) in a subprocess, and samples the
high-water mark (``VmHWM`` of ``/proc/PID/status``) of that process and every
descendant every 50 ms; the largest is the unit's peak. The same command at
d = 10 gives what a worker holds before any data (interpreter, numpy, cmbench),
printed beside it. It is a report: it always exits 0.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE = HERE.parent / "suites" / "dkk17.toml"


def one_unit_suite(d: int) -> str:
    """The ``figure1`` experiment of ``dkk17.toml`` cut to one data set and one instance."""
    text = SUITE.read_text()
    grid = "d = [100, 150, 200, 250, 300, 350, 400]"
    head, _, _ = text.partition("[[experiment]]")
    body = text[len(head):].split("[[experiment]]")[1]  # figure1 and its claims
    assert grid in body, "dkk17.toml's grid changed: update this benchmark"
    body = body.replace(grid, f"d = [{d}]").replace("instances = 5", "instances = 1")
    # the claims name data sets of the full grid; one unit has one
    body = body.split("[[experiment.claim]]")[0]
    return 'name = "unit-memory"\nseed = 2017\n\n[[experiment]]' + body


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def high_water(pid: int) -> int:
    """VmHWM of ``pid`` in bytes (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run(d: int, cmbench: str, workers: int = 1) -> tuple[int, float, float, int]:
    """(peak bytes of the largest process, wall s, CPU s of the tree, exit code) of one unit at ``d``."""
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "unit.toml"
        suite.write_text(one_unit_suite(d))
        cmd = [cmbench, "suite", str(suite), "--out", str(Path(tmp) / "out"), "--workers", str(workers),
               "--no-report", "--no-progress"]
        before = os.times()
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        peaks: dict[int, int] = {}
        while proc.poll() is None:
            for pid in descendants(proc.pid):
                peaks[pid] = max(peaks.get(pid, 0), high_water(pid))
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        after = os.times()
        if proc.returncode:
            print(proc.stderr.read(), file=sys.stderr)
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        return max(peaks.values(), default=0), wall, cpu, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=400)
    ap.add_argument("--cmbench", default=str(Path(sys.executable).with_name("cmbench")))
    args = ap.parse_args()
    matrix = args.d * 1000 * args.d * 8
    base, _, _, _ = run(10, args.cmbench)
    peak, wall, cpu, code = run(args.d, args.cmbench)
    ratio = peak / matrix
    print(f"one dkk17 unit, d = {args.d}, N = {1000 * args.d:,}: data matrix {matrix / 1e9:.2f} GB")
    print(f"  peak RSS of the largest process: {peak / 1e9:.2f} GB = {ratio:.2f}x the matrix "
          f"({(peak - base) / matrix:.2f}x above the {base / 1e6:.0f} MB a worker holds at d = 10)")
    print(f"  wall {wall:.1f} s, CPU {cpu:.1f} s, exit {code}, load average {os.getloadavg()[0]:.2f}")
    print(f"  target peak < 3x the matrix: {'PASS' if ratio < 3 and code == 0 else 'FAIL'}")


if __name__ == "__main__":
    main()
