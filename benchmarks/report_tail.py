"""A cheap estimator added to a finished suite: wall and CPU seconds, medians of interleaved runs.

```
python benchmarks/report_tail.py --from OUT                  # OUT: a finished `cmbench suite paper --out OUT`
python benchmarks/report_tail.py --from OUT --cmd base="env PYTHONPATH=/tmp/old .venv/bin/cmbench" \\
                                 --cmd here=.venv/bin/cmbench --rounds 5 --cold-cpu 42.3
python benchmarks/report_tail.py --suite smoke               # a quick look: the finished folder made first
python benchmarks/report_tail.py --from OUT --documents      # the changed pages: one document or one per worker
python benchmarks/report_tail.py --from OUT --processes      # and each process's CPU in one more run
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
processes) apart, and for each command after the first its difference from the
first paired by round (the steadier figure on a machine whose speed drifts); with
``--cold-cpu`` the CPU median is also given as a share of that cold run's CPU.
Goals: under 3 s wall and at most 10% of the cold run's CPU. With ``--documents``,
it times instead the drawing of the pages the plugin changes (found by their
record digests, as the page cache finds them), in fresh processes like the
sweep's workers: all in one process and document,
against split over ``--workers`` processes as `drawing.split` splits them;
matplotlib's import and the drawing apart, CPU seconds summed over the
processes, medians of interleaved rounds. With ``--processes``, one more run per
command is watched with psutil (every process of the run, polled every 50 ms) and
each process's CPU seconds are printed by role (the client, each loky worker, the
resource trackers), beside the run's rusage total: which process a change moved
CPU into or out of, which a total does not say. Always exits 0 (it is a report).
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
    parser.add_argument("--documents", action="store_true",
                        help="time the drawing of the changed pages in one process against --workers processes")
    parser.add_argument("--processes", action="store_true",
                        help="after the rounds, one more run per command with each process's CPU seconds")
    args = parser.parse_args()
    if args.documents:
        if args.source is None:
            parser.error("--documents needs --from OUT")
        if args.data_dir is not None:
            cache.DATA_DIR = Path(args.data_dir).resolve()
        documents(args.source, args.suite, args.workers, args.rounds)
        return
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
        watched = {}
        for name, cmd in order if args.processes else ():
            out, state = states[name]
            restore(state, out)
            watched[name] = per_process(base + ["--out", str(out), "--plugin", str(plugin)], tmp, cmd)
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
        # by round: the machine's speed drifts within a run of rounds, and a ratio of medians can
        # move with it (five rounds said 0.88x where twelve paired ones said 5%); the two commands
        # of one round ran back to back, so their difference is steadier
        dw = [b[0] - a[0] for a, b in zip(runs[names[0]], runs[other])]
        dc = [b[1] - a[1] for a, b in zip(runs[names[0]], runs[other])]
        print(f"{other} - {names[0]}, paired by round: median {statistics.median(dw):+.2f} s wall, "
              f"{statistics.median(dc):+.2f} CPU-s; lower CPU in {sum(d < 0 for d in dc)} of {len(dc)} rounds")
    for name, (rows, total) in watched.items():
        print(f"\n{name}, one more run, CPU s per process (psutil, polled every 50 ms; the run's rusage "
              f"total {total:.2f}):\n\n| process | CPU s |\n| --- | --- |")
        for role, cpu in rows:
            print(f"| {role} | {cpu:.2f} |")
        print(f"| all polled | {sum(c for _, c in rows):.2f} |")


def per_process(args: list, cwd: Path, cmd: list) -> tuple[list[tuple[str, float]], float]:
    """One CLI run watched with psutil: each process's last seen CPU seconds (user + system) by
    role, costliest first, and the run's rusage total (what `cache.timed` reports). Polling misses
    what a process spends after its last poll, so the polled sum runs a little below the total."""
    import resource
    import subprocess
    import time

    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen([*cmd, *args], cwd=cwd, env=cache.child_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    root = psutil.Process(proc.pid)
    seen: dict[int, tuple[str, float]] = {}
    while proc.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:  # the run ended between the poll and the listing
            break
        for q in procs:
            try:
                t = q.cpu_times()
                role = seen[q.pid][0] if q.pid in seen else _role(q, root)
                seen[q.pid] = (role, t.user + t.system)
            except psutil.Error:
                continue
        time.sleep(0.05)
    proc.wait()
    cache.reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return sorted(seen.values(), key=lambda rc: -rc[1]), total


def _role(q, root) -> str:
    """What a process of the run is, from its command line."""
    if q.pid == root.pid:
        return "client (cmbench)"
    line = q.cmdline()
    if "--process-name" in line:
        return f"loky worker {line[line.index('--process-name') + 1]}"
    text = " ".join(line)
    if "resource_tracker" in text:
        return "resource tracker (" + ("loky" if "loky" in text else "multiprocessing") + ")"
    return f"pid {q.pid}: {text[:60]}"


def documents(source: Path, suite: str, workers: int, rounds: int) -> None:
    """Print the CPU seconds of drawing the pages the README's estimator changes in ``source``:
    in one fresh process (one document) against ``workers`` processes (`drawing.split`)."""
    import pickle
    import subprocess
    import time

    from cmbench.report.load import load_cubes
    from cmbench.report.model import build_report, default_title, flatten
    from cmbench.report.render import drawing, pagecache
    from cmbench.report.render.html import Figures

    def pages_of(folder: Path) -> list:
        cubes = load_cubes(sorted(folder.glob("*.nc")))
        return flatten(build_report(cubes, title=default_title(cubes)))

    with tempfile.TemporaryDirectory(prefix="report-documents-") as tmp:
        tmp = Path(tmp)
        plugin = tmp / "winsorized.py"
        plugin.write_text(WINSORIZED)
        out = tmp / "out"
        shutil.copytree(source, out)
        timed(["suite", suite, "--workers", str(workers), "--out", str(out), "--plugin", str(plugin)], tmp)
        salt = pagecache.salt()
        old = {pagecache.record_digest(p, salt) for p in pages_of(source / suite)}
        todo = [(i, p) for i, p in enumerate(pages_of(out / suite)) if pagecache.record_digest(p, salt) not in old]
        figures = Figures(pagecache.PageCache(tmp / "empty"))  # the HTML's figures, wanted of every page
        wanted = {i: w for i, p in todo if (w := figures.wants(p))}
        print(f"# {len(todo)} changed pages (cost {sum(p.cost for _, p in todo):.1f}; POOL_COST "
              f"{drawing.POOL_COST:g}); load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        child = ("import pickle, sys, time\n"
                 "t = time.process_time()\n"
                 "from cmbench.report.render import drawing\n"
                 "drawing.warm()\n"
                 "t1 = time.process_time()\n"
                 "drawing.draw_pages(*pickle.load(open(sys.argv[1], 'rb')))\n"
                 "print(t1 - t, time.process_time() - t1)\n")
        meta = {"Title": "report_tail --documents"}
        results: dict[str, list[tuple[float, float, float]]] = {}
        layouts = {"one process": [todo], f"{workers} processes": drawing.split(todo, workers)}
        for r in range(rounds):
            for name, groups in layouts.items():
                procs = []
                start = time.perf_counter()
                for k, group in enumerate(groups):
                    records, at = drawing._task(group, wanted)
                    task = tmp / f"task-{k}.pkl"
                    task.write_bytes(pickle.dumps((records, meta, at)))
                    procs.append(subprocess.Popen([sys.executable, "-c", child, str(task)], stdout=subprocess.PIPE,
                                                  text=True, env=cache.child_env()))
                done = [tuple(map(float, p.communicate()[0].split())) for p in procs]
                wall = time.perf_counter() - start
                results.setdefault(name, []).append((sum(a for a, _ in done), sum(b for _, b in done), wall))
                print(f"round {r + 1}, {name}: import {results[name][-1][0]:.2f}, drawing "
                      f"{results[name][-1][1]:.2f} CPU-s, {wall:.2f} s wall", flush=True)
    print("\n| drawn by | import CPU s | drawing CPU s | wall s (medians) |\n| --- | --- | --- | --- |")
    for name, values in results.items():
        print(f"| {name} | " + " | ".join(f"{statistics.median(v[j] for v in values):.2f}" for j in range(3)) + " |")


if __name__ == "__main__":
    main()
