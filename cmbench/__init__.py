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
from .hookspecs import hookimpl, hookspec  # noqa: E402


def load_plugins(extra=()):
    """Load built-ins, entry points and ``extra`` plugin paths or modules.

    Returns a `cmbench.plugins.Registry` with dicts ``adversaries``,
    ``recoverers``, ``estimators``, ``datasets`` and ``metrics`` (name ->
    declaration). ``CMBENCH_DISABLE_PLUGIN_AUTOLOAD=1`` leaves out entry points.
    """
    from .plugins import load_plugins as _load

    return _load(extra)


def to_frame(cube):
    """A results cube (Dataset or netCDF path) as a tidy DataFrame, one row per cell.

    See `cmbench.export.to_frame`.
    """
    from .export import to_frame as _to_frame

    return _to_frame(cube)


def run_suite(name_or_path, out="reports", workers=1, scheduler=None, *, report=True, **options):
    """Run a suite file (a shipped name or a path); return its cubes by experiment.

    With ``report`` (the default), then draw its PDF and HTML reports next to the
    cubes (`cmbench.report.write_suite_reports`); the other options are those of
    `cmbench.runner.run_suite`.
    """
    from .runner import Progress, run_suite as _run

    stats = options.pop("stats", None) or Progress()
    cubes = _run(name_or_path, out=out, workers=workers, scheduler=scheduler, stats=stats, **options)
    if report:
        from .report.outputs import write_suite_reports

        write_suite_reports(stats.outputs)
    return cubes


__all__ = [
    "Adversary", "Component", "Data", "DataFile", "Dataset", "Estimator", "Metric",
    "NotApplicable", "Recoverer", "ShippedTable", "Undefined", "hookimpl", "hookspec",
    "load_plugins", "run_suite", "to_frame", "__version__",
]
