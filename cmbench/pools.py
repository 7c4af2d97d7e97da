"""Every child process of cmbench: loky worker pools, one family and one lifecycle.

The sweep's workers, the report's drawing workers, the plugin import
pre-flight and ``cmbench check``'s guard process all run in loky executors
(`loky.ProcessPoolExecutor`, and its process-wide reusable pool). A loky
worker is a fresh interpreter that does not run the user's ``__main__`` again
and receives functions and objects defined there by value (cloudpickle): a
script or a notebook cell that calls `cmbench.run_suite` needs no
``if __name__ == "__main__":`` guard. The reusable pool (`shared`) stays warm
between runs of one process for `IDLE` seconds.

A worker ends with its parent, even when the parent is killed by SIGKILL or
SIGTERM (`exit_with_parent`), and a worker whose task is done exits although a
plugin left a non-daemon thread running in it, so that neither a dead cmbench
nor one that exits leaves a process behind.
"""
from __future__ import annotations

import mmap
import os
import re
import signal
import sys
import tempfile
import threading
import time
from typing import Callable, Optional

__all__ = ["IDLE", "LEAK_BYTES", "WORKER_ENV", "Slot", "death", "environment", "exit_with_parent",
           "in_environment", "private", "shared", "size", "stop"]

#: The environment of every worker process, local or Dask: one BLAS/OpenMP thread,
#: since several threads per worker would oversubscribe the cores and change last bits.
WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

#: Seconds an idle worker of the reusable pool waits for its next task before it ends: long
#: enough for a notebook's next cell to find it warm, short enough not to hold memory all day.
IDLE = 300.0

#: Bytes a loky worker may grow by, past its size after its first task, before loky takes it
#: for a leak, ends it and starts another (where psutil is installed, as with Dask or Jupyter;
#: loky's default is 300 MB). cmbench's workers keep data sets between units by design
#: (`cmbench.runner.memo`, up to 2 GiB) and hold a full-size unit's matrices (3.4 GB at
#: d = 400): under the default a full `dkk17` run ended its workers nine times in six minutes,
#: each new one generating its data set again, and warned the user of a memory leak. Never,
#: here; a value set in the environment wins (loky reads it in the worker).
LEAK_BYTES = os.environ.get("LOKY_MAX_MEMORY_LEAK_SIZE", "1e15")

# A worker is started as ``python -m loky...``, which puts its working folder first on
# sys.path: a folder named ``cmbench`` there (a source checkout) would shadow the installed
# package. PYTHONSAFEPATH keeps it off; `_init` gives the worker the parent's value back.
_START_ENV = {**WORKER_ENV, "PYTHONSAFEPATH": "1", "LOKY_MAX_MEMORY_LEAK_SIZE": LEAK_BYTES}


def exit_with_parent(parent: int, interval: float = 0.25) -> None:
    """End this process when its parent ``parent`` (a pid) is gone, or as soon as its main
    thread has finished.

    A daemon thread checks every ``interval`` seconds. A parent killed by
    SIGKILL or SIGTERM runs no cleanup: this is what ends its workers, even
    while a plugin loops in Python code (a call inside compiled code that
    holds the interpreter ends when it returns). A worker asked to stop
    returns from its loop (its last message to the parent sent); Python would
    then wait for every non-daemon thread a plugin started, and the parent for
    the worker, and then tear down its modules (seconds with SciPy and
    xarray loaded): the worker's output is flushed and it ends at once, as a
    forked multiprocessing child does (no atexit handlers in a worker).
    """
    main = threading.main_thread()

    def gone() -> bool:
        if os.getppid() != parent:
            return True
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, owned by another user (a reused pid at worst)
            return False
        return False

    if gone():  # the parent died before this process got here
        os._exit(1)

    def watch() -> None:
        while not gone():
            time.sleep(interval)
            if not main.is_alive():  # the worker's loop has returned: it is exiting
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except (AttributeError, OSError, ValueError):
                        pass
                os._exit(0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="cmbench-parent-watch").start()


def _init(parent: int, safepath: Optional[str], setup: Optional[tuple]) -> None:
    """Every worker's first step: the parent's PYTHONSAFEPATH back, ``setup`` (``(function,
    *args)``, called), the watch."""
    if safepath is None:
        os.environ.pop("PYTHONSAFEPATH", None)
    else:
        os.environ["PYTHONSAFEPATH"] = safepath
    if setup is not None:
        setup[0](*setup[1:])
    exit_with_parent(parent)


def environment() -> dict:
    """This process's environment as a task carries it to a warm worker (`in_environment`),
    with `WORKER_ENV`."""
    return {**os.environ, **WORKER_ENV}


def in_environment(environ: dict, fn: Callable, *args):
    """In a worker: ``fn(*args)`` in the environment ``environ`` (`environment`), as a worker
    started now would have it: a notebook may set a variable its plugin reads between two runs,
    while the worker started at the first."""
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)
    return fn(*args)


def _initargs(setup: Optional[tuple] = None) -> tuple:
    return os.getpid(), os.environ.get("PYTHONSAFEPATH"), setup


_SIZE = [0]  # the most workers the shared pool was asked for in this process


def shared(workers: int):
    """The reusable pool of this process, with at least ``workers`` workers, warm from an
    earlier call.

    One per process (loky's reusable executor): the sweep, the data set probes
    and the report's drawing share its workers, and a second `cmbench.run_suite`
    in a script or a notebook starts none. It grows when asked for more workers
    and never shrinks (a one-job round would otherwise end a warm worker that
    the next round starts again): a caller that wants fewer keeps fewer tasks
    in flight (`size`). Its workers keep the environment they started with: a
    task that must see this process's as of now goes through `in_environment`.
    """
    import loky

    _SIZE[0] = max(_SIZE[0], workers)
    return loky.get_reusable_executor(max_workers=_SIZE[0], timeout=IDLE, env=_START_ENV,
                                      initializer=_init, initargs=_initargs())


def size() -> int:
    """How many workers the shared pool has (0 before `shared` is first called)."""
    return _SIZE[0]


def private(workers: int = 1, setup: Optional[tuple] = None):
    """A pool of its own (`loky.ProcessPoolExecutor`): for a task whose worker may be killed or
    may end its process, without breaking the shared pool. ``setup``, ``(function, *args)``
    (picklable), is called first in each worker."""
    import loky

    return loky.ProcessPoolExecutor(max_workers=workers, env=_START_ENV, initializer=_init,
                                    initargs=_initargs(setup))


def stop(executor) -> None:
    """End ``executor`` now: queued tasks are cancelled and its workers killed (a worker may
    be running a plugin that never returns)."""
    executor.shutdown(wait=True, kill_workers=True)  # waits for the kill, not for the tasks


def death(exc: BaseException) -> str:
    """What is known of why a worker died, from loky's error: ``"killed by signal SIGKILL
    (out of memory?)"``, ``"exit code 3"``, or ``""`` when the error does not say."""
    codes = [int(c) for c in re.findall(r"\((-?\d+)\)", str(exc))]
    if not codes:
        return ""
    code = codes[0]
    if code >= 0:
        return f"exit code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"killed by signal {-code}"
    hint = {"SIGKILL": " (out of memory?)", "SIGSEGV": " (a crash in compiled code)"}.get(name, "")
    return f"killed by signal {name}{hint}"


class Slot:
    """A small shared buffer, a memory-mapped temporary file: a worker writes in it the plugin
    call in progress (``value``), and the parent reads it once the worker has died.

    Writing is a memory copy (no system call per plugin call). `close` removes the file.
    """

    SIZE = 1024

    def __init__(self, path: Optional[str] = None) -> None:
        self.owner = path is None
        if path is None:
            fd, path = tempfile.mkstemp(prefix="cmbench-slot-")
            os.ftruncate(fd, self.SIZE)
            os.close(fd)
        self.path = path
        with open(path, "r+b") as f:
            self._map = mmap.mmap(f.fileno(), self.SIZE)

    def __len__(self) -> int:
        return self.SIZE

    @property
    def value(self) -> bytes:
        return self._map[:].split(b"\0", 1)[0]

    @value.setter
    def value(self, data: bytes) -> None:
        data = data[: self.SIZE - 1]
        self._map[: len(data) + 1] = data + b"\0"

    def close(self) -> None:
        self._map.close()
        if self.owner:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
