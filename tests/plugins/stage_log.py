"""A test plugin whose components log each call, so that a test can count what a run computed.

Each call appends a word to the file named by ``$CMBENCH_TEST_LOG``:
``corrupt`` (log-hide), ``recover`` (log-fill), ``estimate`` (count-mean),
``estimate:a``, ``estimate:b`` and ``estimate:flaky``. ``flaky`` raises while
a file ``$CMBENCH_TEST_LOG.fail`` exists; ``boom`` always raises;
``either-tail`` is an adaptive adversary that hides the worse of the two tails.
"""
import os
import time

import numpy as np

import cmbench


def _log(what):
    with open(os.environ["CMBENCH_TEST_LOG"], "a") as f:
        f.write(what + "\n")


def corrupt(X, budget, *, rng, structure):
    """Hide the smallest ``budget`` fraction of each column."""
    _log("corrupt")
    k = int(np.floor(budget * X.shape[0]))
    Xc = X.copy()
    np.put_along_axis(Xc, np.argsort(X, axis=0, kind="stable")[:k], np.nan, axis=0)
    return Xc


def either_tail(X, budget, *, rng, structure, pipeline, evaluations=2):
    k = int(np.floor(budget * X.shape[0]))
    candidates = []
    for sign in (1.0, -1.0):
        Xc = X.copy()
        np.put_along_axis(Xc, np.argsort(sign * X, axis=0, kind="stable")[:k], np.nan, axis=0)
        candidates.append(Xc)
    errors = [pipeline(c) for c in candidates[:evaluations]]
    return candidates[int(np.argmax(errors))]


def fill(X, *, rng, structure, rank, shift=0.0):
    _log("recover")
    return np.where(np.isnan(X), np.nanmean(X, 0) + shift, X)


def count_mean(X, *, rng, delay=0.0):
    """The mean plus a little of ``rng``'s noise (so that seeding shows), after ``delay`` seconds."""
    _log("estimate")
    time.sleep(delay)
    return np.nanmean(X, 0) + 1e-3 * rng.standard_normal(X.shape[1])


def est_a(X, *, rng, scale=1.0):
    _log("estimate:a")
    return scale * np.nanmean(X, 0)


def est_b(X, *, rng):
    _log("estimate:b")
    return np.nanmedian(X, 0)


def flaky(X, *, rng):
    _log("estimate:flaky")
    if os.path.exists(os.environ["CMBENCH_TEST_LOG"] + ".fail"):
        raise RuntimeError("flaky failed")
    return np.nanmean(X, 0)


def boom(X, *, rng):
    raise RuntimeError("estimator exploded")


@cmbench.hookimpl
def register_adversaries():
    return [cmbench.Adversary("log-hide", corrupt, level="value", mode="missing"),
            cmbench.Adversary("either-tail", either_tail, level="value", mode="missing",
                              adaptive=True, params={"evaluations": 2})]


@cmbench.hookimpl
def register_recoverers():
    return [cmbench.Recoverer("log-fill", fill, modes=("missing",), params={"shift": 0.0})]


@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("count-mean", count_mean, params={"delay": 0.0}),
            cmbench.Estimator("est-a", est_a, params={"scale": 1.0}), cmbench.Estimator("est-b", est_b),
            cmbench.Estimator("flaky", flaky), cmbench.Estimator("boom", boom)]
