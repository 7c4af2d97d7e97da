"""Reading and checking results cubes, and the per-method views reports draw from.

A report is built from cubes alone: this module reads a netCDF file (or takes an
``xarray.Dataset``), checks the dimensions and variables the runner writes, and
parses the JSON attributes. Attributes that a cube from an older run may lack
(``metrics``, ``methods``, ``datasets_info``, ``adversaries_info``, ...) fall back
to what the data variables say, so such a cube is reported without rerunning.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import xarray as xr
from scipy import special

from .. import cube
# The results format is cube's; the report's modules take these names from here.
from ..cube import DIMS, STATUSES
from ..cube import attr_json
from ..errors import UserError
from ..kinds import CELL_KINDS

METRIC_NAMES = {"l2": r"$\ell_2$ error", "mahalanobis": "Mahalanobis error",
                "excess-l2": r"excess $\ell_2$ error"}  # axis labels (mathtext)
METRIC_TEXT = {"l2": "l2 error", "mahalanobis": "Mahalanobis error",
               "excess-l2": "excess l2 error"}  # titles, tables (plain text)


def metric_name(metric: str, *, math: bool = True) -> str:
    """A metric's display name: its axis label (mathtext, ``math``) or its plain text, for titles
    and tables; a metric the report does not know is shown by its id."""
    return (METRIC_NAMES if math else METRIC_TEXT).get(metric, metric)


#: the bands a curve page can shade around each mean (``[experiment.report] band``)
BANDS = ("sd", "ci95", "minmax", "none")
#: below this many instances the "auto" band is mean +- sd, not the 95% t interval: with k
#: instances the interval's factor t_{0.975,k-1}/sqrt(k) is 9.0 at k = 2, 2.5 at 3, 1.6 at 4 and
#: 1.2 at 5, so with fewer the interval mostly shows how few instances there are
AUTO_SD_BELOW = 5
#: what each band is, for captions and legends
BAND_TEXT = {"sd": "mean ± 1 standard deviation over the instances",
             "ci95": "95% Student-t confidence interval of the mean over the instances",
             "minmax": "smallest to largest value over the instances"}
#: the same, as the curve pages' legend names it (the subtitle gives `BAND_TEXT`)
BAND_LEGEND = {"sd": "mean ± 1 standard deviation", "ci95": "95% Student-t confidence interval",
               "minmax": "smallest to largest value"}
#: budget symbol and meaning per adversary level (the paper's A1, A2, A3)
LEVEL_AXIS = {
    "sample": (r"$\epsilon$", "fraction of samples"),
    "value": (r"$\rho$", "fraction of values per coordinate"),
    "coordinate": (r"$\alpha$", "fraction of all values"),
}


@dataclass
class Cube:
    """One experiment's results cube, checked, with its attributes parsed.

    Attributes
    ----------
    ds : the Dataset, variables transposed to the canonical dim order.
    source : the file it came from, or ``"<dataset N>"`` for an in-memory one.
    methods : label -> (recoverer, estimator), in suite order.
    metrics : error variables to plot, in order.
    """

    ds: xr.Dataset
    source: str
    experiment: str
    methods: dict[str, tuple[str, str]]
    metrics: list[str]
    datasets_info: dict[str, dict[str, Any]]
    adversaries_info: dict[str, dict[str, Any]]
    plugins: list[dict[str, Any]]
    attrs: dict[str, Any] = field(default_factory=dict)
    # per-method views already built (`by_method`, `ok_values`): every page reads them; read-only
    _views: dict = field(default_factory=dict, repr=False, compare=False)

    # -- labels -------------------------------------------------------------
    @property
    def datasets(self) -> list[str]:
        return [str(v) for v in self.ds["dataset"].values]

    @property
    def adversaries(self) -> list[str]:
        return [str(v) for v in self.ds["adversary"].values]

    @property
    def budgets(self) -> np.ndarray:
        return np.asarray(self.ds["budget"].values, dtype=float)

    def level(self, adversary: str) -> str:
        return str(self.adversaries_info.get(adversary, {}).get("level", ""))

    def mode(self, adversary: str) -> str:
        return str(self.adversaries_info.get(adversary, {}).get("mode", ""))

    def budget_axis(self, adversary: str) -> str:
        """Axis label of the budget, from the adversary's level."""
        symbol, meaning = LEVEL_AXIS.get(self.level(adversary), ("budget", ""))
        return f"{symbol} ({meaning})" if meaning else symbol

    def budget_symbol(self, adversary: str) -> str:
        return LEVEL_AXIS.get(self.level(adversary), ("budget", ""))[0]

    def dataset_title(self, dataset: str) -> str:
        """Panel title: the label, the component name when it differs, the shape and,
        where the structure is known, m_A, n and r."""
        info = self.datasets_info.get(dataset, {})
        name = info.get("name")
        head = dataset if not name or name == dataset else f"{dataset} ({name})"
        facts = []
        shape = info.get("shape")
        if shape and len(shape) == 2:
            facts.append(f"N={shape[0]}")
            if not info.get("structure_known"):
                facts.append(f"n={shape[1]}")
        if info.get("structure_known"):
            if info.get("m_a") is not None:
                facts.append(f"$m_A$={info['m_a']}")
            if shape and len(shape) == 2:
                facts.append(f"n={shape[1]}")
            if info.get("rank") is not None:
                facts.append(f"r={info['rank']}")
        elif info.get("rank") is not None:
            facts.append(f"rank hint {info['rank']}")
        return head + ("\n" + ", ".join(facts) if facts else "")

    # -- per-method views ---------------------------------------------------
    def by_method(self, var: str) -> xr.DataArray:
        """``var`` with (recoverer, estimator) replaced by a ``method`` dim.

        Returns dims (method, dataset, instance, adversary, budget) for a
        six-dim variable, (method, dataset, instance, adversary, budget) for a
        five-dim one (no estimator dim). Select a method with
        ``.sel({"method": label})``: ``sel(method=...)`` is xarray's own keyword.
        """
        key = ("by_method", var)
        if key not in self._views:
            labels = list(self.methods)
            recs = xr.DataArray([self.methods[m][0] for m in labels], dims="method")
            ests = xr.DataArray([self.methods[m][1] for m in labels], dims="method")
            da = self.ds[var]
            idx = {"recoverer": recs}
            if "estimator" in da.dims:
                idx["estimator"] = ests
            out = da.sel(idx).drop_vars(["recoverer", "estimator"], errors="ignore")
            out = out.assign_coords(method=labels)
            self._views[key] = out.transpose("method", *[d for d in out.dims if d != "method"])
        return self._views[key]

    def status(self) -> xr.DataArray:
        """Status per method and cell, dims (method, dataset, instance, adversary, budget)."""
        return self.by_method("status")

    def ok_values(self, metric: str) -> xr.DataArray:
        """Metric per method where the cell is ok and the value is finite, else NaN."""
        key = ("ok_values", metric)
        if key not in self._views:
            vals = self.by_method(metric)
            self._views[key] = vals.where((self.status() == "ok") & np.isfinite(vals))
        return self._views[key]

    def status_counts(self) -> dict[str, int]:
        """Cells per status over the whole cube (every recoverer x estimator pair)."""
        values, counts = np.unique(self.ds["status"].values.astype(str), return_counts=True)
        found = dict(zip(values.tolist(), counts.tolist()))
        return {s: int(found.pop(s, 0)) for s in STATUSES} | {k: int(v) for k, v in found.items()}


@dataclass
class Summary:
    """Mean over instances with a 95% confidence band, per method and cell.

    All arrays have dims (method, dataset, adversary, budget). ``half`` is the
    half-width of a Student-t interval ``t_{0.975, k-1} * s / sqrt(k)`` over the
    ``k`` instances whose cell is ok (NaN when k < 2: no band from one value).
    """

    mean: xr.DataArray
    half: xr.DataArray
    count: xr.DataArray
    total: int  # instances in the cube


def positions(da: xr.DataArray, dim: str) -> dict[str, int]:
    """Label -> index along ``dim``: the pages take a view's rows by position, since an xarray
    ``.sel`` per method and data set cost more than the rest of building a page."""
    return {str(label): i for i, label in enumerate(da[dim].values)}


def band_kind(cube: "Cube") -> str:
    """The band a cube's curve pages shade: the cube's ``report_band`` attribute (from
    ``[experiment.report] band``) when it names one of `BANDS`, else the rule: "sd" when the cube
    has fewer than `AUTO_SD_BELOW` instances, "ci95" from there on."""
    asked = str(cube.attrs.get("report_band", "") or "")
    if asked in BANDS:
        return asked
    return "sd" if cube.ds.sizes["instance"] < AUTO_SD_BELOW else "ci95"


def band_caption(cube: "Cube") -> str:
    """The curve pages' subtitle: what a line is, what its band is and by which rule."""
    kind = band_kind(cube)
    k = cube.ds.sizes["instance"]
    head = f"mean over {k} instance{'s' if k != 1 else ''}"
    if kind == "none":
        return head + "; no band"
    asked = str(cube.attrs.get("report_band", "") or "") in BANDS
    if asked:
        why = "as the suite asks"
    elif kind == "sd":
        why = f"the rule below {AUTO_SD_BELOW} instances, where a t interval mostly shows how few there are"
    else:
        why = f"the rule from {AUTO_SD_BELOW} instances on"
    return f"{head}; shaded: {BAND_TEXT[kind]} ({why})"


def band_edges(values: xr.DataArray, kind: str) -> tuple[xr.DataArray, xr.DataArray]:
    """The lower and upper edge of the ``kind`` band (one of `BANDS`) over the ``instance`` dim,
    NaN where it has no band (fewer than two values, or ``kind`` "none")."""
    count = values.count("instance")
    if kind == "minmax":
        lo, hi = values.min("instance", skipna=True), values.max("instance", skipna=True)
    elif kind in ("sd", "ci95"):
        summ = summarize(values)
        half = summ.half if kind == "ci95" else values.std("instance", ddof=1, skipna=True)
        lo, hi = summ.mean - half, summ.mean + half
    else:
        lo = hi = xr.full_like(count, np.nan, dtype=float)
    two = count >= 2
    return lo.where(two), hi.where(two)


def summarize(values: xr.DataArray) -> Summary:
    """Mean and 95% t-interval over the ``instance`` dim, skipping NaN.

    Parameters
    ----------
    values : dims (method, dataset, instance, adversary, budget); NaN where the
        cell gave no value.
    """
    count = values.count("instance")
    mean = values.mean("instance", skipna=True)
    sd = values.std("instance", ddof=1, skipna=True)
    k = count.values.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        tq = np.where(k >= 2, special.stdtrit(np.maximum(k - 1, 1), 0.975), np.nan)  # scipy.stats.t.ppf
        half = sd * xr.DataArray(tq, dims=count.dims, coords=count.coords) / np.sqrt(count)
    return Summary(mean=mean, half=half.where(count >= 2), count=count,
                   total=int(values.sizes["instance"]))


# -- loading -------------------------------------------------------------------
def load_cubes(cubes: Sequence[str | os.PathLike | xr.Dataset | Cube]) -> list[Cube]:
    """Load and check each cube (one loaded already is taken as it is); see `load_cube`."""
    if isinstance(cubes, (str, os.PathLike, xr.Dataset, Cube)):
        cubes = [cubes]
    if not cubes:
        raise UserError("no results cube given to report on")
    return [c if isinstance(c, Cube) else load_cube(c, index=i) for i, c in enumerate(cubes)]


def load_cube(src: str | os.PathLike | xr.Dataset, *, index: int = 0, source: str | None = None) -> Cube:
    """Read a results cube (netCDF path or Dataset) and check it.

    ``source`` names a Dataset in messages and on the report's pages (say, the
    file it was written to); default ``<in-memory cube EXPERIMENT>``.

    Raises
    ------
    cmbench.errors.UserError
        When the file cannot be read, or lacks a dimension or variable, or an
        attribute is not valid JSON; the message names the file and what is wrong.
    """
    if isinstance(src, xr.Dataset):
        ds = src
        if source is None:
            source = f"<in-memory cube {src.attrs.get('experiment') or f'<dataset {index}>'!s}>"
    else:
        source = str(src)
        ds = cube.load(Path(source))  # one reader, which checks the cube
    return _check(ds, source)


def environment_attr(attrs: Mapping[str, Any]) -> Any:
    """A cube's ``environment`` attribute (versions, BLAS, CPU), decoded; None when it is not JSON.

    The environment is informative only, so a damaged one is left out of a
    report rather than refusing the cube.
    """
    try:
        return attr_json(attrs, "environment")
    except ValueError:
        return None


def _check(ds: xr.Dataset, source: str) -> Cube:
    cube.check(ds, source)
    ds = ds.transpose(*DIMS)
    ds = ds.assign(status=(DIMS, cube.decoded(ds["status"].values).astype(str)),
                   error=(DIMS, cube.decoded(ds["error"].fillna("").values).astype(str)))
    for dim in (kind.dimension for kind in CELL_KINDS):  # the dims labelled by components' names
        ds = ds.assign_coords({dim: cube.decoded(ds[dim].values).astype(str)})
    attrs = dict(ds.attrs)
    methods = cube.methods(ds, source)
    metrics = attr_json(attrs, "metrics", None, source)
    if metrics is None:  # older cube: plot what has values
        metrics = [m for m in ("mahalanobis", "l2") if bool(np.isfinite(ds[m].values).any())]
        metrics = metrics or ["l2"]
    if isinstance(metrics, str):
        metrics = [metrics]
    absent = [m for m in metrics if m not in ds.data_vars]
    if absent:
        raise UserError(f"{source}: attribute 'metrics' names variable(s) the cube lacks: "
                        f"{', '.join(absent)}")
    datasets_info = attr_json(attrs, "datasets_info", {}, source)
    adversaries_info = attr_json(attrs, "adversaries_info", {}, source)
    plugins = attr_json(attrs, "plugins", [], source)
    if isinstance(plugins, dict):  # tolerate {"name": "version"}
        plugins = [{"plugin": k, "version": v} for k, v in plugins.items()]
    experiment = str(attrs.get("experiment") or Path(source).stem)
    return Cube(ds=ds, source=source, experiment=experiment, methods=methods,
                metrics=list(metrics), datasets_info=dict(datasets_info or {}),
                adversaries_info=dict(adversaries_info or {}), plugins=list(plugins or []),
                attrs=attrs)
