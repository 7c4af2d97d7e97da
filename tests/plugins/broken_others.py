"""A test plugin for ``cmbench check``: one contract defect per adversary, recoverer, data set and metric."""
import numpy as np
import cmbench

def hide_two_per_column(X, budget, *, rng, structure):
    Y = np.array(X, dtype=float)
    if budget > 0:
        Y[:2] = np.nan            # two entries per column, whatever the budget buys
    return Y

def smoothing(X, *, rng, structure, rank):
    filled = np.where(np.isnan(X), np.nanmean(X, axis=0), X)
    return filled * 0.99          # also moves the visible entries

def lopsided(*, instance, rng, n=4):
    X = rng.normal(size=(30, n))
    return cmbench.Data(X=X, mean=np.zeros(n + 1))   # mean of the wrong length

def offset_l2(mu_hat, data):
    return float(np.linalg.norm(mu_hat - data.mean)) + 1.0   # 1 at the true mean

@cmbench.hookimpl
def register_adversaries():
    return [cmbench.Adversary("hide-two-per-column", hide_two_per_column, level="value")]

@cmbench.hookimpl
def register_recoverers():
    return [cmbench.Recoverer("smoothing", smoothing)]

@cmbench.hookimpl
def register_datasets():
    return [cmbench.Dataset("lopsided", lopsided)]

@cmbench.hookimpl
def register_metrics():
    return [cmbench.Metric("offset-l2", offset_l2)]
