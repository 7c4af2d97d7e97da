"""Worker processes come from a standard pool (forkserver, else spawn) and end with their parent."""
import multiprocessing as mp
import os
import subprocess
import sys
import textwrap
import time

import pytest

from cmbench import forking
from cmbench.runner import executors

LINUX = sys.platform.startswith("linux")


def _pid_and_parent(_):
    return os.getpid(), os.getppid()


def test_workers_start_from_a_forkserver_where_the_platform_has_one():
    expected = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    assert forking.context().get_start_method() == expected
    pool = executors.pool(1)
    try:
        pid, parent = pool.submit(_pid_and_parent, None).result()
    finally:
        pool.shutdown()
    assert pid != os.getpid()
    if expected == "forkserver":  # a child of the server, which holds none of this process's threads or files
        assert parent != os.getpid()


def _env(_):
    return {k: os.environ.get(k) for k in forking.WORKER_ENV}


def test_workers_run_one_blas_thread_and_leave_this_process_environment_alone():
    before = {k: os.environ.get(k) for k in forking.WORKER_ENV}
    pool = executors.pool(1)
    try:
        assert pool.submit(_env, None).result() == forking.WORKER_ENV
    finally:
        pool.shutdown()
    assert {k: os.environ.get(k) for k in forking.WORKER_ENV} == before


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_a_pool_worker_ends_within_seconds_of_a_sigkilled_parent(tmp_path):
    # the parent: a pool with one busy worker, which prints the worker's pid and waits to be killed
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent("""
        import os, sys, time
        from cmbench.runner import executors

        def busy(_):
            print(os.getpid(), flush=True)
            time.sleep(120)

        if __name__ == "__main__":
            pool = executors.pool(1)
            pool.submit(busy, None)
            time.sleep(120)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    try:
        worker = int(proc.stdout.readline())
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.path.exists(f"/proc/{worker}"):
            with open(f"/proc/{worker}/stat") as f:
                if f.read().split(") ")[-1].startswith("Z"):
                    break  # a zombie has ended; its new parent reaps it
            time.sleep(0.1)
        alive = os.path.exists(f"/proc/{worker}") and not open(f"/proc/{worker}/stat").read().split(") ")[-1].startswith("Z")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not alive, f"worker {worker} outlived its killed parent"
