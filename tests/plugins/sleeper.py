"""A test plugin: ``sleepy``, an estimator that sleeps a minute (workers still busy when the parent dies)."""
import time
import numpy as np, cmbench

def sleepy(X, *, rng):
    time.sleep(60)
    return np.nanmean(X, 0)

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("sleepy", sleepy)]
