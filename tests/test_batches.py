"""Local workers: every unit is a task of its own, and a worker's death fails only the unit it ran."""
import os

from cmbench.runner import executors


def _half(job):
    return job / 2


def _dies_on_13(job):
    if job == 13:
        os._exit(7)
    return job * 10


def _died(job, running, how):
    return f"died: {job} ({how})"


def test_units_all_come_back_with_their_own_results():
    out = dict(executors.processes(range(60), _half, 2))
    assert out == {k: k / 2 for k in range(60)}


def test_a_death_fails_only_its_unit_and_the_others_are_computed_again():
    out = dict(executors.processes(range(30), _dies_on_13, 2, died=_died))
    assert out == {k: ("died: 13 (exit code 7)" if k == 13 else k * 10) for k in range(30)}


def test_a_pool_without_a_death_fails_nothing():
    out = dict(executors.processes(range(12), _dies_on_13, 2, died=_died))
    assert out == {k: k * 10 for k in range(12)}
