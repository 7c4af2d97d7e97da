"""A test plugin: data sets whose declared moments or structure are unusable."""
import numpy as np

import cmbench


def make(kind):
    def load(*, instance, rng):
        X = np.random.default_rng(0).normal(size=(40, 3))
        mean, cov, A = X.mean(0), np.cov(X.T), None
        if kind == "nan-cov":
            cov = cov.copy()
            cov[0, 1] = cov[1, 0] = np.nan
        elif kind == "wrong-shape-cov":
            cov = np.eye(4)
        elif kind == "complex-values":
            X = X + 1j
        elif kind == "rank-zero-structure":
            A = np.zeros((3, 1))
        return cmbench.Data(X=X, mean=mean, cov=cov, structure=A, rank=1, columns=("a", "b", "c"))
    return load


@cmbench.hookimpl
def register_datasets():
    return [cmbench.Dataset(k, make(k)) for k in
            ("nan-cov", "wrong-shape-cov", "complex-values", "rank-zero-structure")]
