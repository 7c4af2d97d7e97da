"""The one ranking of methods that the terminal, the PDF, the HTML and the tables show.

`CRITERION` states it; `rank` gives it as a DataFrame. A *cell* is one (data
set, adversary, budget); a method's value there is its mean error over the
instances that ran. In every cell with a value, methods are ranked by it (1 =
lowest error, ties sharing their average rank); a method without a value there
(undefined, not applicable, failed) ranks below every method that has one.
Methods are ordered by their average rank over the cells, ties by mean error.
The report computes it (`cmbench.report.content.ranks`); this module reads the
cube it is given.
"""
from __future__ import annotations

import os

import pandas as pd
import xarray as xr

from .report.content.ranks import CRITERION, ranked

__all__ = ["rank", "CRITERION"]


def rank(cube: "xr.Dataset | str | os.PathLike", metric: str | None = None) -> pd.DataFrame:
    """The methods of a results cube, best first.

    Parameters
    ----------
    cube : a results cube (``xarray.Dataset``) or the path of one.
    metric : the error to rank by; default the cube's first metric (as the terminal summary).

    Returns
    -------
    DataFrame with columns ``rank`` (1 = best; <NA> for a method with no value in any cell,
    listed last), ``method``, ``recoverer``,
    ``estimator``, ``mean_rank``, ``mean_error``, ``cells`` (cells where the
    method has a value) and ``total_cells``, plus ``metric``.

    Raises
    ------
    cmbench.errors.UserError
        The cube cannot be read, or has no such metric.
    """
    from .errors import UserError
    from .report.load import Cube, load_cube

    loaded = cube if isinstance(cube, Cube) else load_cube(cube)
    if metric is None:
        metric = loaded.metrics[0]
    if metric not in loaded.metrics:
        raise UserError(f"{loaded.source}: no metric {metric!r}; the cube has {', '.join(loaded.metrics)}")
    return ranked(loaded, metric)
