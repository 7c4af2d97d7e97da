"""The stage cache's warm paths against a cold run, timed in one run on this machine.

```
python benchmarks/cache.py                    # the paper suite, --workers 2, as README command 1 runs
python benchmarks/cache.py --suite smoke      # a quick look
python benchmarks/cache.py --data-dir ../shared/datasets   # the real data read from UCI source files
```

Runs of ``cmbench suite SUITE --workers N`` in a fresh output folder, each in a
subprocess (imports and the report included, as a user would see them):

1. cold;
2. the same command again (computes nothing): target at most 2 s or 10% of cold;
3. with ``--plugin winsorized.py`` (the README's example): target at most 15% of cold,
   and its cube equal to a cold run with the plugin (run 5, all variables but ``seconds``);
4. after editing the plugin's default parameter: target at most 15% of cold;
5. cold with the original plugin in another folder (for the equality check of 3 only).

Runs 2-4 are repeated ``--repeat`` times (default 3), each from the very state
it follows (the output folder copied after run 1, and after the first run 3,
restored in place): the median is compared, since single runs on a shared
machine move by 10-30%. Run 1 is repeated ``--cold-repeat`` times (default 3)
in fresh folders, one after each round of warm runs, and the ratios divide by
the median: a single cold run taken while the machine is slow or fast moved
every ratio by as much as the targets leave. It prints each time, the three
ratios and PASS/FAIL, the load average, and the CPU seconds of each run with
its workers; it always exits 0 (it is a report).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import numpy as np


HERE = Path(__file__).resolve().parent
#: the README's example plugin, as the tests keep it (verbatim: tests/test_docs.py checks it)
WINSORIZED = (HERE.parent / "tests" / "plugins" / "winsorized.py").read_text()


#: where the runs read the real data: None, as README command 1 runs (the tables shipped in the
#: package; CMBENCH_DATA_DIR unset), or a folder of UCI source files (``--data-dir``)
DATA_DIR = None


def child_env(**extra) -> dict:
    env = dict(os.environ, MPLBACKEND="Agg", **extra)
    env.pop("CMBENCH_DATA_DIR", None)
    if DATA_DIR is not None:
        env["CMBENCH_DATA_DIR"] = str(DATA_DIR)
    return env


def timed(args: list, cwd: Path, allowed: tuple = (0,)) -> tuple[float, float]:
    """Wall seconds of one CLI run, and CPU seconds of it and its worker processes; exits
    unless its exit code is in ``allowed``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cmbench.cli", *args], cwd=cwd, env=child_env(),
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in allowed:  # the paper suite has no failed cell: anything else is a broken run
        sys.exit(f"cmbench {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def same_cubes(a: Path, b: Path) -> str:
    """'' when every cube in ``a`` equals its namesake in ``b`` (all variables but seconds), else why not."""
    import xarray as xr

    for path in sorted(a.glob("*.nc")):
        with xr.open_dataset(path) as x, xr.open_dataset(b / path.name) as y:
            for v in x.data_vars:
                if v == "seconds":
                    continue
                if v not in y or not np.array_equal(x[v].values, y[v].values, equal_nan=x[v].dtype.kind == "f"):
                    return f"{path.name}: {v} differs"
    return ""


def snapshot(folder: Path, to: Path) -> Path:
    """A copy of an output folder (files, times and all), to start runs from."""
    shutil.copytree(folder, to)
    return to


def restore(state: Path, folder: Path) -> None:
    """``folder`` as ``state`` holds it, at its own path (stamps name the files by path)."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(state, folder)


def median(pairs: list) -> tuple[float, float]:
    """The run of median wall time among ``(wall, cpu)`` pairs."""
    return sorted(pairs)[len(pairs) // 2]


def suite_args(doc: str) -> argparse.Namespace:
    """``--suite`` (default paper), ``--workers`` (default 2) and ``--data-dir`` of a benchmark whose
    docstring is ``doc``; ``--data-dir`` sets `DATA_DIR` for the runs."""
    global DATA_DIR
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--suite", default="paper")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3,
                        help="warm runs of each kind, each from the same state; the median is compared")
    parser.add_argument("--cold-repeat", type=int, default=3,
                        help="cold runs (the first, then one after each round of warm runs, in a fresh "
                             "folder); the median is the cold time the ratios divide by")
    parser.add_argument("--plugin", default=None, metavar="FILE", type=Path,
                        help="time this plugin file in place of the README's example (its default "
                             "parameter edited: every '0.05' made '0.1')")
    parser.add_argument("--data-dir", default=None, metavar="DIR",
                        help="read the real data sets' UCI source files from DIR (CMBENCH_DATA_DIR, e.g. "
                             "../shared/datasets); default: the tables shipped in the package, as README "
                             "command 1 runs")
    args = parser.parse_args()
    args.plugin_text = WINSORIZED if args.plugin is None else args.plugin.read_text()
    if "0.05" not in args.plugin_text:
        parser.error(f"--plugin {args.plugin}: no '0.05' to edit")
    if args.data_dir is not None:
        DATA_DIR = Path(args.data_dir).resolve()
        if not DATA_DIR.is_dir():
            parser.error(f"--data-dir {args.data_dir}: not a folder")
    return args


@contextlib.contextmanager
def bench_folder(prefix: str, args: argparse.Namespace) -> Iterator[tuple[Path, Path, list]]:
    """A temporary folder with the plugin of ``args`` in it (`suite_args`: the README's by default):
    yields the folder, the plugin file and the command ``suite SUITE --workers N`` of ``args``."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        tmp = Path(tmp)
        plugin = tmp / "winsorized.py"
        plugin.write_text(args.plugin_text)
        yield tmp, plugin, ["suite", args.suite, "--workers", str(args.workers)]


def main() -> None:
    args = suite_args(__doc__)
    load_before = f"{os.getloadavg()[0]:.1f}"
    with bench_folder("cmbench-cache-bench-", args) as (tmp, plugin, base):
        folder = tmp / "out"
        out = ["--out", str(folder)]
        colds = [timed(base + out, tmp)]
        states = {"cold": snapshot(folder, tmp / "state-cold")}
        runs: dict = {"unchanged": [], "plugin": [], "edited": []}
        for i in range(max(args.repeat, args.cold_repeat - 1)):  # each warm run from the same state
            if len(colds) < args.cold_repeat:  # the machine's speed drifts: cold runs spread over the runs
                again = tmp / f"cold-{i}"
                colds.append(timed(base + ["--out", str(again)], tmp))
                shutil.rmtree(again)
            if i >= args.repeat:
                continue
            restore(states["cold"], folder)
            runs["unchanged"].append(timed(base + out, tmp))
            restore(states["cold"], folder)
            plugin.write_text(args.plugin_text)
            runs["plugin"].append(timed(base + out + ["--plugin", str(plugin)], tmp))
            if "plugin" not in states:
                states["plugin"] = snapshot(folder, tmp / "state-plugin")
            restore(states["plugin"], folder)
            plugin.write_text(args.plugin_text.replace("0.05", "0.1"))
            runs["edited"].append(timed(base + out + ["--plugin", str(plugin)], tmp))
        (warm, warm_cpu), (plug, plug_cpu), (edited, edited_cpu) = (median(runs[k]) for k in runs)
        cold, cold_cpu = median(colds)
        name = next(p.name for p in folder.iterdir() if p.is_dir())
        kept = states["plugin"] / name
        (tmp / "ref").mkdir()
        original = tmp / "ref" / "winsorized.py"
        original.write_text(args.plugin_text)
        cold_plug, cold_plug_cpu = timed(base + ["--out", str(tmp / "ref"), "--plugin", str(original)], tmp)
        diff = same_cubes(kept, tmp / "ref" / name)

    def row(label, t, ratio, ok, note=""):
        print(f"{label:<34} {'PASS' if ok else 'FAIL'}   {t:6.2f} s  {100 * ratio:5.1f}% of cold{note}")

    print(f"cmbench {' '.join(base)} ({os.cpu_count()} cores; load average {load_before} before, "
          f"{os.getloadavg()[0]:.1f} after; real data from "
          f"{'source files in ' + str(DATA_DIR) if DATA_DIR else 'the shipped tables'})")
    print(f"{'cold':<34}        {cold:6.2f} s   (the median of {len(colds)}: "
          + " ".join(f"{w:.2f}" for w, _ in colds) + f"; warm runs below: the median of {args.repeat}, "
          f"each from the same state; all: " + "; ".join(
              f"{k} " + " ".join(f"{w:.2f}" for w, _ in v) for k, v in runs.items()) + ")")
    row("warm, unchanged", warm, warm / cold, warm <= max(2.0, 0.10 * cold), "  (target <= 2 s or 10%)")
    row("warm, --plugin winsorized.py", plug, plug / cold, plug <= 0.15 * cold and not diff,
        "  (target <= 15%; cube " + ("equals a cold run with the plugin)" if not diff else f"DIFFERS: {diff})"))
    row("warm, plugin's default edited", edited, edited / cold, edited <= 0.15 * cold, "  (target <= 15%)")
    print(f"{'cold with the plugin (reference)':<34}        {cold_plug:6.2f} s")
    # on a shared machine wall times follow the load; CPU seconds (the run and its workers) do not
    print("CPU seconds: " + ", ".join(f"{label} {c:.1f} ({100 * c / cold_cpu:.1f}%)"
                                      for label, c in (("cold", cold_cpu), ("unchanged", warm_cpu),
                                                       ("plugin", plug_cpu), ("edited", edited_cpu))))


if __name__ == "__main__":
    main()
