"""A test plugin: ``fragile-mean`` fails, deep in a helper, once more than 5% of X is missing."""
import numpy as np, cmbench

def _deep_helper(X):
    raise ValueError("the helper gave up")

def fragile_mean(X, *, rng, threshold=0.05):
    if np.isnan(X).mean() > threshold:
        return _deep_helper(X)
    return np.nanmean(X, axis=0)

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("fragile-mean", fragile_mean)]
