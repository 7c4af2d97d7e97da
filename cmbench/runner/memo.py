"""What a worker process keeps between units: suites, loaded data sets, failed loads."""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Optional

from ..components import Data
from ..cube import OK
from ..suite import Entry, Experiment, Suite
from .contracts import check_data
from .guard import Outcome, run
from .jobs import Job
from .store import canonical
from .seeds import rng_for


def experiment_for(job: Job) -> tuple[Suite, Experiment]:
    """The job's suite (its bundle, installed or registered in this process) and experiment."""
    from ..bundle import lookup

    suite = lookup(job.bundle)
    return suite, next(e for e in suite.experiments if e.name == job.experiment)


def entry(entries, label: str) -> Entry:
    """The entry of ``entries`` labelled ``label``."""
    return next(e for e in entries if e.label == label)


def dataset_of(job: Job) -> Entry:
    """The entry of the job's data set."""
    return entry(experiment_for(job)[1].datasets, job.dataset)


#: Bytes of loaded data sets a process keeps (`DataMemo`): a sweep starts its longest
#: units first, whatever their data set, and reloading costs a data set's generation or
#: parsing each time; a data set larger than this is still kept, alone.
MEMO_BYTES = 2 * 1024**3


def data_bytes(data: Data) -> int:
    """The bytes a loaded data set's arrays hold."""
    return sum(a.nbytes for a in (data.X, data.mean, data.cov, data.structure) if a is not None)


class DataMemo:
    """Loaded data sets by load key, the least recently used dropped beyond ``cap`` bytes."""

    def __init__(self, cap: int = MEMO_BYTES) -> None:
        self.cap = cap
        self.held: "OrderedDict[tuple, Data]" = OrderedDict()
        self.bytes = 0

    def get(self, key: tuple) -> Optional[Data]:
        data = self.held.get(key)
        if data is not None:
            self.held.move_to_end(key)
        return data

    def make_room(self, size: int) -> None:
        """Drop the least recently used data sets until ``size`` more bytes fit under the cap."""
        while self.held and self.bytes + size > self.cap:
            _, old = self.held.popitem(last=False)
            self.bytes -= data_bytes(old)

    def put(self, key: tuple, data: Data) -> None:
        if key in self.held:
            return
        size = data_bytes(data)
        self.make_room(size)  # the old ones go before the new one is held beside them
        self.held[key] = data
        self.bytes += size


_DATA = DataMemo()


def load_key(job: Job) -> tuple:
    """What determines a loaded data set: the suite's bundle (its seed and files), the data set's
    spec and the instance.

    Not the experiment: the experiments of a suite that share a data set entry
    share its loaded instance, which a full-size sample-level suite would
    otherwise generate and hold once per experiment (1.28 GB each at d = 400).
    """
    _, exp = experiment_for(job)
    return (job.bundle, canonical(entry(exp.datasets, job.dataset).spec()), job.instance)


def load_data(job: Job) -> Data:
    """The job's data set instance, checked (`checks.check_data`) and memoized in this process."""
    key = load_key(job)
    data = _DATA.get(key)
    if data is None:
        suite, exp = experiment_for(job)
        found = entry(exp.datasets, job.dataset)
        shape = found.decl.shape_for(found.params)
        if shape is not None:  # room before the load, where its size is declared: not two at once
            _DATA.make_room(8 * shape[0] * shape[1])
        rng = rng_for(suite.seed, "load", job.dataset, job.instance)
        raw = found.decl.fn(instance=job.instance, rng=rng, **found.params)
        data = check_data(raw, found)
        del raw  # before the memo makes room: the loader's copy is garbage once checked
        _DATA.put(key, data)
    return data


def describe_load(job: Job) -> str:
    """The data set a load is of, as a message names it."""
    try:
        found = dataset_of(job)
        return f"data set {found.label!r} ({found.source})"
    except Exception:  # naming is best effort; the unit still fails
        return f"data set {job.dataset!r}"


_FAILED_LOADS: dict = {}  # load key -> the Outcome of a load that did not succeed, in this process


def loaded(job: Job) -> Outcome:
    """The job's data set loaded under `guard.run`; a load that failed is not tried again in this process.

    Successful loads are memoized by `load_data`; a failure (an exception, a
    timeout, `Undefined`) is remembered here, so that a broken data set costs
    one load per process and instance, not one per unit. Returns a fresh
    `Outcome` each time (callers prefix its error in place).
    """
    key = load_key(job)
    known = _FAILED_LOADS.get(key)
    if known is None:
        data = _DATA.get(key)
        if data is not None:
            return Outcome(OK, value=data, seconds=0.0)
        # the loader is called through `load_data`: a message points into the loader's own file
        known = run(load_data, (job,), context=job.guard, what=describe_load(job), home=None)
        if known.status == OK:
            return known
        if len(_FAILED_LOADS) > 64:  # a bound, not a policy: failures are few
            _FAILED_LOADS.clear()
        _FAILED_LOADS[key] = known
    return dataclasses.replace(known)
