"""One unit of work: a corruption and what is computed on it.

A unit is (experiment, dataset, instance, adversary, budget). It loads the data
(memoized per process), corrupts once, recovers once per recoverer and estimates
once per estimator on each recovery, so nothing is recomputed per estimator.
A job's `Work` says which of these stages to compute: the client leaves out
what its stage cache holds, and ships the cached matrices a stage needs, so a
worker never reads the cache.
Jobs are small picklable records naming their suite by the digest of its bundle
(`cmbench.bundle`), which an executor installs in each worker process once: a
worker needs none of the client's files.

Every array a component receives is backed by an immutable buffer (no
``setflags`` can make it writeable) and its digest is checked after the call:
no component can change what another one sees.
"""
from __future__ import annotations

import dataclasses
import functools
import signal
import threading
import time
import sys
import traceback
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypedDict

import numpy as np

from ..components import Data, NotApplicable, Undefined
from ..cube import (FAILED, FAILURES, NOT_APPLICABLE, OK, RECOVERY_VARS, TIMEOUT, UNDEFINED, Record, UnitResult,
                    record, verdict)
from ..errors import UserError, describe_error
from ..suite import Entry, Experiment, Suite, load_suite
from ..theory import budget_count, changed_entries, d_entry_bound
from .matrices import Damaged, decode, digest, encode, frozen, stored
from .seeds import rng_for


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


@dataclass(frozen=True)
class Job:
    """Everything a worker needs to compute one unit (``work=None``: all of it)."""

    suite_path: str
    plugins: tuple
    experiment: str
    dataset: str
    instance: int
    adversary: str
    budget: float
    timeout: Optional[float] = None
    suite_hash: str = ""  # memo key: an edited suite file is a different suite
    bundle: str = ""  # digest of the suite's bundle installed in this process (`cmbench.bundle`), if any
    work: Optional[Work] = None

    @property
    def coords(self) -> tuple:
        return (self.dataset, self.instance, self.adversary, self.budget)


class CallTimeout(BaseException):
    """A plugin call ran past ``--timeout``.

    A BaseException, so that a plugin's own ``except Exception`` cannot swallow it.
    """


@dataclass
class Outcome:
    status: str
    error: str = ""
    value: Any = None
    seconds: float = float("nan")
    traceback: str = ""  # the full Python traceback of a plugin's exception
    user_error: str = ""  # the message of a `UserError` the call raised: the user's to fix, not the plugin's


#: open the debugger where a plugin raised (``cmbench suite --pdb``; in-process runs only)
POST_MORTEM = False


def _post_mortem(exc: BaseException) -> None:
    import pdb

    print(f"\ncmbench --pdb: {type(exc).__name__}: {exc}", file=sys.stderr)
    pdb.post_mortem(exc.__traceback__)


def outcome_record(outcome: Outcome, **values: Any) -> Record:
    """The record of a plugin call's outcome, with its numbers (and its traceback, the cube keeps it)."""
    return record(outcome.status, outcome.error, outcome.traceback, **values)


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
    recoverer, each encoded by `matrices.encode`) and ``stale`` (cached
    matrices given by reference that no longer read back, computed anew).
    `cmbench.runner.stages` turns it into the unit's `cmbench.cube.UnitResult`.
    """

    corruption: Optional[Record]
    recovery: dict[str, Record]
    cells: dict[str, dict[str, Record]]
    pairs: dict[str, dict[str, Pair]]
    matrices: dict[str, bytes]
    stale: int


def work_result(corruption: Optional[Record] = None) -> WorkResult:
    """A job's result with nothing computed yet (but ``corruption``)."""
    return {"corruption": corruption, "recovery": {}, "cells": {}, "pairs": {}, "matrices": {}, "stale": 0}


# ---------------------------------------------------------------- per-process memo
@functools.lru_cache(maxsize=4)
def suite_for(path: str, plugins: tuple, suite_hash: str = "") -> Suite:
    suite = load_suite(path, plugins)
    if suite_hash and suite.hash != suite_hash:
        raise RuntimeError(f"suite file {path} changed while the sweep was running")
    return suite


def suite_of(job: Job) -> Suite:
    """The job's suite: the bundle installed in this process, else the suite file read from disk."""
    if job.bundle:
        from ..bundle import lookup

        return lookup(job.bundle)
    return suite_for(job.suite_path, job.plugins, job.suite_hash)


def experiment_for(job: Job) -> tuple[Suite, Experiment]:
    suite = suite_of(job)
    return suite, next(e for e in suite.experiments if e.name == job.experiment)


def _entry(entries, label: str) -> Entry:
    return next(e for e in entries if e.label == label)


@functools.lru_cache(maxsize=32)  # a sweep starts its longest units first, whatever their data set
def _load(suite_path: str, plugins: tuple, suite_hash: str, bundle: str, experiment: str, dataset: str,
          instance: int) -> Data:
    suite = suite_of(Job(suite_path, plugins, experiment, dataset, instance, "", 0.0, None, suite_hash, bundle))
    exp = next(e for e in suite.experiments if e.name == experiment)
    entry = _entry(exp.datasets, dataset)
    rng = rng_for(suite.seed, "load", dataset, instance)
    data = entry.decl.fn(instance=instance, rng=rng, **entry.params)
    return check_data(data, entry)


def check_data(data: Data, entry: Entry) -> Data:
    """Refuse data that would give silently wrong numbers; name the data set and column."""
    what = f"data set {entry.label!r} ({entry.source})"
    if not isinstance(data, Data):
        raise TypeError(f"{what}: load() returned {type(data).__name__}, expected cmbench.Data")
    for field in ("X", "mean", "cov", "structure"):
        if getattr(data, field) is not None and np.iscomplexobj(getattr(data, field)):
            raise ValueError(f"{what}: {field} holds complex values")
    X = np.array(data.X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"{what}: X must be 2-D (N, n), got shape {X.shape}")
    N, n = X.shape
    names = list(data.columns) if len(data.columns) == n else [str(j) for j in range(n)]
    if N < 2:
        raise ValueError(f"{what}: {N} row(s); a mean needs at least 2")
    bad = ~np.isfinite(X) & ~np.isnan(X)
    if bad.any():
        raise ValueError(f"{what}: column {names[int(np.nonzero(bad.any(0))[0][0])]!r} holds inf")
    if np.isnan(X).any():
        raise ValueError(f"{what}: column {names[int(np.nonzero(np.isnan(X).any(0))[0][0])]!r} holds NaN "
                         "before corruption; give the data set a missing-value policy")
    mean = np.array(data.mean, dtype=float)
    if mean.shape != (n,) or not np.isfinite(mean).all():
        raise ValueError(f"{what}: true mean must be a finite ({n},) vector, got shape {mean.shape}")
    cov = None if data.cov is None else np.array(data.cov, dtype=float)
    if cov is not None and (cov.shape != (n, n) or not np.isfinite(cov).all()):
        raise ValueError(f"{what}: cov must be a finite ({n}, {n}) matrix, got shape {cov.shape}"
                         + ("" if cov.shape != (n, n) else " with NaN or inf"))
    A = None if data.structure is None else np.array(data.structure, dtype=float)
    if A is not None and (A.ndim != 2 or A.shape[0] != n or not np.isfinite(A).all()):
        raise ValueError(f"{what}: structure A must be a finite ({n}, r) matrix, got shape {A.shape}")
    # Loaded data are memoized per process and shared by every component: no plugin may write
    # into them, and an immutable buffer is the only read-only flag a plugin cannot undo.
    X, mean, cov, A = (None if a is None else frozen(a) for a in (X, mean, cov, A))
    return Data(X=X, mean=mean, cov=cov, structure=A, rank=data.rank, columns=tuple(names))


def load_data(job: Job) -> Data:
    return _load(job.suite_path, job.plugins, job.suite_hash, job.bundle, job.experiment, job.dataset,
                 job.instance)


_FAILED_LOADS: dict = {}  # load key -> the Outcome of a load that did not succeed, in this process


def loaded(job: Job) -> Outcome:
    """The job's data set loaded under `call`; a load that failed is not tried again in this process.

    Successful loads are memoized by `_load`; a failure (an exception, a
    timeout, `Undefined`) is remembered here, so that a broken data set costs
    one load per process and instance, not one per unit. Returns a fresh
    `Outcome` each time (callers prefix its error in place).
    """
    key = (job.suite_path, job.plugins, job.suite_hash, job.bundle, job.experiment, job.dataset, job.instance)
    known = _FAILED_LOADS.get(key)
    if known is None:
        known = call(load_data, job.timeout, job)
        if known.status == OK:
            return known
        if len(_FAILED_LOADS) > 64:  # a bound, not a policy: failures are few
            _FAILED_LOADS.clear()
        _FAILED_LOADS[key] = known
    return dataclasses.replace(known)


# ---------------------------------------------------------------- guarded plugin calls
def _alarm(signum, frame):
    raise CallTimeout()


# Set by the SIGINT handler `call` installs: a KeyboardInterrupt is a real Ctrl-C only then.
_SIGINT_SEEN = [False]

#: In a worker process, a shared byte buffer (set by `executors`) naming the plugin call in
#: progress, so that the parent can name the plugin if the call ends the process.
RUNNING = None


def _describe(fn: Callable, args: tuple) -> str:
    """'function() of /path/plugin.py', or the data set being loaded."""
    if fn is load_data and args:
        try:
            _, exp = experiment_for(args[0])
            entry = _entry(exp.datasets, args[0].dataset)
            return f"data set {entry.label!r} ({entry.source})"
        except Exception:  # naming is best effort; the unit still fails
            return f"data set {args[0].dataset!r}"
    name = getattr(fn, "__qualname__", None) or repr(fn)
    code = getattr(fn, "__code__", None)
    return f"{name}() of {code.co_filename}" if code is not None else f"{name}()"


def _sigint_handler(previous: Any) -> Callable:
    def handler(signum, frame):
        _SIGINT_SEEN[0] = True
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt
    return handler


def call(fn: Callable, timeout: Optional[float], *args, **kwargs) -> Outcome:
    """Run one plugin call; classify its outcome instead of letting it escape.

    Only the runner's own signals end the call early: ``--timeout`` (`CallTimeout`)
    and a real Ctrl-C (SIGINT, re-raised as KeyboardInterrupt so the sweep stops).
    Anything the plugin raises itself - including ``KeyboardInterrupt``,
    ``SystemExit`` or another ``BaseException`` - fails the call.
    """
    start = time.perf_counter()
    main_thread = threading.current_thread() is threading.main_thread()
    use_alarm = timeout and main_thread
    if main_thread:
        _SIGINT_SEEN[0] = False
        previous_sigint = signal.signal(signal.SIGINT, _sigint_handler(signal.getsignal(signal.SIGINT)))
    if RUNNING is not None:
        outer = RUNNING.value
        RUNNING.value = _describe(fn, args).encode("utf-8", "replace")[: len(RUNNING) - 1]
    # a data set's loader is called through the memo: its own file holds the deepest frame
    home = None if fn is load_data else fn
    try:
        if use_alarm:
            previous = signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                value = fn(*args, **kwargs)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
        elif timeout:
            value = _call_in_thread(fn, timeout, args, kwargs)
        else:
            value = fn(*args, **kwargs)
    except CallTimeout:
        return Outcome(TIMEOUT, f"stopped after --timeout {timeout:g} s", seconds=time.perf_counter() - start)
    except Undefined as exc:
        return Outcome(UNDEFINED, str(exc) or "undefined", seconds=time.perf_counter() - start)
    except NotApplicable as exc:
        return Outcome(NOT_APPLICABLE, str(exc) or "not applicable", seconds=time.perf_counter() - start)
    except SystemExit as exc:  # a plugin's sys.exit() must not end the sweep
        return Outcome(FAILED, f"SystemExit({exc.code!r}): the plugin called sys.exit",
                       seconds=time.perf_counter() - start)
    except UserError as exc:  # a data file's mistake (cmbench.data.DataError): the caller decides
        return Outcome(FAILED, describe_error(exc, home), seconds=time.perf_counter() - start,
                       traceback=traceback.format_exc(), user_error=str(exc))
    except Exception as exc:  # a plugin's bug becomes a failed cell, never a dead sweep
        if POST_MORTEM:
            _post_mortem(exc)
        return Outcome(FAILED, describe_error(exc, home), seconds=time.perf_counter() - start,
                       traceback=traceback.format_exc())
    except KeyboardInterrupt as exc:
        if _SIGINT_SEEN[0]:
            raise  # Ctrl-C: the sweep stops, finished units are kept
        return Outcome(FAILED, f"{describe_error(exc, home)} - raised by the plugin, not a Ctrl-C",
                       seconds=time.perf_counter() - start)
    except BaseException as exc:  # a plugin's own BaseException subclass: still its cell only
        return Outcome(FAILED, describe_error(exc, home), seconds=time.perf_counter() - start)
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous_sigint)
        if RUNNING is not None:
            RUNNING.value = outer
    return Outcome(OK, value=value, seconds=time.perf_counter() - start)


def blame(outcome: Outcome, entry: Entry, kind: str) -> Outcome:
    """Prefix a failure or timeout with the component and the plugin that declared it."""
    if outcome.status in FAILURES:
        outcome.error = f"{kind} {entry.label!r} ({entry.source}): {outcome.error}"
    return outcome


def _call_in_thread(fn, timeout, args, kwargs):
    """Off the main thread (Dask workers) no alarm exists: abandon the call at the deadline."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed back to the caller below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise CallTimeout()
    if "error" in box:
        raise box["error"]
    return box["value"]


def readonly(X: np.ndarray) -> np.ndarray:
    view = X.view()
    view.setflags(write=False)
    return view


_DIGESTS: dict = {}  # id(array) -> (weak reference, digest): one digest per shared array


def _known_digest(a: np.ndarray) -> str:
    entry = _DIGESTS.get(id(a))
    if entry is not None and entry[0]() is a:
        return entry[1]
    key = id(a)
    value = digest(a)
    _DIGESTS[key] = (weakref.ref(a, lambda _, k=key: _DIGESTS.pop(k, None)), value)
    return value


def _before(*inputs: Optional[np.ndarray]) -> None:
    """Know the digest of every input a call is about to get (once per array: later calls reuse it)."""
    for a in inputs:
        if a is not None:
            _known_digest(a)


def untouched(outcome: Outcome, *inputs: Optional[np.ndarray]) -> Outcome:
    """Fail a call that changed a shared input array (its digest moved); its result is discarded.

    The arrays are immutable buffers, so only code that goes around numpy can
    get here; the check is cheap (one digest per call) and keeps a corrupted
    input out of every other component's cells and out of the cache.
    """
    for a in inputs:
        if a is not None and digest(a) != _known_digest(a):
            return Outcome(FAILED, "wrote into an input array shared with other components; its "
                                   "result is discarded", seconds=outcome.seconds)
    return outcome


# ---------------------------------------------------------------- checks on outputs
def _real(value: Any) -> np.ndarray:
    array = np.asarray(value)
    if np.iscomplexobj(array):
        raise ValueError("returned complex values")
    return np.asarray(array, dtype=float)


def check_corruption(Xc: Any, X: np.ndarray, adv: Entry, budget: float) -> np.ndarray:
    """The adversary's contract: same shape, missing mode only hides, budget respected."""
    Xc = _real(Xc)
    if Xc.shape != X.shape:
        raise ValueError(f"returned shape {Xc.shape}, expected {X.shape}")
    changed = changed_entries(Xc, X)
    if adv.decl.mode == "missing" and (changed & ~np.isnan(Xc)).any():
        raise ValueError("is a missing-mode adversary but changed visible values")
    N, n = X.shape
    level = adv.decl.level
    if level == "sample":
        used, cap = int(changed.any(1).sum()), budget_count(budget, N)
        unit = "rows"
    elif level == "value":
        used, cap = int(changed.sum(0).max(initial=0)), budget_count(budget, N)
        unit = "entries in one column"
    else:
        used, cap = int(changed.sum()), budget_count(budget, N * n)
        unit = "entries"
    if used > cap:
        raise ValueError(f"exceeded its budget: {used} {unit} corrupted, at most {cap} allowed "
                         f"at {level} level with budget {budget:g}")
    return Xc


def check_recovery(out: Any, Xc: np.ndarray) -> tuple[np.ndarray, dict]:
    info = {}
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict):
        out, info = out
    Xr = _real(out)
    if Xr.shape != Xc.shape:
        raise ValueError(f"returned shape {Xr.shape}, expected {Xc.shape}")
    if np.isinf(Xr).any():
        raise ValueError("returned inf values")
    return Xr, {k: float(v) for k, v in info.items() if isinstance(v, (bool, int, float, np.number))}


def check_estimate(mu: Any, n: int) -> np.ndarray:
    mu = _real(mu)
    if mu.shape != (n,):
        raise ValueError(f"returned shape {mu.shape}, expected ({n},)")
    if not np.isfinite(mu).all():
        raise ValueError("returned a NaN or inf mean; raise cmbench.Undefined if the method "
                         "is not defined on this input")
    return mu


def guarded(check: Callable, outcome: Outcome, *args) -> Outcome:
    """Apply an output check to a successful call; a violation fails the cell."""
    if outcome.status != OK:
        return outcome
    try:
        outcome.value = check(outcome.value, *args)
    except Exception as exc:
        return Outcome(FAILED, str(exc), seconds=outcome.seconds)
    return outcome


# ---------------------------------------------------------------- metrics
#: an entry counts as recovered within this many standard deviations of its column
#: (clean data) of the clean value; stored in each cube's ``recovered_tolerance``
RECOVERED_TOLERANCE = 0.1


def recovery_fractions(X: np.ndarray, Xc: np.ndarray, Xr: np.ndarray, mode: str,
                       tol: float = RECOVERED_TOLERANCE) -> dict:
    """How well the corrupted entries were recovered, and which rows were dropped.

    The corrupted entries are the hidden ones (missing mode: NaN in the
    corruption, a value in the clean data) or the replaced ones (replace mode:
    any entry that differs). Filling an entry is not recovering it: an entry
    counts as recovered when it is within ``tol`` standard deviations of its
    column (of the clean data) of the clean value, so a column-mean fill scores
    what it deserves, not 1.

    Returns
    -------
    dict with ``recovered_fraction`` (corrupted entries recovered within
    ``tol``; NaN when nothing was corrupted), ``recovery_rmse`` (root mean
    squared error, in the data's units, of the recovered array against the clean
    values over the corrupted entries the recoverer filled; NaN when it filled
    none) and ``discarded_fraction`` (rows still holding NaN).
    """
    discarded = float(np.isnan(Xr).any(1).mean())
    if mode == "missing":
        hidden = np.isnan(Xc) & ~np.isnan(X)
    else:
        hidden = changed_entries(Xc, X)
    filled = hidden & ~np.isnan(Xr)
    scale = np.nanstd(X, axis=0) + 1e-12
    with np.errstate(invalid="ignore"):
        done = filled & (np.abs(Xr - X) <= tol * scale)
    total, n_filled = int(hidden.sum()), int(filled.sum())
    rmse = float(np.sqrt(np.mean((Xr[filled] - X[filled]) ** 2))) if n_filled else float("nan")
    return {"recovered_fraction": float(done.sum()) / total if total else float("nan"),
            "recovery_rmse": rmse, "discarded_fraction": discarded}


class MetricFailed(Exception):
    """A metric plugin raised or returned something that is not a number."""

    def __init__(self, message: str, traceback: str = "") -> None:
        super().__init__(message)
        self.traceback = traceback


def errors(mu: np.ndarray, data: Data, metrics=()) -> dict:
    """The value of every metric entry at the estimate ``mu``: label -> float.

    ``cmbench.Undefined`` from a metric gives NaN; any other exception, or a
    value that is not a real number, raises `MetricFailed` naming the metric.
    """
    out = {}
    for entry in metrics:
        try:
            value = entry.decl.fn(readonly(mu), data, **entry.params)
        except Undefined:
            value = float("nan")
        except Exception as exc:
            if POST_MORTEM:
                _post_mortem(exc)
            raise MetricFailed(f"metric {entry.label!r} ({entry.source}): {describe_error(exc, entry.decl.fn)}",
                               traceback.format_exc()) from None
        try:
            out[entry.label] = float(value)
        except (TypeError, ValueError):
            raise MetricFailed(f"metric {entry.label!r} ({entry.source}): returned {type(value).__name__} "
                               f"{value!r}, not a number") from None
    return out


def corruption_distances(X: np.ndarray, Xc: np.ndarray) -> dict:
    """d_ENTRY (p = 1, inf) and d_TV between the clean and the corrupted sample.

    Uses the adversary's own row correspondence (row i of the corruption is row
    i of the clean data): an upper bound on the optimal coupling, exact for
    every built-in adversary that corrupts rows in place.
    """
    changed = changed_entries(Xc, X)
    return {
        "d_entry1": float(d_entry_bound(X, Xc, 1)),
        "d_entry_inf": float(d_entry_bound(X, Xc, np.inf)),
        "d_tv": float(changed.any(1).mean()),
    }


# ---------------------------------------------------------------- the unit
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


def full_work(exp: Experiment, adaptive: bool) -> Work:
    """Every stage of a unit: what a job computes when the cache holds none of it."""
    pairs = tuple((r.label, e.label) for r in exp.recoverers for e in exp.estimators)
    if adaptive:
        return Work(pairs=pairs)
    return Work(recover=tuple(r.label for r in exp.recoverers), estimate=pairs)


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
    Xc = None
    if work.corrupted is not None and not work.corruption:
        corrupted = stored(work.corrupted)
        if corrupted is None:  # gone from the cache since the client looked: corrupt anew
            result["stale"] += 1
        else:
            try:
                Xc = decode(corrupted, data.X)
            except Damaged:
                Xc = None  # the client checked its digest: a decoding bug at worst; corrupt anew
    if Xc is None and (work.corruption or recover):
        corrupted = _corrupt(job, suite.seed, adv, data, (), {})
        result["corruption"] = outcome_record(corrupted, seconds=corrupted.seconds)
        if corrupted.status != OK:
            return result
        Xc = corrupted.value
        result["corruption"].update(corruption_distances(data.X, Xc))
        result["matrices"]["corruption"] = encode(Xc, data.X)
    wanted: dict = {}
    for r_label, e_label in work.estimate:
        wanted.setdefault(r_label, []).append(e_label)
    for label in recover:
        rec = _entry(exp.recoverers, label)
        recovery, Xr = _recover(job, suite.seed, adv, rec, data, Xc)
        result["recovery"][label] = recovery
        if Xr is not None:
            result["matrices"][label] = encode(Xr, data.X)
            result["cells"][label] = {e: _estimate(job, suite.seed, rec, _entry(exp.estimators, e), data,
                                                   recovery, Xr) for e in wanted.get(label, ())}
    for label, blob, seconds in recovered:
        rec = _entry(exp.recoverers, label)
        recovery = record(OK, seconds=seconds)
        try:
            Xr = decode(blob, data.X)
        except Damaged as exc:
            result["cells"][label] = {e: record(FAILED, f"cached recovery {label!r} unreadable: {exc}")
                                      for e in wanted.get(label, ())}
            continue
        result["cells"][label] = {e: _estimate(job, suite.seed, rec, _entry(exp.estimators, e), data,
                                               recovery, Xr) for e in wanted.get(label, ())}
    return result


def _corrupt(job: Job, seed: int, adv: Entry, data: Data, stream: tuple, extra: dict) -> Outcome:
    rng = rng_for(seed, "corrupt", *job.coords, *stream)
    _before(data.X, data.structure)  # untouched() compares both after the call
    out = call(adv.decl.fn, job.timeout, readonly(data.X), job.budget, rng=rng,
               structure=data.structure, **adv.params, **extra)
    out = guarded(check_corruption, untouched(out, data.X, data.structure), data.X, adv, job.budget)
    if out.status == OK:
        out.value = frozen(out.value)
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


def _recover(job: Job, seed: int, adv: Entry, rec: Entry, data: Data, Xc: np.ndarray):
    """Recover once; returns the recovery record and the recovered array (None unless ok)."""
    out = _inapplicable(job, adv, rec, data)
    if out is None:
        rng = rng_for(seed, "recover", *job.coords, rec.label)
        params = dict(rec.params)
        rank = params.pop("rank", data.rank)  # a suite may override the data set's rank hint
        _before(Xc, data.structure)
        out = call(rec.decl.fn, job.timeout, Xc, rng=rng, structure=data.structure, rank=rank, **params)
        out = guarded(check_recovery, untouched(out, Xc, data.structure), Xc)
    blame(out, rec, "recoverer")
    recovery = outcome_record(out, seconds=out.seconds)
    if out.status != OK:
        return recovery, None
    Xr, info = out.value
    Xr = frozen(Xr)
    recovery.update(recovery_fractions(data.X, Xc, Xr, adv.decl.mode), info=info)
    return recovery, Xr


def _estimate(job: Job, seed: int, rec: Entry, est: Entry, data: Data, recovery: Record,
              Xr: Optional[np.ndarray]) -> Record:
    if Xr is None:  # the recovery did not succeed: its status is the cell's
        return verdict(recovery)
    rng = rng_for(seed, "estimate", *job.coords, rec.label, est.label)
    _before(Xr)
    res = call(est.decl.fn, job.timeout, Xr, rng=rng, **est.params)
    res = blame(guarded(check_estimate, untouched(res, Xr), data.X.shape[1]), est, "estimator")
    cell = outcome_record(res, seconds=recovery["seconds"] + res.seconds)
    if res.status == OK:
        try:
            cell.update(errors(res.value, data, experiment_for(job)[1].metric_entries))
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
            if corrupted.status != OK:
                pair = Pair(corruption=corruption, recovery=None,
                            cell=outcome_record(corrupted, evaluations=pipeline.calls))
            else:
                corruption.update(corruption_distances(data.X, corrupted.value))
                recovery, Xr = _recover(job, seed, adv, rec, data, corrupted.value)
                pair = Pair(corruption=corruption, recovery=recovery,
                            cell=dict(_estimate(job, seed, rec, est, data, recovery, Xr),
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
    if work.corruption:
        result["corruption"] = dict(bad)
        return result
    for label in work.recover:
        result["recovery"][label] = dict(bad)
    for r, e in work.estimate:
        if r not in work.recover:
            result["cells"].setdefault(r, {})[e] = dict(bad)
    return result

