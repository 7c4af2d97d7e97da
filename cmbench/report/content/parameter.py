"""Error against a numeric component parameter (``report_x``), the inliers' "sampling error"
reference, and the table of mean (sd) per data set and method.

An experiment may say ``[experiment.report] x = "dataset.d"``: its cube then has the
attribute ``report_x = "dataset.d"`` and the coordinate ``dataset_d`` along the
``dataset`` dim (one value per data set entry, NaN where an entry lacks it). Its
curve pages then put that parameter on the x axis: one page per (adversary,
metric), one panel per budget, or one page per metric with a panel per (adversary,
budget) when they fit (`MAX_PANELS`); one line per method (mean over instances with the
band of `load.band_kind`), the data sets being the points of a line. A cube with the variable
``inlier_l2`` (the error of the mean of the rows the adversary left untouched,
dims dataset, instance, adversary, budget) gets it drawn on its ``l2`` pages as
the reference line `figures.SAMPLING`: what no estimator can beat on those rows.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .figures import (SAMPLING, SAMPLING_NOTE, Panel, curve_page, error_pages, no_curves_reason, report_yscale,
                      sampling_error)
from ..layout import MAX_PANELS, Col, Page, Section, TextPages, fmt_num, plain, text_pages
from ..load import Cube, band_caption, band_edges, band_kind, metric_name, positions, summarize
from ..style import MethodStyles

def report_x(cube: Cube) -> Optional[tuple[str, str]]:
    """``(coordinate, axis label)`` of the cube's ``report_x`` (``"dataset.d"`` -> ``("dataset_d", "d")``),
    or None when it has none, or its coordinate is missing or not numeric along ``dataset``."""
    spec = str(cube.attrs.get("report_x", "") or "")
    if "." not in spec:
        return None
    dim, param = spec.split(".", 1)
    coord = f"{dim}_{param}"
    if dim != "dataset" or coord not in cube.ds.coords or cube.ds[coord].dims != ("dataset",):
        return None
    if cube.ds[coord].dtype.kind not in "fiu":
        return None
    return coord, param


def parameter_pages(cube: Cube, styles: MethodStyles) -> list[Page]:
    """The curve pages of a ``report_x`` cube: error against the parameter, one panel per budget.

    When every adversary's panels fit one page together (several adversaries, at most
    `MAX_PANELS` panels in all), each metric gets one page with a panel per (adversary, budget),
    budget by budget and within a budget in the suite's order of adversaries, as a paper's
    figure sets its corruption schemes side by side; otherwise each (adversary, metric) gets
    its own page.
    """
    found = report_x(cube)
    if found is None:
        return []
    coord, param = found
    xs = np.asarray(cube.ds[coord].values, dtype=float)
    keep = [d for d, x in zip(cube.datasets, xs) if np.isfinite(x)]
    x_of = dict(zip(cube.datasets, xs))
    x = np.array([x_of[d] for d in keep])
    notes = []
    if len(keep) < len(cube.datasets):
        notes.append(f"Data sets without a numeric {param} are left out: "
                     f"{', '.join(d for d in cube.datasets if d not in keep)}.")
    together = 1 < len(cube.adversaries) and len(cube.adversaries) * len(cube.budgets) <= MAX_PANELS
    groups = [list(cube.adversaries)] if together else [[a] for a in cube.adversaries]
    pages = []
    for adversaries in groups:
        for metric in cube.metrics:
            by_adversary = {a: _budget_panels(cube, a, metric, keep, x, named=together) for a in adversaries}
            panels = [by_adversary[a][j] for j in range(len(cube.budgets)) for a in adversaries
                      if j in by_adversary[a]]
            if not panels:
                continue
            e, name = cube.experiment, metric_name(metric, math=False)
            if together:
                slug, title = f"{e}-{metric}-by-{param}", f"{e}: {name} versus {param}, by adversary"
            else:
                (a,) = adversaries
                slug, title = f"{e}-{a}-{metric}-by-{param}", f"{e}: {name} versus {param}, adversary {a}"
            reference = metric == "l2" and any(SAMPLING in p.curves for p in panels)
            pages.append(curve_page(slug, title, panels, styles, xlabel=param, ylabel=metric_name(metric),
                                    notes=notes + ([SAMPLING_NOTE] if reference else []),
                                    subtitle=band_caption(cube), band=band_kind(cube),
                                    yscale=report_yscale(cube)))
    return pages


def _budget_panels(cube: Cube, adversary: str, metric: str, keep: list, x: np.ndarray,
                   named: bool) -> dict[int, Panel]:
    """One adversary's panels for ``metric``, by budget index, for the budgets with a value: each
    method's mean over instances and its band at the data sets ``keep`` (at ``x``), the inliers'
    reference on l2; ``named``: the panel's title and key name the adversary too."""
    ref = sampling_error(cube, adversary)
    values = cube.ok_values(metric).sel(adversary=adversary)
    summ = summarize(values)
    dims = ("method", "dataset", "budget")
    mean_a, lo_a, hi_a = (a.transpose(*dims).values
                          for a in (summ.mean, *band_edges(values, band_kind(cube))))
    mi, di = positions(summ.mean, "method"), positions(summ.mean, "dataset")
    cols = [di[d] for d in keep]
    panels = {}
    for j, b in enumerate(cube.budgets):
        curves = {m: (mean_a[mi[m], cols, j], lo_a[mi[m], cols, j], hi_a[mi[m], cols, j])
                  for m in cube.methods if np.isfinite(mean_a[mi[m], cols, j]).any()}
        if ref is not None and metric == "l2":
            none = np.full(len(keep), np.nan)
            curves[SAMPLING] = (ref.sel(dataset=keep).values[:, j], none, none)
        if curves:
            budget, key = f"{cube.budget_symbol(adversary)} = {fmt_num(float(b))}", f"budget {fmt_num(float(b))}"
            panels[j] = Panel(f"{adversary}\n{budget}" if named else budget, x, curves,
                              key=f"{adversary}, {key}" if named else key)
    return panels


def mean_sd_text(cube: Cube) -> Optional[TextPages]:
    """Per metric, adversary and budget: each method's mean (sd) over instances per data set
    (data sets in the order of the ``report_x`` parameter); only for ``report_x`` cubes."""
    found = report_x(cube)
    if found is None:
        return None
    coord, param = found
    xs = np.asarray(cube.ds[coord].values, dtype=float)
    order = [cube.datasets[i] for i in np.argsort(np.where(np.isfinite(xs), xs, np.inf), kind="stable")]
    tp = TextPages(f"{cube.experiment}: mean (sd) per data set and method")
    tp.para(f"Mean and standard deviation over the instances that ran of each method's error, per data "
            f"set (ordered by {param}); '–' where no instance has a value.", style="italic")
    for metric in cube.metrics:
        vals = cube.ok_values(metric)
        mean = vals.mean("instance", skipna=True)
        sd = vals.std("instance", ddof=1, skipna=True)
        for adversary in cube.adversaries:
            for b in cube.budgets:
                at = dict(adversary=adversary, budget=b)
                m_a = mean.sel(at).transpose("method", "dataset").sel(dataset=order).values
                s_a = sd.sel(at).transpose("method", "dataset").sel(dataset=order).values
                if not np.isfinite(m_a).any():
                    continue
                tp.heading(f"{metric_name(metric, math=False)}, adversary {adversary}, "
                           f"{plain(cube.budget_symbol(adversary))} = {fmt_num(float(b))}")
                heads = [f"{param} = {fmt_num(float(cube.ds[coord].sel(dataset=d)))}" for d in order]
                rows = [[m] + [_mean_sd(mu, s) for mu, s in zip(m_a[i], s_a[i])]
                        for i, m in enumerate(cube.methods)]
                ref = sampling_error(cube, adversary)
                if ref is not None and metric == "l2":
                    r = ref.sel(dataset=order, budget=b).values
                    rows.append([SAMPLING] + [fmt_num(float(v)) if np.isfinite(v) else "–" for v in r])
                tp.table([Col("method", 2.0)] + [Col(h, 1.0, "right") for h in heads], rows)
    return tp


def _mean_sd(mu: float, sd: float) -> str:
    if not np.isfinite(mu):
        return "–"
    return f"{fmt_num(float(mu))} ({fmt_num(float(sd))})" if np.isfinite(sd) else fmt_num(float(mu))


# -- sections (registered in `cmbench.report.pages`) -------------------------------------------
def curve_sections(cube: Cube, ctx) -> list[Section]:
    """A cube's error curves: against the parameter a suite varies (`report_x`), else against the
    budget (`figures.error_pages`); a cube with no value to draw says why."""
    e = cube.experiment
    by_x = report_x(cube)  # error against a parameter, not the budget
    curves = parameter_pages(cube, ctx.styles) if by_x else error_pages(cube, ctx.styles)
    return [Section(f"{e}-curves", f"{e}: error versus {by_x[1] if by_x else 'budget'}", curves,
                    [] if curves else [no_curves_reason(cube)])]


def mean_sd_sections(cube: Cube, ctx) -> list[Section]:
    """The mean and standard deviation table of a cube varying a parameter (none otherwise)."""
    table = mean_sd_text(cube)
    e = cube.experiment
    return [] if table is None else [Section(f"{e}-mean-sd", table.title, text_pages(table, f"{e}-mean-sd"))]
