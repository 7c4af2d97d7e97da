"""The built-in error metrics: l2 and Mahalanobis distance to the true mean.

Registered through ``register_metrics`` exactly as a third party's metric is;
a suite's ``metrics = [...]`` names them and the cube holds one variable each.
Each is ``fn(mu_hat, data) -> float``: ``mu_hat`` is an estimator's (n,)
estimate and ``data`` the `cmbench.Data` it was computed from (its true mean
and, when known, covariance); the value is 0 at the true mean and >= 0 elsewhere.
"""
from __future__ import annotations

import numpy as np

import cmbench
from cmbench import theory


def l2(mu_hat: np.ndarray, data: cmbench.Data) -> float:
    """Euclidean distance between the estimate and the true mean, ||mu_hat - mu||_2."""
    return float(np.linalg.norm(np.asarray(mu_hat, dtype=float) - data.mean))


def mahalanobis(mu_hat: np.ndarray, data: cmbench.Data) -> float:
    """sqrt((mu_hat - mu)^T Sigma^+ (mu_hat - mu)), the paper's error for synthetic data.

    Sigma^+ is the pseudo-inverse of the data set's covariance (singular for
    x = A z, see `cmbench.theory.mahalanobis`). NaN when the covariance is
    unknown, as for the real data sets.
    """
    if data.cov is None:
        return float("nan")
    return float(theory.mahalanobis(mu_hat, data.mean, data.cov))


@cmbench.hookimpl
def register_metrics():
    """l2 (every data set) and Mahalanobis (data sets with a known covariance)."""
    return [
        cmbench.Metric("l2", l2, description="l2 distance to the true mean"),
        cmbench.Metric("mahalanobis", mahalanobis,
                       description="Mahalanobis distance to the true mean (pseudo-inverse covariance; "
                                   "NaN when the covariance is unknown)"),
    ]
