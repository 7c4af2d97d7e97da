"""Peer imputers from scikit-learn, for comparison with the paper's recoverers.

scikit-learn is an optional extra (``pip install 'cmbench[sklearn]'``). It is
imported only when an imputer runs; when it is not installed the imputers are
still registered, say so in their description, and raise
`cmbench.NotApplicable`, so ``cmbench plugins`` lists them instead of failing.
"""
from __future__ import annotations

import importlib.util
import sys
import warnings

import numpy as np

import cmbench

_NEEDS = " (needs scikit-learn: pip install 'cmbench[sklearn]')"


def _have_sklearn() -> bool:
    """Is scikit-learn importable? Cheap: finds the package without importing it."""
    if "sklearn" in sys.modules:
        return sys.modules["sklearn"] is not None
    try:
        return importlib.util.find_spec("sklearn") is not None
    except (ImportError, ValueError):
        return False


def _impute_module():
    try:
        import sklearn.impute
        from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    except ImportError:
        raise cmbench.NotApplicable("scikit-learn is not installed") from None
    return sklearn.impute


def _fit_columns(X: np.ndarray, make) -> np.ndarray:
    """Run a scikit-learn imputer on the columns that have a visible entry.

    scikit-learn drops all-missing columns from its output; those stay NaN
    here (nothing identifies them), so the shape is kept. Returns (N, n).
    """
    X = np.asarray(X, dtype=float)
    out = X.copy()
    mask = np.isnan(X)
    if not mask.any():
        return out
    cols = np.flatnonzero(~mask.all(axis=0))
    if cols.size == 0:
        return out
    out[:, cols] = make().fit_transform(X[:, cols])
    return out


def _seed(rng) -> int:
    return int(np.random.default_rng(rng).integers(2**31 - 1))


def iterative_imputer(X: np.ndarray, *, rng=None, structure=None, rank=None,
                      max_iter: int = 10, tol: float = 1e-3,
                      sample_posterior: bool = False) -> np.ndarray:
    """scikit-learn's IterativeImputer (MICE-style chained Bayesian ridge regressions).

    Parameters
    ----------
    X : (N, n) float, NaN = missing.
    max_iter, tol, sample_posterior : passed to ``IterativeImputer``;
        ``random_state`` is drawn from ``rng``.

    Returns
    -------
    (N, n) float; all-missing columns stay NaN.
    """
    impute = _impute_module()
    from sklearn.exceptions import ConvergenceWarning

    seed = _seed(rng)
    with warnings.catch_warnings():
        # Stopping at max_iter is this peer's documented behaviour, not news.
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _fit_columns(X, lambda: impute.IterativeImputer(
            max_iter=max_iter, tol=tol, sample_posterior=sample_posterior, random_state=seed))


def knn_imputer(X: np.ndarray, *, rng=None, structure=None, rank=None,
                n_neighbors: int = 5, weights: str = "uniform") -> np.ndarray:
    """scikit-learn's KNNImputer: mean of the nearest rows (nan-Euclidean distance).

    Parameters
    ----------
    X : (N, n) float, NaN = missing.
    n_neighbors, weights : passed to ``KNNImputer``.

    Returns
    -------
    (N, n) float; all-missing columns stay NaN.
    """
    impute = _impute_module()
    return _fit_columns(X, lambda: impute.KNNImputer(n_neighbors=n_neighbors, weights=weights))


@cmbench.hookimpl
def register_recoverers():
    note = "" if _have_sklearn() else _NEEDS
    return [
        cmbench.Recoverer(
            "iterative-imputer", iterative_imputer,
            params={"max_iter": 10, "tol": 1e-3, "sample_posterior": False},
            choices={"sample_posterior": (True, False)}, ranges={"max_iter": (1, None), "tol": (0.0, None)},
            modes=("missing",), rank_hint=False,
            description="peer: scikit-learn IterativeImputer (chained regressions)" + note),
        cmbench.Recoverer(
            "knn-imputer", knn_imputer, choices={"weights": ("uniform", "distance")},
            ranges={"n_neighbors": (1, None)},
            modes=("missing",), rank_hint=False,
            description="peer: scikit-learn KNNImputer (mean of nearest rows)" + note),
    ]
