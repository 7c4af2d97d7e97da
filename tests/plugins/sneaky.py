"""A test plugin: components that misbehave in ways a cell's checks cannot see directly.

It writes into the data set's known structure, calls ``sys.exit``, catches the
timeout's exception, or takes too long to load.
"""
import sys
import time

import numpy as np

import cmbench


def scribble_structure(X, budget, *, rng, structure):
    if structure is not None:
        structure[:] = 0.0          # in place, on the data set's known A
    return np.array(X, dtype=float)


def quits(X, *, rng):
    sys.exit(3)


def stubborn(X, *, rng):
    """Catches everything, as careless plugin code does; gives up after 1.2 s."""
    end = time.monotonic() + 1.2
    while time.monotonic() < end:
        try:
            time.sleep(0.02)
        except Exception:
            pass
    return np.nanmean(X, 0)


def slow_load(*, instance, rng):
    time.sleep(1.2)
    X = np.random.default_rng(instance).normal(size=(30, 3))
    return cmbench.Data(X=X, mean=np.zeros(3), cov=np.eye(3))


@cmbench.hookimpl
def register_adversaries():
    return [cmbench.Adversary("scribble-structure", scribble_structure, level="value", mode="missing")]


@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("quits", quits), cmbench.Estimator("stubborn", stubborn)]


@cmbench.hookimpl
def register_datasets():
    return [cmbench.Dataset("slow-load", slow_load)]
