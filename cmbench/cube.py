"""Results cubes: building them from unit results, saving and loading them.

One `xarray.Dataset` per experiment with dims (dataset, instance, adversary,
budget, recoverer, estimator); see DESIGN.md. Structured attributes are JSON
strings so that netCDF keeps them and `xarray.open_dataset` reads them back.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import xarray as xr

from . import __version__
from .errors import UserError
from .output import follow_umask

FORMAT = 1
DIMS = ("dataset", "instance", "adversary", "budget", "recoverer", "estimator")
METRIC_VARS = ("l2", "mahalanobis")  # every cube holds these; an experiment's metrics add theirs
CELL_VARS = (*METRIC_VARS, "seconds", "evaluations")
RECOVERY_VARS = ("recovered_fraction", "recovery_rmse", "discarded_fraction")
#: a recoverer's own diagnostics (its ``info`` dict), NaN where it reports none
RECOVERY_INFO_VARS = ("converged", "iterations")
CORRUPTION_VARS = ("d_entry1", "d_entry_inf", "d_tv")
STATUSES = ("ok", "undefined", "not-applicable", "failed", "timeout")


def build(coords: Mapping[str, list], results: Mapping[tuple, dict], attrs: Mapping,
          metrics: Sequence[str] = METRIC_VARS) -> xr.Dataset:
    """Assemble a cube from unit results keyed by (dataset, instance, adversary, budget).

    Parameters
    ----------
    coords : the six coordinate lists, in DIMS order.
    results : unit result dicts as `cmbench.runner.units.execute` returns them.
    attrs : provenance attributes; dicts and lists are stored as JSON.
    metrics : labels of the experiment's metrics: one variable each, besides
        ``l2`` and ``mahalanobis``, which every cube holds.
    """
    cell_vars = (*dict.fromkeys((*METRIC_VARS, *metrics)), "seconds", "evaluations")
    shape = tuple(len(coords[d]) for d in DIMS)
    index = {d: {v: i for i, v in enumerate(coords[d])} for d in DIMS}
    cell = {v: np.full(shape, np.nan) for v in cell_vars}
    status = np.full(shape, "missing", dtype=object)
    error = np.full(shape, "", dtype=object)
    tb = np.full(shape, "", dtype=object)  # the full traceback of a failed cell
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
                status[i], error[i], tb[i] = c["status"], c.get("error", ""), c.get("traceback", "")
                for v in cell_vars:
                    cell[v][i] = c.get(v, np.nan)
    data_vars = {v: (DIMS, a) for v, a in cell.items()}
    data_vars.update({v: (DIMS[:5], a) for v, a in rec.items()})
    data_vars.update({v: (DIMS[:4], a) for v, a in cor.items()})
    data_vars["status"] = (DIMS, status.astype(str))
    data_vars["error"] = (DIMS, error.astype(str))
    data_vars["traceback"] = (DIMS, tb.astype(str))
    ds = xr.Dataset(data_vars, coords={d: list(coords[d]) for d in DIMS})
    ds.attrs.update({k: json.dumps(v) if isinstance(v, (dict, list, tuple)) else v for k, v in attrs.items()})
    ds.attrs.update(cube_format=FORMAT, cmbench_version=__version__,
                    created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    host=platform.node())
    return ds


def environment() -> dict:
    """What computed the numbers: Python, numpy, scipy, the BLAS and the CPU.

    Results can differ in the last digits between BLAS builds and CPUs (and a
    kernel's speed far more), so a cube records them beside the versions.

    Returns
    -------
    dict of strings: ``python``, ``numpy``, ``scipy``, ``blas`` (each library
    threadpoolctl finds: its API, version, kernel architecture and threading
    layer), ``cpu`` (model name and logical cores), ``platform``.
    """
    import sys

    import scipy

    env = {"python": f"{platform.python_implementation()} {sys.version.split()[0]}",
           "numpy": np.__version__, "scipy": scipy.__version__}
    try:
        from threadpoolctl import threadpool_info

        libs = [f"{i.get('internal_api', '?')} {i.get('version') or '?'}"
                + "".join(f", {k} {i[k]}" for k in ("architecture", "threading_layer") if i.get(k))
                for i in threadpool_info() if i.get("user_api") == "blas"]
        env["blas"] = "; ".join(libs) or "none found by threadpoolctl"
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


def save(ds: xr.Dataset, path: Path) -> Path:
    """Write atomically: a reader never sees a half-written cube."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".nc.tmp")
    os.close(fd)
    try:
        ds.to_netcdf(tmp, engine="netcdf4")
        follow_umask(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load(path: Path) -> xr.Dataset:
    """Read a cube into memory; refuse one that is not a cube or is from a newer format."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"results cube {path} not found")
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            ds = ds.load()
    except Exception as exc:
        raise UserError(f"cube {path} cannot be read as netCDF: {exc}") from None
    missing = [v for v in (*DIMS, "status", "l2") if v not in ds.variables]
    if missing:
        raise UserError(f"{path} is not a cmbench results cube: it lacks {', '.join(missing)}")
    fmt = int(ds.attrs.get("cube_format", 1))
    if fmt > FORMAT:
        raise UserError(f"cube {path} was written by cmbench {ds.attrs.get('cmbench_version', '?')} "
                        f"(cube format {fmt}); this is cmbench {__version__} (format {FORMAT}): upgrade cmbench")
    return ds


def attr_json(ds: xr.Dataset, key: str, default=None):
    """A structured attribute, decoded."""
    value = ds.attrs.get(key)
    if value is None:
        return default
    return json.loads(value) if isinstance(value, str) else value


def failures(ds: xr.Dataset) -> list[dict]:
    """Every failed or timed-out cell: its coordinates, status and error."""
    status = ds["status"].values
    out = []
    for idx in zip(*np.nonzero(np.isin(status, ("failed", "timeout")))):
        row = {d: ds[d].values[i].item() for d, i in zip(DIMS, idx)}
        row.update(status=str(status[idx]), error=str(ds["error"].values[idx]))
        out.append(row)
    return out
