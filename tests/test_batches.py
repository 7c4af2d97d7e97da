"""Local workers: estimate-only units travel in chunks, and a death inside a chunk still names its unit."""
import os

from cmbench.runner import _estimate_only, executors
from cmbench.runner.executors import CHUNK, _take
from cmbench.runner.jobs import Job, Work


def _queue(n):
    q = list(range(n))
    q.reverse()  # as `processes` keeps it: the next job last
    return q


def test_without_a_chunk_rule_every_job_is_a_task():
    q = _queue(10)
    assert [_take(q, None, set()) for _ in range(3)] == [[0], [1], [2]]


def test_consecutive_chunkable_jobs_share_a_task_up_to_the_chunk_size():
    q = _queue(3 * CHUNK)
    assert _take(q, lambda job: True, set()) == list(range(CHUNK))
    assert q[-1] == CHUNK  # the rest stays in order


def test_a_chunk_stops_before_a_job_that_must_go_alone():
    odd_one = {3}
    q = _queue(20)
    chunk = lambda job: job not in odd_one  # noqa: E731
    assert _take(q, chunk, set()) == [0, 1, 2]
    assert _take(q, chunk, set()) == [3]
    assert _take(q, chunk, {id(q[-2])}) == [4]  # the next one was in a broken task: 4 goes without it


def test_only_estimate_only_units_are_chunked():
    job = Job("s.toml", (), "e", "d", 0, "hide", 0.1)
    assert not _estimate_only(job)  # everything to compute
    assert not _estimate_only(Job(**{**job.__dict__, "work": Work(recover=("r",))}))
    assert _estimate_only(Job(**{**job.__dict__, "work": Work(corruption=False, recovered=(("r", b"", 1.0),),
                                                                estimate=(("r", "a"),))}))


def _half(job):
    return job / 2


def _dies_on_13(job):
    if job == 13:
        os._exit(7)
    return job * 10


def _died(job, running):
    return f"died: {job}"


def test_chunked_jobs_all_come_back_with_their_own_results():
    out = dict(executors.processes(range(100), _half, 2, chunk=lambda job: True))
    assert out == {k: k / 2 for k in range(100)}


def test_a_death_inside_a_chunk_fails_only_its_job():
    out = dict(executors.processes(range(40), _dies_on_13, 2, died=_died, chunk=lambda job: True))
    assert out == {k: ("died: 13" if k == 13 else k * 10) for k in range(40)}


def test_a_death_of_a_job_sent_alone_fails_only_it():
    out = dict(executors.processes(range(12), _dies_on_13, 2, died=_died))
    assert out == {k: k * 10 for k in range(12)}
    out = dict(executors.processes(range(10, 16), _dies_on_13, 2, died=_died))
    assert out == {k: ("died: 13" if k == 13 else k * 10) for k in range(10, 16)}
