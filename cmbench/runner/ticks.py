"""Progress inside a unit: the plugin calls a unit has made, for the sweep's progress bar.

A full-size unit can take minutes (a data set's load, the corruption, each
recoverer, each estimator); a bar that moves once per finished unit looks
frozen meanwhile. Every guarded plugin call (`guard.run`) ends with a tick of
the unit in progress (the job's ``tick``, `guard.Context.tick`): in a worker, one integer in a shared
memory-mapped file, a `Board` with a lane per task in flight; in this process,
the bar itself. The bar then shows finished units plus, for each unit in
flight, the share of its expected calls (`expected`) already made, at most
`CAP` of a unit until the unit has really finished. The cost is a memory write
per plugin call.
"""
from __future__ import annotations

import dataclasses
import mmap
import os
import tempfile
from typing import Callable, Optional

from .jobs import Job

#: the most of a unit its ticks may show before it has finished (an adaptive adversary's
#: search calls the pipeline more often than any count expects)
CAP = 0.9

_OPEN: dict = {}  # in a worker: the board of the sweep in progress, by path (one at a time)


def expected(job: Job) -> int:
    """The plugin calls a job is expected to make: the data set's load, the corruption, each
    recovery and each cell (an adaptive pair counts its corruption, recovery and cell)."""
    work = job.work
    if work is None:
        return 1
    return 1 + bool(work.corruption) + len(work.recover) + len(work.estimate) + 3 * len(work.pairs)


def share(done: int, job: Job) -> float:
    """The part of ``job``'s unit its ``done`` calls stand for on the bar (at most `CAP` of
    the part: a unit split into parts, `jobs.split`, is one step of the bar)."""
    return min(CAP, done / max(1, expected(job))) / job.parts


class Board:
    """``lanes`` call counters in a memory-mapped temporary file that workers write and this
    process reads; `close` removes the file."""

    WIDTH = 4  # bytes per counter

    def __init__(self, lanes: int) -> None:
        self.lanes = lanes
        fd, self.path = tempfile.mkstemp(prefix="cmbench-ticks-")
        os.ftruncate(fd, lanes * self.WIDTH)
        self._map = mmap.mmap(fd, lanes * self.WIDTH)
        os.close(fd)

    def reset(self, lane: int) -> None:
        self._map[lane * self.WIDTH:(lane + 1) * self.WIDTH] = bytes(self.WIDTH)

    def read(self, lane: int) -> int:
        return int.from_bytes(self._map[lane * self.WIDTH:(lane + 1) * self.WIDTH], "little")

    def close(self) -> None:
        self._map.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def _tick(mapping: mmap.mmap, lane: int) -> Callable[[], None]:
    at = slice(lane * Board.WIDTH, (lane + 1) * Board.WIDTH)

    def tick() -> None:
        mapping[at] = (int.from_bytes(mapping[at], "little") + 1).to_bytes(Board.WIDTH, "little")
    return tick


def counted(path: str, lane: int, fn: Callable, job: Job):
    """In a worker: ``fn(job)``, each of its plugin calls counted in lane ``lane`` of the board at ``path``."""
    mapping = _OPEN.get(path)
    if mapping is None:  # a new sweep: the last one's board is let go
        for old in _OPEN.values():
            old.close()
        _OPEN.clear()
        with open(path, "r+b") as f:
            mapping = _OPEN[path] = mmap.mmap(f.fileno(), 0)
    return fn(dataclasses.replace(job, tick=_tick(mapping, lane)))


def here(fn: Callable, job: Job, show: Optional[Callable[[float], None]]):
    """In this process: ``fn(job)``, ``show(part)`` called after each plugin call with the part
    of the unit done (`share`)."""
    if show is None:
        return fn(job)
    done = [0]

    def tick() -> None:
        done[0] += 1
        show(share(done[0], job))

    return fn(dataclasses.replace(job, tick=tick))
