"""Results cubes as a tidy long table: one row per cell, one column per variable.

A cube is six-dimensional (see `cmbench.cube.DIMS`); researchers work with
long tables (pandas, R, SQL, spreadsheets). `to_frame` flattens a cube to one
row per (dataset, instance, adversary, budget, recoverer, estimator) cell. The
columns are derived from the cube's variables by their dims, not from a fixed
list, so a variable added to cubes later (a recoverer's diagnostic, a new
metric) flows into the table without a change here: a variable over a subset of
the dims (the corruption's distances over the first four, a recoverer's
diagnostics over the first five) is repeated on every cell it covers.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from . import cube as cubes
from .errors import UserError
from .files import check_target, replaced
from .output import writable_folder

__all__ = ["to_frame", "frames", "export", "FORMATS"]

#: file extension -> format written by `export`
FORMATS = {".parquet": "parquet", ".csv": "csv"}
#: leading columns, in order; the cube's variables follow
ID_COLUMNS = ("cube", "suite", "experiment", *cubes.DIMS, "method")


def to_frame(cube: "xr.Dataset | str | os.PathLike | Mapping[str, xr.Dataset] | Sequence") -> pd.DataFrame:
    """Results cubes as a tidy DataFrame, one row per cell.

    Parameters
    ----------
    cube : an ``xarray.Dataset`` as the runner writes it; the path of a
        netCDF cube (read through `cmbench.cube.load`); a suite's output folder
        (``<out>/<suite>``: every ``*.nc`` in it, by name); the dict of cubes
        `cmbench.run_suite` returns; or a list of any of these. Several cubes
        give one table (`frames`).

    Returns
    -------
    DataFrame with columns ``experiment``, the six coordinates (``dataset``,
    ``instance``, ``adversary``, ``budget``, ``recoverer``, ``estimator``),
    ``method`` (the suite's label of the recoverer + estimator pair, labels
    sharing a pair joined with ", "; ``recoverer+estimator`` for a pair the
    suite names none), one column ``p_<dim>_<param>`` per component parameter
    the suite set or varied (``p_dataset_N``, ``p_estimator_limit``: the cube's
    coordinates ``<dim>_<param>``, numbers as floats with NaN where a component
    lacks the parameter, other values as strings with ""), then every data
    variable whose dims are among the six: the metrics, ``status``, ``error``,
    ``seconds``, the recovery and corruption variables and any diagnostics.
    Rows are in the cube's C order (estimator fastest). Variables with a
    dimension outside the six cannot be one value per cell and are left out.

    Raises
    ------
    cmbench.errors.UserError
        The path is not a readable cube (or a folder without one), or the cube
        lacks a dimension.
    """
    if not isinstance(cube, xr.Dataset) and (not isinstance(cube, (str, os.PathLike)) or Path(cube).is_dir()):
        return frames(cube)
    ds = cubes.load(Path(cube)) if not isinstance(cube, xr.Dataset) else cube
    missing = [d for d in cubes.DIMS if d not in ds.dims]
    if missing:
        raise UserError(f"{_name(ds, cube)}: not a results cube: it lacks dimension(s) "
                        f"{', '.join(missing)}")
    params = {cubes.param_name(dim, p): f"p_{cubes.param_name(dim, p)}"
              for dim, ps in cubes.params_of(ds).items() for p in ps}
    names = _variables(ds)
    other = [c for c in ds.coords if c not in cubes.DIMS and c not in params]
    # xarray repeats a variable over the dims it lacks; rows in C order, estimator fastest
    df = ds[names].drop_vars(other, errors="ignore").to_dataframe(dim_order=list(cubes.DIMS)).reset_index()
    df = df[[*cubes.DIMS, *params, *names]].rename(columns=params)
    for col in df.columns[df.dtypes == object]:  # bytes (netCDF char arrays) as str
        df[col] = cubes.decoded(df[col].to_numpy())
    labels = _method_labels(ds, _name(ds, cube)).ravel()
    df.insert(0, "experiment", str(ds.attrs.get("experiment", "")))
    df.insert(7, "method", np.tile(labels, len(df) // max(labels.size, 1)))
    return df


def frames(sources: Iterable[xr.Dataset | str | os.PathLike]) -> pd.DataFrame:
    """Several cubes in one table, rows of each cube after the previous one's.

    Cubes of one suite (its experiments) concatenate with their ``experiment``
    column telling them apart; when the cubes come from more than one suite a
    ``suite`` column is added first. A column one cube lacks (a variable added
    in a later version) is empty (NaN) in the other cubes' rows.

    Raises
    ------
    cmbench.errors.UserError
        No cube given, or a path is not a readable cube.
    """
    parts, suites, names, seen = [], [], [], []
    for i, src in enumerate(cube_sources(sources)):
        ds = cubes.load(Path(src)) if not isinstance(src, xr.Dataset) else src
        if not isinstance(src, xr.Dataset):  # (loaded: the file exists)
            if any(os.path.samefile(src, other) for other in seen):
                raise UserError(f"{src}: the same cube is given twice; its rows would be duplicated")
            seen.append(src)
        cubes.methods(ds, _name(ds, src))  # refused in the words the report uses
        parts.append(to_frame(ds))
        suites.append(str(ds.attrs.get("suite", "")))
        names.append(str(src) if not isinstance(src, xr.Dataset) else f"cube {i + 1}")
    if not parts:
        raise UserError("no results cube given to export")
    if len(set(suites)) > 1:
        for df, s in zip(parts, suites):
            df.insert(0, "suite", s)
    keys = [(s, str(df["experiment"].iloc[0]) if len(df) else "") for df, s in zip(parts, suites)]
    if len(set(keys)) < len(keys):  # two copies or two runs of one experiment: say which cube a row is from
        for df, name in zip(parts, names):
            df.insert(0, "cube", name)
    out = pd.concat(parts, ignore_index=True, sort=False)
    lead = [c for c in ID_COLUMNS if c in out.columns]
    lead += [c for c in out.columns if c.startswith("p_") and c not in lead]  # parameters after the ids
    return out[lead + [c for c in out.columns if c not in lead]]


def export(sources: Sequence[xr.Dataset | str | os.PathLike], out: str | os.PathLike) -> tuple[Path, int]:
    """Write the tidy table of ``sources`` to ``out``, Parquet or CSV by its extension.

    The file is written to a temporary name beside ``out`` and moved into place,
    so a failed export leaves no half-written table.

    Returns
    -------
    ``(path, rows)``.

    Raises
    ------
    cmbench.errors.UserError
        The extension is neither ``.parquet`` nor ``.csv``; a cube cannot be read;
        Parquet is asked for and pyarrow is not installed.
    """
    out = Path(out)
    fmt = FORMATS.get(out.suffix.lower())
    if fmt is None:
        raise UserError(f"{out}: unknown table format {out.suffix or '(no extension)'!r}; "
                        f"use {' or '.join(FORMATS)}")
    paths = [Path(src) for src in sources if not isinstance(src, xr.Dataset)]
    check_target(out, inputs=paths, kind=fmt)
    df = frames(sources)
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UserError(f"{out}: writing Parquet needs pyarrow (pip install pyarrow); "
                            f"or export to .csv") from None
    writable_folder(out.parent, "export folder")
    with replaced(out, prefix=f".{out.stem}.", suffix=out.suffix + ".part") as tmp:
        if fmt == "parquet":
            df.to_parquet(tmp, index=False, engine="pyarrow")
        else:
            df.to_csv(tmp, index=False)
    return out, len(df)


def cube_sources(given) -> list:
    """Cubes and cube paths from what `to_frame` accepts: a run's dict (its values), a
    suite folder (its ``*.nc`` by name), a list of these, a cube or a path."""
    if isinstance(given, xr.Dataset):
        return [given]
    if isinstance(given, (str, os.PathLike)):
        path = Path(given)
        if not path.is_dir():
            return [path]
        found = sorted(path.glob("*.nc"))
        if not found:
            raise UserError(f"{path}: a folder with no results cube (*.nc); give a cube, or the "
                            "folder <out>/<suite> a run wrote")
        return found
    if isinstance(given, Mapping):
        given = list(given.values())
    try:
        items = list(given)
    except TypeError:
        raise UserError(f"to_frame takes a cube, a path, a suite folder or the dict run_suite returns; "
                        f"got {type(given).__name__}") from None
    return [s for item in items for s in cube_sources(item)]


def _variables(ds: xr.Dataset) -> list[str]:
    """Data variables that are one value per cell (or per a coarser block of cells).

    Metrics come first (in the cube's ``metrics`` attribute order), then status
    and error, then the rest in the cube's order.
    """
    fits = [v for v in ds.data_vars if set(ds[v].dims) <= set(cubes.DIMS)]
    metrics = cubes.attr_json(ds, "metrics", None) or [m for m in ("l2", "mahalanobis") if m in fits]
    if isinstance(metrics, str):
        metrics = [metrics]
    head = [m for m in metrics if m in fits] + [v for v in ("status", "error") if v in fits]
    return head + [v for v in fits if v not in head]


def _method_labels(ds: xr.Dataset, source: str) -> np.ndarray:
    """(recoverer, estimator) -> the suite's method label(s), as a 2-D object array."""
    recs = [str(r) for r in cubes.decoded(ds["recoverer"].values)]
    ests = [str(e) for e in cubes.decoded(ds["estimator"].values)]
    labels = np.full((len(recs), len(ests)), "", dtype=object)
    for label, (r, e) in cubes.methods(ds, source).items():  # a pair the suite names none: as claims name it
        i, j = recs.index(r), ests.index(e)
        labels[i, j] = f"{labels[i, j]}, {label}" if labels[i, j] else label
    for i, j in zip(*np.nonzero(labels == "")):
        labels[i, j] = f"{recs[i]}+{ests[j]}"
    return labels


def _name(ds: xr.Dataset, src) -> str:
    return str(src) if not isinstance(src, xr.Dataset) else f"cube {ds.attrs.get('experiment', '?')!r}"
