"""The size (N, d) of a drawn data set, from its parameters, without drawing it.

Shared by the Gaussian data set (`cmbench.builtins.datasets`) and the
non-Gaussian families (`cmbench.builtins.distributions`); it registers no
component and imports neither.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from cmbench.data import DataError


def sample_size(name: str, d: int = 10, N: Optional[int] = None,
                samples_per_dim: Optional[float] = None) -> tuple[int, int]:
    """The (N, d) of data set ``name`` drawn with these parameters.

    ``N`` wins when given; else ``N = floor(samples_per_dim * d)``; else 100 d.

    Parameters
    ----------
    name : str
        The data set's name, for the messages.
    d : int
        The dimension, at least 1.
    N : int or None
        The number of rows.
    samples_per_dim : float or None
        Rows per dimension when ``N`` is not given.

    Returns
    -------
    tuple of (int, int)
        ``(N, d)``.

    Raises
    ------
    cmbench.DataError
        A parameter of the wrong type or range, or fewer than 2 rows (the
        message names the data set and the parameter).
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise DataError(f"data set {name}: d = {d!r} must be a positive integer")
    if N is not None:
        if isinstance(N, bool) or not isinstance(N, (int, np.integer)):
            raise DataError(f"data set {name}: N = {N!r} must be an integer")
        rows = int(N)
    else:
        per = 100 if samples_per_dim is None else samples_per_dim
        if isinstance(per, bool) or not isinstance(per, (int, float, np.number)) or not per > 0:
            raise DataError(f"data set {name}: samples_per_dim = {per!r} must be a positive number")
        rows = int(np.floor(per * d))
    if rows < 2:  # fewer rows than dimensions is allowed: the low-data regime (n < d) is a study of its own
        raise DataError(f"data set {name}: N = {rows} rows; need N >= 2")
    return rows, int(d)
