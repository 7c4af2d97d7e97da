"""Tables for papers: the ranking and the mean-error tables as CSV and LaTeX.

`cmbench report ... --tables DIR` writes, per experiment and metric,

* ``<experiment>-ranking-<metric>.csv`` / ``.tex``: the report's ranking table
  (mean error, average rank, cells with a value), best first;
* ``<experiment>-mean-error-<metric>.csv``: one row per method and cell (data
  set, adversary, budget): the mean and standard deviation over the ok instances,
  their count, and whether it is the cell's lowest mean;
* ``<experiment>-mean-error-<metric>.tex``: mean error per method (rows) and data
  set (columns; per adversary when there are several), over the budgets and
  instances where the method's cells are ok, as its caption says.

The CSV files are for programs: every numeric column holds plain numbers at full
precision (empty where there is none), and what a reader would see marked is a
column of its own: ``best_*`` (true/false) and, in the ranking, ``complete`` (the
mean error covers every cell). In LaTeX the best value of each numeric column is
bold; a mean over fewer cells than the column has (the method is undefined or
failed somewhere) carries a dagger and cannot be marked best: a method must not
win by skipping the hard cells. The LaTeX uses booktabs rules
(``\\usepackage{booktabs}``) and three significant digits.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ...files import check_target, replaced
from ..layout import slug
from ..load import Cube, load_cube, metric_name, summarize
from .significance import CELL_RANK
from .tables import finite_mean, ranking

DAGGER = "†"


def mean_error_table(cube: Cube, metric: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean error per method and (data set, adversary), over budgets and instances.

    Each method's value per (data set, adversary, budget) is its mean over the ok
    instances (as in the curves); the table averages those over the budgets
    where the method has one.

    Returns
    -------
    ``(means, complete)``: two DataFrames indexed by method label, one column per
    data set (named ``"dataset (adversary)"`` when the cube has several
    adversaries); ``complete`` says whether the mean covers every budget.
    """
    mean = summarize(cube.ok_values(metric)).mean  # (method, dataset, adversary, budget)
    several = len(cube.adversaries) > 1
    means, complete = {}, {}
    for d in cube.datasets:
        for a in cube.adversaries:
            vals = mean.sel({"dataset": d, "adversary": a}).values  # (method, budget)
            has = np.isfinite(vals)
            if not has.any():
                continue
            col = f"{d} ({a})" if several else d
            means[col] = finite_mean(vals)
            # a budget where no method has a value does not count against anyone
            complete[col] = has[:, has.any(0)].all(1)
    index = pd.Index(list(cube.methods), name="method")
    return pd.DataFrame(means, index=index), pd.DataFrame(complete, index=index)


def best_mask(values: pd.DataFrame, eligible: pd.DataFrame | None = None) -> pd.DataFrame:
    """Where each column's lowest value is (ties all marked), among eligible rows."""
    ok = values.notna() if eligible is None else values.notna() & eligible
    masked = values.where(ok)
    return masked.eq(masked.min(axis=0), axis=1) & ok


def write_tables(cubes: Sequence[str | os.PathLike | Cube], out_dir: str | os.PathLike) -> list[Path]:
    """Write the ranking and mean-error tables of each cube, as CSV and LaTeX.

    Parameters
    ----------
    cubes : netCDF paths, Datasets or loaded `Cube` objects.
    out_dir : folder to write into (made if absent).

    Returns
    -------
    The files written, in order.
    """
    loaded = [c if isinstance(c, Cube) else load_cube(c, index=i) for i, c in enumerate(cubes)]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    taken: set[str] = set()
    for cube in loaded:
        # two cubes whose experiment names give one file name (A/e1.nc and B/e1.nc; a+b and a-b)
        # write apart: e1, e1-2
        name = stem = slug(cube.experiment, "table")
        n = 2
        while name.casefold() in taken:
            name, n = f"{stem}-{n}", n + 1
        taken.add(name.casefold())
        for metric in cube.metrics:
            what = metric_name(metric, math=False)
            stem = f"{name}-ranking-{slug(metric, 'table')}"
            df = ranking(cube, metric)
            if not np.isfinite(df["mean_rank"]).any():
                continue
            numbers = df[["mean_error", "mean_rank"]]
            # ranks already put a gap below every value; a mean error over fewer cells is biased
            full = pd.DataFrame({"mean_error": df["cells"] == df["total_cells"],
                                 "mean_rank": np.ones(len(df), bool)})
            best = best_mask(numbers, full)
            marks = pd.DataFrame({c: np.where(full[c], "", DAGGER) for c in numbers.columns})
            table = pd.DataFrame({
                "method": df["method"], "recoverer + estimator": df["recoverer"] + " + " + df["estimator"],
                "mean error": [fmt_sig(v) for v in df["mean_error"]],
                CELL_RANK: [fmt_sig(v) for v in df["mean_rank"]],
                "cells": [f"{c}/{t}" for c, t in zip(df["cells"], df["total_cells"])],
            })
            caption = (f"{cube.experiment}: methods by {what}, best first. {CELL_RANK.capitalize()}: the rank of "
                       f"the instance means in each (data set, adversary, budget) cell, averaged over the cells, 1 = lowest error; a method without a "
                       f"value in a cell ranks below those with one. Best per column in bold; "
                       f"{DAGGER} mean error over fewer cells than the others (not marked best).")
            csv = pd.DataFrame({
                "method": df["method"], "recoverer": df["recoverer"], "estimator": df["estimator"],
                "mean_error": df["mean_error"], "mean_rank": df["mean_rank"],
                "cells": df["cells"], "total_cells": df["total_cells"],
                "complete": full["mean_error"], "best_mean_error": best["mean_error"],
                "best_mean_rank": best["mean_rank"]})
            written += _write(table, {"mean error": (best["mean_error"], marks["mean_error"]),
                                      CELL_RANK: (best["mean_rank"], marks["mean_rank"])},
                              out / stem, caption, label=f"tab:{stem}", csv=csv)
            means, complete = mean_error_table(cube, metric)
            if means.empty:
                continue
            best = best_mask(means, complete)
            table = pd.DataFrame({"method": means.index})
            marked = {}
            for col in means.columns:
                table[col] = [fmt_sig(v) for v in means[col]]
                marked[col] = (best[col].to_numpy(),
                               np.where(complete[col].to_numpy() | means[col].isna().to_numpy(), "", DAGGER))
            stem = f"{name}-mean-error-{slug(metric, 'table')}"
            caption = (f"{cube.experiment}: mean {what} per method and data set, over budgets and "
                       f"instances. Lowest per column in bold; {DAGGER} mean over fewer budgets "
                       f"(the method is undefined or failed at the others).")
            written += _write(table, marked, out / stem, caption, label=f"tab:{stem}",
                              csv=cell_means(cube, metric))
    return written


def cell_means(cube: Cube, metric: str) -> pd.DataFrame:
    """One row per method and cell (data set, adversary, budget) where the method has a value:
    ``mean`` and ``sd`` (ddof 1) over the ok instances, their count ``instances``, and ``best``:
    the cell's lowest mean (ties all true). Nothing is averaged over budgets or data sets."""
    vals = cube.ok_values(metric)  # (method, dataset, instance, adversary, budget)
    summ = summarize(vals)
    dims = ("method", "dataset", "adversary", "budget")
    mean = summ.mean.transpose(*dims)
    sd = vals.std("instance", ddof=1, skipna=True).transpose(*dims)
    count = summ.count.transpose(*dims)
    lowest = mean.min("method", skipna=True)
    frame = pd.DataFrame({
        "mean": mean.values.ravel(), "sd": sd.values.ravel(), "instances": count.values.ravel(),
        "best": (mean == lowest).values.ravel()},
        index=pd.MultiIndex.from_product([[str(v) for v in mean[d].values] for d in dims], names=dims))
    frame = frame.reset_index()
    frame["budget"] = frame["budget"].astype(float)
    return frame[np.isfinite(frame["mean"].to_numpy())].reset_index(drop=True)


def fmt_sig(x: float) -> str:
    """Three significant digits, trailing zeros kept so a column lines up; "--" when missing."""
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:#.3g}".rstrip(".")


def _write(table: pd.DataFrame, marked: dict, stem: Path, caption: str, *, label: str,
           csv: pd.DataFrame) -> list[Path]:
    """``stem``.csv (``csv``: numbers, for programs) and ``stem``.tex (``table``, best in bold), booktabs."""
    tex_cells = {c: [_tex(v) for v in table[c]] for c in table.columns}
    for col, (best, mark) in marked.items():
        best, mark = np.asarray(best, bool), np.asarray(mark, object)
        tex_cells[col] = [(rf"\textbf{{{_tex(v)}}}" if b else _tex(v)) + (r"$^\dagger$" if m else "")
                          for v, m, b in zip(table[col], mark, best)]
    csv_path, tex_path = stem.with_suffix(".csv"), stem.with_suffix(".tex")
    # inside the folder (no symbolic link out of it), never over a file of another kind (a cube, a
    # report), and written to a new file renamed into place: a hard link to a file elsewhere is
    # replaced, never written through
    check_target(csv_path, root=stem.parent, kind="csv")
    check_target(tex_path, root=stem.parent, kind="tex")
    with replaced(csv_path, prefix=f".{csv_path.name}.") as tmp:
        csv.to_csv(tmp, index=False)
    numeric = [c in marked or c == "cells" for c in table.columns]
    lines = [r"% written by cmbench; needs \usepackage{booktabs}",
             r"\begin{table}[ht]", r"\centering", rf"\caption{{{_tex(caption)}}}", rf"\label{{{label}}}",
             r"\begin{tabular}{" + "".join("r" if n else "l" for n in numeric) + "}",
             r"\toprule",
             " & ".join(_tex(c) for c in table.columns) + r" \\",
             r"\midrule"]
    for i in range(len(table)):
        lines.append(" & ".join(tex_cells[c][i] for c in table.columns) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    with replaced(tex_path, prefix=f".{tex_path.name}.") as tmp:
        tmp.write_text("\n".join(lines), encoding="utf-8")
    return [csv_path, tex_path]


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        DAGGER: r"$^\dagger$", "–": "--"}


def _tex(text) -> str:
    return "".join(_TEX.get(ch, ch) for ch in str(text))
