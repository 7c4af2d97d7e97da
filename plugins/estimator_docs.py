"""The docstring sections every built-in estimator shares, written once.

`contract_doc` completes an estimator's docstring with the ``X`` and ``rng``
parameters and the Returns and Raises sections; `COORDINATE_WISE` and
`COMPLETE_ROWS` say how the two families of estimators use missing entries.
"""
from __future__ import annotations

from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)

#: the coordinate-wise estimators: each column uses its visible entries
COORDINATE_WISE = dict(X="Missing entries are NaN; each column uses its visible entries.",
                       undefined="When a column has no visible entry (the message names its index).")
#: the multivariate estimators: the complete rows only
COMPLETE_ROWS = dict(X="Rows holding a NaN are dropped; the complete rows are used.",
                     undefined="When no row is complete.")


def contract_doc(*, X: str, undefined: str,
                 rng: str = "Unused: the estimate is deterministic.") -> Callable[[F], F]:
    """Complete an estimator's docstring with the sections every estimator shares.

    ``X`` and ``rng`` are put first in its Parameters section (the function's
    own docstring lists only its own parameters), and Returns and Raises are
    appended: written once, here, with what differs between estimators (how
    NaN entries are used, when the estimate is undefined) passed in.

    Parameters
    ----------
    X : str
        How the estimator uses the sample's missing entries.
    undefined : str
        When it raises `cmbench.Undefined`.
    rng : str
        What it uses the random generator for.

    Returns
    -------
    callable
        A decorator that rewrites the function's ``__doc__`` and returns the function.
    """
    shared = ("    X : ndarray of shape (N, n)\n        The sample, not modified. " + X + "\n"
              "    rng : numpy.random.Generator or None\n        " + rng + "\n")
    tail = ("\n    Returns\n    -------\n    ndarray of shape (n,)\n        The estimate of the mean; finite.\n"
            "\n    Raises\n    ------\n    cmbench.Undefined\n        " + undefined + "\n    ")

    def document(fn: F) -> F:
        if fn.__doc__ is None:  # python -OO strips docstrings
            return fn
        head = "    Parameters\n    ----------\n"
        doc = fn.__doc__.rstrip() + "\n"
        doc = doc.replace(head, head + shared) if head in doc else doc + "\n" + head + shared
        fn.__doc__ = doc + tail
        return fn

    return document
