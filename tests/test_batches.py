"""Local workers take small units in batches, and a death inside a batch still names its unit.

Units that only estimate take a few ms; sent one by one, each worker waited for
its next unit for about a third of a rerun's sweep (`executors.processes`).
"""
import os

import pytest

from cmbench.runner import _data_jobs, executors
from cmbench.runner.executors import BATCH_SECONDS, Batches
from cmbench.runner.loading import Loaded
from cmbench.runner.units import Job


def _queue(n):
    q = list(range(n))
    q.reverse()  # as `processes` keeps it: the next unit last
    return q


def test_units_go_alone_until_a_batch_has_been_timed():
    batches = Batches(lambda job: 1.0, workers=2)
    q = _queue(100)
    assert [batches.take(q) for _ in range(3)] == [[0], [1], [2]]


def test_no_cost_means_no_batches():
    batches = Batches(None, workers=2)
    batches.learn([0], 0.001)
    q = _queue(100)
    assert batches.take(q) == [0]


def test_a_batch_holds_about_the_target_seconds_of_measured_work():
    batches = Batches(lambda job: 1.0, workers=2)
    batches.learn([0, 1], 2 * BATCH_SECONDS / 10)  # a unit takes a tenth of the target
    q = _queue(1000)
    batch = batches.take(q)
    assert batch == list(range(10))
    assert q[-1] == 10  # the rest stays in order


def test_a_unit_predicted_to_take_the_target_by_itself_goes_alone():
    cost = {k: 50.0 if k == 0 else 1.0 for k in range(100)}
    batches = Batches(cost.__getitem__, workers=1)
    batches.learn([1], BATCH_SECONDS / 4)  # cost 1 takes a quarter of the target: cost 50 takes 12 times it
    q = _queue(100)
    assert batches.take(q) == [0]
    assert batches.take(q) == [1, 2, 3, 4]


def test_a_batch_leaves_enough_batches_for_every_worker_at_the_end():
    batches = Batches(lambda job: 1.0, workers=2)
    batches.learn([0], BATCH_SECONDS / 1000)  # tiny units: the target alone would take 1000
    q = _queue(81)
    assert len(batches.take(q)) == 81 // 8
    q = _queue(7)
    assert [len(batches.take(q)) for _ in range(7)] == [1] * 7  # the last units go one by one


def test_units_marked_single_go_alone():
    batches = Batches(lambda job: 1.0, workers=1)
    batches.learn([0], BATCH_SECONDS / 100)
    jobs = [f"unit {k}" for k in range(40)]
    q = list(reversed(jobs))
    batches.single(jobs[2:3])
    assert batches.take(q) == jobs[:2]  # stops before the marked unit
    assert batches.take(q) == [jobs[2]]
    assert batches.take(q) == jobs[3:12]  # at most a quarter of the 37 left


def _half(job):
    return job / 2


def _dies_on_13(job):
    if job == 13:
        os._exit(7)
    return job * 10


def _died(job, running):
    return f"died: {job}"


def test_batched_units_all_come_back_with_their_own_results():
    pool = executors.prestart(2)
    try:
        out = dict(executors.processes(range(300), _half, 2, pool=pool, cost=lambda job: 1.0))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    assert out == {k: k / 2 for k in range(300)}


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_death_inside_a_batch_fails_only_its_unit(start, monkeypatch):
    monkeypatch.setenv(executors.WORKER_START_ENV, start)
    batches_seen = []
    original = executors.Batches.take

    def take(self, queue):
        batch = original(self, queue)
        batches_seen.append(len(batch))
        return batch

    monkeypatch.setattr(executors.Batches, "take", take)
    monkeypatch.setattr(executors, "BATCH_SECONDS", 10.0)  # everything fits: the crash is inside a batch
    pool = executors.prestart(2)
    try:
        out = dict(executors.processes(range(40), _dies_on_13, 2, died=_died, pool=pool, cost=lambda job: 1.0))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    assert max(batches_seen) > 1  # 13 was in a batch when its worker died
    assert out == {k: ("died: 13" if k == 13 else k * 10) for k in range(40)}


def test_each_data_set_instance_is_preloaded_once_largest_first_without_failed_ones():
    class Exp:
        def __init__(self, name):
            self.name, self.instances = name, [0]

    e = Exp("e")
    datasets = {("e", "small"): Loaded({"shape": [10, 2]}), ("e", "big"): Loaded({"shape": [100, 5]}),
                ("e", "broken"): Loaded({"shape": None}, failure={"status": "failed"}, crashed=True)}
    planned = [(e, Job("s.toml", (), "e", d, i, "hide", b)) for d in ("small", "big", "broken")
               for i in (0, 1) for b in (0.0, 0.1)]
    picked = _data_jobs(planned, datasets)
    assert [(j.dataset, j.instance) for j in picked] == [("big", 0), ("big", 1), ("small", 0), ("small", 1)]
