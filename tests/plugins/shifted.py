"""A test plugin: ``shifted``, the Empirical Mean plus ``SHIFT`` (a test edits the constant)."""
import numpy as np

import cmbench

SHIFT = 1.0


def shifted(X, *, rng):
    return np.nanmean(X, 0) + SHIFT


@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("shifted", shifted)]
