"""When a child process may be forked from this one, rather than spawned; and how a child
ends with its parent.

A forked child starts with the parent's modules and objects (no imports, no
rebuild of the suite), so it costs a fraction of a spawned one. It is also a
copy of the parent at one instant: a lock that another thread of the parent
held then stays held in the child for ever. Forking is therefore used only on
Linux, with no other Python thread running and no Dask client made in this
process (its threads and event loop). Native threads of the BLAS libraries are
not Python threads; OpenBLAS shuts its pool down around a fork itself.

Native threads that a plugin's import may have started (an OpenMP runtime,
say) cannot be seen from Python: where one makes forked children hang, the
environment variable of each use forces ``spawn`` (`start_method`).

Used by the sweep's first pool of local workers (`cmbench.runner.executors`,
``CMBENCH_WORKER_START``) and by the report's helpers (`cmbench.report.helpers`,
``CMBENCH_REPORT_START``). Both kinds of children, forked or spawned, call
`exit_with_parent`: a parent killed by SIGKILL runs no cleanup, and a child
waiting for its next task would otherwise wait for ever. Forked ones also
`close_inherited` the run lock.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading

__all__ = ["close_inherited", "exit_with_parent", "fork_is_safe", "other_threads", "start_method"]


def start_method(variable: str) -> str:
    """``"fork"`` where `fork_is_safe`, else ``"spawn"``; the environment ``variable``
    (``fork`` or ``spawn``) overrides the choice.

    Raises
    ------
    cmbench.errors.UserError
        ``variable`` names another method, or one this platform lacks.
    """
    forced = os.environ.get(variable, "").strip()
    if forced:
        if forced not in ("fork", "spawn") or forced not in mp.get_all_start_methods():
            from .errors import UserError

            raise UserError(f"{variable}={forced!r}: expected 'fork' or 'spawn' "
                            f"(this platform has {', '.join(mp.get_all_start_methods())})")
        return forced
    return "fork" if fork_is_safe() else "spawn"


def fork_is_safe() -> bool:
    """Whether forking this process now cannot copy a lock held by another thread (see above)."""
    client = sys.modules.get("distributed.client")  # xarray imports distributed; a client is what counts
    return (sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods()
            and not other_threads() and not getattr(client, "_global_clients", None))


def other_threads() -> list:
    """Threads other than this one, but tqdm's progress-bar monitor: it sleeps once the
    run's bar is closed, and the only lock it takes is tqdm's, which a child never uses."""
    monitor = getattr(sys.modules.get("tqdm._monitor"), "TMonitor", None)
    return [t for t in threading.enumerate() if t is not threading.current_thread()
            and not (monitor is not None and isinstance(t, monitor))]


def exit_with_parent(parent: int, interval: float = 0.5) -> None:
    """End this process within ``interval`` seconds of its parent ``parent`` (a pid) being
    gone, even killed by SIGKILL: a daemon thread watches ``os.getppid()``."""
    def watch() -> None:
        import time

        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="cmbench-parent-watch").start()


def close_inherited(paths: tuple) -> None:
    """Close this forked child's copies of the parent's descriptors open on ``paths``.

    The run lock is a ``flock`` on a descriptor that a fork duplicates (filelock
    3.x leaves it open in a child; 4.x closes it itself): were the parent
    killed, a child still holding its copy would hold the lock until it noticed
    (`exit_with_parent`), and a rerun started meanwhile would be refused.
    Closing a copy leaves the parent's lock in place.
    """
    wanted = {os.path.realpath(p) for p in paths}
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return
    for fd in fds:
        try:
            if os.path.realpath(os.readlink(f"/proc/self/fd/{fd}")) in wanted:
                os.close(int(fd))
        except OSError:
            continue
