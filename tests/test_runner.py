"""The suite runner: staging, determinism across executors, persistence, resume, failures."""
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter

import numpy as np
import pytest
import xarray as xr

import cmbench
from cmbench.runner import run_suite
from cmbench.options import RunOptions
from conftest import assert_same_cube, copy_plugin

def make_suite(tmp_path, estimators='["count-mean", "mean", "cmedian"]', budgets="[0.0, 0.1, 0.3]",
               instances=2, adversaries='["log-hide", "hide-smallest"]', extra=""):
    copy_plugin("stage_log.py", tmp_path, "counting.py")
    path = tmp_path / "suite.toml"
    path.write_text(textwrap.dedent(f"""
        name = "t"
        seed = 7
        plugins = ["counting.py"]
        [[experiment]]
        name = "e"
        datasets = [{{name = "synthetic-gaussian", N = 120}}]
        instances = {instances}
        adversaries = {adversaries}
        budgets = {budgets}
        recoverers = ["log-fill", "none", "exact"]
        estimators = {estimators}
        metrics = ["l2", "mahalanobis"]
        {extra}
    """))
    return path


def counts(log):
    lines = log.read_text().split() if log.exists() else []
    return {k: lines.count(k) for k in ("corrupt", "recover", "estimate")}


def test_staging_calls_each_stage_once(tmp_path, log):
    suite = make_suite(tmp_path)
    run_suite(suite, RunOptions(out=tmp_path / "out"))
    # 2 instances x 3 budgets x 2 adversaries = 12 units; only the counting components log.
    # corrupt: once per unit of log-hide (6); recover: log-fill once per unit (12);
    # estimate: count-mean once per (unit, recoverer) with 3 recoverers (36), not per estimator.
    assert counts(log) == {"corrupt": 6, "recover": 12, "estimate": 36}


def test_cube_layout_and_reading_back(tmp_path, log):
    suite = make_suite(tmp_path)
    cubes = run_suite(suite, RunOptions(out=tmp_path / "out"))
    path = tmp_path / "out" / "t" / "e.nc"
    with xr.open_dataset(path) as ds:
        ds = ds.load()
    assert tuple(ds["l2"].dims) == ("dataset", "instance", "adversary", "budget", "recoverer", "estimator")
    for v in ("l2", "mahalanobis", "recovered_fraction", "discarded_fraction", "seconds", "status", "error",
              "d_entry1", "d_entry_inf", "d_tv"):
        assert v in ds, v
    for a in ("suite", "suite_hash", "seed", "cmbench_version", "plugins", "created"):
        assert a in ds.attrs, a
    assert ds.attrs["cmbench_version"] == cmbench.__version__
    assert any(p["plugin"].endswith("counting.py") for p in json.loads(ds.attrs["plugins"]))
    assert set(np.unique(ds["status"].values)) == {"ok"}
    assert_same_cube(ds, cubes["e"])
    # budget 0: nothing hidden, every method exact up to its noise
    np.testing.assert_allclose(ds["d_entry_inf"].sel(adversary="hide-smallest").values[..., 1:],
                               np.array([0.1, 0.3]) * np.ones((1, 2, 2)), atol=1e-12)
    assert (ds["l2"].sel(budget=0.0, estimator="mean").values < 1.0).all()


def test_same_cube_serial_and_workers(tmp_path, log):
    """(Dask's cube against the serial one: `test_stages_two_experiments_share_are_computed_once[dask]`,
    which starts the one LocalCluster this file needs.)"""
    suite = make_suite(tmp_path, instances=2)
    serial = run_suite(suite, RunOptions(out=tmp_path / "a"))["e"]
    workers = run_suite(suite, RunOptions(out=tmp_path / "b", workers=2))["e"]
    assert_same_cube(serial, workers)


def test_a_rerun_with_nothing_to_compute_contacts_no_scheduler(tmp_path, log):
    suite = make_suite(tmp_path)
    first = run_suite(suite, RunOptions(out=tmp_path / "out"))["e"]
    before = counts(log)
    # nothing listens there: a run that tried to reach the scheduler would be refused
    again = run_suite(suite, RunOptions(out=tmp_path / "out", scheduler="tcp://127.0.0.1:9"))["e"]
    assert counts(log) == before
    assert_same_cube(first, again)


def test_resume_recomputes_nothing(tmp_path, log):
    suite = make_suite(tmp_path)
    first = run_suite(suite, RunOptions(out=tmp_path / "out"))["e"]
    before = counts(log)
    again = run_suite(suite, RunOptions(out=tmp_path / "out"))["e"]
    assert counts(log) == before
    assert_same_cube(first, again)
    run_suite(suite, RunOptions(out=tmp_path / "out", resume=False))
    assert counts(log)["corrupt"] == 2 * before["corrupt"]


def test_failures_are_recorded_and_the_sweep_goes_on(tmp_path, log):
    suite = make_suite(tmp_path, estimators='["mean", "boom"]', budgets="[0.1]", instances=1)
    ds = run_suite(suite, RunOptions(out=tmp_path / "out"))["e"]
    status = ds["status"]
    assert (status.sel(estimator="boom") == "failed").all()
    assert (status.sel(estimator="mean") == "ok").all()
    err = str(ds["error"].sel(estimator="boom").values.flat[0])
    assert "estimator 'boom'" in err and "RuntimeError: estimator exploded" in err and "counting.py" in err
    # failed cells are not cached (the ok cells around them are)
    docs = [json.loads(p.read_text()) for p in (tmp_path / "out" / "t" / ".cache" / "units").glob("*.json")]
    cells = [c for d in docs for c in d["body"]["cells"].values()]
    assert cells and all(c["status"] == "ok" for c in cells)


def test_not_applicable_and_undefined_are_not_failures(tmp_path, log):
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent("""
        name = "na"
        [[experiment]]
        name = "e"
        datasets = [{name = "synthetic-gaussian", N = 100}]
        adversaries = ["hide-smallest"]
        budgets = [0.0, 0.5]
        recoverers = ["none", "basis-pursuit"]
        estimators = ["sanitize"]
    """))
    ds = run_suite(path, RunOptions(out=tmp_path / "out"))["e"]
    assert (ds["status"].sel(recoverer="basis-pursuit") == "not-applicable").all()
    assert ds["status"].sel(recoverer="none", budget=0.5).item() == "undefined"
    assert ds["status"].sel(recoverer="none", budget=0.0).item() == "ok"
    assert np.isnan(ds["l2"].sel(recoverer="none", budget=0.5).item())


def _cli(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "cmbench.cli", *args], capture_output=True, text=True,
                          env=env, **kw)


@pytest.mark.slow
def test_sigkill_then_rerun_gives_the_same_cube(tmp_path, log):
    suite = make_suite(tmp_path, estimators='[{name = "count-mean", delay = 0.3}, "mean"]',
                       budgets="[0.0, 0.05, 0.1, 0.15, 0.2, 0.25]", instances=3,
                       adversaries='["log-hide"]')
    env = dict(os.environ)
    reference = run_suite(suite, RunOptions(out=tmp_path / "ref"))["e"]
    log.unlink()
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "cmbench.cli", "suite", str(suite), "--out", str(out),
                             "--no-report"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cache = out / "t" / ".cache" / "units"
    deadline = time.time() + 60
    while not (cache.exists() and any(cache.rglob("*.json"))) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(random.Random().uniform(0.0, 4.0))  # a random moment, mid-sweep
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = len(list(cache.glob("*.json"))) if cache.exists() else 0
    total = 3 * 6
    log.unlink(missing_ok=True)
    result = _cli("suite", str(suite), "--out", str(out), "--no-report", env=env)
    assert result.returncode == 0, result.stderr
    assert 0 < kept < total, "the kill should land mid-sweep"
    assert counts(log)["corrupt"] == total - kept  # nothing finished is recomputed
    with xr.open_dataset(out / "t" / "e.nc") as ds:
        assert_same_cube(reference, ds.load())


def test_adaptive_adversary_is_staged_per_pipeline(tmp_path, log):
    suite = make_suite(tmp_path, estimators='["mean", "cmedian"]', budgets="[0.0, 0.2]", instances=1,
                       adversaries='["either-tail", "hide-smallest"]')
    ds = run_suite(suite, RunOptions(out=tmp_path / "out"))["e"]
    evals = ds["evaluations"]
    assert (evals.sel(adversary="either-tail") == 2).all()
    assert np.isnan(evals.sel(adversary="hide-smallest")).all()
    # The adaptive attack picks, per pipeline, the worse of two tails: never better than hiding the smallest.
    worst = ds["l2"].sel(adversary="either-tail", budget=0.2)
    fixed = ds["l2"].sel(adversary="hide-smallest", budget=0.2)
    assert (worst >= fixed - 1e-12).all()
    # log-fill logs once per evaluation plus once for the final cell, per estimator.
    assert counts(log)["recover"] == 2 * 2 * 3 + 2  # adaptive: 2 budgets x 2 ests x (2 evals + 1); fixed: 2


@pytest.mark.parametrize("executor", [{}, {"workers": 2}, {"workers": 2, "scheduler": "local"}],
                         ids=["serial", "workers", "dask"])
def test_stages_two_experiments_share_are_computed_once(tmp_path, log, executor):
    """Experiment b shares a's stages but count-mean: in one run, as in two slices run one after the
    other, each stage is computed once; b waits for a's units, then computes only count-mean. Each
    executor's cubes are those of the serial slices."""
    if "scheduler" in executor:
        pytest.importorskip("distributed")
    copy_plugin("stage_log.py", tmp_path, "counting.py")
    grid = """
        datasets = [{name = "synthetic-gaussian", N = 60}]
        adversaries = ["log-hide", "either-tail"]
        budgets = [0.1, 0.2]
        recoverers = ["log-fill", "none"]
        metrics = ["l2"]"""
    path = tmp_path / "suite.toml"
    path.write_text(textwrap.dedent(f"""
        name = "t"
        plugins = ["counting.py"]
        [[experiment]]
        name = "a"
        estimators = ["est-a", "est-b"]{grid}
        [[experiment]]
        name = "b"
        estimators = ["est-a", "count-mean"]{grid}
    """))
    apart = {e: run_suite(path, RunOptions(out=tmp_path / "apart", experiments=[e]))[e] for e in "ab"}
    separately = Counter(log.read_text().split())
    assert separately["corrupt"] == 2  # log-hide at two budgets, once for both experiments
    log.unlink()
    stats = cmbench.runner.Progress()
    together = run_suite(path, RunOptions(out=tmp_path / "together", **executor), stats=stats)
    assert Counter(log.read_text().split()) == separately
    for e in "ab":
        assert_same_cube(apart[e], together[e])
    assert (stats.total, stats.cached, stats.computed, stats.failed) == (8, 0, 8, 0)
    log.unlink()
    stats = cmbench.runner.Progress()
    run_suite(path, RunOptions(out=tmp_path / "together", **executor), stats=stats)
    assert not log.exists() and stats.cached == 8  # resumed: all of it from the cache
