"""``cmbench suite --dry-run``: what a run would compute, read from the cache, writing nothing."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import selection
from ..kinds import GRID_KEYS
from ..options import RunOptions
from ..suite import data_size, load_suite
from .stages import info_key, lookup, unit_keys
from .store import Store


@dataclass
class ExperimentPlan:
    """One experiment of the plan: its grid sizes and how much of it the cache holds."""

    name: str
    sizes: dict  # grid key (`cmbench.kinds.GRID_KEYS`) -> number of entries
    units: int = 0
    cached_units: int = 0
    cells: int = 0
    cached_cells: int = 0


@dataclass
class Plan:
    """The plan of a (sliced) suite run."""

    suite: str
    sliced: bool
    experiments: list = field(default_factory=list)
    datasets: list = field(default_factory=list)  # (label, (N, n), where the shape comes from), largest first
    cubes: str = ""
    report: str = ""  # the reports' path without suffix (.pdf, .html)


def dry_run(name_or_path, options: RunOptions) -> Plan:
    """The plan of ``cmbench suite`` with these ``options``; reads the cache, writes nothing.

    Everything the run checks before it computes is checked here too, and
    refused with the run's words: the suite, the options (checked when
    ``options`` was built), the output folder (a file in the way, not
    writable, read-only), the report's paths (``options.report``: a folder or
    another kind of file there) and the environment's limits
    (``CMBENCH_MAX_FILE_GB``).

    Returns
    -------
    Plan
        Per experiment the number of units and cells and how many the cache
        holds; the data sets by size (the shape a previous run recorded, else
        the declaration's nominal shape); where the cubes and reports would go
        (``report``: their path without the ``.pdf`` / ``.html`` suffix).
    """
    from . import _cache_cap, plan as plan_units
    from .. import data
    from ..files import check_target
    from ..output import can_make_folder

    out = options.out
    full = load_suite(name_or_path, options.plugins)
    suite = selection.slice_suite(full, options.experiments, options.select)
    sliced = selection.is_slice(full, suite)
    _cache_cap(suite, options.cache_size)
    data.max_file_bytes()  # (absent data files are not looked for: the run may download them)
    root = check_target(Path(out) / suite.name, root=out, kind="folder")
    folder = check_target(root / "slice", root=out, kind="folder") if sliced else root
    can_make_folder(folder, "output folder")
    stem = Path(out) / f"{suite.name}{'-slice' if sliced else ''}"
    if options.report:
        for kind in ("pdf", "html"):
            check_target(stem.with_name(f"{stem.name}.{kind}"), root=stem.parent, kind=kind)
    store = Store(root, out=Path(out))
    by_name = {}
    result = Plan(suite=suite.name, sliced=sliced, cubes=str(folder) + "/", report=str(stem))
    for exp in suite.experiments:
        sizes = {k: len(getattr(exp, k)) for k in GRID_KEYS}
        by_name[exp.name] = ExperimentPlan(exp.name, sizes)
        result.experiments.append(by_name[exp.name])
    for exp, job in plan_units(suite, options):
        row = by_name[exp.name]
        keys = unit_keys(suite.seed, exp, job)
        cells = len(exp.recoverers) * len(exp.estimators)
        row.units += 1
        row.cells += cells
        done, work = lookup(store, exp, keys)
        if work is None:
            row.cached_units += 1
            row.cached_cells += cells
        else:
            body = store.unit(keys.corruption)
            held = keys.pair if keys.adaptive else keys.cell
            part = body["pairs"] if keys.adaptive else body["cells"]
            row.cached_cells += sum(k in part for k in held.values())
    seen = {}
    for exp in suite.experiments:
        for entry in exp.datasets:
            if entry.label in seen:
                continue
            info = store.info(info_key(suite.seed, entry, exp.instances[0]))
            if info and info.get("shape"):
                seen[entry.label] = (tuple(info["shape"]), "as last loaded")
            elif size := data_size(entry):  # what the suite's parameters say (N, d, blocks), as the size check reads it
                size = tuple(size)
                nominal = None if callable(entry.decl.shape) else tuple(entry.decl.shape or ())
                seen[entry.label] = (size, "nominal" if size == nominal else "from its parameters")
            else:
                seen[entry.label] = (None, "unknown until loaded")
    result.datasets = sorted(((label, shape, where) for label, (shape, where) in seen.items()),
                             key=lambda row: -(row[1][0] * row[1][1]) if row[1] else 0)
    return result
