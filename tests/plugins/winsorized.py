"""The DESIGN.md example plugin: a winsorized mean, one file, one hook."""
import numpy as np

import cmbench


def winsorized_mean(X, *, rng, limit=0.05):
    lo, hi = np.nanquantile(X, [limit, 1 - limit], axis=0)
    return np.nanmean(np.clip(X, lo, hi), axis=0)


@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("winsorized-mean", winsorized_mean, params={"limit": 0.05})]
