"""A test plugin: ``extra``, a winsorized mean that logs each call to ``$CMBENCH_TEST_LOG``."""
import os
import numpy as np, cmbench

def extra(X, *, rng, limit=0.05):
    with open(os.environ["CMBENCH_TEST_LOG"], "a") as f:
        f.write("estimate:extra\n")
    lo, hi = np.nanquantile(X, [limit, 1 - limit], axis=0)
    return np.nanmean(np.clip(X, lo, hi), axis=0)

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("extra", extra, params={"limit": 0.05})]
