"""Where the test run's CPU goes: each test's CPU seconds, its child processes included.

```
python benchmarks/tests_cpu.py                          # the default selection, as README command 2 runs it
python benchmarks/tests_cpu.py --top 40 -- tests/test_report.py -n 0
python benchmarks/tests_cpu.py --keep tests.jsonl      # every test's figures kept, to compare two runs
```

Runs pytest (arguments after ``--`` are passed on) with a plugin that takes, around
each test, the CPU seconds of the test process and of every process below it: the
finished ones (``RUSAGE_CHILDREN``, which a process collects when it waits for its
child) and the live ones (psutil: a warm pool's workers outlive the test that
started them, and are charged to the tests that use them). A test's figure is
the difference, so it counts the subprocesses, loky workers, Dask processes and
browsers it starts. The wall time of a test shows where it waits instead.

Prints the run's wall and CPU seconds (the whole process tree), the sum over the
tests (the rest is start-up and collection in each pytest worker), the files and
the tests that cost most. ``python benchmarks/tests_cpu.py`` must run from the
repository root (where ``tests/`` is). Always exits 0 (it is a report); psutil comes
with Dask (the test extra).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _tree_cpu() -> float:
    """CPU seconds of this process, its finished children and its live descendants."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + done.ru_utime + done.ru_stime
    try:
        import psutil
    except ImportError:  # live workers not counted
        return total
    try:
        for child in psutil.Process().children(recursive=True):
            try:
                times = child.cpu_times()
            except psutil.Error:  # ended meanwhile
                continue
            total += times.user + times.system
    except psutil.Error:
        pass
    return total


class Recorder:
    """The pytest plugin (``-p tests_cpu``, in every pytest process, xdist's workers too):
    one JSON line per test in ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):  # noqa: ARG002 (the hook's signature)
        cpu, wall = _tree_cpu(), time.monotonic()
        yield
        line = {"id": item.nodeid, "cpu": _tree_cpu() - cpu, "wall": time.monotonic() - wall}
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")


def pytest_configure(config) -> None:
    path = os.environ.get("CMBENCH_TEST_CPU_LOG")
    if path:
        config.pluginmanager.register(Recorder(path), "cmbench-tests-cpu")


def _report(rows: list, wall: float, cpu: float, top: int) -> None:
    tests = sum(r["cpu"] for r in rows)
    print(f"# {len(rows)} tests; the run: {wall:.1f} s wall, {cpu:.1f} CPU-s (the whole process tree); "
          f"the tests: {tests:.1f} CPU-s, start-up and collection the other {cpu - tests:.1f}")
    files: collections.Counter = collections.Counter()
    for r in rows:
        files[r["id"].split("::")[0]] += r["cpu"]
    print("\n| file | CPU s | share |\n| --- | --- | --- |")
    for name, value in files.most_common(top):
        print(f"| {name} | {value:.1f} | {value / max(cpu, 1e-9):.1%} |")
    print("\n| test | CPU s | wall s |\n| --- | --- | --- |")
    for r in sorted(rows, key=lambda r: -r["cpu"])[:top]:
        print(f"| {r['id']} | {r['cpu']:.1f} | {r['wall']:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=25, help="how many files and tests to list")
    parser.add_argument("--keep", type=Path, default=None, metavar="FILE",
                        help="also write every test's figures there, one JSON object per line (id, cpu, wall)")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cmbench-test-cpu-") as tmp:
        log = Path(tmp) / "tests.jsonl"
        env = {**os.environ, "CMBENCH_TEST_CPU_LOG": str(log),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
        start, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests_cpu",
                        *args.pytest_args], env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.monotonic() - start
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        if args.keep is not None and log.exists():
            args.keep.write_text(log.read_text())
    _report(rows, wall, cpu, args.top)


if __name__ == "__main__":
    main()
