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
Workers watch their parent and exit when it is gone, so killing cmbench
(even with SIGKILL) leaves no worker behind.
"""
from __future__ import annotations

import functools
import gc
import multiprocessing
import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, Iterator, Optional, Sequence

from ..errors import UserError
from ..forking import close_inherited, exit_with_parent
from .units import Job


def installed(bundle, fn: Callable, job: Job):
    """Run ``fn(job)`` in a worker process once the job's suite ``bundle`` is installed there."""
    from ..bundle import install

    install(bundle)
    return fn(job)


def _with(bundle, fn: Callable) -> Callable:
    return fn if bundle is None else functools.partial(installed, bundle, fn)


def serial(jobs: Iterable[Job], fn: Callable) -> Iterator:
    for job in jobs:
        yield job, fn(job)


def isolated(jobs: Iterable[Job], fn: Callable, died: Optional[Callable] = None) -> Iterator:
    """One unit at a time, like `serial`, but in a child process that a plugin may kill."""
    return processes(jobs, fn, 1, died)


#: environment variable forcing how the first pool's workers start (``fork`` or ``spawn``)
WORKER_START_ENV = "CMBENCH_WORKER_START"

#: The environment of every worker process, local or Dask: one BLAS/OpenMP thread,
#: since several threads per worker would oversubscribe the cores and change last bits.
WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _worker_init(parent: int, slot=None, inherited: tuple = ()) -> None:
    os.environ.update(WORKER_ENV)
    if inherited:
        close_inherited(inherited)
    if slot is not None:
        from . import units

        units.RUNNING = slot
    exit_with_parent(parent)



def prestart(workers: int, bundle=None, inherited: tuple = (),
             preload: Sequence[Job] = ()) -> ProcessPoolExecutor:
    """A pool of ``workers`` local processes started now, each installing ``bundle`` (for `processes`)
    and loading the data sets of ``preload`` (jobs, one per data set instance) into its memo.

    Where it is safe (`cmbench.forking`: Linux, no other thread yet) the
    workers are forked: they start with the client's modules and its suite
    already built, and close their copies of the descriptors open on the
    paths ``inherited`` (the run lock). Elsewhere they are spawned, which costs
    each its imports and the suite's rebuild (about 0.45 s of CPU apiece in a
    plain install); started before the client has planned the whole sweep,
    the workers do that while the client still looks units up in its cache.
    Pools made later (after a worker died) are spawned: the client has
    threads by then. ``CMBENCH_WORKER_START`` (``fork`` or ``spawn``)
    overrides the choice.

    The workers load ``preload``'s data sets while the client looks the rest
    of the sweep up in its cache: each worker loads most data sets of a sweep
    anyway, at its first unit on each, and until the lookups are done it has
    nothing else to do.

    Raises
    ------
    cmbench.errors.UserError
        ``CMBENCH_WORKER_START`` names another method, or one this platform lacks.
    """
    from ..forking import start_method

    method = start_method(WORKER_START_ENV)
    pool = _pool(workers, method=method, inherited=inherited)
    if method == "fork":
        # The cyclic collector of a forked worker would walk (and so copy) every object of the
        # client it inherited; frozen now, they are left alone there (as for the report helpers).
        gc.freeze()
    try:
        for _ in range(workers):  # one task per worker: a forked pool starts them all at the first
            pool.submit(_warm, bundle, tuple(preload))
    finally:
        if method == "fork":
            gc.unfreeze()
    return pool


def _warm(bundle, preload: tuple = ()) -> None:
    if bundle is not None:
        from ..bundle import install

        install(bundle)  # a setup error comes back with the first unit that needs it
    if preload:
        from .units import loaded

        for job in preload:  # memoized here; a failed load is remembered and reported by its units
            loaded(job)


#: seconds of work a batch of units sent to a local worker at once should hold (`processes`)
BATCH_SECONDS = 0.025


def processes(jobs: Iterable[Job], fn: Callable, workers: int, died: Optional[Callable] = None,
              pool: Optional[ProcessPoolExecutor] = None,
              cost: Optional[Callable[[Job], float]] = None) -> Iterator:
    """A pool of local processes; a worker that dies takes only its own unit down.

    Small units go to the workers in batches (`Batches`): a batch is one
    task and one result for the client, whose threads share one interpreter
    lock with the imports it does meanwhile (`warmup`). Sent one by one,
    units that take a few ms (a rerun with a new estimator) left each worker
    waiting for its next unit for about a third of the sweep. At most
    ``2 * workers`` batches are in flight (enough to keep every worker busy).

    When a worker dies (os._exit, a segfault) every in-flight future of the
    pool breaks and the culprit is unknown: a unit that was sent alone is run
    again alone in a fresh process, where a death names its unit (recorded as
    failed), and the units of a batch go back to the queue, each to be sent
    alone from then on; the sweep goes on in a fresh pool, in parallel.
    ``died(job, running)`` is the result of a job whose worker died while in
    the plugin call ``running`` (default `worker_died`). ``pool``: a pool of
    ``workers`` processes already started (`prestart`), used first; ``cost``:
    a job's relative cost (None: every unit is sent alone).
    """
    queue = list(jobs)
    queue.reverse()  # popped from the end: the first unit given goes first
    batches = Batches(cost, workers)
    depth = 2 * workers
    ready = pool
    while queue:
        suspects = []
        pool, ready = (ready if ready is not None else _pool(workers)), None
        try:
            pending = {}
            while queue or pending:
                while queue and len(pending) < depth and not suspects:
                    batch = batches.take(queue)
                    try:
                        pending[pool.submit(_each, fn, batch)] = batch
                    except BrokenProcessPool:  # a started worker died before this job (in `prestart`'s setup)
                        suspects.append(batch)
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = pending.pop(future)
                    try:
                        results, seconds = future.result()
                    except BrokenProcessPool:
                        suspects.append(batch)
                        continue
                    batches.learn(batch, seconds)
                    yield from zip(batch, results)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        for batch in suspects:
            if len(batch) == 1:
                yield batch[0], _alone(fn, batch[0], died or worker_died)
            else:  # the culprit is one of them: sent alone, in parallel, it breaks only its pool
                queue.extend(batches.single(reversed(batch)))


class Batches:
    """How many units of the queue go to a worker at once: enough to hold about
    `BATCH_SECONDS` of work, by the seconds per unit of ``cost`` measured so far.

    Units are sent alone until a batch has been timed, when ``cost`` is None,
    when one unit is predicted to take that long by itself (a recovery, a slow
    plugin), and once they have been in a batch that broke its pool (`single`).
    A batch also leaves at least ``4 * workers`` batches for the rest of the
    queue, so that no worker is left alone with a long batch at the end.
    """

    def __init__(self, cost: Optional[Callable[[Job], float]], workers: int) -> None:
        self.cost = cost
        self.workers = workers
        self.seconds = 0.0  # measured in the workers, over the units timed so far
        self.weight = 0.0  # their total cost
        self.alone: set = set()  # ids of jobs to send alone

    def take(self, queue: list) -> list:
        """Pop the next batch from ``queue`` (its next unit last)."""
        limit = max(1, len(queue) // (4 * self.workers))
        batch = [queue.pop()]
        if self.cost is None or self.weight <= 0 or id(batch[0]) in self.alone:
            return batch
        rate = self.seconds / self.weight
        total = rate * self.cost(batch[0])
        while queue and len(batch) < limit and id(queue[-1]) not in self.alone:
            more = rate * self.cost(queue[-1])
            if total + more > BATCH_SECONDS:
                break
            batch.append(queue.pop())
            total += more
        return batch

    def learn(self, batch: list, seconds: float) -> None:
        if self.cost is not None:
            self.weight += sum(self.cost(job) for job in batch)
            self.seconds += seconds

    def single(self, jobs: Iterable[Job]) -> list:
        """Mark ``jobs`` to be sent alone from now on; return them."""
        jobs = list(jobs)
        self.alone.update(id(job) for job in jobs)
        return jobs


def _each(fn: Callable, jobs: list) -> tuple[list, float]:
    """``fn`` on each job, in a worker; the results and the seconds they took."""
    start = time.perf_counter()
    results = [fn(job) for job in jobs]
    return results, time.perf_counter() - start


def _alone(fn: Callable, job: Job, died: Callable) -> dict:
    """Run one unit in a fresh one-worker pool: if the worker dies, this unit did it.

    The worker writes the plugin call it is in into a shared slot, so that the
    failure names the plugin that ended the process.
    """
    ctx = multiprocessing.get_context("spawn")
    slot = ctx.RawArray("c", 1024)
    pool = _pool(1, slot)
    try:
        return pool.submit(fn, job).result()
    except BrokenProcessPool:
        return died(job, slot.value.decode("utf-8", "replace"))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _pool(workers: int, slot=None, method: str = "spawn", inherited: tuple = ()) -> ProcessPoolExecutor:
    # fork only where `prestart` found it safe: after threads (tqdm, the warm-up) it can deadlock
    ctx = multiprocessing.get_context(method)
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(os.getpid(), slot, tuple(inherited) if method == "fork" else ()))


def worker_died(job: Job, running: str = "") -> dict:
    """The result of a job whose worker process died: every stage it computed failed, naming the call."""
    from .units import failed_work

    where = f" in {running}" if running else ""
    return failed_work(job, f"the worker process died while computing this unit{where} (a plugin ended the "
                            "interpreter: os._exit, a segfault, or out of memory)")


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
    from ..bundle import WorkerSetupError, client_paths, install

    try:
        install(bundle)
    except WorkerSetupError as exc:
        raise WorkerSetupError(f"Dask worker {_worker_address()} cannot run this suite: {exc}") from None
    return client_paths(bundle, fn(job))


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
        cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None,
                               env=dict(WORKER_ENV))
        client = Client(cluster)
    else:
        check_scheduler(scheduler)
        try:
            client = Client(scheduler, timeout=f"{connect_timeout():g}s")
        except OSError as exc:
            raise UserError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
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
            futures = {client.submit(_on_dask_worker, held, fn, job, pure=False): job for job in jobs}
        else:
            futures = {client.submit(fn, job, pure=False): job for job in jobs}
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        client.cancel(list(futures)) if "futures" in locals() else None
        client.close()
        if cluster is not None:
            cluster.close()


def run_jobs(jobs: list, fn: Callable, workers: int = 1, scheduler: Optional[str] = None,
             isolate: bool = False, bundle=None, died: Optional[Callable] = None,
             pool: Optional[ProcessPoolExecutor] = None,
             cost: Optional[Callable[[Job], float]] = None) -> Iterator:
    """Run ``fn`` on every job with the chosen executor.

    ``isolate`` keeps a serial sweep out of process; a worker process first
    installs the jobs' suite ``bundle``; ``died`` makes the result of a job
    whose local worker process died (see `processes`); ``pool``: local
    processes already started by `prestart` (``workers`` of them), used
    whenever there is a job (the caller shuts it down otherwise); ``cost``:
    a job's relative cost, by which local processes take small jobs in
    batches (`processes`).
    """
    if scheduler:
        return dask(jobs, fn, scheduler, workers, bundle)
    if pool is not None and jobs:
        return processes(jobs, _with(bundle, fn), workers, died, pool, cost)
    if workers > 1 and len(jobs) > 1:
        return processes(jobs, _with(bundle, fn), workers, died, cost=cost)
    if isolate and jobs:
        return isolated(jobs, _with(bundle, fn), died)
    return serial(jobs, fn)
