"""The stage cache's warm paths against a cold run: medians of interleaved runs, CPU beside wall.

```
python benchmarks/cache.py                    # the paper suite, --workers 2, as README command 1 runs
python benchmarks/cache.py --suite smoke      # a quick look
python benchmarks/cache.py --data-dir ../shared/datasets   # the real data read from UCI source files
python benchmarks/cache.py --cmd main=../main/.venv/bin/cmbench --cmd here=.venv/bin/cmbench
                                              # two installs, their runs interleaved
```

Runs of ``cmbench suite SUITE --workers N``, each in a subprocess (imports and
the report included, as a user would see them):

1. cold, in a fresh output folder;
2. the same command again (computes nothing): target at most 2 s or 10% of cold;
3. with ``--plugin winsorized.py`` (the README's example): target at most 15% of cold
   in CPU seconds, and its cube equal to a cold run with the plugin (run 5, all
   variables but ``seconds``);
4. after editing the plugin's default parameter: target at most 15% of cold;
5. cold with the original plugin in another folder (for the equality check of 3 only).

Each round runs 1-4 once (2 and 3 from the state run 1 left, 4 from the
state 3 left, restored in place), for every command given with ``--cmd``,
one after the other: ``--rounds`` rounds (default 5), so that the machine's
drift falls on every configuration alike. Each figure is the median over the
rounds, of wall time and of CPU seconds (the run and its worker processes)
separately; the ratios divide by the cold median. On a shared machine the CPU
seconds are the steadier measure. It prints every run, the medians, the
ratios with PASS/FAIL and the load average; it always exits 0 (it is a report).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shlex
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


#: the command that runs cmbench (`--cmd`; default this interpreter's)
CMD = [sys.executable, "-m", "cmbench.cli"]


def adopt_orphans() -> None:
    """Make this process the reaper of its orphaned descendants (Linux), so that their CPU
    seconds count in ``RUSAGE_CHILDREN``: a helper process (loky's resource tracker) may end
    after its cmbench process, whose parent it then no longer is."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_CHILD_SUBREAPER = 36
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans() -> None:
    """Wait for every descendant handed to this process (`adopt_orphans`), so that its CPU counts."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def timed(args: list, cwd: Path, allowed: tuple = (0,), cmd: list | None = None) -> tuple[float, float]:
    """Wall seconds of one CLI run, and CPU seconds of it and its worker processes; exits
    unless its exit code is in ``allowed``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([*(cmd or CMD), *args], cwd=cwd, env=child_env(),
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    reap_orphans()  # the resource tracker ends just after cmbench
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in allowed:  # the paper suite has no failed cell: anything else is a broken run
        sys.exit(f"cmbench {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def same_cubes(a: Path, b: Path) -> str:
    """'' when every cube in ``a`` equals its namesake in ``b`` (all variables but seconds), else why not."""
    import xarray as xr

    differs = []
    for path in sorted(a.glob("*.nc")):
        with xr.open_dataset(path) as x, xr.open_dataset(b / path.name) as y:
            for v in x.data_vars:
                if v == "seconds":
                    continue
                if v not in y or not np.array_equal(x[v].values, y[v].values, equal_nan=x[v].dtype.kind == "f"):
                    differs.append(f"{path.name}: {v} differs")
    return "; ".join(differs)


def snapshot(folder: Path, to: Path) -> Path:
    """A copy of an output folder (files, times and all), to start runs from."""
    shutil.copytree(folder, to)
    return to


def restore(state: Path, folder: Path) -> None:
    """``folder`` as ``state`` holds it, at its own path (stamps name the files by path)."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(state, folder)


def median(pairs: list) -> tuple[float, float]:
    """The median wall time and the median CPU seconds of ``(wall, cpu)`` pairs (each on its own)."""
    return float(np.median([w for w, _ in pairs])), float(np.median([c for _, c in pairs]))


def suite_args(doc: str) -> argparse.Namespace:
    """``--suite`` (default paper), ``--workers`` (default 2) and ``--data-dir`` of a benchmark whose
    docstring is ``doc``; ``--data-dir`` sets `DATA_DIR` for the runs."""
    global DATA_DIR
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--suite", default="paper")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of interleaved runs (cold, unchanged, plugin, edited); medians compared")
    parser.add_argument("--cmd", action="append", default=[], metavar="NAME=COMMAND",
                        help="a cmbench command to time (e.g. main=../main/.venv/bin/cmbench); repeatable, "
                             "the commands' runs interleaved; default this interpreter's cmbench")
    parser.add_argument("--no-edited", action="store_true",
                        help="leave out the runs after editing the plugin and the cube equality check "
                             "(cold, unchanged and plugin runs only)")
    parser.add_argument("--no-report", action="store_true",
                        help="time the sweeps alone (cmbench suite --no-report)")
    parser.add_argument("--plugin", default=None, metavar="FILE", type=Path,
                        help="time this plugin file in place of the README's example (its default "
                             "parameter edited: every '0.05' made '0.1')")
    parser.add_argument("--data-dir", default=None, metavar="DIR",
                        help="read the real data sets' UCI source files from DIR (CMBENCH_DATA_DIR, e.g. "
                             "../shared/datasets); default: the tables shipped in the package, as README "
                             "command 1 runs")
    args = parser.parse_args()
    args.cmds = {}
    for item in args.cmd or [f"here={shlex.join(CMD)}"]:
        name, sep, command = item.partition("=")
        if not sep or not command:
            parser.error(f"--cmd {item!r}: expected NAME=COMMAND")
        args.cmds[name] = shlex.split(command)
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
        yield tmp, plugin, ["suite", args.suite, "--workers", str(args.workers),
                            *(["--no-report"] if getattr(args, "no_report", False) else [])]


def report(i: int, name: str, runs: dict) -> None:
    """Print the runs of round ``i`` of command ``name`` as they finish (a long benchmark is read as it goes)."""
    print(f"round {i + 1}, {name}: " + "; ".join(f"{k} {w:.2f} s wall {c:.1f} s CPU"
                                                for k, v in runs.items() for w, c in v[-1:]), flush=True)


def main() -> None:
    args = suite_args(__doc__)
    adopt_orphans()
    load_before = os.getloadavg()
    kinds = ("cold", "unchanged", "plugin", "edited")
    runs = {name: {k: [] for k in kinds} for name in args.cmds}
    diffs = {}
    with bench_folder("cmbench-cache-bench-", args) as (tmp, plugin, base):
        for i in range(args.rounds):
            order = list(args.cmds.items())
            for name, cmd in order[i % len(order):] + order[:i % len(order)]:  # who goes first rotates
                folder = tmp / name / "out"
                out = ["--out", str(folder)]
                shutil.rmtree(folder, ignore_errors=True)
                runs[name]["cold"].append(timed(base + out, tmp, cmd=cmd))
                cold_state = tmp / name / "state-cold"
                shutil.rmtree(cold_state, ignore_errors=True)
                snapshot(folder, cold_state)
                runs[name]["unchanged"].append(timed(base + out, tmp, cmd=cmd))
                restore(cold_state, folder)
                plugin.write_text(args.plugin_text)
                runs[name]["plugin"].append(timed(base + out + ["--plugin", str(plugin)], tmp, cmd=cmd))
                if args.no_edited:
                    report(i, name, runs[name])
                    continue
                if i == 0:  # the cube with the plugin against a cold run with it
                    suite_name = next(p.name for p in folder.iterdir() if p.is_dir())
                    ref = tmp / name / "ref"
                    ref.mkdir()
                    original = ref / "winsorized.py"
                    original.write_text(args.plugin_text)
                    timed(base + ["--out", str(ref), "--plugin", str(original)], tmp, cmd=cmd)
                    diffs[name] = same_cubes(folder / suite_name, ref / suite_name)
                plugin.write_text(args.plugin_text.replace("0.05", "0.1"))
                runs[name]["edited"].append(timed(base + out + ["--plugin", str(plugin)], tmp, cmd=cmd))
                report(i, name, runs[name])

        names = list(args.cmds)
        for other in names[1:]:  # the last cold runs' cubes of each command against the first's
            a, b = tmp / names[0] / "state-cold", tmp / other / "state-cold"
            suite_name = next(p.name for p in a.iterdir() if p.is_dir())
            diff = same_cubes(a / suite_name, b / suite_name)
            print(f"cold cubes of {other} against {names[0]} (every variable of {names[0]}'s but seconds): "
                  + (diff or "identical"))

    load_after = os.getloadavg()
    print(f"\ncmbench {' '.join(base)} ({os.cpu_count()} cores; load average 1/5/15 min "
          f"{'/'.join(f'{v:.1f}' for v in load_before)} before, {'/'.join(f'{v:.1f}' for v in load_after)} "
          f"after; real data from {'source files in ' + str(DATA_DIR) if DATA_DIR else 'the shipped tables'}; "
          f"medians of {args.rounds} interleaved rounds)")
    for name in args.cmds:
        med = {k: median(runs[name][k]) for k in kinds if runs[name][k]}
        (cold, cold_cpu) = med["cold"]
        print(f"\n[{name}] {shlex.join(args.cmds[name])}")
        print(f"{'':<32} {'wall s':>8} {'CPU s':>8} {'wall %':>7} {'CPU %':>7}")
        for k in kinds:
            if k not in med:
                continue
            w, c = med[k]
            print(f"{k:<32} {w:8.2f} {c:8.1f} {100 * w / cold:6.1f}% {100 * c / cold_cpu:6.1f}%")
        w, c = med["unchanged"]
        print(f"unchanged rerun <= max(2 s, 10%): {'PASS' if w <= max(2.0, 0.10 * cold) else 'FAIL'} (wall)")
        for k in ("plugin", "edited"):
            if k not in med:
                continue
            w, c = med[k]
            print(f"{k} <= 15% of cold in CPU seconds: {'PASS' if c <= 0.15 * cold_cpu else 'FAIL'}; "
                  f"in wall time: {'PASS' if w <= 0.15 * cold else 'FAIL'}")
        if name in diffs:
            print("cube with the plugin " + ("equals a cold run with it" if not diffs[name]
                                              else f"DIFFERS from a cold run with it: {diffs[name]}"))
    first = list(args.cmds)[0]
    for other in list(args.cmds)[1:]:  # the gate: a cold run no slower than the baseline's by > 5%
        (w0, c0), (w1, c1) = median(runs[first]["cold"]), median(runs[other]["cold"])
        print(f"\ncold {other} / {first}: wall {w1 / w0:.3f}, CPU {c1 / c0:.3f}; no slower by more than 5%: "
              f"{'PASS' if w1 <= 1.05 * w0 else 'FAIL'} (wall), {'PASS' if c1 <= 1.05 * c0 else 'FAIL'} (CPU)")


if __name__ == "__main__":
    main()
