"""The execution of one unit: a corruption and what is computed on it.

A unit loads its data (memoized per process, `memo`), corrupts once,
recovers once per recoverer and estimates once per estimator on each
recovery, so nothing is recomputed per estimator. Its job's `Work` (`jobs`)
says which of these stages to compute; a cached corrupted or recovered matrix
it needs comes with the job, as bytes (a Dask worker) or as a
`matrices.MatrixRef` that a local worker reads from the client's cache.
Every plugin call goes through `guard`, every input and output through the
contract checks of `checks`; the metrics are in `metrics`.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any, Optional

import numpy as np

from ..components import Data
from ..cube import FAILED, FAILURES, NOT_APPLICABLE, OK, RECOVERY_VARS, UNDEFINED, Record, UnitResult, record, verdict
from ..suite import Entry, Experiment, bind
from .contracts import _before, check_corruption, check_estimate, check_recovery, guarded, readonly, untouched
from .guard import Outcome, call
from .jobs import Job, Pair, Work, WorkResult, full_work, work_result
from .matrices import Damaged, SameMatrix, decode, encode, rows_of, sealed, stored
from .memo import entry as _entry, experiment_for, loaded
from .metrics import RECOVERED_TOLERANCE, MetricFailed, corruption_measures, errors, recovery_fractions
from .seeds import rng_for

__all__ = ["execute", "failed_work", "adaptive_result", "blame", "outcome_record", "Job", "Work",
           "RECOVERED_TOLERANCE"]


def outcome_record(outcome: Outcome, **values: Any) -> Record:
    """The record of a plugin call's outcome, with its numbers (and its traceback, the cube keeps it)."""
    return record(outcome.status, outcome.error, outcome.traceback, **values)


def blame(outcome: Outcome, entry: Entry, kind: str) -> Outcome:
    """Prefix a failure or timeout with the component and the plugin that declared it."""
    if outcome.status in FAILURES:
        outcome.error = f"{kind} {entry.label!r} ({entry.source}): {outcome.error}"
    return outcome


def execute(job: Job) -> WorkResult:
    """Compute a job's stages; always returns a picklable result, failures recorded inside."""
    with _one_thread():  # bit-identical results whatever the executor
        return _execute(job)


_CONTROLLER: list = [None, -1]  # threadpoolctl's controller, and len(sys.modules) when it was made


def _one_thread():
    """``threadpool_limits(limits=1)`` over the native thread pools loaded in this process.

    Finding the loaded libraries walks every shared object of the process;
    a new thread pool comes with an import, so the walk is redone only when
    a module was imported since the last one, not for every unit.
    """
    from threadpoolctl import ThreadpoolController

    if _CONTROLLER[0] is None or _CONTROLLER[1] != len(sys.modules):
        _CONTROLLER[:] = [ThreadpoolController(), len(sys.modules)]
    return _CONTROLLER[0].limit(limits=1)


def _execute(job: Job) -> WorkResult:
    """The stages ``job.work`` asks for, as records (see `WorkResult`).

    A record that is not ok holds its status and error; the cells of a
    recovery that is not ok are left out (they take the recovery's status).
    """
    suite, exp = experiment_for(job)
    adv = _entry(exp.adversaries, job.adversary)
    work = job.work or full_work(exp, adv.decl.adaptive)
    result = work_result()
    load = blame(loaded(job), _entry(exp.datasets, job.dataset), "data set")
    if load.status != OK:
        result["corruption"] = outcome_record(load)
        return result
    data = load.value
    if adv.decl.adaptive:
        return _execute_adaptive(job, suite.seed, exp, adv, data, result, work)
    recover, recovered = list(work.recover), []
    for label, blob, seconds in work.recovered:
        blob = stored(blob)
        if blob is None:  # gone from the cache since the client looked: recover again
            recover.append(label)
            result["stale"] += 1
        else:
            recovered.append((label, blob, seconds))
    # rows: a deletion's kept clean rows (`checks.kept_rows`), None otherwise; changed: a fresh
    # corruption's changed entries (a cached one's are computed by the recovery measures if needed)
    Xc = rows = changed = None
    Xc_blob = None  # the corruption as stored (cached or encoded here), which Xc decodes
    inliers = work.inliers  # the cached corruption's; a fresh one's below
    if work.corrupted is not None and not work.corruption:
        corrupted = stored(work.corrupted)
        if corrupted is None:  # gone from the cache since the client looked: corrupt anew
            result["stale"] += 1
        else:
            try:
                Xc, rows, Xc_blob = decode(corrupted, data.X), rows_of(corrupted), corrupted
            except Damaged:
                Xc = None  # the client checked its digest: a decoding bug at worst; corrupt anew
    if Xc is None and (work.corruption or recover):
        corrupted = _corrupt(job, suite.seed, adv, data, (), {})
        result["corruption"] = outcome_record(corrupted, seconds=corrupted.seconds)
        if corrupted.status != OK:
            return result
        Xc, rows, changed = corrupted.value
        corrupted.value = None  # ``changed`` (1/8 of the matrix) is let go after the last recovery
        measures = corruption_measures(data.X, Xc, data.mean, rows, changed)
        result["corruption"].update(measures)
        inliers = measures["inlier_mean"]
        Xc_blob = result["matrices"]["corruption"] = encode(Xc, data.X, rows)
    inliers = None if inliers is None else np.asarray(inliers, dtype=float)
    wanted: dict = {}
    for r_label, e_label in work.estimate:
        wanted.setdefault(r_label, []).append(e_label)
    # each recovery, computed here (no blob) or cached, and the estimates on it, one matrix at a time
    for label, blob, seconds in [(label, None, None) for label in recover] + recovered:
        rec = _entry(exp.recoverers, label)
        if blob is None:
            recovery, Xr = _recover(job, suite.seed, adv, rec, data, Xc, rows, changed)
            if label == recover[-1]:
                changed = None
            result["recovery"][label] = recovery
            if Xr is None:
                continue
            # a recovery equal to its corruption (`none`) is stored once, as the corruption
            result["matrices"][label] = SameMatrix.of(Xc_blob) if Xr is Xc else encode(Xr, data.X, rows)
        else:
            recovery = record(OK, seconds=seconds)
            try:
                Xr = Xc if Xc_blob is not None and blob == Xc_blob else decode(blob, data.X)
            except Damaged as exc:
                result["cells"][label] = {e: record(FAILED, f"cached recovery {label!r} unreadable: {exc}")
                                          for e in wanted.get(label, ())}
                continue
        result["cells"][label] = {e: _estimate(job, suite.seed, rec, _entry(exp.estimators, e), data,
                                               recovery, Xr, inliers) for e in wanted.get(label, ())}
    return result


def _corrupt(job: Job, seed: int, adv: Entry, data: Data, stream: tuple, extra: dict) -> Outcome:
    """Corrupt once; an ok outcome's value is ``(Xc, rows, changed)``, rows a deletion's kept
    clean rows (`checks.kept_rows`) or None, changed the entries it changed (None for a deletion)."""
    rng = rng_for(seed, "corrupt", *job.coords, *stream)
    truth = {"true_mean": data.mean, "true_cov": data.cov} if adv.decl.needs_truth else {}
    shared = (data.X, data.structure, *truth.values())
    _before(*shared)  # untouched() compares them after the call
    out = call(adv.decl.fn, job.guard, readonly(data.X), job.budget, rng=rng,
               structure=data.structure, **bind(adv.params, job.budget), **truth, **extra)
    out = guarded(check_corruption, untouched(out, *shared), data.X, adv, job.budget)
    if out.status == OK:
        Xc, rows, changed = out.value
        out.value = (sealed(Xc), rows, changed)
    return blame(out, adv, "adversary")


def _inapplicable(job: Job, adv: Entry, rec: Entry, data: Data) -> Optional[Outcome]:
    """Why ``rec`` cannot meet this corruption or data set, if it cannot."""
    if adv.decl.mode not in rec.decl.modes:
        return Outcome(NOT_APPLICABLE, f"recoverer {rec.label!r} handles {'/'.join(rec.decl.modes)} "
                                       f"corruption, not {adv.decl.mode}")
    if rec.decl.needs_structure and data.structure is None:
        return Outcome(NOT_APPLICABLE, f"recoverer {rec.label!r} needs the structure A, which data set "
                                       f"{job.dataset!r} does not know")
    return None


def _recover(job: Job, seed: int, adv: Entry, rec: Entry, data: Data, Xc: np.ndarray,
             rows: Optional[np.ndarray] = None, changed: Optional[np.ndarray] = None):
    """Recover once; returns the recovery record and the recovered array (None unless ok).
    ``rows``: a deletion's kept clean rows, against which the recovery is measured;
    ``changed``: the corruption's changed entries, if known (`metrics.recovery_fractions`)."""
    out = _inapplicable(job, adv, rec, data)
    if out is None:
        rng = rng_for(seed, "recover", *job.coords, rec.label)
        params = bind(rec.params, job.budget)
        rank = params.pop("rank", data.rank)  # a suite may override the data set's rank hint
        _before(Xc, data.structure)
        out = call(rec.decl.fn, job.guard, Xc, rng=rng, structure=data.structure, rank=rank, **params)
        out = guarded(check_recovery, untouched(out, Xc, data.structure), Xc)
    blame(out, rec, "recoverer")
    recovery = outcome_record(out, seconds=out.seconds)
    if out.status != OK:
        return recovery, None
    Xr, info = out.value
    out.value = None
    same = Xr.shape == Xc.shape and Xr.dtype == Xc.dtype == np.float64
    if same and np.array_equal(Xr.view(np.uint64), Xc.view(np.uint64)):
        Xr = Xc  # nothing recovered (`none`): share the corruption rather than hold it twice
    else:
        Xr = sealed(Xr)
    clean = data.X if rows is None else data.X[rows]
    recovery.update(recovery_fractions(clean, Xc, Xr, adv.decl.mode, changed=changed), info=info)
    return recovery, Xr


def _estimate(job: Job, seed: int, rec: Entry, est: Entry, data: Data, recovery: Record,
              Xr: Optional[np.ndarray], inliers: Optional[np.ndarray] = None) -> Record:
    """One estimator on one recovery, and the metrics of its estimate (``inliers``: the
    corruption's `metrics.inlier_mean`, for the metrics that ask for it)."""
    if Xr is None:  # the recovery did not succeed: its status is the cell's
        return verdict(recovery)
    rng = rng_for(seed, "estimate", *job.coords, rec.label, est.label)
    _before(Xr)
    res = call(est.decl.fn, job.guard, Xr, rng=rng, **bind(est.params, job.budget))
    res = blame(guarded(check_estimate, untouched(res, Xr), data.X.shape[1]), est, "estimator")
    cell = outcome_record(res, seconds=recovery["seconds"] + res.seconds)
    if res.status == OK:
        try:
            cell.update(errors(res.value, data, experiment_for(job)[1].metric_entries, inliers, job.budget,
                               job.post_mortem))
        except MetricFailed as exc:
            cell.update(status=FAILED, error=str(exc), traceback=exc.traceback)
    return cell


class Pipeline:
    """What an adaptive adversary attacks: recover + estimate, as ``error = pipeline(X_corrupted)``.

    Returns the l2 error of the pipeline's estimate against the true mean; ``inf``
    when the corruption makes the method undefined (the attack broke it). Each
    call is counted, and the count goes into the cube's ``evaluations``.
    """

    def __init__(self, job: Job, seed: int, adv: Entry, rec: Entry, est: Entry, data: Data) -> None:
        # No timeout of its own: the adversary's whole search runs under --timeout.
        job = dataclasses.replace(job, timeout=None)
        self.job, self.seed, self.adv, self.rec, self.est, self.data = job, seed, adv, rec, est, data
        self.calls = 0

    def __call__(self, Xc) -> float:
        self.calls += 1
        Xc = readonly(np.asarray(Xc, dtype=float))
        recovery, Xr = _recover(self.job, self.seed, self.adv, self.rec, self.data, Xc)
        cell = _estimate(self.job, self.seed, self.rec, self.est, self.data, recovery, Xr)
        if cell["status"] == OK:
            return cell["l2"]
        if cell["status"] == UNDEFINED:
            return float("inf")
        raise RuntimeError(f"pipeline {self.rec.label}+{self.est.label} {cell['status']}: {cell['error']}")


def _execute_adaptive(job: Job, seed: int, exp: Experiment, adv: Entry, data: Data, result: WorkResult,
                      work: Optional[Work] = None) -> WorkResult:
    """An adaptive corruption depends on the pipeline: one per (recoverer, estimator) pair.

    Each pair's three records (corruption, recovery, cell) go to
    ``result["pairs"][rec][est]``; `adaptive_result` combines them into the unit.
    """
    work = work or full_work(exp, True)
    for r_label, e_label in work.pairs:
        rec, est = _entry(exp.recoverers, r_label), _entry(exp.estimators, e_label)
        skip = _inapplicable(job, adv, rec, data)
        if skip is not None:
            pair = Pair(corruption=None, recovery=record(skip.status, skip.error),
                        cell=record(skip.status, skip.error))
        else:
            pipeline = Pipeline(job, seed, adv, rec, est, data)
            corrupted = _corrupt(job, seed, adv, data, (rec.label, est.label), {"pipeline": pipeline})
            corruption = outcome_record(corrupted, seconds=corrupted.seconds)
            changed = None
            if corrupted.status == OK:  # an adaptive adversary does not delete
                corrupted.value, _, changed = corrupted.value
            if corrupted.status != OK:
                pair = Pair(corruption=corruption, recovery=None,
                            cell=outcome_record(corrupted, evaluations=pipeline.calls))
            else:
                corruption.update(corruption_measures(data.X, corrupted.value, data.mean, changed=changed))
                inliers = corruption["inlier_mean"]
                recovery, Xr = _recover(job, seed, adv, rec, data, corrupted.value, changed=changed)
                pair = Pair(corruption=corruption, recovery=recovery,
                            cell=dict(_estimate(job, seed, rec, est, data, recovery, Xr,
                                                None if inliers is None else np.asarray(inliers)),
                                      evaluations=pipeline.calls))
        result["pairs"].setdefault(r_label, {})[e_label] = pair
    return result


def adaptive_result(exp: Experiment, pairs: dict) -> UnitResult:
    """A unit of an adaptive adversary from its pairs' records ``pairs[rec][est]``.

    The corruption record holds the largest d_ENTRY / d_TV over the pairs; a
    recoverer's recovery measures (fractions, RMSE) are averaged over its estimators.
    """
    result: UnitResult = {"corruption": {}, "recovery": {}, "cells": {}}
    distances, seconds = [], 0.0
    for rec in exp.recoverers:
        cells, recoveries, skipped = {}, [], None
        for est in exp.estimators:
            pair = pairs[rec.label][est.label]
            cells[est.label] = dict(pair["cell"])
            if pair["corruption"] is None:
                skipped = pair["recovery"]
                continue
            seconds += pair["corruption"].get("seconds", 0.0)
            if pair["corruption"]["status"] != OK:
                continue
            distances.append(pair["corruption"])
            recoveries.append(pair["recovery"])
        result["cells"][rec.label] = cells
        if skipped is not None:
            result["recovery"][rec.label] = record(skipped["status"], skipped["error"])
            continue
        ok = [r for r in recoveries if r["status"] == OK]
        result["recovery"][rec.label] = record(recoveries[0]["status"] if recoveries else FAILED, "",
                                               **{v: float(np.mean([r[v] for r in ok]))
                                                  for v in RECOVERY_VARS if ok})
    result["corruption"] = record(OK, seconds=seconds)
    for key in ("d_entry1", "d_entry_inf", "d_tv"):
        if distances:
            result["corruption"][key] = max(d[key] for d in distances)
    return result


def failed_work(job: Job, error: str) -> WorkResult:
    """The result of a job whose worker died: every stage it was computing failed."""
    _, exp = experiment_for(job)
    adv = _entry(exp.adversaries, job.adversary)
    work = job.work or full_work(exp, adv.decl.adaptive)
    bad = record(FAILED, error)
    result = work_result()
    if work.pairs:
        for r, e in work.pairs:
            result["pairs"].setdefault(r, {})[e] = Pair(corruption=dict(bad), recovery=None, cell=dict(bad))
        return result
    if job.parts > 1:  # one part of a split unit: the others may have done the shared stages
        for r, e in work.estimate:
            result["cells"].setdefault(r, {})[e] = dict(bad)
        return result
    if work.corruption:
        result["corruption"] = dict(bad)
        return result
    for label in work.recover:
        result["recovery"][label] = dict(bad)
    for r, e in work.estimate:
        if r not in work.recover:
            result["cells"].setdefault(r, {})[e] = dict(bad)
    return result
