"""Non-Gaussian inlier families with an analytic mean and covariance: Student t, Laplace,
Poisson and a three-component Gaussian mixture.

They are the non-Gaussian inliers of Anderson and Phillips, "Robust High-Dimensional
Mean Estimation With Low Data Size, an Empirical Study" (TMLR 2025), with their
parametrisation as defaults (true mean 5 in every coordinate, unit scale; the
mixture centred at 0). Each draws N i.i.d. rows in d dimensions from ``rng`` and
returns the distribution's own mean and covariance as the truth, so that an
adversary that needs them (``needs_truth``) and the Mahalanobis metric read the
analytic values, not sample estimates. This built-in plugin registers them itself
(`register_datasets`), listed after `cmbench.builtins.datasets`.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

import cmbench
from cmbench.data import DataError

from .sample_sizes import sample_size

__all__ = ["load_student_t", "load_laplace", "load_poisson", "load_gaussian_mixture", "FAMILIES"]


def family_size(N: Optional[int] = 1000, d: int = 10, **_) -> tuple[int, int]:
    """The (N, d) of a family's parameters, without drawing (the data sets' ``shape``)."""
    return sample_size("family", d, N)


def _number(name: str, key: str, value, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not np.isfinite(value) \
            or not value > low:
        raise DataError(f"data set {name}: {key} = {value!r} must be a number > {low:g}")
    return float(value)


def _columns(d: int) -> tuple:
    return tuple(f"x{i + 1}" for i in range(d))


def load_student_t(*, instance, rng, N: int = 1000, d: int = 10, df: float = 3.0, mean: float = 5.0,
                   scale: float = 1.0) -> cmbench.Data:
    """Multivariate Student t: ``x = mean + scale * g * sqrt(df / c)``, g ~ N(0, I_d), c ~ chi^2(df)
    (one c per row, so the coordinates are dependent).

    Anderson and Phillips' ``t_data`` (df = 3, mean 5, scale matrix I). The covariance is
    ``scale^2 df / (df - 2) I_d``, defined for df > 2 (3 I_d at their defaults).
    """
    N, d = sample_size("student-t", d, N)
    df = _number("student-t", "df", df, 2.0)
    scale = _number("student-t", "scale", scale)
    r = np.random.default_rng(rng)
    c = r.chisquare(df, size=N)
    X = r.standard_normal((N, d))
    X *= (scale * np.sqrt(df / c))[:, None]
    X += float(mean)
    return cmbench.Data(X=X, mean=np.full(d, float(mean)), cov=scale ** 2 * df / (df - 2.0) * np.eye(d),
                        rank=d, columns=_columns(d))


def load_laplace(*, instance, rng, N: int = 1000, d: int = 10, mean: float = 5.0,
                 scale: float = 1.0) -> cmbench.Data:
    """Independent Laplace coordinates with location ``mean`` and ``scale`` b: covariance 2 b^2 I_d.

    Anderson and Phillips' ``laplace_data`` with their mean 5 and scale 1.
    """
    N, d = sample_size("laplace", d, N)
    scale = _number("laplace", "scale", scale)
    X = np.random.default_rng(rng).laplace(loc=float(mean), scale=scale, size=(N, d))
    return cmbench.Data(X=X, mean=np.full(d, float(mean)), cov=2.0 * scale ** 2 * np.eye(d), rank=d,
                        columns=_columns(d))


def load_poisson(*, instance, rng, N: int = 1000, d: int = 10, lam: float = 5.0) -> cmbench.Data:
    """Independent Poisson(lam) coordinates: mean and variance lam (Anderson and Phillips: lam = 5)."""
    N, d = sample_size("poisson", d, N)
    lam = _number("poisson", "lam", lam)
    X = np.random.default_rng(rng).poisson(lam=lam, size=(N, d)).astype(np.float64)
    return cmbench.Data(X=X, mean=np.full(d, lam), cov=lam * np.eye(d), rank=d, columns=_columns(d))


def load_gaussian_mixture(*, instance, rng, N: int = 1000, d: int = 10, offset: float = 1.0) -> cmbench.Data:
    """Three equally likely Gaussians N(0, I), N(offset 1, I), N(-offset 1, I) (Anderson and Phillips'
    ``gaussian_mixture_data``, offset 1).

    Each row picks its component with probability 1/3. The mean is 0; the covariance is
    ``I + (2/3) offset^2 1 1^T`` (within-component I plus the spread of the centres).
    """
    N, d = sample_size("gaussian-mixture", d, N)
    offset = float(offset)
    if not np.isfinite(offset):
        raise DataError(f"data set gaussian-mixture: offset = {offset!r} must be finite")
    r = np.random.default_rng(rng)
    component = r.integers(0, 3, size=N)
    X = r.standard_normal((N, d))
    X += (offset * np.array([0.0, 1.0, -1.0]))[component][:, None]
    cov = np.eye(d) + (2.0 / 3.0) * offset ** 2 * np.ones((d, d))
    return cmbench.Data(X=X, mean=np.zeros(d), cov=cov, rank=d, columns=_columns(d))


_SIZE = {"N": (2, None), "d": (1, None)}

FAMILIES = (
    cmbench.Dataset("student-t", load_student_t, shape=family_size,
                    ranges={**_SIZE, "df": (2.0, None, "()"), "scale": (0.0, None, "()"), "mean": (None, None)},
                    description="multivariate Student t(df) around mean (df > 2; covariance df/(df-2) scale^2 I)"),
    cmbench.Dataset("laplace", load_laplace, shape=family_size,
                    ranges={**_SIZE, "scale": (0.0, None, "()"), "mean": (None, None)},
                    description="independent Laplace coordinates (location mean, scale b; covariance 2 b^2 I)"),
    cmbench.Dataset("poisson", load_poisson, shape=family_size, ranges={**_SIZE, "lam": (0.0, None, "()")},
                    description="independent Poisson(lam) coordinates (mean and variance lam)"),
    cmbench.Dataset("gaussian-mixture", load_gaussian_mixture, shape=family_size,
                    ranges={**_SIZE, "offset": (None, None)},
                    description="three equally likely N(0, I), N(offset 1, I), N(-offset 1, I) (mean 0)"),
)



@cmbench.hookimpl
def register_datasets() -> list:
    """The four families, after the data sets of `cmbench.builtins.datasets`."""
    return list(FAMILIES)
