"""The suite runner: sweep an experiment grid in staged units, persist, resume, assemble cubes.

From a unit's work to its cube cells::

    run_suite
      load_suite -> Suite (experiments: datasets x instances x adversaries x budgets
      |                     x recoverers x estimators; metrics)
      load_datasets (loading)    each data set's first instance once: its description, or its failure
      plan                       one Job per (experiment, dataset, instance, adversary, budget)
      _sweep
        lookup (stages, store)   per job: the stage cache's records; a Work of what is missing
        |                        (corrupt? which recoveries? which estimates?), cached matrices by
        |                        reference (MatrixRef, local workers read them) or by value (Dask);
        |                        a job whose stages another job computes waits for it (`computes`)
        run_jobs (executors)     serial | local process pool | Dask; each job -> execute (units):
        |                          memo.loaded -> data (memoized per process, capped in bytes)
        |                          corrupt (guard.run + checks) -> Xc, its distances, its inlier mean
        |                          recover per recoverer -> Xr, recovery measures
        |                          estimate per estimator -> mu, metrics -> cell records
        |                        -> WorkResult (records and encoded matrices)
        records_of, Store.add    fresh records and matrices into the cache, as each unit arrives
        unit_result (stages)     cached + fresh records -> the unit's UnitResult
      assemble -> cube.build     UnitResults -> one xarray cube per experiment -> <out>/<suite>/<exp>.nc
"""
from __future__ import annotations

import dataclasses
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional


from ..bundle import SuiteBundle, pack
from ..errors import UserError
from ..files import check_target
from ..kinds import CELL_KINDS, LISTED
from ..options import RunOptions
from ..output import writable_folder
from ..suite import Experiment, Suite, load_suite, shown
from .executors import run_jobs
from .stages import computes, cells_only, lookup, merged, records_of, unit_keys, unit_result
from .store import Store, empty_body
from ..sizes import parse_size
from .dataset_loading import is_foreign, load_datasets
from ..cube import FAILURES, UnitResult, failed_cells
from .jobs import Job, balanced, work_result
from .metrics import RECOVERED_TOLERANCE
from .units import execute

if TYPE_CHECKING:  # xarray and tqdm load only where they are used: a worker needs neither
    import xarray as xr


class Interrupted(Exception):
    """Ctrl-C during a sweep; finished units are kept."""


class StoppedAtFailure(Exception):
    """``fail_fast``: the sweep stopped at its first failed cell; finished stages are kept.

    ``cell`` names the cell (experiment and the six coordinates); ``error`` and
    ``traceback`` are what the cube would have recorded.
    """

    def __init__(self, cell: dict, status: str, error: str, traceback: str) -> None:
        super().__init__(f"stopped at the first failed cell: {error}")
        self.cell, self.status, self.error, self.traceback = cell, status, error, traceback


@dataclass
class Progress:
    total: int = 0
    cached: int = 0  # units the cache held whole
    cells: int = 0  # (recoverer, estimator) cells of every unit
    cached_cells: int = 0  # cells taken from the cache (a new estimator leaves the others' cached)
    computed: int = 0
    failed: int = 0
    damaged: int = 0  # cache documents that failed a check (checksum, key, schema) and were recomputed
    other_versions: dict = None  # cmbench version -> cache documents it wrote, recomputed
    evicted: int = 0  # cache files evicted to keep under the size cap
    outputs: Optional["RunOutputs"] = None  # where the run wrote its cubes, for the report step


@dataclass(frozen=True)
class RunOutputs:
    """What a report of a finished run needs: the cubes written, their content digests, where reports go.

    The runner draws no report; `cmbench suite` (and `cmbench.run_suite`) pass this to
    `cmbench.report.write_suite_reports` in `run_suite`'s ``then``, while the output
    folder is still locked.
    """

    cubes: tuple  # netCDF paths, one per experiment, in suite order
    digests: tuple  # a digest of each cube's content (not its creation time)
    report: Path  # the reports' path without suffix: ``<out>/<suite>[-slice]``
    cache: Path  # the suite's cache folder, where drawn pages are kept
    registry: Any = None  # the run's plugins (`cmbench.plugins.Registry`): the report draws the pages they add


def plan(suite: Suite, options: Optional[RunOptions] = None, bundle: str = "") -> list[tuple[Experiment, Job]]:
    """Every unit of the suite, grouped by data set so per-process data memos hit.

    ``options`` give each job its ``--timeout`` and ``--pdb`` (default `RunOptions`);
    ``bundle``: the digest of the suite's bundle, by which workers find it (`pack`).
    """
    options = options if options is not None else RunOptions()
    return [(exp, Job(bundle, exp.name, ds.label, inst, adv.label, budget, options.timeout,
                      post_mortem=options.post_mortem))
            for exp in suite.experiments
            for ds, inst, adv, budget in itertools.product(exp.datasets, exp.instances, exp.adversaries, exp.budgets)]


def check_data_files(suite: Suite) -> None:
    """Fail before the sweep, not in every cell, when a data set's files are absent."""
    from .. import data

    declared = {ds.name: ds.decl for exp in suite.experiments for ds in exp.datasets if ds.decl.files}
    for decl in declared.values():
        data.require(decl)


def uses_foreign_plugins(suite: Suite) -> bool:
    """Whether any component of the suite comes from a plugin that is not cmbench's own.

    Such a sweep runs in a child process even with one worker: a plugin that ends
    its process (``os._exit``) must not take the sweep, its cubes and its exit code with it.
    """
    return any(is_foreign(suite, kind.plural, e)
               for exp in suite.experiments
               for kind in LISTED
               for e in getattr(exp, kind.entries))


def run_suite(name_or_path, options: Optional[RunOptions] = None, stats: Optional[Progress] = None,
              then: Optional[Callable[[RunOutputs], None]] = None) -> "dict[str, xr.Dataset]":
    """Run a suite with ``options`` (default `RunOptions`, checked when built); return its cubes
    by experiment name.

    Cubes are written to ``<out>/<suite>/<experiment>.nc``; ``stats.outputs``
    then says where, for the report step (`cmbench.report.write_suite_reports`,
    which `cmbench suite` and `cmbench.run_suite` pass as ``then`` when
    ``options.report``: the runner draws no report). Every stage (corruption, recovery,
    estimate) is cached under ``<out>/<suite>/.cache`` by a key of what
    determines it and reused by the next run unless ``options.resume`` is False;
    ``options.cache_size`` (default the suite's ``cache_size``, else 2 GB) caps that folder.

    ``options.experiments`` and ``options.select`` (``-k`` patterns, see `cmbench.selection`)
    run a slice: it shares the cache, and its cubes go to
    ``<out>/<suite>/slice/`` and its report to ``<out>/<suite>-slice.pdf``, so
    that the whole suite's cubes are never replaced by part of them.
    ``options.fail_fast`` stops at the first failed cell (`StoppedAtFailure`, no cube
    written); ``options.post_mortem`` (in-process only) opens the debugger where a
    plugin raised. ``then`` (the
    report step) is called with ``stats.outputs`` once the cubes are written,
    while the output folder is still locked: a second run into the same folder
    is refused until it returns, so that neither replaces the cubes a report
    is being drawn from.
    """
    from .. import selection

    options = options if options is not None else RunOptions()
    if options.report and then is None:
        raise TypeError("the runner draws no report: call cmbench.run_suite(..., report=True), or "
                        "cmbench.report.write_suite_reports(stats.outputs) after the run")
    out = options.out
    full = load_suite(name_or_path, options.plugins)
    suite = selection.slice_suite(full, options.experiments, options.select)
    sliced = selection.is_slice(full, suite)
    cap = _cache_cap(suite, options.cache_size)
    check_data_files(suite)
    root = check_target(out / suite.name, root=out, kind="folder")
    writable_folder(root, "output folder")
    store = Store(root, cap=cap, out=out)
    stats = stats if stats is not None else Progress()
    store.lock()
    try:
        if not options.resume:
            store.clear()
        packed = pack(suite, options.scheduler)
        try:
            datasets = load_datasets(suite, options, store, packed)
        except KeyboardInterrupt:
            raise Interrupted("interrupted while loading the data sets; nothing was computed") from None
        results = _sweep(suite, store, options, stats, packed, datasets)
        folder = root / "slice" if sliced else root
        written, digests = _write_cubes(suite, results, store, folder, root, datasets)
        store.evict()
        stats.damaged, stats.other_versions = store.stale, dict(store.other_versions)
        stats.evicted = store.evicted
        stats.outputs = RunOutputs(cubes=tuple(folder / f"{e.name}.nc" for e in suite.experiments),
                                   digests=tuple(digests), report=out / f"{suite.name}{'-slice' if sliced else ''}",
                                   cache=store.cache, registry=suite.registry)
        if then is not None:
            then(stats.outputs)
    finally:
        store.unlock()
    return written


def _write_cubes(suite: Suite, results: dict, store: Store, folder: Path, root: Path,
                 datasets: dict) -> tuple[dict, list]:
    """Assemble and save each cube in ``folder`` (inside ``root``), unless the file on disk
    already holds that very cube; ``datasets`` is what `load_datasets` gave."""
    from .. import cube as cubes
    from ..stamps import CUBE_STAMPS, Stamps, content_digest

    stamps = Stamps(Path(store.cache) / CUBE_STAMPS)
    written, digests = {}, []
    for exp in suite.experiments:
        ds = assemble(suite, exp, results[exp.name], datasets)
        path = check_target(folder / f"{exp.name}.nc", root=root, kind="netcdf")
        digest = content_digest(ds)
        stamp = stamps.current(path, digest)
        if stamp is None:
            cubes.save(ds, path)
            stamps.record(path, digest, created=ds.attrs["created"], host=ds.attrs["host"])
        else:  # unchanged: the file stays, and the cube says when it was made
            ds.attrs.update(created=stamp.get("created", ds.attrs["created"]),
                            host=stamp.get("host", ds.attrs["host"]))
        written[exp.name] = ds
        digests.append(digest)
    stamps.save()
    return written, digests


def _cache_cap(suite: Suite, cache_size) -> int:
    """The cache's size cap: ``--cache-size``, else the suite's ``cache_size``, else the default."""
    from .store import DEFAULT_CACHE_SIZE

    if cache_size is not None:
        return parse_size(cache_size)
    value = getattr(suite, "cache_size", None)
    if value is None:
        return DEFAULT_CACHE_SIZE
    try:
        return parse_size(value)
    except UserError as exc:
        raise UserError(f"{shown(suite.path)}: key 'cache_size': {exc}") from None


def _sweep(suite: Suite, store: Store, options: RunOptions, stats: Progress, packed: SuiteBundle,
           datasets: dict) -> dict:
    """Take every stage the cache holds, compute the rest, store what finished as it arrives.

    A unit whose data set failed to load in `load_datasets` takes that failure
    without being computed: a broken data set is loaded once, not per unit.
    A unit that would compute a stage another unit computes (in another
    experiment with the same data set and adversary) is held back until that
    unit has finished, then looked up again: it computes only what is still
    missing, usually nothing, in a next round of the executor.
    """
    # --pdb debugs in this process: no isolation (a plugin that ends the process ends the sweep)
    isolate = uses_foreign_plugins(suite) and options.isolate
    workers, scheduler, fail_fast = options.workers, options.scheduler, options.fail_fast
    results = {exp.name: {} for exp in suite.experiments}  # experiment name -> coords -> UnitResult
    units = {(job.experiment, job.coords): (exp, job, unit_keys(suite.seed, exp, job))
             for exp, job in plan(suite, options, packed.digest)}  # unit -> (experiment, job, stage keys)
    stats.total, stats.cached, stats.cells, stats.cached_cells = len(units), 0, 0, 0
    waiting, bar, running = list(units), None, None
    partial: dict = {}  # unit -> the records of its parts in so far, when split (`jobs.balanced`)
    shared: set = set()  # split units whose shared stages (corruption, recoveries) a part has given

    def missing(unit, ship=bool(scheduler)):  # local workers read the cache
        """The unit's `Work` still to do; None when the cache holds all of it (its result is then taken)."""
        exp, job, keys = units[unit]
        result, work = lookup(store, exp, keys, ship=ship)
        if bar is None:  # the first look: what the cache held before this run
            cells = len(exp.recoverers) * len(exp.estimators)
            stats.cells += cells
            stats.cached_cells += cells - (0 if work is None else len(work.pairs or work.estimate))
        if work is None:
            results[exp.name][job.coords] = result
            if bar is None:
                stats.cached += 1
            else:  # held back, and computed by the unit it waited for
                stats.computed += 1
                bar.n = stats.cached + stats.computed - 1
                bar.update(1)
        return work

    try:
        while waiting:
            todo, known, owner = [], [], {}  # owner: stage key -> the unit that computes it
            held, waiters = {}, {}  # unit held back -> the units it waits for; and the other way
            for unit in waiting:
                work = missing(unit)
                if work is None:
                    continue
                exp, job, keys = units[unit]
                job = dataclasses.replace(job, work=work)
                load = datasets.get((exp.name, job.dataset))
                failure = load.fails(job.instance, exp.instances[0]) if load is not None else None
                if failure is not None:
                    known.append((job, work_result(dict(failure))))
                    continue
                claims = computes(keys, work)
                if claims & owner.keys():
                    held[unit] = {owner[k] for k in claims if k in owner}
                    for other in held[unit]:
                        waiters.setdefault(other, []).append(unit)
                    continue
                owner.update(dict.fromkeys(claims, unit))
                todo.append(job)
            # Longest first, so that no worker is left alone with a long unit at the end of the
            # sweep; results never depend on the order (see `seeds`). Sorting is stable: units
            # of equal cost keep the plan's order.
            todo.sort(key=lambda job: -_cost(job, datasets))
            todo = balanced(todo, workers, lambda job: _cost(job, datasets),
                            lambda job: _cheap_shared(units[(job.experiment, job.coords)][0], job.work),
                            lambda job, cell: _cell_cost(units[(job.experiment, job.coords)][0], cell))
            left = {(job.experiment, job.coords): job.parts for job in todo}  # unit -> its parts still running
            if bar is None:
                bar = _progress_bar(suite, stats, options.progress)
            running = run_jobs(todo, execute, workers, scheduler, isolate=isolate, bundle=packed,
                               show=None if bar.disable else _inside(bar, stats))
            for job, out in itertools.chain(known, running):
                unit = (job.experiment, job.coords)
                exp, _, keys = units[unit]
                store.stale += out.get("stale", 0)  # damaged since the lookup: its worker computed them anew
                if job.parts > 1:  # the first part in with the shared stages gives them; the others' are dropped
                    if unit in shared:
                        out = cells_only(out, job)
                    elif out.get("corruption") is not None or out.get("recovery"):
                        shared.add(unit)
                fresh, cacheable, matrices = records_of(out, keys)
                left[unit] = left.get(unit, 1) - 1  # a split unit is finished with its last part
                if not left[unit]:
                    # counted before its document is written: a Ctrl-C in between reports one unit
                    # more than is kept (the one cut short), never one less
                    stats.computed += 1
                # Failed or timed-out records are not stored: the next run computes them again,
                # while everything around them is kept.
                store.add(keys.corruption, cacheable, matrices)
                if job.parts > 1:  # a split unit: its result once every part is in
                    fresh = merged(partial.pop(unit, empty_body()), fresh)
                    if left[unit]:
                        partial[unit] = fresh
                        continue
                result = unit_result(exp, keys, merged(store.unit(keys.corruption), fresh))
                results[exp.name][job.coords] = result
                if failed_cells(result):
                    stats.failed += 1
                    if fail_fast:
                        bar.close()
                        running.close()  # cancels the units still queued or in flight
                        raise _first_failure(exp, job, result)
                bar.n = stats.cached + stats.computed - 1  # without the part `_inside` showed
                bar.update(1)
                for unit in waiters.pop((job.experiment, job.coords), ()):
                    held[unit].discard((job.experiment, job.coords))
                    if not held[unit] and missing(unit, ship=False) is None:  # else: the next round's
                        del held[unit]
                bar.set_postfix(cached=stats.cached, failed=stats.failed)
            waiting = list(held)  # what is still missing after the units they waited for: the next round
    except KeyboardInterrupt:
        if running is not None:
            running.close()  # at once: the executor's own cleanup (its workers) must not wait for exit
        if bar is not None:
            bar.close()
        kept = stats.cached + stats.computed - stats.failed
        raise Interrupted(f"interrupted: {kept} of {stats.total} units are finished and kept in "
                          f"{store.cache}; run the same command again to resume") from None
    bar.n = stats.cached + stats.computed
    bar.close()
    return results


def _inside(bar, stats: Progress) -> Callable[[float], None]:
    """Moves ``bar`` inside the units in flight: ``show(part)`` puts it at the finished units
    plus ``part`` (`ticks`), at most five times a second."""
    import time

    last = [0.0]

    def show(part: float) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.2:
            last[0] = now
            bar.n = round(stats.cached + stats.computed + part, 1)
            bar.refresh()
    return show


def _progress_bar(suite: Suite, stats: Progress, progress: Optional[bool]):
    """The sweep's progress bar (``progress`` None: shown on a terminal or in a notebook)."""
    import importlib.util

    notebook = in_notebook()
    if notebook and importlib.util.find_spec("ipywidgets") is not None:  # a widget
        from tqdm.auto import tqdm
    else:  # text (in a notebook without ipywidgets, as tqdm.auto would fall back to, without its warning)
        from tqdm import tqdm

    shown = (sys.stderr.isatty() or notebook) if progress is None else progress
    bar = tqdm(total=stats.total, initial=stats.cached, desc=f"cmbench {suite.name}", unit="unit",
               file=sys.stderr, delay=0.5, dynamic_ncols=True, disable=not shown)
    bar.set_postfix(cached=stats.cached, failed=0)
    return bar


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (as `tqdm.autonotebook` tells, but not a
    Qt console): there a run's progress bar is on by default, and a widget."""
    import os

    if "ipykernel.zmqshell" not in sys.modules:
        return False
    return not any(k == "QT_API" or k.startswith("SPYDER") for k in os.environ)



def _cost(job: Job, datasets: dict) -> float:
    """A rough relative cost of a job: the data set's size times the stages it computes.

    Recoveries dominate and grow with the budget (more entries to fill);
    an estimate or a corruption is a pass or two over the data.
    """
    load = datasets.get((job.experiment, job.dataset))
    shape = (load.info.get("shape") if load is not None else None) or (1, 1)
    work = job.work
    if work is None:
        return float(shape[0] * shape[1])
    stages = len(work.recover) * (0.25 + job.budget) + 0.02 * (len(work.estimate) + len(work.pairs) * 50)
    return float(shape[0] * shape[1]) * (stages + 0.02 * work.corruption)


def _cell_cost(exp: Experiment, cell: tuple) -> float:
    """A cell's relative cost: its estimator's declared `cmbench.Estimator.cost`."""
    return next(e.decl.cost for e in exp.estimators if e.label == cell[1])


def _cheap_shared(exp: Experiment, work) -> bool:
    """Whether a part of a split unit would recompute little: its recoveries are cached or the
    identity (``none``, the sample-level studies'); a real recovery would be run once per part."""
    return all(r.decl.name == "none" for r in exp.recoverers if r.label in work.recover)


def _first_failure(exp: Experiment, job, result: UnitResult) -> StoppedAtFailure:
    for r_label, cells in result["cells"].items():
        for e_label, cell in cells.items():
            if cell["status"] in FAILURES:
                where = dict(experiment=exp.name, dataset=job.dataset, instance=job.instance,
                             adversary=job.adversary, budget=job.budget, recoverer=r_label, estimator=e_label)
                return StoppedAtFailure(where, cell["status"], cell.get("error", ""), cell.get("traceback", ""))
    raise AssertionError("a failed unit without a failed cell")


def assemble(suite: Suite, exp: Experiment, results: dict, datasets: dict) -> "xr.Dataset":
    """The experiment's cube from its units' ``results``; ``datasets`` is what `load_datasets`
    gave: each data set's shape, rank and, where A is known, m_A and the paper's thresholds
    (or the ``error`` of a data set that failed to load)."""
    from .. import cube as cubes

    coords = {
        "dataset": [d.label for d in exp.datasets], "instance": list(exp.instances),
        "adversary": [a.label for a in exp.adversaries], "budget": list(exp.budgets),
        "recoverer": [r.label for r in exp.recoverers], "estimator": [e.label for e in exp.estimators],
    }
    attrs = {
        "suite": suite.name, "suite_file": str(suite.path), "suite_hash": suite.hash,
        "experiment": exp.name, "description": exp.description or suite.description,
        "seed": suite.seed, "metrics": list(exp.metrics),
        "methods": {k: list(v) for k, v in exp.methods.items()},
        "claims": list(exp.claims),
        "theory_figures": list(suite.theory_figures),
        "plugins": [{"plugin": s.plugin, "version": s.version} for s in suite.registry.plugins],
        "components": {kind.plural: {e.label: {"name": e.name, "params": e.params, "plugin": e.source}
                                     for e in getattr(exp, kind.entries)}
                       for kind in CELL_KINDS},
        "metric_components": {m.label: {"name": m.name, "params": m.params, "plugin": m.source}
                              for m in exp.metric_entries},
        "adversaries_info": {a.label: {"name": a.name, "level": a.decl.level, "mode": a.decl.mode,
                                       "adaptive": a.decl.adaptive} for a in exp.adversaries},
        "datasets_info": {d.label: datasets[(exp.name, d.label)].info for d in exp.datasets},
        "d_entry_method": "row-correspondence bound (exact for adversaries that corrupt rows in place)",
        "environment": cubes.environment(),
        "suite_text": suite_text(suite),
        "recovered_tolerance": RECOVERED_TOLERANCE,
    }
    if exp.report_x:  # the report draws error against this parameter (`[experiment.report] x`)
        attrs["report_x"] = exp.report_x
    for key in ("band", "yscale"):  # the curve pages' band and y axis (`[experiment.report]`)
        if getattr(exp, f"report_{key}"):
            attrs[f"report_{key}"] = getattr(exp, f"report_{key}")
    # the inliers' error is a reference only where whole rows are replaced and a metric measures
    # against it; under coordinate-level corruption the untouched rows are a biased subset
    inliers = any("inlier_mean" in (getattr(m.decl, "inputs", None) or ()) for m in exp.metric_entries)
    return cubes.build(coords, results, attrs, metrics=[m.label for m in exp.metric_entries],
                       params=exp.parameters(), inliers=inliers)


def suite_text(suite: Suite) -> str:
    """The suite's full text as run (as loaded; else its file, checked against its hash: empty if it changed)."""
    import hashlib

    try:  # as loaded (a suite given as a dict or TOML text has no file)
        raw = suite.text or Path(suite.path).read_bytes()
    except OSError:
        return ""
    return raw.decode("utf-8", errors="replace") if hashlib.sha256(raw).hexdigest() == suite.hash else ""

