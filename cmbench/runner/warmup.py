"""The imports of the steps after a sweep, done while its units compute.

While worker processes compute, the client only waits for their results. The
steps after the sweep (writing the cubes: xarray and its netCDF engine; a report,
when the caller draws one: matplotlib, fontTools, pypdf) would import their
libraries afterwards, in one process on one core, while the workers sit idle.
Imported in a background thread of the client during the sweep, they cost
that time where it overlaps the workers'. Measured on 2 cores with a new
estimator (benchmarks/README.md): about 1.5 s moved out of the serial part in
an install with dask (which xarray imports on the first cube write), within
the noise of a plain install, where that part is smaller; CPU the workers
would use goes to the imports meanwhile.

The thread only imports (and reads which BLAS is loaded, for the cubes'
provenance): nothing is computed or written there, and an import
that fails is left to the step that needs it, which reports it as it would
without the warm-up. It is joined before the cubes are written, so that a
report helper forked afterwards (`cmbench.report.helpers`) finds no other
thread in the process.
"""
from __future__ import annotations

import threading
from typing import Callable, Optional


def import_cube_writer() -> None:
    """What writing the cubes imports on its first call: xarray and its netCDF engine, and
    scipy.linalg, whose BLAS a cube's ``environment`` attribute lists (`cmbench.cube.environment`,
    which is then looked up here: 0.12 s that were spent after the sweep, on one core)."""
    import xarray  # noqa: F401
    import xarray.backends.netCDF4_  # noqa: F401

    from ..cube import environment

    environment()  # once per process (cached); it imports scipy.linalg and lists the loaded BLAS

    try:  # where dask is installed, xarray imports it (and asks for a client) on the first write
        from xarray.backends.locks import get_dask_scheduler

        get_dask_scheduler()
    except Exception:  # a private helper of xarray: without it the write imports dask itself
        pass


class Warmup:
    """A daemon thread that runs ``import_cube_writer`` and then ``extra`` (the caller's imports).

    The runner calls `start` once the cache lookups are done and units are to
    compute in other processes (a rerun that computes nothing imports nothing
    early), and `join` before it writes the cubes; both may be called more
    than once.
    """

    def __init__(self, extra: Optional[Callable[[], None]] = None) -> None:
        self.extra = extra
        self.thread: Optional[threading.Thread] = None

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="cmbench-warmup", daemon=True)
            self.thread.start()

    def _run(self) -> None:
        for step in (import_cube_writer, self.extra):
            if step is None:
                continue
            try:
                step()
            except Exception:  # the step after the sweep imports again and reports the failure
                pass

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()
