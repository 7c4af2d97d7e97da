"""Options a run takes on the command line, checked in one place for a real run and ``--dry-run``.

`cmbench suite --dry-run` promises the plan of the real run: an option the real
run would refuse is refused by the dry run too, with the same one line.
"""
from __future__ import annotations

import math
import os
from typing import Optional

from .errors import UserError

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


def check_run_options(*, workers: int, timeout: Optional[float] = None, scheduler: Optional[str] = None,
                      post_mortem: bool = False, cache_size=None) -> None:
    """Every check a real run makes of its options before it starts (`cmbench.runner.run_suite`
    repeats them), for ``--dry-run``.

    Raises
    ------
    UserError
        The option that a real run would refuse, named.
    """
    if post_mortem and (workers > 1 or scheduler):
        raise UserError("--pdb debugs in this process: it cannot be combined with --workers or --scheduler")
    parse_workers(workers)
    check_timeout(timeout)
    if cache_size is not None:
        from .sizes import parse_size

        parse_size(cache_size)
