"""The options of a suite run, parsed and checked once into a `RunOptions`.

`cmbench suite` and `cmbench.run_suite` build one from what the user gave and
hand it to the runner, the dry run and the data-set loader, which take it as
checked: an option a real run would refuse is refused before anything starts,
by ``--dry-run`` too, with the same one line.
"""
from __future__ import annotations

import math
import os
from dataclasses import InitVar, dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from .errors import UserError
from .plugins import plugin_list

#: most local workers per usable core: beyond it processes only compete for the cores
MAX_WORKERS_PER_CORE = 4

#: seconds a plugin call of a suite may take by default (``--timeout``, `cmbench.run_suite`'s
#: ``timeout``): far above any unit of the shipped suites at full size, so that only a call
#: that hangs is stopped; ``none`` (None in Python) lets a call run for ever
SUITE_TIMEOUT = 600.0

#: the longest ``--timeout`` (about 11.6 days): beyond it the alarm clock itself overflows
MAX_TIMEOUT = 1e6


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it)."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        return max(1, count() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def parse_workers(value: "int | str | None", name: str = "--workers") -> int:
    """``--workers`` (and `cmbench.run_suite`'s ``workers``, named ``name`` in the message): a
    positive number, or ``auto`` (the usable cores), at most `MAX_WORKERS_PER_CORE` per usable core.

    Raises
    ------
    UserError
        Not ``auto`` nor a positive integer, or more workers than the limit.
    """
    cores = usable_cores()
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return cores
    try:
        n = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise UserError(f"{name} must be a positive number or 'auto', got {value!r}") from None
    if isinstance(n, bool) or n < 1:
        raise UserError(f"{name} must be at least 1 (or 'auto'), got {value}")
    limit = MAX_WORKERS_PER_CORE * cores
    if n > limit:
        raise UserError(f"{name} {n} is more than {MAX_WORKERS_PER_CORE} per usable core "
                        f"({cores} usable core{'s' if cores != 1 else ''}: at most {limit}); "
                        f"give {name} auto or at most {limit}")
    return n


def parse_timeout(value: "float | str | None") -> Optional[float]:
    """``--timeout`` as given on the command line or to the API: seconds, or ``none`` (None).

    Raises
    ------
    UserError
        Not ``none`` nor a number, or a number `check_timeout` refuses.
    """
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise UserError(f"--timeout must be a number of seconds or 'none', got {value!r}") from None
    return check_timeout(value)


def check_timeout(timeout: Optional[float]) -> Optional[float]:
    """``--timeout``: None or a positive, finite number of seconds, at most `MAX_TIMEOUT`."""
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                    and math.isfinite(timeout) and timeout > 0):
        raise UserError(f"--timeout must be a positive number of seconds (or 'none'), got {timeout}")
    if timeout is not None and timeout > MAX_TIMEOUT:
        raise UserError(f"--timeout {timeout:g} is above the longest a plugin call may be given, "
                        f"{MAX_TIMEOUT:g} s; give at most {MAX_TIMEOUT:g} or 'none' (no limit)")
    return timeout


@dataclass(frozen=True)
class RunOptions:
    """How to run a suite: every option of ``cmbench suite`` (but ``--dry-run``), parsed and checked.

    Built from what the user gave (strings as on the command line, or the
    values of `cmbench.run_suite`): construction parses and checks every field
    once, so that a `RunOptions` that exists is one a run accepts.

    Parameters
    ----------
    out : path, default "reports"
        Output folder: cubes, the stage cache and the reports.
    plugins : sequence, default ()
        Plugins on top of the suite's (``--plugin``).
    workers : int or "auto", default 1
        Local worker processes, or the workers of the LocalCluster that ``scheduler="local"``
        starts; ``"auto"``: one per usable core (one with ``post_mortem`` or an external
        ``scheduler``, which brings its own workers); at most `MAX_WORKERS_PER_CORE`
        per usable core.
    scheduler : str or None
        A Dask scheduler address, or ``"local"``.
    timeout : float, "none" or None, default `SUITE_TIMEOUT`
        Seconds a plugin call may take (at most `MAX_TIMEOUT`); None: no limit.
    resume : bool, default True
        Reuse cached stages; False clears the suite's cache first.
    cache_size : int, str or None
        Cap of the stage cache (``"500MB"``), in bytes once parsed; None: the suite's, else 2 GB.
    report : bool, default False
        Draw the suite's reports after the run (the runner itself draws none).
    progress : bool or None
        A progress bar; None: on a terminal or in a notebook.
    experiments, select : sequence of str
        Run only these experiments, only the cells these ``-k`` patterns select (a slice).
    fail_fast : bool, default False
        Stop at the first failed cell.
    post_mortem : bool, default False
        Open the debugger where a plugin raises (in this process: not with workers or a scheduler).
    workers_name : str, default "--workers"
        How a message names ``workers`` (``"workers"`` for the API); not stored.

    Raises
    ------
    UserError
        The option a run would refuse, named as the user gave it.
    """

    out: Path = Path("reports")
    plugins: tuple = ()
    workers: int = 1
    scheduler: Optional[str] = None
    timeout: Optional[float] = SUITE_TIMEOUT
    resume: bool = True
    cache_size: Optional[int] = None
    report: bool = False
    progress: Optional[bool] = None
    experiments: tuple = ()
    select: tuple = ()
    fail_fast: bool = False
    post_mortem: bool = False
    workers_name: InitVar[str] = "--workers"

    def __post_init__(self, workers_name: str) -> None:
        def put(name: str, value: Any) -> None:  # frozen: the parsed value replaces the given one
            object.__setattr__(self, name, value)

        put("out", Path(self.out))
        put("plugins", plugin_list(self.plugins))  # a lone string is refused: it is no list of plugins
        for name in ("experiments", "select"):
            put(name, _sequence(getattr(self, name)))
        put("timeout", parse_timeout(self.timeout))
        # --pdb debugs in this process and an external scheduler brings its own workers: auto
        # means one there; a LocalCluster is started here, with a worker per core as the pool's
        auto = isinstance(self.workers, str) and self.workers.strip().lower() == "auto"
        external = self.scheduler is not None and self.scheduler != "local"
        put("workers", 1 if auto and (self.post_mortem or external)
            else parse_workers(self.workers, workers_name))
        if self.post_mortem and (self.workers > 1 or self.scheduler):
            raise UserError("--pdb debugs in this process: it cannot be combined with --workers or --scheduler")
        if self.cache_size is not None:
            from .sizes import parse_size

            put("cache_size", parse_size(self.cache_size))

    @property
    def isolate(self) -> bool:
        """Whether third-party plugin code may run in child processes (not under ``--pdb``,
        which debugs in this process)."""
        return not self.post_mortem


def _sequence(value: "Sequence[Any] | str") -> tuple:
    """A repeatable option as a tuple (one string given alone is one item, not its letters)."""
    return (value,) if isinstance(value, (str, os.PathLike)) else tuple(value)
