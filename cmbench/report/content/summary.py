"""The summary `cmbench suite` prints at the end: per experiment, the methods ranked
(`ranks`, as in the reports), cells by status, where the cubes and reports are."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import xarray as xr

from ...cube import STATUSES, attr_json
from ..load import Cube, load_cube, metric_name
from .paper_tables import fmt_sig as fmt_num
from .ranks import CRITERION, ranked

#: with more methods than ALL, the terminal shows the best TOP and those of --plugin
TOP = 5
ALL = 12


def plugin_labels(specs: Iterable[str]) -> set[str]:
    """How the cube's ``components`` attribute names the plugins given by ``--plugin``:
    a file by its resolved path, a module by its name."""
    out = set()
    for spec in specs:
        spec = str(spec)
        out.add(str(Path(spec).resolve()) if spec.endswith(".py") or "/" in spec else spec)
    return out


def from_plugins(cube: Cube, specs: Iterable[str]) -> set[str]:
    """Method labels whose recoverer or estimator came from one of the plugins ``specs``."""
    labels = plugin_labels(specs)
    if not labels:
        return set()
    comps = attr_json(cube.attrs, "components", None, cube.source) or {}

    def came(kind: str, label: str) -> bool:
        src = str((comps.get(kind, {}).get(label) or {}).get("plugin", ""))
        return any(src == p or src.startswith(p + " ") for p in labels)

    return {m for m, (r, e) in cube.methods.items() if came("recoverers", r) or came("estimators", e)}


def summary_lines(cubes: Mapping[str, xr.Dataset] | Iterable[xr.Dataset], *, plugins: Iterable[str] = (),
                  top: int = TOP) -> list[str]:
    """Per experiment: its ranking (`ranks.ranked`, the reports' ranking) by its first
    metric, every method when there are at most `ALL`, else the best ``top`` and every method
    from ``plugins`` below them; then its cells by status.
    """
    cubes = list(cubes.values()) if isinstance(cubes, Mapping) else list(cubes)
    plugins = list(plugins)
    lines = []
    for i, ds in enumerate(cubes):
        cube = load_cube(ds, index=i)
        metric = cube.metrics[0]
        df = ranked(cube, metric)
        mine = from_plugins(cube, plugins)
        lines.append(f"{cube.experiment}: methods by {metric_name(metric, math=False)}, {CRITERION}; "
                     f"{int(df['total_cells'].max()) if len(df) else 0} cells")
        width = max([len(m) for m in df["method"]] + [6])
        lines.append(f"  {'':>4} {'method':<{width}}  {'avg rank':>8}  {'mean error':>10}")
        limit = len(df) if len(df) <= ALL else top
        shown = [k for k in range(len(df)) if k < limit or df.loc[k, "method"] in mine]
        for k in shown:
            if k >= limit and (k - 1) not in shown:
                lines.append("    ...")
            r = df.loc[k]
            note = []
            if r["cells"] < r["total_cells"]:
                note.append(f"value in {r['cells']}/{r['total_cells']} cells")
            if r["method"] in mine:
                note.append("--plugin")
            err = fmt_num(r["mean_error"]) if np.isfinite(r["mean_error"]) else "no value"
            avg = fmt_num(r["mean_rank"]) if np.isfinite(r["mean_rank"]) else "–"
            lines.append(f"  {k + 1:>3}. {r['method']:<{width}}  {avg:>8}  {err:>10}"
                         + (f"  ({'; '.join(note)})" if note else ""))
        if len(shown) < len(df):
            lines.append(f"    ({len(df) - len(shown)} more in the report)")
        counts = cube.status_counts()
        lines.append("  cells: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s))
                     + "".join(f", {n} {s}" for s, n in counts.items() if s not in STATUSES and n))
    return lines
