"""The one ranking of methods that the terminal, the PDF, the HTML and the tables show.

`CRITERION` states it; `rank` gives it as a DataFrame. A *cell* is one (data
set, adversary, budget); a method's value there is its mean error over the
instances that ran. In every cell with a value, methods are ranked by it (1 =
lowest error, ties sharing their average rank); a method without a value there
(undefined, not applicable, failed) ranks below every method that has one.
Methods are ordered by their average rank over the cells, ties by mean error.
"""
from __future__ import annotations

import os

import pandas as pd
import xarray as xr

__all__ = ["rank", "CRITERION"]

#: the ranking criterion, stated once wherever a ranking is shown
CRITERION = ("ranked by average rank over the (data set, adversary, budget) cells (1 = lowest mean "
             "error over the instances; a method without a value in a cell ranks below those with one), "
             "ties by mean error")


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
    from .report.content.tables import ranking

    loaded = cube if isinstance(cube, Cube) else load_cube(cube)
    if metric is None:
        metric = loaded.metrics[0]
    if metric not in loaded.metrics:
        raise UserError(f"{loaded.source}: no metric {metric!r}; the cube has {', '.join(loaded.metrics)}")
    df = ranking(loaded, metric)
    # a method without a value in any cell is listed (last) but has no rank: <NA>, not k
    valued = (df["cells"] > 0).to_numpy()
    df.insert(0, "rank", pd.array([i + 1 if v else pd.NA for i, v in enumerate(valued)], dtype="Int64"))
    df["metric"] = metric
    return df[["rank", "method", "recoverer", "estimator", "mean_rank", "mean_error", "cells",
               "total_cells", "metric"]]
