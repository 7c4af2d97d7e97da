"""The report step after a suite run, timed alone: in one process against a process pool.

```
python benchmarks/report.py                   # the paper suite, --workers 2
python benchmarks/report.py --suite smoke     # a quick look
```

Two runs of ``cmbench suite SUITE --workers N`` first (in a fresh output folder,
each in a subprocess): cold, then with ``--plugin winsorized.py`` (the README's
example); their wall times are printed (the second is the whole warm-plugin
command as a user sees it). Then the report step that follows a run
(`cmbench.report.write_suite_reports`, the summary lines and the claims table
the CLI prints) is timed alone, each time in a fresh subprocess that first
loads the suite with its plugins (what the run's process holds when its report
step starts) and reads the cubes:

* cold: the cold run's cubes, no drawn page kept (every page drawn);
* warm plugin: the plugin run's cubes, with the pages drawn from the cold run's
  cubes kept (only the pages whose data changed are drawn);

each with ``--workers 1`` (in the run's process, the in-run baseline), and with
a pool of N processes (`cmbench.report.render.drawing.Pool`). It prints wall and CPU seconds (the
process and its helpers), the pages drawn and the ratios to ``--workers 1``;
on a shared machine wall times follow the load (printed), CPU seconds less so.
It always exits 0 (it is a report).
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmark, also under PYTHONSAFEPATH
from cache import adopt_orphans, bench_folder, child_env, reap_orphans, suite_args, timed  # noqa: E402  (one home for these)

#: the report step of one run, in a subprocess: argv = suite, plugin, run folder, workers
STEP = r"""
import contextlib, io, json, resource, sys, time
from pathlib import Path
from types import SimpleNamespace
suite, plugin, folder, workers = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
from cmbench import cli, cube
from cmbench.stamps import content_digest
from cmbench.suite import load_suite
loaded = load_suite(suite, [plugin] if plugin else [])  # what the run's process holds at its end
names = [e.name for e in loaded.experiments]
cubes = {n: cube.load(folder / loaded.name / f"{n}.nc") for n in names}
outputs = SimpleNamespace(cubes=tuple(folder / loaded.name / f"{n}.nc" for n in names),
                          digests=tuple(content_digest(ds) for ds in cubes.values()),
                          report=folder / loaded.name, cache=folder / loaded.name / ".cache")
self0, kids0 = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
pre = sum(r.ru_utime + r.ru_stime for r in (self0, kids0))
start = time.perf_counter()
from cmbench.report.suite_step import write_suite_reports
from cmbench.report.content.summary import summary_lines
write_suite_reports(outputs, workers=workers)
with contextlib.redirect_stdout(io.StringIO()):
    for line in summary_lines(cubes, plugins=[plugin] if plugin else []):
        print(line)
    cli._print_claims(cubes)
print(json.dumps({"wall": time.perf_counter() - start, "pre": pre}))
"""


def suite_run(args: list, cwd: Path) -> float:
    """Wall seconds of one ``cmbench`` command in a subprocess (exit 1, some cells failed, is a
    run a report shows)."""
    return timed(args, cwd, allowed=(0, 1))[0]


def pages_drawn(cache: Path, before: set) -> int:
    """Pages in the page cache's documents that were not there before."""
    import pypdf

    return sum(len(pypdf.PdfReader(str(p)).pages) for p in (cache / "pages").glob("*.pdf")
               if p.name not in before)


def report_step(suite: str, plugin: str, run: Path, pages: Path | None, workers: int, start: str,
                tmp: Path) -> dict:
    """Time the report step on a copy of ``run`` (cubes only), with a copy of ``pages`` as the
    drawn pages kept."""
    folder = tmp / f"step-{time.monotonic_ns()}"
    name = next(p.name for p in run.iterdir() if p.is_dir())
    shutil.copytree(run / name, folder / name, ignore=shutil.ignore_patterns(".*"))
    cache = folder / name / ".cache"
    cache.mkdir()
    if pages is not None:
        shutil.copytree(pages, cache / "pages")
    before = {p.name for p in (cache / "pages").glob("*.pdf")} if pages is not None else set()
    # run from the copy's folder: `python -c` puts its working folder first on sys.path, and a
    # cmbench source folder there would shadow the installed package (a non-editable install)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-c", STEP, suite, plugin, str(folder), str(workers)],
                          env=child_env(), cwd=folder, capture_output=True, text=True)
    # The drawing pool's workers are the step's children (loky): their CPU counts here once they
    # are reaped, and a helper that outlives the step is adopted (`adopt_orphans`). The step's
    # CPU is all of it but what its process spent before the timed part; a worker started
    # before that part (the plugin's import check) counts in every row.
    reap_orphans()
    used = sum(getattr(resource.getrusage(resource.RUSAGE_CHILDREN), f) - getattr(used, f)
               for f in ("ru_utime", "ru_stime"))
    if proc.returncode != 0:
        sys.exit(f"the report step failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["cpu"] = used - result.pop("pre")
    result["pages"] = pages_drawn(cache, before)
    result["kept"] = cache / "pages"
    return result


def main() -> None:
    adopt_orphans()
    args = suite_args(__doc__)
    load_before = f"{os.getloadavg()[0]:.1f}"
    with bench_folder("cmbench-report-bench-", args) as (tmp, plugin, base):
        cold_run = suite_run(base + ["--out", str(tmp / "cold")], tmp)
        shutil.copytree(tmp / "cold", tmp / "plugin")
        plugin_run = suite_run(base + ["--out", str(tmp / "plugin"), "--plugin", str(plugin)], tmp)

        rows = []
        kept = None
        for scenario, run, plug in (("cold", tmp / "cold", ""), ("warm plugin", tmp / "plugin", str(plugin))):
            for workers, start in ((1, ""), (args.workers, "pool")):
                r = report_step(args.suite, plug, run, kept if scenario != "cold" else None, workers, start, tmp)
                if scenario == "cold" and workers == 1:
                    kept = tmp / "kept-pages"  # the cold run's drawn pages, for the warm scenario
                    shutil.copytree(r["kept"], kept)
                rows.append((scenario, workers, start, r))

    print(f"cmbench {' '.join(base)} ({os.cpu_count()} cores; load average {load_before} before, "
          f"{os.getloadavg()[0]:.1f} after)")
    print(f"whole command: cold {cold_run:.2f} s, with --plugin winsorized.py {plugin_run:.2f} s")
    print("report step alone (write_suite_reports, summary lines, claims table):")
    serial = {}
    for scenario, workers, start, r in rows:
        how = "in the run's process" if workers == 1 else f"a pool of {workers} processes"
        if workers == 1:
            serial[scenario] = r
        ref = serial[scenario]
        print(f"  {scenario:<12} {how:<22} {r['pages']:3d} pages  {r['wall']:6.2f} s wall "
              f"({r['wall'] / ref['wall']:4.2f}x)  {r['cpu']:6.2f} s CPU ({r['cpu'] / ref['cpu']:4.2f}x)")


if __name__ == "__main__":
    main()
