"""A cheap estimator added to a finished suite: wall and CPU seconds, medians of interleaved runs.

```
python benchmarks/report_tail.py --from OUT                  # OUT: a finished `cmbench suite paper --out OUT`
python benchmarks/report_tail.py --from OUT --cmd base="env PYTHONPATH=/tmp/old .venv/bin/cmbench" \\
                                 --cmd here=.venv/bin/cmbench --rounds 5 --cold-cpu 42.3
python benchmarks/report_tail.py --suite smoke               # a quick look: the finished folder made first
```

The run the issue times: ``cmbench suite SUITE --workers N --plugin winsorized.py``
(the README's estimator) on a suite whose cubes and reports are all current, so
that the run computes the estimator's cells only, then redraws the pages they
change (the serial tail: the report step after the sweep). For each command
given with ``--cmd``, the finished folder is first copied and brought to that
command's own report code by a rerun (which redraws the reports and keeps
their pages in the page cache, as a user's finished suite holds them); each
round then restores that state in place and times the run with the plugin,
the commands one after the other, who goes first rotating. Each figure is the
median over the rounds, wall and CPU seconds (the run and all its worker
processes) apart; with ``--cold-cpu`` the CPU median is also given as a share
of that cold run's CPU. Goals: under 3 s wall and at most 10% of the cold
run's CPU. Always exits 0 (it is a report).
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cache  # noqa: E402  (the stage cache's benchmark: its timing and folder helpers)
from cache import WINSORIZED, adopt_orphans, restore, timed  # noqa: E402

WALL_GOAL, CPU_SHARE_GOAL = 3.0, 0.10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default="paper")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--from", dest="source", type=Path, default=None, metavar="OUT",
                        help="a finished output folder of the suite (default: a cold run made first, "
                             "with the first command)")
    parser.add_argument("--cmd", action="append", default=[], metavar="NAME=COMMAND",
                        help="a cmbench command to time; repeatable, the commands' runs interleaved")
    parser.add_argument("--cold-cpu", type=float, default=None, metavar="SECONDS",
                        help="the cold run's CPU seconds, to give the run's CPU as a share of it")
    parser.add_argument("--data-dir", default=None, metavar="DIR",
                        help="read the real data sets' UCI source files from DIR, as the finished "
                             "folder did (default: the tables shipped in the package)")
    args = parser.parse_args()
    cmds = {}
    for item in args.cmd or [f"here={shlex.join(cache.CMD)}"]:
        name, sep, command = item.partition("=")
        if not sep or not command:
            parser.error(f"--cmd {item!r}: expected NAME=COMMAND")
        cmds[name] = shlex.split(command)
    if args.data_dir is not None:
        cache.DATA_DIR = Path(args.data_dir).resolve()
    adopt_orphans()
    base = ["suite", args.suite, "--workers", str(args.workers)]
    print(f"# {args.suite}, --workers {args.workers}, {args.rounds} rounds; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; timings on a shared machine are noisy: "
          "compare the commands' medians, not runs", flush=True)
    with tempfile.TemporaryDirectory(prefix="report-tail-") as tmp:
        tmp = Path(tmp)
        plugin = tmp / "winsorized.py"
        plugin.write_text(WINSORIZED)
        source = args.source
        if source is None:
            source = tmp / "cold"
            wall, cpu = timed(base + ["--out", str(source)], tmp, cmd=next(iter(cmds.values())))
            print(f"cold run: {wall:.2f} s wall, {cpu:.1f} s CPU", flush=True)
            args.cold_cpu = args.cold_cpu or cpu
        states = {}
        for name, cmd in cmds.items():
            out, state = tmp / name / "out", tmp / name / "state"
            shutil.copytree(source, out)
            timed(base + ["--out", str(out)], tmp, cmd=cmd)  # the reports redrawn by this command's code
            shutil.copytree(out, state)
            states[name] = (out, state)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
        order = list(cmds.items())
        for i in range(args.rounds):
            for name, cmd in order[i % len(order):] + order[:i % len(order)]:
                out, state = states[name]
                restore(state, out)
                runs[name].append(timed(base + ["--out", str(out), "--plugin", str(plugin)], tmp, cmd=cmd))
                w, c = runs[name][-1]
                print(f"round {i + 1}, {name}: {w:.2f} s wall, {c:.2f} s CPU", flush=True)
    print("\n| command | wall (median) | CPU s (median) | CPU share of cold | goal |")
    print("| --- | --- | --- | --- | --- |")
    for name, values in runs.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        share = f"{cpu / args.cold_cpu:.1%}" if args.cold_cpu else "-"
        ok = wall < WALL_GOAL and (args.cold_cpu is None or cpu <= CPU_SHARE_GOAL * args.cold_cpu)
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} | {share} | {'PASS' if ok else 'FAIL'} |")
    names = list(runs)
    for other in names[1:]:
        w0 = statistics.median(w for w, _ in runs[names[0]])
        c0 = statistics.median(c for _, c in runs[names[0]])
        w1 = statistics.median(w for w, _ in runs[other])
        c1 = statistics.median(c for _, c in runs[other])
        print(f"{other} / {names[0]}: wall {w1 / w0:.2f}x, CPU {c1 / c0:.2f}x")


if __name__ == "__main__":
    main()
