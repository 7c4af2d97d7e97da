"""Each data set loaded once before the sweep, under the containment every plugin call has.

The cube describes each data set (shape, rank, m_A, the paper's thresholds),
which takes one load of its first instance. That load is also the check of
the data: a data error (`cmbench.data.DataError` or any `UserError`: a bad
file, a file above the size limit) stops the run with one line before any
unit runs, and a data set that fails to load otherwise (a plugin's bug, a
timeout, a loader that ends its process) fails the cells of that instance
without being loaded again for each unit, while the other data sets run.

A data set from a plugin outside cmbench is loaded in a child process (as its
units are, see `executors`), so that a loader that calls ``os._exit`` or
crashes cannot end cmbench; cmbench's own are loaded here, where the units of
a serial sweep then find them in the per-process memo.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import UserError
from ..options import RunOptions
from ..suite import shown
from .stages import info_key
from ..cube import FAILED, OK, Record, record
from .memo import dataset_of
from .units import Job, blame, loaded, outcome_record


@dataclass(frozen=True)
class Loaded:
    """What loading a data set's first instance gave: its description, or why there is none.

    ``info`` is the cube's ``datasets_info`` entry; ``failure`` the record of
    a load that did not succeed (status, error naming the data set and its
    plugin, traceback), which the cells of that instance take; ``crashed``
    says the loader ended its process, so no instance is loaded again;
    ``user_error`` a data error's message.
    """

    info: dict
    failure: Optional[Record] = None
    crashed: bool = False
    user_error: str = ""

    def fails(self, instance: int, first: int) -> Optional[Record]:
        """The failure a unit of ``instance`` takes without loading, if any (``first``: the probed one)."""
        if self.failure is not None and (self.crashed or instance == first):
            return self.failure
        return None


def _empty(name: str) -> dict:
    return {"name": name, "shape": None, "rank": None, "structure_known": False, "m_a": None, "thresholds": {}}


def describe(name: str, data) -> dict:
    """Shape, rank and, where A is known, m_A and the paper's thresholds (the cube's ``datasets_info``)."""
    from .. import theory

    info = _empty(name)
    info.update(shape=list(data.X.shape), rank=data.rank, structure_known=data.structure is not None)
    if data.structure is not None:
        info["r"] = int(data.structure.shape[1])
        try:
            info["m_a"] = int(theory.m_a(data.structure))
            info["thresholds"] = {k: {"value": float(v), "label": theory.THRESHOLD_LABELS.get(k, k)}
                                  for k, v in theory.thresholds(data.structure).items()}
            # Lemma lm:recovery_rho is proven for m_A = n - r + 1; where A has a
            # smaller m_A, the bound at the lemma's m_A is drawn beside it.
            general = theory.general_position_m_a(data.structure)
            info["m_a_general"] = general
            if general != info["m_a"]:
                info["thresholds"]["rho_learn_general"] = {
                    "value": float(theory.rho_learn(data.X.shape[1], general)),
                    "label": theory.general_position_label(general, info["m_a"]),
                    "levels": ["value"], "modes": ["missing"]}
        except (ValueError, np.linalg.LinAlgError) as exc:  # the report then draws no thresholds
            info["error"] = f"m_A not computed: {exc}"
    return info


def declared(entry) -> Optional[dict]:
    """The description of a generated data set whose ``shape`` is a callable of its parameters
    (`cmbench.Dataset`), from its declaration alone: its size and rank hint, no structure.

    Such a data set is not loaded before the sweep (at d = 400, N = 400,000 a load is
    1.28 GB in this process besides the workers' own); a loader that fails then fails
    the units of that data set, each naming it.
    """
    decl = entry.decl
    if decl.files or not callable(decl.shape):
        return None
    shape = decl.shape_for(entry.params)
    if shape is None:
        return None
    rank = entry.params.get("rank", decl.rank)
    return dict(_empty(entry.name), shape=list(shape), rank=rank if isinstance(rank, int) else None)


def probe(job: Job) -> Loaded:
    """Load the job's data set and describe it; runs here or in a worker process, never raises."""
    entry = dataset_of(job)
    out = loaded(job)
    if out.user_error:
        return Loaded(_empty(entry.name), user_error=out.user_error)
    if out.status != OK:
        blame(out, entry, "data set")
        failure = outcome_record(out)
        return Loaded(dict(_empty(entry.name), error=out.error), failure=failure)
    return Loaded(describe(entry.name, out.value))


def crashed(job: Job, running: str = "", how: str = "") -> Loaded:
    """The result of a probe whose worker process died (``how``: its exit code or signal): the
    loader ended the interpreter."""
    entry = dataset_of(job)
    cause = f"{how}: " if how else ""
    error = (f"data set {entry.label!r} ({entry.source}): the worker process died while loading it "
             f"({cause}the plugin ended the interpreter: os._exit, a segfault, or out of memory)")
    return Loaded(dict(_empty(entry.name), error=error), failure=record(FAILED, error),
                  crashed=True)


def is_foreign(suite, kind: str, entry) -> bool:
    """Whether ``entry`` comes from a plugin that is not cmbench's own."""
    from ..plugins import BUILTIN_MODULES

    return suite.registry.source(kind, entry.name).plugin not in {f"cmbench.{m}" for m in BUILTIN_MODULES}


def load_datasets(suite, options: Optional[RunOptions] = None, store=None, bundle=None) -> dict:
    """Load every data set of the suite's experiments once (unless ``store`` describes it already).

    Parameters
    ----------
    suite : the `cmbench.suite.Suite`.
    options : the run's `cmbench.options.RunOptions` (default: its defaults): ``timeout`` for
        each load, ``workers`` child processes loading third-party data sets at once, and
        ``isolate`` (False under ``--pdb``: they load here).
    store : the stage cache (`cmbench.runner.store.Store`), if any: descriptions it holds are
        not loaded again, new ones are added to it.
    bundle : the suite's `cmbench.bundle.SuiteBundle`, installed in those processes (default
        the suite packed and registered here, `cmbench.bundle.pack`).

    Returns
    -------
    ``{(experiment name, data set label): Loaded}``.

    Raises
    ------
    UserError
        A data set's data error, on one line naming the suite file, the
        experiment and the data set (and its plugin when it is not cmbench's).
    """
    from ..bundle import pack
    from .executors import run_jobs

    options = options if options is not None else RunOptions()
    bundle = bundle if bundle is not None else pack(suite, None)
    found: dict = {}
    wanted: dict = {}  # info key -> (experiment, entry, job): one load per distinct data set
    where: dict = {}  # (experiment name, label) -> info key
    for exp in suite.experiments:
        for entry in exp.datasets:
            key = info_key(suite.seed, entry, exp.instances[0])
            where[(exp.name, entry.label)] = key
            if key in found or key in wanted:
                continue
            info = (store.info(key) if store is not None else None) or declared(entry)
            if info is not None:
                found[key] = Loaded(info)
                continue
            wanted[key] = (exp, entry, Job(bundle.digest, exp.name, entry.label, exp.instances[0], "", 0.0,
                                           options.timeout, post_mortem=options.post_mortem))
    outside = [k for k, (_, entry, _) in wanted.items()
               if options.isolate and is_foreign(suite, "datasets", entry)]
    by_job = {id(wanted[k][2]): k for k in outside}
    for job, result in run_jobs([wanted[k][2] for k in outside], probe, max(1, min(options.workers, len(outside))),
                                isolate=True, bundle=bundle, died=crashed):
        found[by_job[id(job)]] = result
    for key, (_, _, job) in wanted.items():
        if key not in found:
            found[key] = probe(job)
    for key, (exp, entry, _) in wanted.items():  # the first data error, in the suite's order
        if found[key].user_error:
            plugin = f" ({entry.source})" if is_foreign(suite, "datasets", entry) else ""
            raise UserError(f"{shown(suite.path)}: experiment {exp.name!r}, data set {entry.label!r}{plugin}: "
                            f"{found[key].user_error}")
    for key in wanted:
        if store is not None and found[key].failure is None and "error" not in found[key].info:
            store.put_info(key, found[key].info)
    return {pair: found[key] for pair, key in where.items()}
