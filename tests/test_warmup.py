"""The imports of the steps after a sweep, done while its units compute (`cmbench.runner.warmup`)."""
import subprocess
import sys
import threading

import pytest

from cmbench.runner import Progress, run_suite
from test_cache import env, write_suite  # noqa: F401 (fixture)


def _warmup_threads() -> list:
    return [t for t in threading.enumerate() if t.name == "cmbench-warmup"]


def test_while_computing_runs_once_beside_the_workers_and_is_done_when_the_run_returns(env):
    called = []

    def imports():
        called.append(threading.current_thread().name)

    path = write_suite(env)
    run_suite(path, out=env / "out", workers=2, report=False, while_computing=imports)
    assert called == ["cmbench-warmup"]  # in the background thread, once
    assert not _warmup_threads()  # joined before the cubes were written
    run_suite(path, out=env / "out", workers=2, report=False, while_computing=imports)
    assert called == ["cmbench-warmup"]  # a run that computes nothing imports nothing early


def test_while_computing_is_not_called_when_units_run_in_this_process(env):
    called = []
    run_suite(write_suite(env), out=env / "out", workers=1, report=False, post_mortem=True,  # --pdb
              while_computing=lambda: called.append(1))
    assert called == []  # this process computes: a thread importing beside it would only slow it


def test_a_failing_warmup_changes_nothing(env):
    def broken():
        raise ImportError("no such library")

    path = write_suite(env)
    stats = Progress()
    cube = run_suite(path, out=env / "a", workers=2, report=False, while_computing=broken, stats=stats)["e"]
    plain = run_suite(path, out=env / "b", workers=2, report=False)["e"]
    assert stats.failed == 0
    for v in cube.data_vars:
        if v != "seconds":
            assert cube[v].equals(plain[v]), v


def test_a_rerun_without_the_warmup_rewrites_neither_cube_nor_report(env):
    """The cube's BLAS list must not depend on what the warm-up imported (scipy.stats loads scipy's BLAS)."""
    path = write_suite(env)
    out = env / "out"

    def run(workers):  # each in a fresh process, as a user runs it: what it imported is its own
        subprocess.run([sys.executable, "-c", f"import cmbench; cmbench.run_suite({str(path)!r}, "
                        f"out={str(out)!r}, workers={workers}, report=True)"], check=True, capture_output=True)

    run(2)  # with a report: the warm-up imports the report's libraries while the units compute
    cube, pdf = out / "c" / "e.nc", out / "c.pdf"
    stamps = {p: p.stat().st_mtime_ns for p in (cube, pdf)}
    run(1)  # computes nothing, imports nothing early
    assert {p: p.stat().st_mtime_ns for p in (cube, pdf)} == stamps


@pytest.mark.parametrize("first", ["", "import scipy.stats, matplotlib.figure; "])
def test_the_environment_a_cube_records_does_not_depend_on_earlier_imports(first):
    code = f"{first}from cmbench.cube import environment; print(environment()['blas'])"
    bare = subprocess.run([sys.executable, "-c", "from cmbench.cube import environment; "
                           "print(environment()['blas'])"], capture_output=True, text=True, check=True)
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout == bare.stdout and bare.stdout.strip()
