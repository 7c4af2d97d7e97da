"""The results format, and building, saving, loading and checking results cubes.

One `xarray.Dataset` per experiment with dims (dataset, instance, adversary,
budget, recoverer, estimator). This module is the one place
that says what a cube holds: its dims, the cell statuses (and which are
failures), its variables and their dims, how structured attributes are
encoded (JSON strings, which netCDF keeps and `xarray.open_dataset` reads
back) and decoded, how a cube is checked, and the records the runner hands
over for each unit (`UnitResult`), built by the functions below. It imports
neither xarray nor the runner at import time, so that worker processes can
use the format without them.
"""
from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, TypedDict

import numpy as np

from .version import __version__
from .errors import UserError
from .files import replaced

if TYPE_CHECKING:
    import xarray as xr

FORMAT = 1

# ---------------------------------------------------------------- dims
DIMS = ("dataset", "instance", "adversary", "budget", "recoverer", "estimator")
UNIT_DIMS = DIMS[:4]  # a unit: one corruption, what one method's value varies over
RECOVERY_DIMS = DIMS[:5]  # a recovery: one per unit and recoverer

# ---------------------------------------------------------------- statuses
OK, UNDEFINED, NOT_APPLICABLE, FAILED, TIMEOUT = "ok", "undefined", "not-applicable", "failed", "timeout"
STATUSES = (OK, UNDEFINED, NOT_APPLICABLE, FAILED, TIMEOUT)
#: a cell that did not give a value for a reason of its own: a gap with a note, exit code 0
GAPS = (UNDEFINED, NOT_APPLICABLE)
#: a cell that should have given a value: exit code 1, and never cached
FAILURES = (FAILED, TIMEOUT)

# ---------------------------------------------------------------- variables
METRIC_VARS = ("l2", "mahalanobis")  # every cube holds these; an experiment's metrics add theirs
CELL_VARS = (*METRIC_VARS, "seconds", "evaluations")
TEXT_VARS = ("status", "error", "traceback")  # per cell; the traceback of a failed one
RECOVERY_VARS = ("recovered_fraction", "recovery_rmse", "discarded_fraction")
#: a recoverer's own diagnostics (its ``info`` dict), NaN where it reports none
RECOVERY_INFO_VARS = ("converged", "iterations")
#: ``inlier_l2``: the l2 error of the mean of the rows the adversary left untouched (the
#: sample-level studies' "sampling error"; `cmbench.runner.metrics.inlier_mean`)
CORRUPTION_VARS = ("d_entry1", "d_entry_inf", "d_tv", "inlier_l2")
#: every variable the runner writes, with its dims (a metric of a plugin has DIMS too)
VARIABLES = {**{v: DIMS for v in (*CELL_VARS, *TEXT_VARS)},
             **{v: RECOVERY_DIMS for v in (*RECOVERY_VARS, *RECOVERY_INFO_VARS)},
             **{v: UNIT_DIMS for v in CORRUPTION_VARS}}
#: what a file must hold to be read as a cube (a cube of an older run may lack the others)
REQUIRED = ("l2", "mahalanobis", "seconds", "status", "error")


# ---------------------------------------------------------------- unit records
class Record(TypedDict, total=False):
    """What one stage (a corruption, a recovery, an estimate) gave.

    ``status`` is one of `STATUSES`; ``error`` the reason when it is not ok
    (empty otherwise); ``traceback`` the plugin's traceback when it raised;
    ``seconds`` how long the stage took. A stage's numbers are further keys:
    `CORRUPTION_VARS` for a corruption, `RECOVERY_VARS` and ``info`` (the
    recoverer's diagnostics) for a recovery, the metrics and ``evaluations``
    for a cell.
    """

    status: str
    error: str
    traceback: str
    seconds: float


class UnitResult(TypedDict):
    """One unit as a cube is built from it: ``cells[recoverer][estimator]``."""

    corruption: Record
    recovery: dict[str, Record]
    cells: dict[str, dict[str, Record]]


def record(status: str, error: str = "", traceback: str = "", **values: Any) -> Record:
    """A stage's record: its status, its reason, the traceback (kept only when there is one), its numbers."""
    out: Record = {"status": status, "error": error, **values}
    if traceback:
        out["traceback"] = traceback
    return out


def verdict(rec: Mapping) -> Record:
    """A record's status, reason and traceback without its numbers: what a stage passes on to
    the cells that depend on it when it is not ok."""
    return record(rec["status"], rec.get("error", ""), rec.get("traceback", ""))


def uniform_unit(recoverers: Sequence[str], estimators: Sequence[str], corruption: Mapping) -> UnitResult:
    """A unit whose corruption (or data set) is not ok: every recovery and cell takes its verdict."""
    given = verdict(corruption)
    return {"corruption": dict(corruption, status=given["status"], error=given["error"]),
            "recovery": {r: record(given["status"], given["error"]) for r in recoverers},
            "cells": {r: {e: dict(given) for e in estimators} for r in recoverers}}


#: how many distinct errors a `failure_summary` quotes
FIRST_ERRORS = 3


def failure_summary(cubes: dict) -> str:
    """How many cells of ``cubes`` (experiment name -> cube) failed or timed out, of how many,
    with the first `FIRST_ERRORS` distinct errors; ``""`` when none did."""
    bad = total = 0
    first: list[str] = []
    for name, ds in cubes.items():
        status = ds["status"].values
        failed = np.isin(status, FAILURES)
        bad += int(failed.sum())
        total += status.size
        if len(first) < FIRST_ERRORS and failed.any():
            for error in ds["error"].values[failed]:
                line = f"{name}: {error}"
                if line not in first:
                    first.append(line)
                if len(first) == FIRST_ERRORS:
                    break
    if not bad:
        return ""
    return (f"{bad} of {total} cells failed or timed out (their values are NaN); first errors:\n  "
            + "\n  ".join(first))


def failed_cells(result: UnitResult) -> int:
    """How many cells of a unit failed or timed out."""
    return sum(cell["status"] in FAILURES for cells in result["cells"].values() for cell in cells.values())


# ---------------------------------------------------------------- attributes
def encode_attrs(attrs: Mapping[str, Any]) -> dict:
    """Attributes as netCDF keeps them: dicts, lists and tuples as JSON strings."""
    return {k: json.dumps(v) if isinstance(v, (dict, list, tuple)) else v for k, v in attrs.items()}


def attr_json(attrs: "Mapping[str, Any] | xr.Dataset", key: str, default: Any = None,
              source: Optional[str] = None) -> Any:
    """A structured attribute of a cube (its Dataset or its ``attrs``), decoded.

    Parameters
    ----------
    attrs : the cube, or its attributes.
    key : the attribute.
    default : returned when the cube lacks it.
    source : the cube's file, named in the error when the attribute is not JSON.

    Returns
    -------
    The decoded value (an array attribute as a list; a value that is not a
    string as it is).

    Raises
    ------
    UserError
        With ``source``: the attribute is a string but not valid JSON
        (without ``source``: `json.JSONDecodeError`).
    """
    attrs = getattr(attrs, "attrs", attrs)
    raw = attrs.get(key)
    if raw is None:
        return default
    if not isinstance(raw, str):
        return raw.tolist() if isinstance(raw, np.ndarray) else raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        if source is None:
            raise
        raise UserError(f"{source}: attribute {key!r} is not valid JSON ({exc})") from exc


def decoded(values: np.ndarray) -> np.ndarray:
    """Bytes (netCDF char arrays) as str, in an object array; any other array as it is."""
    values = np.asarray(values)
    if values.dtype.kind == "S" or (values.dtype == object and values.size and isinstance(values.flat[0], bytes)):
        return np.vectorize(lambda v: v.decode("utf-8") if isinstance(v, bytes) else str(v), otypes=[object])(values)
    return values


def methods(ds: "xr.Dataset", source: str) -> dict[str, tuple[str, str]]:
    """The suite's method labels (attribute ``methods``: label -> [recoverer, estimator]), in
    suite order; for a cube without them, every pair, named ``recoverer+estimator``.

    Raises
    ------
    UserError
        The attribute is not JSON, not a table of pairs, or names a recoverer or
        an estimator the cube lacks; the message names ``source``.
    """
    recs = [str(r) for r in decoded(ds["recoverer"].values)]
    ests = [str(e) for e in decoded(ds["estimator"].values)]
    given = attr_json(ds, "methods", {}, source) or {}
    if not given:
        return {f"{r}+{e}": (r, e) for r in recs for e in ests}
    if not isinstance(given, dict):
        raise UserError(f"{source}: attribute 'methods' is not a table of label -> [recoverer, estimator]")
    out = {}
    for label, pair in given.items():
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise UserError(f"{source}: method {label!r} in attribute 'methods' is not [recoverer, estimator]")
        for kind, name, names in (("recoverer", str(pair[0]), recs), ("estimator", str(pair[1]), ests)):
            if name not in names:
                raise UserError(f"{source}: method {label!r} uses {kind} {name!r}, "
                                f"which the cube lacks (has {', '.join(names)})")
        out[str(label)] = (str(pair[0]), str(pair[1]))
    return out


# ---------------------------------------------------------------- checking
def check(ds: "xr.Dataset", source: str) -> None:
    """Refuse what is not a results cube this cmbench can read.

    Raises
    ------
    UserError
        A dim or a required variable is missing, a known variable has other
        dims, or the cube is of a newer format; the message names ``source``.
    """
    missing_dims = [d for d in DIMS if d not in ds.dims]
    if missing_dims:
        raise UserError(f"{source} is not a cmbench results cube: it lacks dimension(s) "
                        f"{', '.join(missing_dims)}")
    missing = [v for v in REQUIRED if v not in ds.data_vars]
    if missing:
        raise UserError(f"{source} is not a cmbench results cube: it lacks variable(s) {', '.join(missing)}")
    for var, dims in VARIABLES.items():
        if var in ds.data_vars and set(ds[var].dims) != set(dims):
            raise UserError(f"{source}: variable {var!r} has dims {tuple(ds[var].dims)}, expected {dims}")
    fmt = int(ds.attrs.get("cube_format", 1))
    if fmt > FORMAT:
        raise UserError(f"cube {source} was written by cmbench {ds.attrs.get('cmbench_version', '?')} "
                        f"(cube format {fmt}); this is cmbench {__version__} (format {FORMAT}): upgrade cmbench")


def build(coords: Mapping[str, list], results: Mapping[tuple, dict], attrs: Mapping,
          metrics: Sequence[str] = METRIC_VARS,
          params: Optional[Mapping[str, Mapping[str, list]]] = None, inliers: bool = False) -> xr.Dataset:
    """Assemble a cube from unit results keyed by (dataset, instance, adversary, budget).

    Parameters
    ----------
    coords : the six coordinate lists, in DIMS order.
    results : the `UnitResult` of each unit.
    attrs : provenance attributes; dicts and lists are stored as JSON.
    metrics : labels of the experiment's metrics: one variable each, besides
        ``l2`` and ``mahalanobis``, which every cube holds.
    params : ``{dim: {param: [value per label]}}`` (`cmbench.suite.Experiment.parameters`):
        each becomes the coordinate ``<dim>_<param>`` along ``dim`` (`param_coords`).
    inliers : keep ``inlier_l2`` (where a metric of the experiment asks for the inliers' mean).
    """
    import xarray as xr

    cell_vars = (*dict.fromkeys((*METRIC_VARS, *metrics)), "seconds", "evaluations")
    shape = tuple(len(coords[d]) for d in DIMS)
    index = {d: {v: i for i, v in enumerate(coords[d])} for d in DIMS}
    cell = {v: np.full(shape, np.nan) for v in cell_vars}
    # status, error and the full traceback of a failed cell
    text = {v: np.full(shape, "missing" if v == "status" else "", dtype=object) for v in TEXT_VARS}
    rec = {v: np.full(shape[:5], np.nan) for v in RECOVERY_VARS + RECOVERY_INFO_VARS}
    cor = {v: np.full(shape[:4], np.nan) for v in CORRUPTION_VARS}
    for key, result in results.items():
        u = tuple(index[d][k] for d, k in zip(DIMS[:4], key))
        for v in CORRUPTION_VARS:
            cor[v][u] = result["corruption"].get(v, np.nan)
        for r_label, recovery in result["recovery"].items():
            r = u + (index["recoverer"][r_label],)
            for v in RECOVERY_VARS:
                rec[v][r] = recovery.get(v, np.nan)
            info = recovery.get("info") or {}
            for v in RECOVERY_INFO_VARS:
                rec[v][r] = float(info.get(v, np.nan))
            for e_label, c in result["cells"][r_label].items():
                i = r + (index["estimator"][e_label],)
                for v in TEXT_VARS:
                    text[v][i] = c.get(v, "")
                for v in cell_vars:
                    cell[v][i] = c.get(v, np.nan)
    data_vars = {v: (DIMS, a) for v, a in cell.items()}
    data_vars.update({v: (RECOVERY_DIMS, a) for v, a in rec.items()})
    data_vars.update({v: (UNIT_DIMS, a) for v, a in cor.items() if inliers or v != "inlier_l2"})
    data_vars.update({v: (DIMS, a.astype(str)) for v, a in text.items()})
    ds = xr.Dataset(data_vars, coords={d: list(coords[d]) for d in DIMS})
    ds = ds.assign_coords(param_coords(params or {}))
    ds.attrs.update(encode_attrs(attrs))
    ds.attrs.update(cube_format=FORMAT, cmbench_version=__version__,
                    created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    host=platform.node())
    return ds


# ---------------------------------------------------------------- parameters as data
#: the dims whose labels are components, which have parameters
PARAM_DIMS = tuple(dim for dim in DIMS if dim not in ("instance", "budget"))


def param_name(dim: str, param: str) -> str:
    """The coordinate of a component parameter: ``dataset_N``, ``estimator_limit``."""
    return f"{dim}_{param}"


def param_coords(params: Mapping[str, Mapping[str, list]]) -> dict:
    """Coordinates ``<dim>_<param>`` from ``{dim: {param: [value per label]}}``.

    A parameter whose values are all integers (none absent) is an integer coordinate;
    one whose values are all numbers (or absent) is a float coordinate,
    NaN where a component lacks it or its value is None; any other is a string
    coordinate, "" there (numbers as in labels, booleans ``true``/``false``,
    arrays and tables as JSON), so that netCDF keeps each as one plain array.
    An absent value is anything that is not a plain value (`cmbench.suite.MISSING`).

    Returns
    -------
    dict of str to (dim, numpy.ndarray)
    """
    return {param_name(dim, param): (dim, _param_array(values))
            for dim, table in params.items() for param, values in table.items()}


def _is_plain(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str, list, tuple, dict))


def _param_array(values: Sequence) -> np.ndarray:
    present = [v for v in values if _is_plain(v) and v is not None]
    if present and len(present) == len(values) and all(isinstance(v, int) and not isinstance(v, bool)
                                                       and -2 ** 63 <= v < 2 ** 63 for v in present):
        return np.array(present, dtype=np.int64)  # a count stays a count: d = 10, not 10.0
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return np.array([float(v) if _is_plain(v) and v is not None else np.nan for v in values], dtype=float)
    return np.array([_param_text(v) if _is_plain(v) and v is not None else "" for v in values], dtype=object)


def _param_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v, sort_keys=True)
    return str(v)


def params_of(ds: "xr.Dataset") -> dict[str, list[str]]:
    """The component parameters a cube holds as coordinates: ``{dim: [param, ...]}``.

    A cube written before parameters were coordinates has none.
    """
    out: dict[str, list[str]] = {}
    for name in ds.coords:
        name = str(name)
        for dim in PARAM_DIMS:
            if name.startswith(dim + "_") and ds[name].dims == (dim,):
                out.setdefault(dim, []).append(name[len(dim) + 1:])
    return {dim: out[dim] for dim in PARAM_DIMS if dim in out}  # in the cube's dim order


def environment() -> dict:
    """What computed the numbers: Python, numpy, scipy, the BLAS and the CPU.

    Results can differ in the last digits between BLAS builds and CPUs (and a
    kernel's speed far more), so a cube records them beside the versions.

    Returns
    -------
    dict of strings: ``python``, ``numpy``, ``scipy``, ``blas`` (each library
    threadpoolctl finds: its API, version, kernel architecture and threading
    layer), ``cpu`` (model name and logical cores), ``platform``; a copy of what was found
    once per process (listing the BLAS libraries walks every shared object loaded).
    """
    return dict(_environment())


@functools.lru_cache(maxsize=1)
def _environment() -> dict:
    import sys

    import scipy
    # scipy.linalg loads scipy's own BLAS, which the recoverers use: listed always, so that the
    # list does not depend on what else this process happened to import
    import scipy.linalg  # noqa: F401

    env = {"python": f"{platform.python_implementation()} {sys.version.split()[0]}",
           "numpy": np.__version__, "scipy": scipy.__version__}
    try:
        from threadpoolctl import threadpool_info

        libs = [f"{i.get('internal_api', '?')} {i.get('version') or '?'}"
                + "".join(f", {k} {i[k]}" for k in ("architecture", "threading_layer") if i.get(k))
                for i in threadpool_info() if i.get("user_api") == "blas"]
        # sorted: threadpoolctl lists libraries in no fixed order, and the same cube must
        # have the same content (an unchanged rerun rewrites nothing)
        env["blas"] = "; ".join(sorted(libs)) or "none found by threadpoolctl"
    except Exception as exc:  # provenance must never fail a run
        env["blas"] = f"unknown ({type(exc).__name__})"
    env["cpu"] = f"{_cpu_model()}, {os.cpu_count()} logical cores"
    env["platform"] = platform.platform()
    return env


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


#: held around each netCDF call of a cube's write: HDF5 is not safe to call from two threads
#: at once, and a process may write cubes from more than one (a notebook's runs)
_WRITE_LOCK = threading.Lock()


def save(ds: "xr.Dataset", path: Path) -> Path:
    """Write atomically: a reader never sees a half-written cube.

    The file is the one ``ds.to_netcdf(path, engine="netcdf4")`` writes, byte for
    byte, written through that engine's store (`xarray.backends.NetCDF4DataStore`)
    instead: ``to_netcdf`` asks dask which scheduler is active whenever dask is
    installed, which imports ``distributed`` (about 0.4 CPU-s, more than the
    write itself) in a process that runs no cluster; so does the store when it
    picks its own lock. A cube holds NumPy arrays only, so there is nothing for
    a scheduler to do; the store is given `_WRITE_LOCK`.
    """
    from xarray.backends import NetCDF4DataStore

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced(path, prefix=f".{path.stem}.", suffix=".nc.tmp") as tmp:
        store = NetCDF4DataStore.open(str(tmp), mode="w", format="NETCDF4", lock=_WRITE_LOCK)
        try:
            ds.dump_to_store(store)
        finally:
            store.close()
    return path


def load(path: Path) -> "xr.Dataset":
    """Read a cube into memory and `check` it."""
    import xarray as xr

    path = Path(path)
    if not path.is_file():
        why = ("is a folder, not a .nc file" if path.is_dir() else
               "is not a regular file" if path.exists() else "not found")
        raise UserError(f"results cube {path} {why}")
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            ds = ds.load()
    except Exception as exc:
        raise UserError(f"cube {path} cannot be read as netCDF: {exc}") from None
    check(ds, str(path))
    return ds


def failures(ds: "xr.Dataset") -> list[dict]:
    """Every failed or timed-out cell: its coordinates, status and error."""
    status = ds["status"].values
    return [{**{d: ds[d].values[i].item() for d, i in zip(DIMS, idx)},
             "status": str(status[idx]), "error": str(ds["error"].values[idx])}
            for idx in zip(*np.nonzero(np.isin(status, FAILURES)))]
