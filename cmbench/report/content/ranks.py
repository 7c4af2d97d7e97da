"""The one ranking of methods that the terminal, the PDF, the HTML and the tables show.

`CRITERION` states it; `ranked` gives it as a DataFrame with a ``rank``
column (`cmbench.ranking.rank` is the public entry, from a cube or its path).
A *cell* is one (data set, adversary, budget); a method's value there is its
mean error over the instances that ran. In every cell with a value, methods
are ranked by it (1 = lowest error, ties sharing their average rank); a method
without a value there (undefined, not applicable, failed) ranks below every
method that has one. Methods are ordered by their average rank over the
cells, ties by mean error.
"""
from __future__ import annotations

import pandas as pd

from ..load import Cube
from .tables import ranking

#: the ranking criterion, stated once wherever a ranking is shown
CRITERION = ("ranked by average rank over the (data set, adversary, budget) cells (1 = lowest mean "
             "error over the instances; a method without a value in a cell ranks below those with one), "
             "ties by mean error")


def ranked(cube: Cube, metric: str) -> pd.DataFrame:
    """The methods of a loaded cube, best first, by ``metric`` (one of ``cube.metrics``).

    Parameters
    ----------
    cube : Cube
        A loaded cube (`cmbench.report.load.load_cube`).
    metric : str
        The error to rank by.

    Returns
    -------
    DataFrame
        Columns ``rank`` (1 = best; <NA> for a method with no value in any cell,
        listed last), ``method``, ``recoverer``, ``estimator``, ``mean_rank``,
        ``mean_error``, ``cells`` (cells where the method has a value),
        ``total_cells`` and ``metric``.
    """
    df = ranking(cube, metric)
    # a method without a value in any cell is listed (last) but has no rank: <NA>, not k
    valued = (df["cells"] > 0).to_numpy()
    df.insert(0, "rank", pd.array([i + 1 if v else pd.NA for i, v in enumerate(valued)], dtype="Int64"))
    df["metric"] = metric
    return df[["rank", "method", "recoverer", "estimator", "mean_rank", "mean_error", "cells",
               "total_cells", "metric"]]
