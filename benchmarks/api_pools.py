"""The Python API's worker pools: the README's example as a script and in a kernel, and a new
estimator added to a finished paper suite from a warm process against the command line.

```
python benchmarks/api_pools.py                 # both parts, 3 rounds
python benchmarks/api_pools.py --rounds 5 --skip-paper
```

Part 1, each round: the README's "Python API" block (read from README.md) saved as a
script and run with ``python script.py`` in a fresh folder; then the same block in a fresh
Jupyter kernel (nbclient; the kernel's start included). Wall seconds, and CPU seconds of the
whole process tree (this process is made the reaper of orphans, so that workers count).

Part 2: a cold ``cmbench suite paper --workers 2 --no-report`` makes a finished suite; this
process then runs the paper suite once through `cmbench.run_suite` (its workers are then
warm). Each round, from the finished state restored in place: ``cmbench suite paper --plugin
winsorized.py --workers 2 --no-report`` (a fresh interpreter, as a user types it), then
``cmbench.run_suite("paper", plugins=["winsorized.py"], workers=2)`` in this warm process
(wall, and CPU of this process and its workers read from /proc). Medians over the rounds.
It always exits 0 (a report); the machine is shared, so figures drift: compare within a run.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cache import WINSORIZED, adopt_orphans, reap_orphans  # noqa: E402


def readme_block() -> str:
    section = (HERE.parent / "README.md").read_text().split("\n## Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def env() -> dict:
    return {**os.environ, "MPLBACKEND": "Agg"}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def as_script(folder: Path) -> tuple[float, float]:
    script = folder / "example.py"
    script.write_text(readme_block())
    before, start = children_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, str(script)], cwd=folder, env=env(), capture_output=True, text=True)
    wall = time.perf_counter() - start
    reap_orphans()
    if proc.returncode:
        sys.exit(f"the README script failed:\n{proc.stderr[-3000:]}")
    return wall, children_cpu() - before


def in_kernel(folder: Path) -> tuple[float, float]:
    import nbclient
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(readme_block())]
    before, start = children_cpu(), time.perf_counter()
    nbclient.NotebookClient(nb, timeout=1200, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}}).execute()
    wall = time.perf_counter() - start
    time.sleep(1)  # the kernel's workers end with it
    reap_orphans()
    return wall, children_cpu() - before


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and its living descendants, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parent[pid] = int(fields[1])
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    total = 0.0
    for pid in cpu:
        p = pid
        while p and p != root and p in parent:
            p = parent[p]
        if p == root:
            total += cpu[pid]
    return total


def cli(args: list, cwd: Path) -> tuple[float, float]:
    before, start = children_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cmbench.cli", *args], cwd=cwd, env=env(),
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    reap_orphans()
    if proc.returncode:
        sys.exit(f"cmbench {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return wall, children_cpu() - before


def show(name: str, pairs: list) -> None:
    walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
    print(f"{name:46s} wall {np.median(walls):7.2f} s  CPU {np.median(cpus):7.2f} s   "
          f"(runs: {', '.join(f'{w:.1f}/{c:.1f}' for w, c in pairs)})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-api", action="store_true")
    parser.add_argument("--skip-paper", action="store_true")
    args = parser.parse_args()
    adopt_orphans()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not args.skip_api:
            script, kernel = [], []
            for k in range(args.rounds):
                script.append(as_script(Path(tempfile.mkdtemp(dir=tmp))))
                kernel.append(in_kernel(Path(tempfile.mkdtemp(dir=tmp))))
            show("README API block as a script", script)
            show("README API block in a Jupyter kernel", kernel)
        if not args.skip_paper:
            import cmbench

            work = tmp / "paper"
            work.mkdir()
            (work / "winsorized.py").write_text(WINSORIZED)
            cold = cli(["suite", "paper", "--workers", "2", "--no-report", "--out", "out"], work)
            show("paper suite, cold (CLI, once)", [cold])
            shutil.copytree(work / "out", tmp / "finished")
            cmbench.run_suite("paper", out=str(work / "out"), workers=2, progress=False)  # warm: all cached
            command, warm = [], []
            for k in range(args.rounds):
                shutil.rmtree(work / "out")
                shutil.copytree(tmp / "finished", work / "out")
                command.append(cli(["suite", "paper", "--plugin", "winsorized.py", "--workers", "2",
                                    "--no-report", "--out", "out"], work))
                shutil.rmtree(work / "out")
                shutil.copytree(tmp / "finished", work / "out")
                cpu0, start = tree_cpu(os.getpid()), time.perf_counter()
                cmbench.run_suite("paper", out=str(work / "out"), workers=2, progress=False,
                                  plugins=[str(work / "winsorized.py")])
                warm.append((time.perf_counter() - start, tree_cpu(os.getpid()) - cpu0))
            show("+ winsorized, CLI (fresh interpreter)", command)
            show("+ winsorized, run_suite in a warm process", warm)
    print(f"load average at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
