"""Where units run: in-process, local processes, or a Dask cluster.

Each executor yields ``(job, result)`` as units finish, in any order; results
do not depend on it (see `seeds`).
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, Iterator, Optional

from ..errors import UserError
from .units import Job


def serial(jobs: Iterable[Job], fn: Callable) -> Iterator:
    for job in jobs:
        yield job, fn(job)


def _worker_init() -> None:
    # BLAS threads per worker would oversubscribe the cores and change last bits.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"


def processes(jobs: Iterable[Job], fn: Callable, workers: int) -> Iterator:
    """A pool of spawned processes; a worker that dies takes only its own unit down.

    At most ``2 * workers`` units are in flight (enough to keep every worker
    busy). When a worker dies (os._exit, a segfault) every in-flight future of
    the pool breaks and the culprit is unknown: those units are run again
    each alone in a fresh process, where a death names its unit (recorded as
    failed), and the rest of the sweep goes on in a fresh pool, in parallel.
    """
    queue = list(jobs)
    depth = 2 * workers
    while queue:
        suspects = []
        pool = _pool(workers)
        try:
            pending = {}
            while queue or pending:
                while queue and len(pending) < depth and not suspects:
                    job = queue.pop(0)
                    pending[pool.submit(fn, job)] = job
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    job = pending.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        suspects.append(job)
                        continue
                    yield job, result
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        for job in suspects:
            yield job, _alone(fn, job)


def _alone(fn: Callable, job: Job) -> dict:
    """Run one unit in a fresh one-worker pool: if the worker dies, this unit did it."""
    pool = _pool(1)
    try:
        return pool.submit(fn, job).result()
    except BrokenProcessPool:
        return worker_died(job)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _pool(workers: int) -> ProcessPoolExecutor:
    ctx = multiprocessing.get_context("spawn")  # fork after threads (tqdm, BLAS) can deadlock
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init)


def worker_died(job: Job) -> dict:
    """The result of a unit whose worker process died: every cell failed."""
    from .units import FAILED, _fail_all, experiment_for

    _, exp = experiment_for(job)
    return _fail_all({"corruption": {}, "recovery": {}, "cells": {}}, exp, FAILED,
                     "the worker process died while computing this unit (a plugin crashed the "
                     "interpreter: os._exit, a segfault, or out of memory)")


def dask(jobs: Iterable[Job], fn: Callable, scheduler: str, workers: int) -> Iterator:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UserError("--scheduler needs Dask: pip install 'cmbench[dask]'") from None
    jobs = list(jobs)
    cluster = None
    if scheduler == "local":
        cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None,
                               env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout="10s")
        except OSError as exc:
            raise UserError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    try:
        futures = {client.submit(fn, job, pure=False): job for job in jobs}
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        client.cancel(list(futures)) if "futures" in locals() else None
        client.close()
        if cluster is not None:
            cluster.close()


def run_jobs(jobs: list, fn: Callable, workers: int = 1, scheduler: Optional[str] = None) -> Iterator:
    if scheduler:
        return dask(jobs, fn, scheduler, workers)
    if workers > 1 and len(jobs) > 1:
        return processes(jobs, fn, workers)
    return serial(jobs, fn)
