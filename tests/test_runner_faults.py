"""Faulty plugins: each fault fails only its cells, with the reason in the cube and the plugin named.

Faults: raising (also inside a library), a result of the wrong shape or NaN,
writing into the input or into the data set's structure, ``sys.exit``, hanging
(also in a data set loader, also under a broad ``except``), killing the worker
process. The plugins are tests/plugins/faulty.py, sneaky.py and crash.py.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from cmbench.runner import run_suite
from cmbench.options import RunOptions
from conftest import GOOD, cli, cli_inproc_result, copy_plugin, open_cube, write


# ====================================================== faulty plugins

TIMEOUT = 0.5


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faulty")
    copy_plugin("faulty.py", tmp)
    suite = write(tmp / "faulty.toml", """
        name = "faulty"
        seed = 1
        plugins = ["faulty.py"]
        [[experiment]]
        name = "e"
        datasets = [{name = "synthetic-gaussian", N = 60}]
        adversaries = ["hide-smallest", "adv-mutates", "adv-wrong-shape"]
        budgets = [0.1]
        recoverers = ["none", "rec-wrong-shape"]
        estimators = ["mean", "raises", "raises-in-library", "wrong-shape", "returns-nan", "mutates", "hangs"]
    """)
    start = time.monotonic()
    result = cli_inproc_result("suite", suite, "--out", tmp / "out", "--no-report", "--timeout", TIMEOUT)
    elapsed = time.monotonic() - start
    cube = tmp / "out" / "faulty" / "e.nc"
    return result, (open_cube(cube) if cube.exists() else None), elapsed, tmp / "faulty.py"


# (adversary, recoverer, estimator) -> (status, text the cube's error must hold)
FAULTS = {
    "estimator-raises": (("hide-smallest", "none", "raises"), "failed",
                         ["estimator 'raises'", "RuntimeError: estimator exploded"]),
    "estimator-raises-in-library": (("hide-smallest", "none", "raises-in-library"), "failed",
                                    ["estimator 'raises-in-library'", "LinAlgError"]),
    "estimator-wrong-shape": (("hide-smallest", "none", "wrong-shape"), "failed",
                              ["estimator 'wrong-shape'", "shape (15,)", "expected (16,)"]),
    "estimator-returns-nan": (("hide-smallest", "none", "returns-nan"), "failed",
                              ["estimator 'returns-nan'", "NaN"]),
    "estimator-mutates-input": (("hide-smallest", "none", "mutates"), "failed",
                                ["estimator 'mutates'", "modified its input in place"]),
    "estimator-hangs": (("hide-smallest", "none", "hangs"), "timeout", ["estimator 'hangs'", "--timeout"]),
    "adversary-mutates-input": (("adv-mutates", "none", "mean"), "failed",
                                ["adversary 'adv-mutates'", "modified its input in place"]),
    "adversary-wrong-shape": (("adv-wrong-shape", "none", "mean"), "failed",
                              ["adversary 'adv-wrong-shape'", "shape (59, 16)"]),
    "recoverer-wrong-shape": (("hide-smallest", "rec-wrong-shape", "mean"), "failed",
                              ["recoverer 'rec-wrong-shape'", "shape (60, 15)"]),
}


def _cell(ds, adversary, recoverer, estimator):
    return ds.sel(adversary=adversary, recoverer=recoverer, estimator=estimator).squeeze()


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_faulty_plugin_cells_fail_with_the_reason_in_the_cube(faulty_run, fault):
    _, ds, _, _ = faulty_run
    where, status, needles = FAULTS[fault]
    cell = _cell(ds, *where)
    assert str(cell["status"].values) == status
    assert np.isnan(float(cell["l2"]))
    error = str(cell["error"].values)
    for needle in needles:
        assert needle in error, f"{needle!r} not in {error!r}"


def test_faulty_plugins_do_not_stop_the_sweep(faulty_run):
    result, ds, _, _ = faulty_run
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    good = _cell(ds, "hide-smallest", "none", "mean")
    assert str(good["status"].values) == "ok" and np.isfinite(float(good["l2"]))
    # every cell of a failed adversary or recoverer is failed too, none is silently missing
    assert set(np.unique(ds["status"].values)) <= {"ok", "failed", "timeout"}
    assert "cells failed or timed out" in result.stderr
    assert any("returned shape (15,), expected (16,)" in line for line in _summary_lines(result, "wrong-shape")), \
        result.stderr


def test_hanging_plugin_is_stopped_by_timeout(faulty_run):
    _, ds, elapsed, _ = faulty_run
    assert str(_cell(ds, "hide-smallest", "none", "hangs")["status"].values) == "timeout"
    assert elapsed < 60, f"the sweep took {elapsed:.0f} s; the hang sleeps 120 s"


def _summary_lines(result, component: str) -> list[str]:
    return [line for line in result.stderr.splitlines() if f"'{component}'" in line]


@pytest.mark.parametrize("component", ["raises", "wrong-shape", "returns-nan", "mutates", "adv-mutates",
                                       "adv-wrong-shape", "rec-wrong-shape"])
def test_failure_summary_names_the_plugin(faulty_run, component):
    result, _, _, plugin = faulty_run
    lines = _summary_lines(result, component)
    assert lines, result.stderr
    assert all(plugin.name in line for line in lines), lines


def test_failure_summary_names_the_plugin_when_the_error_is_raised_inside_a_library(faulty_run):
    result, _, _, plugin = faulty_run
    lines = _summary_lines(result, "raises-in-library")
    assert lines and all(plugin.name in line for line in lines), lines


def test_failure_summary_names_the_plugin_of_a_timed_out_component(faulty_run):
    result, _, _, plugin = faulty_run
    lines = _summary_lines(result, "hangs")
    assert lines and all(plugin.name in line for line in lines), lines


def _sneaky_suite(tmp_path: Path, name: str, datasets='[{name = "synthetic-gaussian", N = 60}]',
                  adversaries='["hide-smallest"]', recoverers='["none", "exact"]',
                  estimators='["mean"]') -> Path:
    copy_plugin("sneaky.py", tmp_path)
    return write(tmp_path / f"{name}.toml", f"""
        name = "{name}"
        seed = 2
        plugins = ["sneaky.py"]
        [[experiment]]
        name = "e"
        datasets = {datasets}
        adversaries = {adversaries}
        budgets = [0.2]
        recoverers = {recoverers}
        estimators = {estimators}
        metrics = ["l2", "mahalanobis"]
    """)


def test_plugin_that_mutates_the_structure_cannot_change_other_cells(tmp_path):
    clean = run_suite(_sneaky_suite(tmp_path, "clean"), RunOptions(out=tmp_path / "a"))["e"]
    path = _sneaky_suite(tmp_path, "dirty", adversaries='["scribble-structure", "hide-smallest"]')
    dirty = run_suite(path, RunOptions(out=tmp_path / "b"))["e"]
    assert (dirty["status"].sel(adversary="scribble-structure") == "failed").all()
    assert "in place" in str(dirty["error"].sel(adversary="scribble-structure").values.flat[0])
    for var in ("l2", "mahalanobis", "status"):
        np.testing.assert_array_equal(dirty[var].sel(adversary="hide-smallest").values,
                                      clean[var].sel(adversary="hide-smallest").values)


def test_plugin_calling_sys_exit_fails_only_its_cells(tmp_path):
    path = _sneaky_suite(tmp_path, "quit", recoverers='["none"]', estimators='["mean", "quits"]')
    try:
        ds = run_suite(path, RunOptions(out=tmp_path / "out"))["e"]
    except SystemExit as exc:
        pytest.fail(f"a plugin's sys.exit({exc.code}) ended the sweep")
    assert (ds["status"].sel(estimator="quits") == "failed").all()
    assert (ds["status"].sel(estimator="mean") == "ok").all()


def test_timeout_is_not_swallowed_by_a_plugins_broad_except(tmp_path):
    path = _sneaky_suite(tmp_path, "stubborn", recoverers='["none"]', estimators='["mean", "stubborn"]')
    ds = run_suite(path, RunOptions(out=tmp_path / "out", timeout=0.2))["e"]
    assert (ds["status"].sel(estimator="stubborn") == "timeout").all()


def test_hanging_data_set_loader_is_stopped_by_timeout(tmp_path):
    path = _sneaky_suite(tmp_path, "slowload", datasets='["slow-load"]', recoverers='["none"]')
    ds = run_suite(path, RunOptions(out=tmp_path / "out", timeout=0.2))["e"]
    assert (ds["status"] == "timeout").all()  # the loader sleeps 1.2 s: only the timeout gives this
    assert "stopped after --timeout 0.2 s" in str(ds["error"].values.flat[0])


@pytest.mark.slow
def test_plugin_that_kills_its_worker_process_fails_only_its_cells(tmp_path):
    copy_plugin("crash.py", tmp_path, "killer.py")
    path = write(tmp_path / "killer.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["killer.py"]')
                 .replace('"cmedian"]', '"crash"]'))
    result = cli("suite", path, "--out", tmp_path / "out", "--no-report", "--workers", "2")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1
    ds = open_cube(tmp_path / "out" / "r" / "e.nc")
    assert (ds["status"].sel(estimator="crash") == "failed").all()
    assert "worker process died" in str(ds["error"].sel(estimator="crash").values.flat[0])
    # A dead interpreter takes its whole unit down (the unit shares one corruption and
    # recovery across estimators), so the other estimators of those units fail with it:
    # recorded, never lost, and retried by the next run.
    assert set(np.unique(ds["status"].sel(estimator="mean").values)) == {"failed"}


@pytest.mark.slow
def test_after_a_worker_dies_the_rest_of_the_sweep_stays_parallel(tmp_path):
    # One crash (the first call that finds no marker), 16 units. The units in
    # flight when the pool broke are re-run alone (the crashed one succeeds
    # there: the crash is once); the rest must go on 2 at a time, not one
    # unit at a time: calls logged after the crash overlap in time.
    marker, log = tmp_path / "crashed", tmp_path / "calls.log"
    copy_plugin("crash.py", tmp_path, "once.py")
    path = write(tmp_path / "once.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["once.py"]')
                 .replace('"cmedian"]', '"crash-once"]').replace("instances = 1", "instances = 8")
                 .replace('recoverers = ["none", "exact"]', 'recoverers = ["none"]'))
    env = {**os.environ, "CMBENCH_TEST_MARKER": str(marker), "CMBENCH_TEST_LOG": str(log)}
    result = cli("suite", path, "--out", tmp_path / "out", "--no-report", "--workers", "2", env=env)
    assert result.returncode == 0, result.stderr
    assert marker.exists()
    ds = open_cube(tmp_path / "out" / "r" / "e.nc")
    assert (ds["status"] == "ok").all()
    calls = sorted((float(a), float(b), pid) for pid, a, b in (line.split() for line in log.read_text().splitlines()))
    assert len(calls) == 16
    overlaps = sum(1 for (a0, b0, p0), (a1, b1, p1) in zip(calls, calls[1:]) if a1 < b0 and p0 != p1)
    assert overlaps >= 4, f"{overlaps} overlapping calls after the crash: the sweep went serial"
