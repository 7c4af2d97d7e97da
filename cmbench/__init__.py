"""cmbench: benchmark robust mean estimation under coordinate-level corruption."""
from __future__ import annotations

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
from .errors import DataError  # noqa: E402 (a data set's loader raises it: one line, exit 2)
from .hookspecs import hookimpl, hookspec  # noqa: E402
from .nanstats import nanquantile  # noqa: E402 (column quantiles with hidden entries, for estimators)


def load_plugins(extra=()):
    """Load every plugin: the built-ins, installed entry points, then ``extra``.

    The same registry ``cmbench plugins`` lists and a suite runs with, for
    notebooks and tests.

    Parameters
    ----------
    extra : sequence of str or module, default ()
        Plugin files (``.py`` paths) or importable module names, as for
        ``--plugin``, or module objects.

    Returns
    -------
    cmbench.plugins.Registry
        Dicts ``adversaries``, ``recoverers``, ``estimators``, ``datasets`` and
        ``metrics`` (name -> declaration), and the plugin that declared each.
        ``CMBENCH_DISABLE_PLUGIN_AUTOLOAD=1`` leaves out entry points.

    Raises
    ------
    cmbench.errors.PluginError
        A plugin cannot be imported or breaks the contract (the message names it).
    """
    from .plugins import load_plugins as _load

    return _load(extra)


def to_frame(cube):
    """A results cube as a tidy DataFrame, one row per cell.

    Parameters
    ----------
    cube : xarray.Dataset or path-like
        A cube, or the netCDF file `run_suite` wrote it to.

    Returns
    -------
    pandas.DataFrame
        One row per cell, one column per dimension and variable (see
        `cmbench.export.to_frame`).
    """
    from .export import to_frame as _to_frame

    return _to_frame(cube)


def run_suite(name_or_path, out="reports", workers=1, scheduler=None, *, report=True, **options):
    """Run a suite, as ``cmbench suite`` does, and return its results cubes.

    Parameters
    ----------
    name_or_path : str or path-like
        A shipped suite's name (``"paper"``) or a suite file.
    out : str or path-like, default "reports"
        Output folder: cubes go to ``<out>/<suite>/<experiment>.nc``.
    workers : int, default 1
        Local worker processes; as many draw the report's pages.
    scheduler : str or None
        A Dask scheduler address, or ``"local"``, instead of local processes.
    report : bool, default True
        Then draw the suite's PDF and HTML reports next to the cubes
        (`cmbench.report.write_suite_reports`).
    **options
        The other options of `cmbench.runner.run_suite` (resume, timeout, ...).

    Returns
    -------
    dict of str to xarray.Dataset
        The cube of each experiment, by experiment name.

    Raises
    ------
    cmbench.errors.UserError
        A suite file, plugin, data file or option is wrong (the message says which).
    """
    from .runner import Progress, run_suite as _run

    stats = options.pop("stats", None) or Progress()
    if report:
        from .report.suite_step import report_step

        options["then"] = report_step(workers, scheduler)  # before the run lets go of the output folder
    return _run(name_or_path, out=out, workers=workers, scheduler=scheduler, stats=stats, **options)


def rank(cube, metric=None):
    """The methods of a results cube (a Dataset or a path) ranked as every report ranks them,
    best first: a DataFrame (see `cmbench.ranking.rank`)."""
    from .ranking import rank as _rank

    return _rank(cube, metric)


__all__ = [
    "Adversary", "Component", "Data", "DataError", "DataFile", "Dataset", "Estimator", "Metric",
    "NotApplicable", "Recoverer", "ShippedTable", "Undefined", "hookimpl", "hookspec",
    "load_plugins", "nanquantile", "rank", "run_suite", "to_frame", "__version__",
]
