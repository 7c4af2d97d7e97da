"""A large unit split across workers: both cores on it, the same cubes, no cell lost.

A sample-level unit (recoverer ``none``) whose cost is more than an even share of
the sweep is run as one part per worker, each estimating a share of its cells balanced
by the estimators' declared costs (`cmbench.runner.jobs.balanced`); its cubes must equal
those of one worker, and a part whose worker dies fails its own cells only.
"""
from __future__ import annotations

import os
import types

import numpy as np
import pytest

import cmbench
from cmbench.runner.jobs import Job, Work, balanced, split


def _pid_estimator(folder, name, cost=1.0):
    """An estimator that notes the process it ran in (a file per call) and returns the mean."""
    def est(X, *, rng):
        (folder / f"{name}-{os.getpid()}").write_text("")
        return np.mean(X, axis=0)
    return cmbench.Estimator(name, est, params={}, cost=cost)


def _suite(estimators):
    return {"name": "split", "seed": 5, "experiment": [{
        "name": "e", "datasets": [{"name": "gaussian", "d": 20, "N": 300}],
        "adversaries": [{"name": "ap25", "scheme": "dkk"}], "budgets": [0.1], "recoverers": ["none"],
        "estimators": estimators, "metrics": ["l2"]}]}


def test_a_lone_sample_level_unit_runs_on_both_workers_with_the_cubes_of_one(tmp_path):
    marks = tmp_path / "pids"
    marks.mkdir()
    names = [f"pid-{c}" for c in "abcd"]
    # declared costs 10 (the filter's 24): the filter and pid-d in one part, the others in the other
    mine = types.SimpleNamespace(register_estimators=lambda: [_pid_estimator(marks, n, 10) for n in names])
    suite = _suite([*names, "mean", {"name": "filter", "eps": "@budget"}])
    two = cmbench.run_suite(suite, out=tmp_path / "two", workers=2, plugins=[mine], errors="raise")
    pids = {p.name.rsplit("-", 1)[1] for p in marks.iterdir()}
    assert len(pids) == 2 and str(os.getpid()) not in pids  # both workers, not this process
    one = cmbench.run_suite(suite, out=tmp_path / "one", workers=1, plugins=[mine], errors="raise")
    for var in one["e"].data_vars:
        if var != "seconds":
            assert one["e"][var].equals(two["e"][var]), var
    assert (two["e"]["status"].values == "ok").all()
    # the second run of the split suite takes every stage from the cache
    again = cmbench.run_suite(suite, out=tmp_path / "two", workers=2, plugins=[mine], errors="raise")
    assert again["e"]["l2"].equals(two["e"]["l2"])


def test_a_part_whose_worker_dies_fails_its_own_cells_only(tmp_path):
    def fatal(X, *, rng):
        os._exit(3)

    # declared as costly as cmedian (7): the costliest first to the lightest part gives
    # fatal's part (fatal, mean) and the other (cmedian, trimmed-mean)
    mine = types.SimpleNamespace(register_estimators=lambda: [cmbench.Estimator("fatal", fatal, params={}, cost=7)])
    cubes = cmbench.run_suite(_suite(["fatal", "mean", "cmedian", "trimmed-mean"]), out=tmp_path, workers=2,
                              plugins=[mine], errors="ignore")
    status = cubes["e"]["status"].to_series().droplevel([n for n in cubes["e"]["status"].dims
                                                         if n != "estimator"])
    assert status["fatal"] == "failed"
    assert "died" in str(cubes["e"]["error"].sel(estimator="fatal").values.ravel()[0])
    assert status["mean"] == "failed"  # in fatal's part: a death takes its whole part down
    assert status["cmedian"] == status["trimmed-mean"] == "ok"  # the other part's
    assert "record missing" not in " ".join(map(str, cubes["e"]["error"].values.ravel()))


def _job(cells: int, recover=("none",)) -> Job:
    estimate = tuple(("none", f"e{i}") for i in range(cells))
    return Job("b", "e", "d", 0, "a", 0.1, work=Work(recover=recover, estimate=estimate))


@pytest.mark.parametrize("cells,k", [(6, 2), (5, 2), (3, 4), (1, 2)])
def test_split_gives_every_cell_to_exactly_one_part(cells, k):
    job = _job(cells)
    parts = split(job, k)
    assert len(parts) == min(k, cells)
    assert sorted(c for p in parts for c in p.work.estimate) == sorted(job.work.estimate)
    assert [p.part for p in parts] == list(range(len(parts)))
    assert all(p.parts == len(parts) and p.work.recover == job.work.recover for p in parts)


def test_split_by_cost_gives_the_parts_loads_within_one_cell_of_each_other():
    # DKK17's ten estimators with their declared costs, in the suite's order
    costs = {"mean": 1, "prune": 10, "geomedian": 30, "ransac-ref": 9, "lrv": 32, "filter-ref": 24,
             "filter": 24, "ransac": 9, "cmedian": 7, "mom": 8}
    job = Job("b", "e", "d", 0, "a", 0.1, work=Work(recover=("none",), estimate=tuple(("none", e) for e in costs)))
    parts = split(job, 2, lambda cell: costs[cell[1]])
    assert sorted(c for p in parts for c in p.work.estimate) == sorted(job.work.estimate)
    order = list(costs)
    assert all([order.index(c[1]) for c in p.work.estimate] == sorted(order.index(c[1]) for c in p.work.estimate)
               for p in parts)  # each part in the unit's order
    loads = [sum(costs[c[1]] for c in p.work.estimate) for p in parts]
    assert max(loads) - min(loads) <= max(costs.values())
    by_position = [sum(costs[c[1]] for c in p.work.estimate) for p in split(job, 2)]
    assert max(loads) < max(by_position)  # every second cell: 94 against 60; by cost: 80 against 74


def test_balanced_splits_only_what_exceeds_a_share_and_is_admitted():
    big, small = _job(6), _job(6)
    cost = {id(big): 10.0, id(small): 1.0}.__getitem__
    out = balanced([big, small, small], 2, lambda j: cost(id(j)), lambda j: True)
    assert [j.parts for j in out] == [2, 2, 1, 1]  # 10 of 12 is more than a share (6): two parts
    assert balanced([big, small], 2, lambda j: cost(id(j)), lambda j: False) == [big, small]
    assert balanced([big], 1, lambda j: 1.0, lambda j: True) == [big]  # one worker: nothing to gain
    assert [j.parts for j in balanced([big], 4, lambda j: 1.0, lambda j: True)] == [4] * 4
