"""How cmbench starts its child processes, and how a child ends with its parent.

Children are started by the ``forkserver`` method where the platform has it
(Linux), else by ``spawn``: `context`. A forkserver is a clean process started
once per cmbench process; it imports `PRELOAD` (numpy, scipy, the runner and
the built-in plugins) once, and every child forked from it starts with those
modules. It holds none of the parent's threads, locks or open descriptors (the
run lock's included), so none of what forking the parent itself needed (a
thread census, freezing the heap, closing inherited descriptors) applies.

A parent killed by SIGKILL runs no cleanup, and a child waiting for its next
task would wait for ever: every child calls `exit_with_parent`.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import threading
from multiprocessing.context import BaseContext
from typing import Iterable

__all__ = ["PRELOAD", "WORKER_ENV", "context", "exit_with_parent"]

#: Modules a forkserver imports once for all its children: what a sweep's worker needs
#: before its first unit (imports that fail are left to the child, which reports them).
PRELOAD = ("numpy", "scipy.linalg", "scipy.optimize", "scipy.stats", "threadpoolctl", "xxhash",
           "cmbench.runner.units", "cmbench.bundle", "cmbench.plugins")

#: The environment of every worker process, local or Dask: one BLAS/OpenMP thread,
#: since several threads per worker would oversubscribe the cores and change last bits.
WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

_LOCK = threading.Lock()
_PRELOADS: list = []  # what `context` was asked to preload, in order


def context(preload: Iterable[str] = ()) -> BaseContext:
    """The multiprocessing context of every cmbench child process: forkserver, else spawn.

    The forkserver is one per process, shared by the sweep's workers, the
    report's drawing pool and the plugin guards; it starts at the first call
    here and imports `PRELOAD` and ``preload`` (modules asked for by later
    calls are imported by each child instead). It starts with `WORKER_ENV` in
    its environment, so that the BLAS libraries it loads start one thread each.
    """
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    with _LOCK:
        for name in (*PRELOAD, *preload):
            if name not in _PRELOADS:
                _PRELOADS.append(name)
        ctx.set_forkserver_preload(list(_PRELOADS))
        from multiprocessing import forkserver

        # The server inherits this process's environment when it starts (once; later calls
        # return at once): for that moment only, the environment its BLAS libraries read,
        # and PYTHONSAFEPATH: the server is `python -c ...`, which would put the working
        # folder first on its sys.path (Python 3.11 ignores the parent's sys.path there), so
        # a cmbench source folder there would shadow the installed package in every worker.
        start = {**WORKER_ENV, "PYTHONSAFEPATH": "1"}
        saved = {k: os.environ.get(k) for k in start}
        os.environ.update(start)
        try:
            forkserver.ensure_running()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return ctx


def exit_with_parent(parent: int, interval: float = 0.5) -> None:
    """End this process when the process ``parent`` (a pid) is gone, even killed by SIGKILL.

    On Linux the kernel sends this process SIGKILL when its own parent (the
    forkserver, or ``parent`` itself for a spawned child) ends
    (``PR_SET_PDEATHSIG``); a forkserver ends as soon as the process that
    started it is gone. Elsewhere, and as a backstop, a daemon thread checks
    every ``interval`` seconds that ``parent`` is alive and this process has
    not been handed to another parent.
    """
    first = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the thread below does it
            pass

    def gone() -> bool:
        if os.getppid() != first:
            return True
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, owned by another user (a reused pid at worst)
            return False
        return False

    if gone():  # the parent died before the request above took effect
        os._exit(1)

    def watch() -> None:
        import time

        while not gone():
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="cmbench-parent-watch").start()
