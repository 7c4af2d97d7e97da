"""A test plugin for ``cmbench check``: one contract defect per estimator."""
import numpy as np
import cmbench

def _visible_mean(X):
    if np.isnan(X).all(axis=0).any():
        raise cmbench.Undefined("a column has no visible entry")
    return np.nanmean(X, axis=0)

def short_mean(X, *, rng):
    return _visible_mean(X)[:-1]

def zero_filled_mean(X, *, rng):
    mu = _visible_mean(X)
    X[np.isnan(X)] = 0.0
    return mu

def jittered_mean(X, *, rng):
    return _visible_mean(X) + np.random.normal(scale=1e-3, size=X.shape[1])

def shrunk_mean(X, *, rng, weight=0.0):
    return (1 - weight) * _visible_mean(X)

@cmbench.hookimpl
def register_estimators():
    return [
        cmbench.Estimator("short-mean", short_mean),
        cmbench.Estimator("zero-filled-mean", zero_filled_mean),
        cmbench.Estimator("jittered-mean", jittered_mean),
        cmbench.Estimator("shrunk-mean", shrunk_mean, params={"weight": 0.1}),
    ]
