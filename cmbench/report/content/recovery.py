"""Recovery quality pages: how close each recoverer's filled entries are to the clean values.

Per experiment and adversary, two figures with a panel per data set and a line
per recoverer (mean over instances, with the band of `load.band_kind`): the root mean squared error of the
recovered entries against the clean values (``recovery_rmse``), and the fraction
of corrupted entries recovered within the cube's stated tolerance
(``recovered_fraction``). A recoverer that leaves entries NaN (``none``) or is not
applicable draws no line. Cubes written before these variables existed get no page, and
neither does a cube whose every recoverer is ``none`` (nothing recovered: its RMSE is only
the corruption's own size).
"""
from __future__ import annotations

import numpy as np

from .figures import Panel, curve_page
from ..layout import Page, Section
from ...cube import attr_json
from ..load import Cube, band_caption, band_edges, band_kind, positions, summarize
from ..style import MethodStyles

#: variable -> (axis label, what the page title says)
QUANTITIES = {
    "recovery_rmse": ("RMSE of recovered entries", "recovery RMSE (recovered vs clean entries)"),
    "recovered_fraction": ("fraction recovered", "fraction of corrupted entries recovered"),
}


def tolerance_text(cube: Cube) -> str:
    tol = cube.attrs.get("recovered_tolerance")
    if tol is None:
        return "an entry counts as recovered when the recoverer restored it (older cube: tolerance not recorded)"
    return (f"an entry counts as recovered when within {float(tol):g} standard deviations of its "
            f"column (clean data) of the clean value")


def recovery_pages(cube: Cube) -> list[Page]:
    """The recovery-quality figures of one cube (none when it lacks the variables)."""
    if "recovery_rmse" not in cube.ds.data_vars:
        return []
    recs = [str(r) for r in cube.ds["recoverer"].values]
    components = (attr_json(cube.attrs, "components", {}, cube.source) or {}).get("recoverers", {})
    if all(str((components.get(r) or {}).get("name", r)) == "none" for r in recs):
        return []
    kind = band_kind(cube)
    styles = MethodStyles(recs)
    # the recovery's own status: a recoverer's cells share it across estimators only when
    # it failed, so a value counts where any estimator's cell on it is ok
    ok_any = (cube.ds["status"] == "ok").any("estimator")
    pages = []
    for var, (ylabel, what) in QUANTITIES.items():
        if var not in cube.ds.data_vars:
            continue
        values = cube.ds[var].where(ok_any & np.isfinite(cube.ds[var]))
        for adversary in cube.adversaries:
            v = values.sel(adversary=adversary).rename(recoverer="method")
            v = v.transpose("method", "dataset", "instance", "budget").expand_dims(
                adversary=[adversary], axis=3)
            summ = summarize(v)
            panels = []
            dims = ("method", "dataset", "budget")
            means, lows, highs = (a.sel(adversary=adversary).transpose(*dims).values
                                  for a in (summ.mean, *band_edges(v, kind)))
            at, where = positions(summ.mean, "method"), positions(summ.mean, "dataset")
            for d in cube.datasets:
                mean, low, high = means[:, where[d]], lows[:, where[d]], highs[:, where[d]]
                curves = {r: (mean[at[r]], low[at[r]], high[at[r]]) for r in recs
                          if np.isfinite(mean[at[r]]).any()}
                if curves:
                    panels.append(Panel(cube.dataset_title(d), cube.budgets, curves, key=d))
            if not panels:
                continue
            title = f"{cube.experiment}: {what}, adversary {adversary}"
            sub = f"per recoverer, {band_caption(cube)}; " + (
                tolerance_text(cube) if var == "recovered_fraction"
                else "over the hidden or replaced entries the recoverer filled, in the data's units")
            pages.append(curve_page(f"{cube.experiment}-{adversary}-{var}", title, panels, styles,
                                    xlabel=cube.budget_axis(adversary), ylabel=ylabel, subtitle=sub,
                                    band=kind, yscale="linear"))
    return pages


def recovery_sections(cube: Cube, ctx) -> list[Section]:
    """A cube's recovery-quality section (none when it holds no recovery to judge)."""
    rec = recovery_pages(cube)
    return [Section(f"{cube.experiment}-recovery", f"{cube.experiment}: recovery quality", rec)] if rec else []
