"""Where units run: in-process, local processes, or a Dask cluster.

Each executor yields ``(job, result)`` as units finish, in any order; results
do not depend on it (see `seeds`).

A plugin can end the process that runs it (``os._exit``, a segfault, running
out of memory). Local workers are therefore separate processes whose death
fails only their unit, and a serial sweep that uses plugins from outside
cmbench runs in one such worker too (`isolated`), so that the sweep itself
always survives to write its cubes. A call inside compiled code (a long BLAS or
C-extension call) cannot be interrupted by ``--timeout``: the timeout takes
effect when control returns to Python, at the latest at the end of the unit.
Workers are the process's reusable loky pool (`cmbench.pools`): they need no
main guard in the calling script, stay warm for the next run of the same
process, and exit when cmbench is gone, so killing it (even with SIGKILL)
leaves no worker behind.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from concurrent.futures import FIRST_COMPLETED, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, Iterator, Optional

from .. import pools
from ..errors import UserError
from . import ticks
from ..pools import WORKER_ENV
from .jobs import Job


def installed(bundle, fn: Callable, job: Job):
    """Run ``fn(job)`` in a worker process once the job's suite ``bundle`` is installed there."""
    from ..bundle import install

    install(bundle)  # once per process: later calls find it installed
    return fn(job)


def _with(bundle, fn: Callable) -> Callable:
    return fn if bundle is None else functools.partial(installed, bundle, fn)


def processes(jobs: Iterable[Job], fn: Callable, workers: int, died: Optional[Callable] = None,
              show: Optional[Callable[[float], None]] = None) -> Iterator:
    """The process's shared pool of local workers (`cmbench.pools.shared`); a worker that dies
    takes only its own unit down.

    Each job is a task of its own (no batching: see benchmarks/README.md); at
    most ``2 * workers`` are in flight (enough to keep every worker busy; the
    rest wait here, so that an interrupted sweep leaves little queued), or
    ``workers`` when the pool is larger, so that no more run at once.

    When a worker dies (os._exit, a segfault) every in-flight future of the
    pool breaks and the culprit is unknown: each job that was in flight is run
    again alone in a fresh process, where a death names its job (recorded as
    failed by ``died(job, running, how)``, default `worker_died`: ``running`` is
    the plugin call it was in, ``how`` the exit code or signal); the sweep then
    goes on in a fresh pool. A sweep that stops early (Ctrl-C, ``fail_fast``)
    kills the workers, which may be inside a plugin call; one that finishes
    leaves them warm. ``show(part)`` is called about twice a second with the
    part of the units in flight already done (`ticks`).
    """
    queue = list(jobs)
    queue.reverse()  # popped from the end: the first job given goes first
    fn = functools.partial(pools.in_environment, pools.environment(), fn)  # warm workers: today's environment
    board = ticks.Board(2 * workers) if show is not None else None
    try:
        yield from _rounds(queue, fn, workers, died or worker_died, show, board)
    finally:
        if board is not None:
            board.close()


def _rounds(queue: list, fn: Callable, workers: int, died: Callable, show, board) -> Iterator:
    """`processes`' loop: a round per pool, until the queue is empty."""
    while queue:
        suspects = []
        executor = pools.shared(workers)
        # a pool larger than asked (an earlier run's) runs no more than ``workers`` at once
        depth = 2 * workers if pools.size() == workers else workers
        free = list(range(depth))  # the board's lanes not in use
        lanes: dict = {}  # future -> its lane
        finished = False
        try:
            pending = {}
            # once the pool is broken, nothing more is submitted: what is still pending breaks
            # too, or has finished, and the queue goes on in a fresh pool
            while pending or (queue and not suspects):
                while queue and not suspects and len(pending) < depth:
                    job = queue.pop()
                    if board is None:
                        future = executor.submit(fn, job)
                    else:
                        lane = free.pop()
                        board.reset(lane)
                        future = executor.submit(ticks.counted, board.path, lane, fn, job)
                        lanes[future] = lane
                    pending[future] = job
                done, _ = wait(pending, timeout=None if show is None else 0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    job = pending.pop(future)
                    if future in lanes:
                        free.append(lanes.pop(future))
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        suspects.append(job)
                        continue
                    yield job, result
                if show is not None:
                    show(sum(ticks.share(board.read(lanes[f]), j) for f, j in pending.items()))
            finished = True
        finally:
            if not finished:
                pools.stop(executor)
        for job in suspects:
            yield job, _alone(fn, job, died)


def _alone(fn: Callable, job: Job, died: Callable) -> dict:
    """Run one job in a fresh one-worker pool: if the worker dies, this job did it.

    The worker writes the plugin call it is in into a shared slot, so that the
    failure names the plugin that ended the process.
    """
    slot = pools.Slot()
    executor = pools.private(1)
    try:
        # a unit's job carries the slot's path to its guard; other jobs (a pool's plain tasks) as given
        watched = dataclasses.replace(job, running=slot.path) if isinstance(job, Job) else job
        return executor.submit(fn, watched).result()
    except BrokenProcessPool as exc:
        return died(job, slot.value.decode("utf-8", "replace"), pools.death(exc))
    finally:
        pools.stop(executor)
        slot.close()


def worker_died(job: Job, running: str = "", how: str = "") -> dict:
    """The result of a job whose worker process died: every stage it computed failed, naming the
    call and what is known of the cause (``how``: an exit code or a signal)."""
    from .units import failed_work

    where = f" in {running}" if running else ""
    cause = f"{how}: " if how else ""
    return failed_work(job, f"the worker process died while computing this unit{where} ({cause}a plugin "
                            "ended the interpreter: os._exit, a segfault, or out of memory)")


#: Seconds a Dask scheduler has to answer before ``--scheduler`` is given up
#: (``$CMBENCH_SCHEDULER_TIMEOUT`` overrides it, e.g. for a slow link).
CONNECT_TIMEOUT = 10.0


def connect_timeout() -> float:
    text = os.environ.get("CMBENCH_SCHEDULER_TIMEOUT", "")
    try:
        value = float(text) if text else CONNECT_TIMEOUT
    except ValueError:
        value = float("nan")
    if not (value > 0 and value < float("inf")):
        raise UserError(f"CMBENCH_SCHEDULER_TIMEOUT={text!r}: expected a positive number of seconds")
    return value


def check_scheduler(address: str, timeout: Optional[float] = None) -> None:
    """Refuse a scheduler address Dask cannot use, or that does not answer within ``timeout``.

    Raises
    ------
    UserError
        An unknown scheme (the message lists the known ones), an address that
        refuses the connection, or a listener that never completes Dask's
        handshake; the message names the address.
    """
    from distributed.comm import connect
    from distributed.comm.addressing import parse_address
    from distributed.comm.registry import backends

    timeout = connect_timeout() if timeout is None else timeout
    try:
        scheme, _ = parse_address(address)
    except ValueError as exc:
        raise UserError(f"--scheduler {address}: not a Dask address ({exc})") from None
    if scheme not in backends:
        raise UserError(f"--scheduler {address}: unknown scheme {scheme!r}; use one of "
                        f"{', '.join(sorted(backends))} (e.g. tcp://HOST:8786) or 'local'")

    import asyncio  # here: 0.03 s of every run's start, before its workers get a unit, for Dask runs only

    async def handshake():
        comm = await connect(address, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(handshake(), timeout))
    except (TimeoutError, asyncio.TimeoutError):
        raise UserError(f"--scheduler {address}: no answer from a Dask scheduler within "
                        f"{timeout:g} s") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


def _identity(value):
    return value


def _worker_address() -> str:
    from distributed import get_worker

    try:
        return get_worker().address
    except ValueError:
        return "(unknown)"


def _check_on_worker(bundle) -> str:
    from ..bundle import check

    problem = check(bundle)
    return f"Dask worker {_worker_address()} cannot run this suite: {problem}" if problem else ""


def _on_dask_worker(bundle, fn: Callable, job: Job):
    """A unit on a Dask worker: install the suite's bundle (once per process), then compute."""
    from ..bundle import WorkerSetupError, client_paths

    problem = _check_on_worker(bundle)
    if problem:
        raise WorkerSetupError(problem)
    return client_paths(bundle, fn(job))


def spawn_environ() -> dict:
    """Dask's ``distributed.nanny.pre-spawn-environ`` without its ``MALLOC_TRIM_THRESHOLD_``.

    Dask's default sets it to 65536 in every worker process. Setting it at all
    (to any value) also fixes glibc's mmap threshold at 128 KiB, so every
    large temporary array is mapped and unmapped afresh: 25x the page faults
    and 16-50% more CPU in the estimators (benchmarks/dask_trim.py). Without
    it the workers allocate as cmbench's own local workers do. A value in
    cmbench's own environment still reaches the workers, which inherit it.
    """
    import dask

    return {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items()
            if k != "MALLOC_TRIM_THRESHOLD_"}


def dask(jobs: Iterable[Job], fn: Callable, scheduler: str, workers: int, bundle=None) -> Iterator:
    """Units on a Dask cluster; ``bundle`` (`cmbench.bundle.SuiteBundle`) travels once per worker.

    Each connected worker first proves it can rebuild the suite (a plugin
    that is not a file must be installed there); a worker that cannot is a
    user error naming it, before any unit runs.
    """
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UserError("--scheduler needs Dask: pip install 'cmbench[dask]'") from None
    jobs = list(jobs)
    cluster = None
    if scheduler == "local":
        import dask

        # the nanny's environment for its workers, read when the cluster starts them. Every HTTP
        # server (the scheduler's and the workers': health routes, dashboards) on loopback at a
        # free port: distributed 2023 starts them even for dashboard_address=None, on every interface
        with dask.config.set({"distributed.nanny.pre-spawn-environ": spawn_environ()}):
            cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                   worker_dashboard_address="127.0.0.1:0",
                                   env=dict(WORKER_ENV))
        client = Client(cluster)
    else:
        check_scheduler(scheduler)
        try:
            client = Client(scheduler, timeout=f"{connect_timeout():g}s")
        except OSError as exc:
            raise UserError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    futures: dict = {}
    try:
        if bundle is not None:
            # A task holding the bundle: workers fetch it from one another, and a worker
            # that joins later (dask-jobqueue scaling up) gets it too.
            held = client.submit(_identity, bundle, pure=False)
            probes = [client.submit(_check_on_worker, held, workers=[w], allow_other_workers=False, pure=False)
                      for w in client.scheduler_info()["workers"]]
            problems = [p for p in client.gather(probes) if p]
            if problems:
                raise UserError(problems[0])
            # A copy on every worker: held by one alone, it draws every unit to that worker (the
            # scheduler places a task beside its inputs) while the others wait to steal one.
            client.replicate([held])
            futures = {client.submit(_on_dask_worker, held, fn, job, pure=False): job for job in jobs}
        else:
            futures = {client.submit(fn, job, pure=False): job for job in jobs}
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        client.cancel(list(futures))
        client.close()
        if cluster is not None:
            cluster.close()


def run_jobs(jobs: list, fn: Callable, workers: int = 1, scheduler: Optional[str] = None,
             isolate: bool = False, bundle=None, died: Optional[Callable] = None,
             show: Optional[Callable[[float], None]] = None) -> Iterator:
    """Run ``fn`` on every job with the chosen executor.

    ``isolate`` keeps a serial sweep out of process (in one child process that a plugin
    may kill); a worker process first
    installs the jobs' suite ``bundle``; ``died`` makes the result of a job
    whose local worker process died (see `processes`); ``show(part)`` moves a
    progress bar inside the units in flight (`ticks`; not on Dask).
    """
    if scheduler and jobs:  # nothing to compute (a cached rerun): no cluster started or contacted
        return dask(jobs, fn, scheduler, workers, bundle)
    if workers > 1 and jobs:  # even one: the client keeps no unit's matrices (a full-size one's are GBs)
        return processes(jobs, _with(bundle, fn), workers, died, show)
    if isolate and jobs:
        return processes(jobs, _with(bundle, fn), 1, died, show)
    return ((job, ticks.here(fn, job, show)) for job in jobs)
