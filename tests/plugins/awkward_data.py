"""A test plugin: data sets that are awkward on purpose.

Some break the contract (NaN or inf in X, one row, a NaN mean) and must fail
their cells naming the column; others are degenerate but valid (a constant
column, fewer rows than columns) and must give the right numbers.
"""
import numpy as np

import cmbench


def table(kind):
    """The clean sample each data set returns: (X, mean, cov, columns)."""
    rng = np.random.default_rng(11)
    N, n = (4, 6) if kind == "plug-wide" else (1, 3) if kind == "plug-one-row" else (12, 3)
    X = rng.normal(size=(N, n)) * np.arange(1, n + 1) + 10.0
    columns = ("alpha", "temperature", "pressure", "d", "e", "f")[:n]
    mean = X.mean(axis=0)
    if kind == "plug-nan":
        X[5, 1] = np.nan
    elif kind == "plug-inf":
        X[3, 2] = np.inf
    elif kind == "plug-nan-mean":
        mean = mean.copy()
        mean[2] = np.nan
    elif kind == "plug-constant":
        X[:, 1] = 7.25
        mean = X.mean(axis=0)
    Xc = X - mean
    cov = Xc.T @ Xc / N
    return X, mean, cov, columns


def loader(kind):
    def load(*, instance, rng):
        X, mean, cov, columns = table(kind)
        return cmbench.Data(X=X, mean=mean, cov=cov, columns=columns)
    return load


KINDS = ("plug-nan", "plug-inf", "plug-one-row", "plug-nan-mean", "plug-constant", "plug-wide")


@cmbench.hookimpl
def register_datasets():
    return [cmbench.Dataset(k, loader(k), description="a deliberately awkward table") for k in KINDS]
