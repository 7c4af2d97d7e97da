"""Stage keys, and between the cache and the workers: what a unit still needs, and its result.

A corruption is keyed by what determines it: the suite seed, the data set's
spec (label, name, parameters, plugin digest) and instance, the adversary's
spec and the budget. A recovery's key is its corruption's key plus the
recoverer's spec; an estimate's is its recovery's key plus the estimator's spec
and the experiment's metrics. An adaptive adversary attacks one pipeline, so
its stages are keyed per (recoverer, estimator) pair. Labels are part of a
spec because seeds derive from them; the position of an entry in a list is
not, so reordering a suite's lists reuses everything.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Optional

from .matrices import SameMatrix, matrix_digest
from .store import CACHED_STATUSES, FORMAT, Store, canonical, empty_body
from ..cube import FAILED, OK, UnitResult, record, uniform_unit, verdict
from .jobs import Job, Pair, Work
from .memo import entry as _entry
from .units import adaptive_result

_SPECS: dict = {}


def _spec(entry) -> str:
    """An entry's spec as canonical JSON (memoized: the same entries recur in every unit)."""
    key = id(entry)
    cached = _SPECS.get(key)
    if cached is None or cached[0] is not entry:
        cached = _SPECS[key] = (entry, canonical(entry.spec()))
    return cached[1]


def _h(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


@dataclass
class UnitKeys:
    corruption: str
    recovery: dict  # recoverer label -> key
    cell: dict  # (recoverer label, estimator label) -> key
    pair: dict  # (recoverer label, estimator label) -> key, for adaptive adversaries
    adaptive: bool


def unit_keys(seed: int, exp, job: Job) -> UnitKeys:
    ds, adv = _entry(exp.datasets, job.dataset), _entry(exp.adversaries, job.adversary)
    kc = _h(f"corruption/{FORMAT}", str(seed), _spec(ds), canonical(job.instance), _spec(adv),
            canonical(job.budget))
    # what the metrics are (name, params, plugin), not only their labels: editing one recomputes
    metrics = canonical(sorted(canonical(m.spec()) for m in exp.metric_entries))
    recovery = {r.label: _h("recovery", kc, _spec(r)) for r in exp.recoverers}
    adaptive = bool(adv.decl.adaptive)
    cell, pair = {}, {}
    for r in exp.recoverers:
        for e in exp.estimators:
            if adaptive:
                pair[(r.label, e.label)] = _h("pair", kc, _spec(r), _spec(e), metrics)
            else:
                cell[(r.label, e.label)] = _h("estimate", recovery[r.label], _spec(e), metrics)
    return UnitKeys(kc, recovery, cell, pair, adaptive)


def info_key(seed: int, entry, instance: int) -> str:
    return _h(f"info/{FORMAT}", str(seed), _spec(entry), canonical(instance))


def lookup(store: Store, exp, keys: UnitKeys, ship: bool = True) -> tuple[Optional[dict], Optional[Work]]:
    """The unit's result when the cache holds all of it, else the `Work` still to do.

    ``ship``: the work carries cached matrices as bytes (for workers on other
    machines); else as `matrices.MatrixRef`, which a local worker reads itself.
    """
    fetch = store.matrix if ship else store.matrix_ref
    body = store.unit(keys.corruption)
    if keys.adaptive:
        missing = tuple(p for p, k in keys.pair.items() if k not in body["pairs"])
        return (unit_result(exp, keys, body), None) if not missing else (None, Work(pairs=missing))
    C = stored_C = body["corruption"]
    if C is not None and C["status"] != OK:
        return unit_result(exp, keys, body), None
    if C is not None and "inlier_l2" not in C:
        C = None  # written before corruptions kept their inliers' mean: corrupted again (cached recoveries stay)
    recover, recovered, estimate = [], [], []
    for rec in exp.recoverers:
        kr = keys.recovery[rec.label]
        R = body["recoveries"].get(kr)
        missing = [(rec.label, e.label) for e in exp.estimators if keys.cell[(rec.label, e.label)]
                   not in body["cells"]]
        if R is None:
            recover.append(rec.label)
            estimate += missing
        elif R["status"] == OK and missing:
            # a recovery equal to its corruption is stored once, as the corruption (`matrices.SameMatrix`)
            same = stored_C is not None and R.get("matrix") == stored_C.get("matrix")
            blob = fetch(keys.corruption if same else kr, R["matrix"]) if "matrix" in R else None
            if blob is None:  # evicted or damaged: recover again
                recover.append(rec.label)
            else:
                recovered.append((rec.label, blob, R.get("seconds", math.nan)))
            estimate += missing
    if C is not None and not recover and not estimate:
        return unit_result(exp, keys, body), None
    corrupted = None
    if recover and C is not None and "matrix" in C:
        corrupted = fetch(keys.corruption, C["matrix"])
    inliers = C.get("inlier_mean") if C is not None else None
    return None, Work(corruption=C is None or (bool(recover) and corrupted is None), corrupted=corrupted,
                      recover=tuple(recover), recovered=tuple(recovered), estimate=tuple(estimate),
                      inliers=tuple(inliers) if inliers is not None else None)


def computes(keys: UnitKeys, work: Work) -> set:
    """The keys of the stages a unit's ``work`` computes."""
    if work.pairs:
        return {keys.pair[p] for p in work.pairs}
    stages = {keys.recovery[r] for r in work.recover} | {keys.cell[c] for c in work.estimate}
    return stages | {keys.corruption} if work.corruption else stages


def records_of(out: dict, keys: UnitKeys) -> tuple[dict, dict, dict]:
    """A worker's result as a body (every record) and the cacheable part of it, with its matrices."""
    body, cacheable, matrices = empty_body(), empty_body(), {}
    blobs = out.get("matrices", {})
    # (part, key, record, the name of its matrix) of the corruption, the recoveries and the cells
    C = out.get("corruption")
    stages = [(None, keys.corruption, C, "corruption")] if C is not None else []
    stages += [("recoveries", keys.recovery[label], R, label) for label, R in out.get("recovery", {}).items()]
    stages += [("cells", keys.cell[(r_label, e_label)], cell, None)
               for r_label, cells in out.get("cells", {}).items() for e_label, cell in cells.items()]
    for part, key, rec, blob in stages:
        rec = dict(rec)
        if rec["status"] == OK and blob in blobs:  # ok is cacheable: its matrix is stored with it
            if isinstance(blobs[blob], SameMatrix):  # the corruption's matrix, stored under its key
                rec["matrix"] = {"xxh3": blobs[blob].xxh3, "bytes": blobs[blob].size}
            else:
                rec["matrix"] = {"xxh3": matrix_digest(blobs[blob]), "bytes": len(blobs[blob])}
                matrices[key] = blobs[blob]
        for target in (body, cacheable) if rec["status"] in CACHED_STATUSES else (body,):
            if part is None:
                target["corruption"] = rec
            else:
                target[part][key] = rec
    for r_label, row in out.get("pairs", {}).items():
        for e_label, pair in row.items():
            kp = keys.pair[(r_label, e_label)]
            pair = dict(pair, status=pair["cell"]["status"])
            body["pairs"][kp] = pair
            if all(part is None or part["status"] in CACHED_STATUSES
                   for part in (pair["corruption"], pair["recovery"], pair["cell"])):
                cacheable["pairs"][kp] = pair
    return body, cacheable, matrices


def cells_only(out: dict, job: Job) -> dict:
    """A part's result (`cmbench.runner.jobs.split`) with only its cells, when another part has
    given the stages they share (computed again here from the same seeds): they are stored once.

    A shared stage that failed in this part alone (a timeout) is passed on to
    this part's cells, which would else be missing.
    """
    cells = {r: dict(row) for r, row in out.get("cells", {}).items()}
    C = out.get("corruption")
    for r_label, e_label in job.work.estimate:
        R = out.get("recovery", {}).get(r_label)
        failed = next((s for s in (C, R) if s is not None and s["status"] != OK), None)
        if failed is not None and e_label not in cells.get(r_label, {}):
            cells.setdefault(r_label, {})[e_label] = verdict(failed)
    return {"corruption": None, "recovery": {}, "cells": cells, "pairs": {}, "matrices": {},
            "stale": out.get("stale", 0)}


def merged(stored: dict, fresh: dict) -> dict:
    """``fresh`` records over ``stored`` ones, without changing either."""
    out = {part: dict(stored[part], **fresh[part]) for part in ("recoveries", "cells", "pairs")}
    out["corruption"] = fresh["corruption"] if fresh["corruption"] is not None else stored["corruption"]
    return out


def _public(record: dict) -> dict:
    """A stored record as a unit's result holds it: without its matrix's place and the inliers' mean."""
    return {k: v for k, v in record.items() if k not in ("matrix", "inlier_mean")}


def unit_result(exp, keys: UnitKeys, body: dict) -> UnitResult:
    """The unit as the cube wants it: ``{"corruption", "recovery": {rec}, "cells": {rec: {est}}}``.

    A corruption record that is not ok (the data set did not load) is every cell's status.
    """
    C = body["corruption"]
    if C is not None and C["status"] != OK:
        return uniform_unit([r.label for r in exp.recoverers], [e.label for e in exp.estimators], _public(C))
    result: UnitResult = {"corruption": _public(C) if C is not None else {}, "recovery": {}, "cells": {}}
    if keys.adaptive:
        pairs = {}
        for (r, e), kp in keys.pair.items():
            pairs.setdefault(r, {})[e] = body["pairs"].get(kp) or _lost()
        return adaptive_result(exp, pairs)
    for rec in exp.recoverers:
        R = body["recoveries"].get(keys.recovery[rec.label])
        if R is None:
            R = record(FAILED, "internal error: recovery record missing")
        result["recovery"][rec.label] = _public(R)
        cells = {}
        for est in exp.estimators:
            if R["status"] != OK:
                cells[est.label] = verdict(R)
            else:
                cells[est.label] = body["cells"].get(keys.cell[(rec.label, est.label)]) or _lost()["cell"]
        result["cells"][rec.label] = cells
    return result


def _lost() -> Pair:
    bad = record(FAILED, "internal error: record missing")
    return Pair(corruption=dict(bad), recovery=None, cell=dict(bad))
