"""cmbench: benchmark robust mean estimation under coordinate-level corruption."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from .version import __version__
from .components import (  # noqa: E402
    Adversary,
    Component,
    Data,
    DataFile,
    Dataset,
    Estimator,
    Metric,
    NotApplicable,
    Recoverer,
    ShippedTable,
    Undefined,
)
from .errors import DataError, PluginError, SuiteError, UserError  # noqa: E402 (one line each, exit 2)
from .errors import CellsFailed, CellsFailedWarning  # noqa: E402
from .hookspecs import hookimpl, hookspec  # noqa: E402
from .nanstats import nanquantile  # noqa: E402 (column quantiles with hidden entries, for estimators)

if TYPE_CHECKING:
    import xarray

    from .bundle import WorkerSetupError
    from .export import to_frame
    from .plugins import Registry
    from .report.kinds import PageKind
    from .ranking import rank
    from .runner import Interrupted, Progress, StoppedAtFailure
    from .suite import Suite, load_suite
    from .verdicts import verdicts_frame as claims


def load_plugins(extra: Sequence[Any] = ()) -> "Registry":
    """Load every plugin: the built-ins, installed entry points, then ``extra``.

    The same registry ``cmbench plugins`` lists and a suite runs with, for
    notebooks and tests.

    Parameters
    ----------
    extra : sequence, default ()
        Plugin files (``.py`` paths) or importable module names, as for
        ``--plugin``, module objects, or objects with hook implementations
        (see `run_suite`'s ``plugins``).

    Returns
    -------
    cmbench.plugins.Registry
        Dicts ``adversaries``, ``recoverers``, ``estimators``, ``datasets`` and
        ``metrics`` (name -> declaration), and the plugin that declared each.
        ``CMBENCH_DISABLE_PLUGIN_AUTOLOAD=1`` leaves out entry points.

    Raises
    ------
    cmbench.PluginError
        A plugin cannot be imported, breaks the contract or implements an
        unknown hook (the message names it).
    """
    from .plugins import load_plugins as _load

    return _load(extra)


def run_suite(
    suite: "str | os.PathLike | Mapping[str, Any] | Suite",
    out: "str | os.PathLike" = "reports",
    *,
    workers: "int | str" = 1,
    scheduler: Optional[str] = None,
    plugins: Sequence[Any] = (),
    report: bool = False,
    resume: bool = True,
    timeout: "float | str | None" = 600.0,
    progress: Optional[bool] = None,
    cache_size: "int | str | None" = None,
    experiments: Sequence[str] = (),
    select: Sequence[str] = (),
    fail_fast: bool = False,
    post_mortem: bool = False,
    stats: "Progress | None" = None,
    errors: str = "warn",
) -> "dict[str, xarray.Dataset]":  # noqa: F821
    """Run a suite, as ``cmbench suite`` does, and return its results cubes.

    Parameters
    ----------
    suite : str, path-like, dict or Suite
        A shipped suite's name (``"paper"``), a suite file, a suite's TOML text,
        a dict of the suite file's keys (``{"name": ..., "experiment": [{...}]}``),
        or a `Suite` (`load_suite`). Relative paths in a dict or text resolve
        against the working directory.
    out : str or path-like, default "reports"
        Output folder: cubes go to ``<out>/<suite>/<experiment>.nc``, the stage
        cache to ``<out>/<suite>/.cache``.
    workers : int or "auto", default 1
        Local worker processes (they also draw a report with many changed pages);
        ``"auto"``: one per usable core; at most 4 per usable core, as ``--workers``.
        They are the process's reusable pool (loky): a script needs no
        ``if __name__ == "__main__":`` guard, and a second call in the same
        process (a notebook's next cell) finds them started.
    scheduler : str or None
        A Dask scheduler address, or ``"local"``, instead of local processes.
    plugins : sequence, default ()
        Plugins on top of the suite's (as ``--plugin``): ``.py`` paths, module
        names, module objects, or objects with hook implementations (a class
        instance, a ``types.SimpleNamespace(register_estimators=...)``: a method
        named like a hook implements it even without ``@cmbench.hookimpl``).
        Objects are shipped to workers by value (cloudpickle), so an estimator
        defined in a notebook cell runs with workers too. Their estimators and
        recoverers join every experiment, as with ``--plugin``.
    report : bool, default False
        Also draw the suite's PDF and HTML reports next to the cubes (the CLI
        draws them by default; here it is a few seconds more and a 5 MB file).
    resume : bool, default True
        Reuse cached stages; False clears the suite's cache first.
    timeout : float, "none" or None, default 600
        Stop a plugin call after this many seconds (a ``timeout`` cell), at most
        1e6; None (or ``"none"``) lets a call run for ever.
    progress : bool or None
        A progress bar; None: when stderr is a terminal or in a Jupyter
        kernel (there a widget, `tqdm.auto`).
    cache_size : int, str or None
        Cap of the stage cache (``"500MB"``); default the suite's, else 2 GB.
    experiments : sequence of str
        Run only these experiments (a slice: its cubes go to ``<out>/<suite>/slice/``).
    select : sequence of str
        ``-k`` patterns selecting cells by label (a slice too; `cmbench.selection`).
    fail_fast : bool, default False
        Stop at the first failed cell (`StoppedAtFailure`, no cube written).
    post_mortem : bool, default False
        Open the debugger where a plugin raises (in this process: not with workers).
    stats : cmbench.runner.Progress or None
        Filled with the run's counts (units cached, computed, failed) and outputs.
    errors : {"warn", "raise", "ignore"}, default "warn"
        What a run with failed or timed-out cells does once its cubes are
        written: warn (`CellsFailedWarning`, with the count and the first
        errors), raise `CellsFailed` (its ``cubes`` hold the results), or
        nothing.

    Returns
    -------
    dict of str to xarray.Dataset
        The cube of each experiment, by experiment name (`to_frame` takes it).

    Raises
    ------
    SuiteError
        The suite is invalid (the message names the file, or ``<dict>``, and the key).
    PluginError
        A plugin cannot be loaded, breaks the contract or implements an unknown hook.
    DataError
        A data file is missing, malformed or fails its checksum.
    WorkerSetupError
        A worker cannot rebuild the suite (a plugin or data file it lacks).
    UserError
        Any other mistake of the user's (an option, a path); the base of the above.
    StoppedAtFailure
        ``fail_fast`` and a cell failed.
    Interrupted
        Ctrl-C during the sweep (finished units are kept).
    CellsFailed
        ``errors="raise"`` and some cells failed or timed out.
    """
    from .options import RunOptions
    from .runner import run_suite as _run

    if errors not in ("warn", "raise", "ignore"):
        raise UserError(f"errors must be 'warn', 'raise' or 'ignore', got {errors!r}")
    options = RunOptions(out=out, plugins=plugins, workers=workers, scheduler=scheduler, timeout=timeout,
                         resume=resume, cache_size=cache_size, report=report, progress=progress,
                         experiments=experiments, select=select, fail_fast=fail_fast, post_mortem=post_mortem,
                         workers_name="workers")
    then = None
    if options.report:
        from .report.suite_step import report_step

        then = report_step(options.workers)  # before the run lets go of the output folder
    cubes = _run(suite, options, stats=stats, then=then)
    if errors != "ignore":
        from .cube import failure_summary

        summary = failure_summary(cubes)
        if summary and errors == "raise":
            raise CellsFailed(summary, cubes)
        if summary:
            import warnings

            warnings.warn(summary, CellsFailedWarning, stacklevel=2)
    return cubes


#: names that load their module on first use (the runner and the suite reader import xarray's
#: neighbours; a plugin that imports cmbench needs none of them)
_LAZY = {"Suite": ".suite", "load_suite": ".suite", "Interrupted": ".runner", "StoppedAtFailure": ".runner",
         "Progress": ".runner", "WorkerSetupError": ".bundle", "to_frame": ".export", "rank": ".ranking",
         "claims": ".verdicts:verdicts_frame", "PageKind": ".report.kinds"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, _, attr = _LAZY[name].partition(":")
        value = getattr(importlib.import_module(module, __name__), attr or name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cmbench' has no attribute {name!r}")


__all__ = [
    "Adversary", "CellsFailed", "CellsFailedWarning", "Component", "Data", "DataError", "DataFile", "Dataset",
    "Estimator", "Interrupted", "Metric",
    "NotApplicable", "PageKind", "PluginError", "Progress", "Recoverer", "ShippedTable", "StoppedAtFailure", "Suite",
    "SuiteError", "Undefined", "UserError", "WorkerSetupError", "claims", "hookimpl", "hookspec",
    "load_plugins", "load_suite", "nanquantile", "rank", "run_suite", "to_frame", "__version__",
]
