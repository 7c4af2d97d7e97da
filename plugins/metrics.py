"""The built-in error metrics: l2 and Mahalanobis distance to the true mean, and the l2 error
against the inliers' own (excess and ratio).

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


def excess_l2(mu_hat: np.ndarray, data: cmbench.Data, *, inlier_mean: np.ndarray | None = None) -> float:
    """Excess l2 error, DKK17's Figure 1 measure: ``||mu_hat - mu|| - ||m - mu||``,
    m the mean of the rows the adversary left untouched (the sampling error
    the estimator could not beat without the noise).

    Negative when the estimate is closer to the truth than the inliers' mean.
    The runner passes ``inlier_mean`` (declared in ``inputs``); without it the
    metric is undefined.
    """
    if inlier_mean is None:
        raise cmbench.Undefined("excess-l2 needs the mean of the untouched rows (inlier_mean)")
    mu = np.asarray(data.mean, dtype=float)
    return float(np.linalg.norm(np.asarray(mu_hat, dtype=float) - mu)
                 - np.linalg.norm(np.asarray(inlier_mean, dtype=float) - mu))


def inlier_ratio(mu_hat: np.ndarray, data: cmbench.Data, *, inlier_mean: np.ndarray | None = None) -> float:
    """The l2 error over the inliers' own: ``||mu_hat - mu|| / ||m - mu||``, m the mean of the
    inliers (the rows the adversary did not replace; under deletion the whole clean sample).

    1 is the error of the inliers' mean (Anderson and Phillips' ``good_sample_mean``, their
    reference curve), so "within 5% of the inliers' error" reads ``< 1.05`` at any n and d.
    Undefined (NaN) without the inliers' mean or when it equals the truth.
    """
    if inlier_mean is None:
        raise cmbench.Undefined("inlier-ratio needs the inliers' mean (inlier_mean)")
    mu = np.asarray(data.mean, dtype=float)
    ref = float(np.linalg.norm(np.asarray(inlier_mean, dtype=float) - mu))
    if not ref > 0:
        raise cmbench.Undefined("the inliers' mean is the true mean: no ratio to it")
    return float(np.linalg.norm(np.asarray(mu_hat, dtype=float) - mu)) / ref


@cmbench.hookimpl
def register_metrics():
    """l2 (every data set), Mahalanobis (data sets with a known covariance) and excess l2."""
    return [
        cmbench.Metric("l2", l2, description="l2 distance to the true mean"),
        cmbench.Metric("mahalanobis", mahalanobis,
                       description="Mahalanobis distance to the true mean (pseudo-inverse covariance; "
                                   "NaN when the covariance is unknown)"),
        cmbench.Metric("excess-l2", excess_l2, params={}, inputs=("inlier_mean",),
                       description="l2 error less the untouched rows' l2 error (DKK17's excess error)"),
        cmbench.Metric("inlier-ratio", inlier_ratio, params={}, inputs=("inlier_mean",),
                       description="l2 error over the inliers' mean's l2 error (1 = as good as the inliers)"),
    ]
