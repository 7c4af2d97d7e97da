"""Figures of a report: error versus budget (one page per adversary and metric,
one panel per data set, or for one data set one page per metric with a panel per
adversary; one line per method with its band, `load.band_kind`), recovery
thresholds where the structure is known, runtime per method, and differences
against a baseline.

Each page is built here as a record (`plots.curves.CurvePage`,
`plots.runtime.RuntimePage`: the reduced numbers, labels and colours) and drawn
from it alone (`draw_curves`, `draw_runtime`, beside the record types in
`plots`), so that a page whose record did not change can be reused
(`pagecache`). Figures are plain `matplotlib.figure.Figure` objects (no pyplot
state), so they are freed as soon as the report has saved them.
"""
from __future__ import annotations

from pathlib import PurePath
from typing import Sequence

import numpy as np
import xarray as xr

from .claims_page import convergence_lines
from ...cube import FAILURES, GAPS
from ..load import BAND_LEGEND, Cube, band_caption, band_edges, band_kind, metric_name, positions, summarize
from ..layout import MAX_PANELS, Page, Section, fmt_list, fmt_num, plain, shorten, text_pages
from ..plots.curves import CurvePage, Panel, draw_curves
from ..plots.runtime import RuntimePage, draw_runtime
from ..style import LineStyle, MethodStyles
from .tables import baseline_difference, baseline_table_pages

#: (levels, modes) each key of ``cmbench.theory.thresholds`` speaks about: m_A/2n
#: (missing) and m_A/4n (replaced) bound alpha and rho alike (Theorem metaAlgThm
#: takes rho = alpha); Lemma lm:recovery_rho is about A2 with missing entries;
#: 1/n (Lemma lemma:metaUnknownA3) about A3 with missing entries.
THRESHOLD_SCOPE = {
    "m_a/2n": (("value", "coordinate"), ("missing",)),
    "m_a/4n": (("value", "coordinate"), ("replace",)),
    "rho_learn": (("value",), ("missing",)),
    "rho_unlearnable": (("value",), ("missing",)),
    "1/n": (("coordinate",), ("missing",)),
}


#: the reference line of the inliers' error (`sampling_error`): its label and look (not a method).
#: Named for what it is, the mean of the rows the adversary did not touch, so that it cannot be
#: taken for a method such as the noisy mean (which DKK17's code calls "Sampling Error (with noise)")
SAMPLING = "untouched rows' mean (reference)"
SAMPLING_STYLE = LineStyle("#000000", "", ":")
SAMPLING_NOTE = (f"'{SAMPLING}', dotted: the l2 error of the mean of the rows the adversary left untouched, "
                 f"the sampling error without the noise (mean over instances); no estimator is expected "
                 f"below it.")
#: a page whose curves span more than this many orders of magnitude gets a log y axis, or zoom
#: panels where some value is <= 0 (`y_scale`), unless the suite sets ``[experiment.report] yscale``
SPAN_DECADES = 1.5
#: at most this many x values: each gets its tick, at its value
MAX_TICKS = 12
#: two curves agreeing to this relative tolerance at every point of every panel are "the same"
SAME_RTOL = 1e-3


def sampling_error(cube: Cube, adversary: str) -> xr.DataArray | None:
    """The mean over instances of ``inlier_l2`` (the l2 error of the mean of the rows the adversary
    left untouched) under ``adversary``, dims (dataset, budget); None when the cube lacks it or
    the adversary is not sample-level.

    Only a sample-level adversary leaves its inliers whole: their mean's error is then the
    sampling error no robust estimator is expected to beat (DKK17's reference curve). A value-
    or coordinate-level adversary touches most rows, and the few it leaves are no reference.
    """
    if "inlier_l2" not in cube.ds.data_vars or cube.level(adversary) != "sample":
        return None
    v = cube.ds["inlier_l2"].sel(adversary=adversary)
    v = v.where(np.isfinite(v))
    if not bool(np.isfinite(v.values).any()):
        return None
    return v.mean("instance", skipna=True).transpose("dataset", "budget")


def curve_page(slug: str, title: str, panels: Sequence[Panel], styles: MethodStyles, *,
               band: str = "", yscale: str = "auto", notes: Sequence[str] = (), **kw) -> Page:
    """A `Page` of curves: the record, with the looks of the methods it draws, and `draw_curves`.

    ``band``: the kind of band the panels' edges are (`load.BAND_LEGEND` names it in the legend); ``yscale``:
    "auto" (`y_scale`'s rule), "log" or "linear". The page's x ticks (`MAX_TICKS`) and the curves
    that coincide with an earlier one (`coinciding`) are found here, once for both renderers.
    """
    panels = list(panels)
    scale, panels, scale_notes = y_scale(panels, yscale)
    drawn = dict.fromkeys(m for p in panels for m in p.curves)  # in the order of first appearance
    looks = {m: SAMPLING_STYLE if m == SAMPLING else styles[m] for m in drawn}
    has_band = any(np.isfinite(lo).any() for p in panels for _, lo, _ in p.curves.values())
    xs = np.unique(np.concatenate([np.asarray(p.x, float) for p in panels])) if panels else np.array([])
    xs = xs[np.isfinite(xs)]
    same = coinciding(panels)
    notes = list(notes) + scale_notes
    if same:
        notes.append("Curves marked 'same as' agree with the method named to within "
                     f"{SAME_RTOL:.1%} at every point; they are drawn with open markers on top of it.")
    return Page(slug, CurvePage(title, panels, looks, notes=notes,
                                band_label=f"shaded: {BAND_LEGEND.get(band, band)}" if band and has_band else "",
                                yscale=scale, xticks=[float(v) for v in xs] if 0 < xs.size <= MAX_TICKS else None,
                                same_as=same, **kw), draw_curves)


def coinciding(panels: Sequence[Panel]) -> dict[str, str]:
    """Method -> the first method before it whose curve it matches (to `SAME_RTOL`, NaN where
    it is NaN) on every panel: drawn alike, one would hide the other."""
    methods = list(dict.fromkeys(m for p in panels for m in p.curves))
    out: dict[str, str] = {}
    for i, m in enumerate(methods):
        for first in methods[:i]:
            if first in out:
                continue
            if all(_same(p.curves.get(m), p.curves.get(first)) for p in panels):
                out[m] = first
                break
    return out


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a[0], float), np.asarray(b[0], float)
    fa, fb = np.isfinite(a), np.isfinite(b)
    if not (fa == fb).all() or not fa.any():
        return False
    return bool(np.allclose(a[fa], b[fb], rtol=SAME_RTOL, atol=0.0))


def y_scale(panels: list[Panel], asked: str = "auto") -> tuple[str, list[Panel], list[str]]:
    """The y axis of a page of curves: ``(scale, panels, notes)``.

    The rule ("auto"): a method's size on the page is its largest absolute mean over every
    panel. When the largest size is more than `SPAN_DECADES` orders of magnitude above the
    smallest, a linear axis squashes the small curves into a line at the bottom; then the axis is
    logarithmic if every value is positive, else (errors in excess of a reference can be <= 0,
    which a log axis cannot show) each panel gets a zoomed companion panel holding the curves more
    than `SPAN_DECADES` orders below its largest. "log" and "linear" (``[experiment.report]
    yscale``) force the axis; on a forced log axis values <= 0 are not drawn, as a note says.
    """
    centres = [np.asarray(c, float) for p in panels for c, _, _ in p.curves.values()]
    values = np.concatenate([c[np.isfinite(c)] for c in centres]) if centres else np.array([])
    positive = bool(values.size) and bool((values > 0).all())
    if asked == "log":
        notes = [] if positive or not values.size else ["Values <= 0 are not drawn on the log axis."]
        return "log", panels, notes
    if asked == "linear" or values.size == 0:
        return "linear", panels, []
    sizes = {}
    for p in panels:
        for m, (c, _, _) in p.curves.items():
            c = np.abs(np.asarray(c, float))
            if np.isfinite(c).any():
                sizes[m] = max(sizes.get(m, 0.0), float(np.nanmax(c)))
    big = max(sizes.values())
    small = min(sizes.values())
    if big <= 0 or (small > 0 and big / small <= 10 ** SPAN_DECADES):
        return "linear", panels, []
    if positive:
        return "log", panels, [f"Log y axis: the curves span more than {SPAN_DECADES:g} orders of magnitude "
                               f"(the methods' largest values run from {fmt_num(small)} to {fmt_num(big)})."]
    out = []
    for p in panels:
        out.append(p)
        size = {m: float(np.nanmax(np.abs(np.asarray(c, float)))) for m, (c, _, _) in p.curves.items()
                if np.isfinite(np.asarray(c, float)).any()}
        near = [m for m in p.curves if m in size and size[m] * 10 ** SPAN_DECADES < max(size.values())]
        if near:
            out.append(Panel(f"{p.title.splitlines()[0]}, zoomed", p.x, {m: p.curves[m] for m in near},
                             key=f"{p.key or p.title.splitlines()[0]}, zoomed"))
    return "linear", out, [f"Zoomed panels: the curves more than {SPAN_DECADES:g} orders of magnitude below "
                           f"their panel's largest, on their own y axis (some values are <= 0: no log axis)."]


# -- error curves --------------------------------------------------------------------
def error_pages(cube: Cube, styles: MethodStyles) -> list[Page]:
    """One page per (adversary, metric) with a panel per data set that has values.

    A cube of one data set and several adversaries on one budget axis (at most
    `MAX_PANELS`) gets one page per metric instead, a panel per adversary, as a paper's
    figure sets its corruption schemes side by side; each adversary's notes then follow
    its name.
    """
    status = cube.status()
    errors = cube.by_method("error")
    together = (len(cube.datasets) == 1 and 1 < len(cube.adversaries) <= MAX_PANELS
                and len({cube.budget_axis(a) for a in cube.adversaries}) == 1)
    groups = [list(cube.adversaries)] if together else [[a] for a in cube.adversaries]
    pages = []
    for adversaries in groups:
        for metric in cube.metrics:
            panels, notes, reference = [], [], False
            for adversary in adversaries:
                own, own_notes, ref = _adversary_panels(cube, adversary, metric, status, errors, named=together)
                panels += own
                reference |= ref
                if together and own_notes:  # whose notes these are: the adversary leads the first
                    own_notes = [f"{adversary}: {own_notes[0]}", *own_notes[1:]]
                notes += own_notes
            if not panels:
                continue  # no page of empty panels; the note reaches the cells page
            notes = ([f"Recoverer {line}" for line in convergence_lines(cube)]
                     + ([SAMPLING_NOTE] if reference else []) + notes)
            name = metric_name(metric, math=False)
            if together:
                (d,) = cube.datasets
                slug = f"{cube.experiment}-{metric}"
                title = (f"{cube.experiment}: {name} versus budget on {cube.dataset_title(d).splitlines()[0]}, "
                         "by adversary")
            else:
                (a,) = adversaries
                slug = f"{cube.experiment}-{a}-{metric}"
                title = f"{cube.experiment}: {name} versus budget, adversary {a}{_adv_detail(cube, a)}"
            pages.append(curve_page(slug, title, panels, styles, xlabel=cube.budget_axis(adversaries[0]),
                                    ylabel=metric_name(metric), notes=notes, subtitle=band_caption(cube),
                                    band=band_kind(cube), yscale=report_yscale(cube)))
    return pages


def _adversary_panels(cube: Cube, adversary: str, metric: str, status: xr.DataArray, errors: xr.DataArray,
                      named: bool) -> tuple[list[Panel], list[str], bool]:
    """One adversary's panels for ``metric`` (one per data set with values), the notes on its
    gaps, and whether they hold the inliers' reference; ``named``: each panel's title starts
    with the adversary."""
    values = cube.ok_values(metric).sel(adversary=adversary)
    summ = summarize(values)
    lower, upper = band_edges(values, band_kind(cube))
    panels, empty = [], []
    ref = sampling_error(cube, adversary) if metric == "l2" else None
    for d in cube.datasets:
        mean = summ.mean.sel(dataset=d)
        if not np.isfinite(mean.values).any():
            empty.append(d)
            continue
        panel = _panel(cube, adversary, d, mean, lower.sel(dataset=d), upper.sel(dataset=d))
        if named:  # the data set's name is in the page's title: its facts stay, under the adversary
            panel.title = "\n".join([adversary, *panel.title.splitlines()[1:]])
            panel.key = adversary
        if ref is not None:
            none = np.full(len(cube.budgets), np.nan)
            panel.curves[SAMPLING] = (ref.sel(dataset=d).values, none, none)
        panels.append(panel)
    notes = [_empty_note(cube, status.sel(adversary=adversary), metric, empty)] if empty else []
    notes += _gap_notes(cube, status.sel(adversary=adversary), errors.sel(adversary=adversary), adversary)
    notes += _partial_notes(cube, summ, status.sel(adversary=adversary), adversary)
    return panels, notes, ref is not None and bool(panels)


def no_curves_reason(cube: Cube) -> str:
    """Why a cube has no curve page: no metric has a finite value in any ok cell."""
    counts = cube.status_counts()
    statuses = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return (f"no curve page: no method has a finite {' or '.join(cube.metrics) or 'metric'} value "
            f"in any cell that ran (cells: {statuses or 'none'}); the ranking and the cells "
            f"that did not run say more")


def report_yscale(cube: Cube) -> str:
    """The cube's ``report_yscale`` attribute (``[experiment.report] yscale``), else "auto"."""
    asked = str(cube.attrs.get("report_yscale", "") or "")
    return asked if asked in ("log", "linear") else "auto"


def _panel(cube: Cube, adversary: str, dataset: str, mean: xr.DataArray,
           lower: xr.DataArray, upper: xr.DataArray) -> Panel:
    x = cube.budgets
    means, lows, highs = (a.transpose("method", "budget").values for a in (mean, lower, upper))
    at = positions(mean, "method")
    curves = {m: (means[at[m]], lows[at[m]], highs[at[m]]) for m in cube.methods}
    drawn, off = [], []
    lo, hi = float(np.nanmin(x)), float(np.nanmax(x))
    pad = 0.25 * (hi - lo if hi > lo else max(abs(hi), 1.0))
    for label, value in thresholds_for(cube, dataset, adversary):
        if lo - pad <= value <= hi + pad:
            drawn.append((label, value))
        else:
            off.append(f"{label} = {fmt_num(value)}")
    return Panel(cube.dataset_title(dataset), x, curves, drawn, off, key=dataset)


def thresholds_for(cube: Cube, dataset: str, adversary: str) -> list[tuple[str, float]]:
    """Thresholds recorded for a data set whose structure is known, that apply to
    the adversary's level and mode, sorted by value.

    The runner stores ``cmbench.theory.thresholds(A)`` in ``datasets_info`` as
    ``{key: {"value", "label"}}``. Which adversaries a threshold speaks about
    comes from the entry's optional ``"levels"`` / ``"modes"`` lists, else from
    `THRESHOLD_SCOPE`; an entry neither scopes applies everywhere.
    """
    info = cube.datasets_info.get(dataset, {})
    if not info.get("structure_known"):
        return []
    level = cube.level(adversary)
    mode = cube.mode(adversary)
    out = []
    for key, entry in (info.get("thresholds") or {}).items():
        value = entry.get("value") if isinstance(entry, dict) else None
        if value is None or not np.isfinite(float(value)):
            continue
        levels, modes = THRESHOLD_SCOPE.get(str(key), (None, None))
        levels, modes = entry.get("levels", levels), entry.get("modes", modes)
        if (level and levels is not None and level not in levels) or (mode and modes is not None
                                                                       and mode not in modes):
            continue
        out.append((_safe_math(str(entry.get("label") or key)), float(value)))
    return sorted(out, key=lambda t: t[1])


# -- notes ---------------------------------------------------------------------------
def _gap_notes(cube: Cube, status: xr.DataArray, errors: xr.DataArray, adversary: str) -> list[str]:
    """One line per kind of gap or failure of this adversary, where, and why;
    methods with the same gap share a line."""
    sym = plain(cube.budget_symbol(adversary))
    what = {"undefined": "undefined", "not-applicable": "not applicable",
            "failed": "FAILED", "timeout": "TIMED OUT"}
    groups: dict[tuple, list] = {}  # (kind, where, budgets, why) -> [methods, cells]
    for m in cube.methods:
        st = status.sel({"method": m}).values  # dataset, instance, budget
        err = errors.sel({"method": m}).values
        for kind in GAPS + FAILURES:
            hit = st == kind
            if not hit.any():
                continue
            ds_hit = [d for i, d in enumerate(cube.datasets) if hit[i].any()]
            where = (f"on {fmt_list(ds_hit, len(cube.datasets))} data sets" if len(ds_hit) > 1
                     else f"on {ds_hit[0]}")
            budgets = fmt_list(cube.budgets[hit.any(axis=(0, 1))].tolist(), len(cube.budgets))
            why = "; see the list of cells that did not run"
            if kind in GAPS:
                reasons = sorted({str(e) for e in err[hit] if str(e)})
                why = f": {shorten(reasons[0], 90)}" if reasons else ""
                if len(reasons) > 1:
                    why += f" (+{len(reasons) - 1} other reasons)"
            entry = groups.setdefault((kind, where, budgets, why), [[], 0])
            entry[0].append(m)
            entry[1] += int(hit.sum())
    out = [f"{', '.join(ms)}: {what[kind]} {where} at {sym} = {budgets} ({n} cells){why}"
           for (kind, where, budgets, why), (ms, n) in groups.items()]
    if out:
        out.insert(0, "Gaps in the curves (undefined or not-applicable cells are not failures):")
    return out


def _partial_notes(cube: Cube, summ, status: xr.DataArray, adversary: str) -> list[str]:
    """Where a mean rests on fewer instances than the cube holds."""
    ok = (status == "ok").any("instance")  # a cell some instance computed
    partial = (summ.count < summ.total) & (summ.count > 0) & ok
    if not bool(partial.any()):
        return []
    ms = [str(m) for m in partial["method"].values if bool(partial.sel({"method": m}).any())]
    return [f"Means over fewer than all {summ.total} instances (some not ok) for: "
            f"{', '.join(ms)}."]


def _empty_note(cube: Cube, status: xr.DataArray, metric: str, empty: Sequence[str]) -> str:
    nothing_ok = [d for d in empty if not bool((status.sel(dataset=d) == "ok").any())]
    unknown = [d for d in empty if d not in nothing_ok]
    parts = []
    if unknown:
        why = " (covariance unknown)" if metric == "mahalanobis" else ""
        parts.append(f"no {metric} values{why} for {', '.join(unknown)}")
    if nothing_ok:
        parts.append(f"no ok cell for {', '.join(nothing_ok)}")
    return "No panel: " + "; ".join(parts) + "."


# -- runtime -------------------------------------------------------------------------
def runtime_page(cube: Cube, styles: MethodStyles) -> Page | None:
    """Seconds per cell per method: bars are the mean over ok cells, markers the
    mean per data set; a log axis when the means span more than two decades."""
    secs = cube.by_method("seconds").where(cube.status() == "ok")
    secs = secs.where(np.isfinite(secs))
    methods = list(cube.methods)
    overall = np.array([float(secs.sel({"method": m}).mean(skipna=True)) for m in methods])
    if not np.isfinite(overall).any():
        return None
    per_ds = secs.mean(["instance", "adversary", "budget"], skipna=True)  # method, dataset
    by_budget = secs.mean(["dataset", "instance", "adversary"], skipna=True)  # method, budget
    order = np.argsort(cube.budgets)
    counts = cube.status_counts()
    record = RuntimePage(
        experiment=cube.experiment, methods=methods, styles={m: styles[m] for m in methods},
        overall=overall, datasets=list(cube.datasets),
        per_dataset=per_ds.transpose("method", "dataset").sel(
            {"method": methods, "dataset": list(cube.datasets)}).values.astype(float),
        budgets=cube.budgets[order],
        # with one budget the "by budget" panel would be one column of dots: no panel then
        by_budget=(by_budget.transpose("method", "budget").sel({"method": methods}).values[:, order]
                   if len(order) > 1 else None),
        budget_label=("budget" if len({cube.level(a) for a in cube.adversaries}) != 1
                      else cube.budget_axis(cube.adversaries[0])),
        timeouts=int(counts.get("timeout", 0)), failures=int(counts.get("failed", 0)))
    return Page(f"{cube.experiment}-runtime", record, draw_runtime)


# -- baseline ------------------------------------------------------------------------
def baseline_pages(cube: Cube, base: Cube, styles: MethodStyles) -> list[Page]:
    """Difference (this run - baseline) of the mean error, per adversary and metric."""
    pages = []
    for metric in cube.metrics:
        if metric not in base.ds:
            continue
        diff, half, _, _ = baseline_difference(cube, base, metric)
        if not np.isfinite(diff.values).any():
            continue
        for adversary in [str(a) for a in diff["adversary"].values]:
            panels = []
            for d in [str(v) for v in diff["dataset"].values]:
                dd = diff.sel(adversary=adversary, dataset=d)
                if not np.isfinite(dd.values).any():
                    continue
                hh = half.sel(adversary=adversary, dataset=d)
                curves = {str(m): (dd.sel({"method": m}).values, (dd - hh).sel({"method": m}).values,
                                   (dd + hh).sel({"method": m}).values) for m in dd["method"].values}
                panels.append(Panel(cube.dataset_title(d), np.asarray(dd["budget"].values, float),
                                    curves, key=d))
            if not panels:
                continue
            name = metric_name(metric, math=False)
            title = (f"{cube.experiment}: {name}, this run minus baseline "
                     f"({base.experiment}), adversary {adversary}")
            pages.append(curve_page(
                f"{cube.experiment}-baseline-{adversary}-{metric}", title, panels, styles,
                xlabel=cube.budget_axis(adversary), ylabel=f"difference in {metric_name(metric)}",
                subtitle=f"mean over instances of the paired difference, "
                         f"95% band; below 0: lower error than the baseline {PurePath(base.source).name}",
                zero_line=True, floor_zero=False, band="ci95", yscale="linear"))
    return pages


# -- helpers -------------------------------------------------------------------------
def _adv_detail(cube: Cube, adversary: str) -> str:
    info = cube.adversaries_info.get(adversary, {})
    bits = [str(info[k]) for k in ("level", "mode") if info.get(k)]
    name = info.get("name")
    if name and name != adversary:
        bits.insert(0, str(name))
    return f" ({', '.join(bits)})" if bits else ""


def _safe_math(label: str) -> str:
    """A label with unbalanced ``$`` would make mathtext raise; escape it then."""
    return label if label.count("$") % 2 == 0 else label.replace("$", r"\$")


# -- sections (registered in `cmbench.report.pages`) -------------------------------------------
def runtime_sections(cube: Cube, ctx) -> list[Section]:
    """A cube's runtime per method; without a finite time, the section says so."""
    rt = runtime_page(cube, ctx.styles)
    return [Section(f"{cube.experiment}-runtime", f"{cube.experiment}: runtime per method",
                    [rt] if rt is not None else [],
                    [] if rt is not None else ["no cell ran to the end with a finite time"])]


def baseline_sections(cube: Cube, ctx) -> list[Section]:
    """A cube's difference against the baseline (none without a comparable baseline)."""
    e = cube.experiment
    return [Section(f"{e}-baseline", f"{e}: difference against the baseline",
                    baseline_pages(c, b, ctx.styles) + text_pages(baseline_table_pages(c, b), f"{e}-baseline"))
            for c, b in ctx.pairs if c is cube]
