"""Local workers forked where that is safe, spawned otherwise, with the same results either way."""
import os
import sys
import threading

import numpy as np
import pytest
import xarray as xr

from cmbench.errors import UserError
from cmbench.runner import executors
from conftest import assert_user_error, cli

LINUX = sys.platform.startswith("linux")


def _method(pool) -> str:
    return pool._mp_context.get_start_method()


@pytest.mark.skipif(not LINUX, reason="workers are forked on Linux only")
def test_first_pool_is_forked_unless_a_thread_runs(monkeypatch):
    monkeypatch.delenv(executors.WORKER_START_ENV, raising=False)
    if threading.active_count() == 1:  # an earlier test may have left a thread behind
        pool = executors.prestart(1)
        try:
            assert _method(pool) == "fork"
        finally:
            pool.shutdown(cancel_futures=True)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:  # another thread may hold a lock that a fork would copy held
        pool = executors.prestart(1)
        try:
            assert _method(pool) == "spawn"
        finally:
            pool.shutdown(cancel_futures=True)
    finally:
        stop.set()
        thread.join()


def test_worker_start_can_be_forced_and_is_checked(monkeypatch):
    monkeypatch.setenv(executors.WORKER_START_ENV, "spawn")
    pool = executors.prestart(1)
    try:
        assert _method(pool) == "spawn"
    finally:
        pool.shutdown(cancel_futures=True)
    monkeypatch.setenv(executors.WORKER_START_ENV, "thread")
    with pytest.raises(UserError, match=executors.WORKER_START_ENV):
        executors.prestart(1)


def test_bad_worker_start_is_a_user_error_on_the_command_line(tmp_path):
    env = dict(os.environ, CMBENCH_WORKER_START="threads")
    result = cli("suite", "smoke", "--out", tmp_path / "out", "--workers", "2", "--no-report", env=env)
    assert_user_error(result.returncode, result.stderr, "CMBENCH_WORKER_START", "'threads'")


@pytest.mark.skipif(not LINUX, reason="workers are forked on Linux only")
def test_forked_and_spawned_workers_give_the_same_cube(tmp_path):
    cubes = {}
    for method in ("fork", "spawn"):
        env = dict(os.environ, CMBENCH_WORKER_START=method)
        out = tmp_path / method
        result = cli("suite", "smoke", "--out", out, "--workers", "2", "--no-report", env=env)
        assert result.returncode == 0, result.stderr
        cubes[method] = xr.load_dataset(out / "smoke" / "synthetic.nc")
    a, b = cubes["fork"], cubes["spawn"]
    assert set(a.data_vars) == set(b.data_vars)
    for v in a.data_vars:
        if v != "seconds":
            same = np.array_equal(a[v].values, b[v].values, equal_nan=a[v].dtype.kind == "f")
            assert same, f"{v} differs between forked and spawned workers"
