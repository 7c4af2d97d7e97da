"""What travels between the client and a worker: a unit's job and what it gives back.

A unit is (experiment, dataset, instance, adversary, budget). A `Job` names
its suite by the digest of its bundle (`cmbench.bundle`), which an executor
installs in each worker process once, so a worker needs none of the client's
files; its `Work` says which stages to compute (the client leaves out what its
stage cache holds). The worker answers with a `WorkResult`.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, TypedDict

from ..cube import Record
from ..shares import equal_shares
from .guard import Context

if TYPE_CHECKING:
    from ..suite import Experiment


@dataclass(frozen=True)
class Work:
    """The stages of a unit a job computes (the rest is in the client's cache).

    Parameters
    ----------
    corruption : compute the corruption record (distances, status) even when its matrix is given.
    corrupted : the cached corrupted matrix (`matrices.encode` against the clean data), if any.
    recover : labels of the recoverers to run on the corruption.
    recovered : ``(label, encoded matrix, recovery seconds)`` of cached recoveries to estimate on.
    estimate : ``(recoverer label, estimator label)`` cells to compute.
    pairs : for an adaptive adversary, the ``(recoverer, estimator)`` pairs to attack and compute.
    inliers : the cached corruption's mean of the rows it left untouched (`metrics.inlier_mean`),
        for the metrics that ask for it; None when the corruption is computed here, or touched
        every row.

    A cached matrix is its bytes, or a `matrices.MatrixRef` that a local worker
    reads from the cache; one that no longer reads back (evicted or damaged
    meanwhile) is computed anew: the corruption, or the recovery with its cells.
    """

    corruption: bool = True
    corrupted: Optional[bytes] = None
    recover: tuple = ()
    recovered: tuple = ()
    estimate: tuple = ()
    pairs: tuple = ()
    inliers: Optional[tuple] = None


@dataclass(frozen=True)
class Job:
    """Everything a worker needs to compute one unit (``work=None``: all of it)."""

    bundle: str  # digest of the suite's bundle, installed in the worker's process (`cmbench.bundle`)
    experiment: str
    dataset: str
    instance: int
    adversary: str
    budget: float
    timeout: Optional[float] = None
    work: Optional[Work] = None
    post_mortem: bool = False  # ``--pdb``: open the debugger where a plugin raises (in-process runs only)
    running: Optional[str] = None  # the slot naming the plugin call in progress (a watched worker's)
    part: int = 0  # of a unit split across workers (`split`): which part, and how many
    parts: int = 1
    # set in the process computing the job (`ticks`), never shipped
    tick: Optional[Callable[[], None]] = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def coords(self) -> tuple:
        return (self.dataset, self.instance, self.adversary, self.budget)

    @property
    def guard(self) -> Context:
        """The context of the job's guarded plugin calls (`cmbench.runner.guard.run`)."""
        return Context(self.timeout, self.post_mortem, self.running, self.tick)


def split(job: Job, k: int, cost: Optional[Callable[[tuple], float]] = None) -> list[Job]:
    """``job`` as ``k`` jobs that estimate a share of its cells each, for ``k`` workers.

    With ``cost`` (a cell's ``(recoverer, estimator)`` -> its relative cost, the
    estimator's declared `cmbench.Estimator.cost`), the costliest cell goes
    first to the part with the least so far (`cmbench.shares.equal_shares`), so
    that the parts end together; without it (equal costs), part i takes every
    k-th cell from the i-th. Each part keeps its cells in the unit's order.

    Every part computes (or reads from the cache) what its cells share, the
    corrupted and recovered matrices: seeds are per stage (`cmbench.runner.seeds`),
    so each part's are the same. The first part to come back with them gives
    their records; the others' are dropped (`cmbench.runner.stages.cells_only`),
    so that a part whose worker dies fails its own cells only. Results do not
    depend on the split. ``k`` is capped at the number of cells.
    """
    cells = list(job.work.estimate)
    k = max(1, min(k, len(cells)))
    if k == 1:
        return [job]
    costs = [1.0 if cost is None else cost(cell) for cell in cells]
    return [dataclasses.replace(job, work=dataclasses.replace(job.work, estimate=tuple(cells[i] for i in share)),
                                part=i, parts=k)
            for i, share in enumerate(equal_shares(costs, k))]


def balanced(jobs: list[Job], workers: int, cost: Callable[[Job], float],
             splittable: Callable[[Job], bool],
             cell_cost: Optional[Callable[[Job, tuple], float]] = None) -> list[Job]:
    """``jobs`` with each one larger than an even share of the total (``cost``)
    split (`split`) into as many parts as it holds shares, at most ``workers``.

    A lone large unit then keeps every worker busy, and a long unit no longer
    makes the end of a sweep one worker's. Only jobs that ``splittable`` admits
    are split: those whose shared stages are cheap against their cells (a
    part recomputes them). ``cell_cost(job, cell)`` balances the parts' cells
    (`split`). The order is kept, parts of a job side by side.
    """
    if workers < 2 or not jobs:
        return jobs
    costs = [cost(job) for job in jobs]
    share = sum(costs) / workers
    out: list[Job] = []
    for job, c in zip(jobs, costs):
        k = min(workers, math.ceil(c / share - 1e-9)) if share > 0 else 1
        if k > 1 and job.work is not None and not job.work.pairs and splittable(job):
            out += split(job, k, None if cell_cost is None else functools.partial(cell_cost, job))
        else:
            out.append(job)
    return out


class Pair(TypedDict):
    """An adaptive adversary's attack on one (recoverer, estimator) pair: its three stages.

    ``corruption`` is None when the pair was not applicable (``recovery`` then
    says why); ``recovery`` is None when the corruption was not ok.
    """

    corruption: Optional[Record]
    recovery: Optional[Record]
    cell: Record


class WorkResult(TypedDict):
    """What a job computed: the records of the stages its `Work` asked for, and their matrices.

    ``corruption`` (None when not computed; a data set that did not load is a
    corruption record with its status), ``recovery[rec]``, ``cells[rec][est]``,
    ``pairs[rec][est]`` (an adaptive adversary's), ``matrices`` (the
    corrupted matrix under ``"corruption"``, a recovered one under its
    recoverer, each encoded by `matrices.encode`, or a `matrices.SameMatrix` for a
    recovery equal to its corruption) and ``stale`` (cached
    matrices given by reference that no longer read back, computed anew).
    `cmbench.runner.stages` turns it into the unit's `cmbench.cube.UnitResult`.
    """

    corruption: Optional[Record]
    recovery: dict[str, Record]
    cells: dict[str, dict[str, Record]]
    pairs: dict[str, dict[str, Pair]]
    matrices: dict[str, Any]  # bytes, or a `matrices.SameMatrix`
    stale: int


def work_result(corruption: Optional[Record] = None) -> WorkResult:
    """A job's result with nothing computed yet (but ``corruption``)."""
    return {"corruption": corruption, "recovery": {}, "cells": {}, "pairs": {}, "matrices": {}, "stale": 0}


def full_work(exp: "Experiment", adaptive: bool) -> Work:
    """Every stage of a unit: what a job computes when the cache holds none of it."""
    pairs = tuple((r.label, e.label) for r in exp.recoverers for e in exp.estimators)
    if adaptive:
        return Work(pairs=pairs)
    return Work(recover=tuple(r.label for r in exp.recoverers), estimate=pairs)
