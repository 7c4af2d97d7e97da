"""A test plugin: one component for each way a plugin can misbehave in a cell."""
import time

import numpy as np

import cmbench


def raises(X, *, rng):
    raise RuntimeError("estimator exploded")


def raises_in_library(X, *, rng):
    return np.linalg.cholesky(-np.eye(X.shape[1]))[0]   # LinAlgError raised inside numpy


def wrong_shape(X, *, rng):
    return np.nanmean(X, 0)[:-1]


def returns_nan(X, *, rng):
    return np.full(X.shape[1], np.nan)


def mutates(X, *, rng):
    X[np.isnan(X)] = 0.0                                   # in place: forbidden
    return X.mean(0)


def hangs(X, *, rng):
    time.sleep(120)
    return np.nanmean(X, 0)


def adv_mutates(X, budget, *, rng, structure):
    X[0, 0] = np.nan
    return X


def adv_wrong_shape(X, budget, *, rng, structure):
    return X[:-1].copy()


def rec_wrong_shape(X, *, rng, structure, rank):
    return X[:, :-1]


@cmbench.hookimpl
def register_adversaries():
    return [cmbench.Adversary("adv-mutates", adv_mutates, level="value", mode="missing"),
            cmbench.Adversary("adv-wrong-shape", adv_wrong_shape, level="value", mode="missing")]


@cmbench.hookimpl
def register_recoverers():
    return [cmbench.Recoverer("rec-wrong-shape", rec_wrong_shape, modes=("missing",))]


@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator(f.__name__.replace("_", "-"), f) for f in
            (raises, raises_in_library, wrong_shape, returns_nan, mutates, hangs)]
