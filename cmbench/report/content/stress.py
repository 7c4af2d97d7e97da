"""Stress pages: adaptive worst-case adversaries next to the fixed attacks, on a
d_ENTRY axis.

For a cube that holds adaptive adversaries (``adversaries_info[...]["adaptive"]``,
e.g. ``worst-case-a2-hide``), `stress_pages` adds:

1. per (adaptive adversary, data set): each method's error under the worst case
   found next to its error under the fixed attacks of the same mode, one panel
   per budget. Fixed attacks the adaptive one can simulate at the same budget
   (same mode, a level no stronger: A1 <= A2 <= A3, Proposition adversaryLemma)
   are filled grey, stronger ones hollow; a segment in the method's colour runs
   from the strongest fixed attack within reach to the worst case (the gain of
   searching);
2. per metric: every cell's error against the d_ENTRY^1 of its corruption, one
   colour per method (the report's colours), filled for adaptive adversaries,
   hollow for fixed ones, with the theory's rate alpha n / m_A (Corollary
   cor:upperBoundStructure, constant 1) drawn where the structure is known;
   then the same errors against d_TV, which does not order them;
3. a table per adaptive adversary and method: the worst-case error, the
   strongest fixed attack within reach, their ratio, cells where the worst case
   broke the pipeline, pipeline evaluations spent, and the d_ENTRY^1,
   d_ENTRY^inf and d_TV of the worst-case corruptions.

Reads only the cube (variables ``evaluations``, ``d_entry1``, ``d_entry_inf``,
``d_tv``; attributes ``adversaries_info``, ``datasets_info``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np
import xarray as xr

from ..layout import (literal, LEFT_MARGIN, LEGEND_ROW, LEGEND_Y, NOTE_LINE, PAGE, Col, Page, Section, TextPages, clip_top,
                     draw_notes, draw_title, legend_columns, page_legend, panel_grid, plain, text_pages, wrap_notes)
from ..load import Cube, metric_name, summarize
from ..style import MethodStyles
from .tables import fmt_num

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LEVEL_RANK = {"sample": 1, "value": 2, "coordinate": 3}
LEVEL_TAG = {"sample": "A1", "value": "A2", "coordinate": "A3"}
FIXED_MARKERS = ("s", "^", "D", "v", "P", "<", ">", "h", "p", "*")
MAX_BUDGET_PANELS = 6
#: the statuses that mean "the corruption left the method without an answer"
BROKEN = ("undefined",)

__all__ = ["adaptive_adversaries", "stress_pages", "worst_case_summary"]


# -- reading --------------------------------------------------------------------------
def adaptive_adversaries(cube: Cube) -> list[str]:
    """Adversary labels declared adaptive (``adversaries_info``, recorded by every runner since 0e65123)."""
    return [a for a in cube.adversaries if cube.adversaries_info.get(a, {}).get("adaptive")]


def fixed_for(cube: Cube, adversary: str) -> list[tuple[str, bool]]:
    """Fixed (non-adaptive) adversaries of the same mode, with whether the adaptive
    ``adversary`` can simulate them at the same budget (level no stronger)."""
    level, mode = cube.level(adversary), cube.mode(adversary)
    adaptive = set(adaptive_adversaries(cube))
    return [(a, LEVEL_RANK.get(cube.level(a), 9) <= LEVEL_RANK.get(level, 0)) for a in cube.adversaries
            if a not in adaptive and not (mode and cube.mode(a) and cube.mode(a) != mode)]


def _metric(cube: Cube) -> str:
    """The error the adversaries maximize: l2 (the runner's pipeline), else the first."""
    return "l2" if "l2" in cube.metrics else cube.metrics[0]


def _means(cube: Cube, metric: str) -> xr.DataArray:
    """Mean over ok instances, dims (method, dataset, adversary, budget)."""
    return summarize(cube.ok_values(metric)).mean


def _broken(cube: Cube) -> xr.DataArray:
    """Per (method, dataset, adversary, budget): some instance ended undefined."""
    return cube.status().isin(list(BROKEN)).any("instance")


# -- page 1: worst case next to the fixed attacks ---------------------------------------
@dataclass
class DotPanel:
    """One budget's panel: per method (rows), the worst case found and each fixed attack's error."""

    title: str
    worst: np.ndarray
    broken: np.ndarray  # bool: the worst case left the method undefined
    fixed: list  # per fixed adversary (as `DotPage.fixed`), an array over methods
    strongest: np.ndarray  # the strongest fixed attack within reach, per method
    top: Optional[float]  # x limit cutting off outliers, else None
    right: float  # the x axis' right end


@dataclass
class DotPage:
    """A worst-case-versus-fixed-attacks page: what `draw_dots` draws."""

    title: str
    adversary: str
    methods: list[str]
    colors: list[str]
    fixed: list  # (label, within reach, level tag) per fixed adversary
    xlabel: str
    panels: list[DotPanel]
    notes: list[str]
    footer: str = ""


def worst_vs_fixed_pages(cube: Cube, styles: MethodStyles) -> list[Page]:
    metric = _metric(cube)
    means = _means(cube, metric)
    broken = _broken(cube)
    shown_any = np.isfinite(means) | broken  # a method's value or its break is drawn
    pages = []
    for adv in adaptive_adversaries(cube):
        fixed = fixed_for(cube, adv)
        for d in cube.datasets:
            here = shown_any.sel(dataset=d, adversary=adv)
            budgets = [b for b in cube.budgets if b > 0 and bool(here.sel(budget=b).values.any())]
            if not budgets:
                continue
            shown = _spread(budgets, MAX_BUDGET_PANELS)
            methods = [m for m in cube.methods if bool(here.sel({"method": m}).values.any())]
            record = _dot_record(cube, adv, d, shown, methods, fixed, means, broken, styles, metric)
            if len(shown) < len(budgets):
                record.footer = f"Budgets shown: {len(shown)} of {len(budgets)}."
            pages.append(Page(f"{cube.experiment}-stress-{adv}-{d}", record, draw_dots))
    return pages


def _spread(values: Sequence[float], most: int) -> list[float]:
    if len(values) <= most:
        return list(values)
    idx = np.unique(np.round(np.linspace(0, len(values) - 1, most)).astype(int))
    return [values[i] for i in idx]


def _dot_record(cube: Cube, adv: str, dataset: str, budgets: Sequence[float], methods: list[str],
                fixed: list[tuple[str, bool]], means: xr.DataArray, broken: xr.DataArray,
                styles: MethodStyles, metric: str) -> DotPage:
    """Reduce the cube to one `DotPage`: per budget, each method's worst case and fixed attacks."""
    panels, notes = [], []
    symbol = cube.budget_symbol(adv)
    for b in budgets:
        sel = means.sel({"method": methods, "dataset": dataset, "budget": b})
        worst = sel.sel(adversary=adv).values
        brk = broken.sel({"method": methods, "dataset": dataset, "adversary": adv, "budget": b}).values
        brk = brk & ~np.isfinite(worst)
        fvals = {a: sel.sel(adversary=a).values for a, _ in fixed}
        within = [fvals[a] for a, ok in fixed if ok]
        strongest = (np.nanmax(np.vstack(within), axis=0) if within and
                     np.isfinite(np.vstack(within)).any() else np.full(len(methods), np.nan))
        finite = np.concatenate([worst[np.isfinite(worst)]] +
                                [v[np.isfinite(v)] for v in fvals.values()])
        top = clip_top(finite)
        right = top if top else (1.06 * finite.max() if finite.size and finite.max() > 0 else 1.0)
        if top:
            over = [(m, w) for m, w in zip(methods, worst) if np.isfinite(w) and w > top]
            over += [(f"{m} ({a})", v) for a, vals in fvals.items()
                     for m, v in zip(methods, vals) if np.isfinite(v) and v > top]
            if over:
                notes.append(f"{symbol}={fmt_num(b)}: off the right edge: "
                             + "; ".join(f"{m} {fmt_num(v)}" for m, v in over[:8])
                             + (f" and {len(over) - 8} more" if len(over) > 8 else "") + ".")
        panels.append(DotPanel(f"{symbol} = {fmt_num(b)}", worst, brk, [fvals[a] for a, _ in fixed],
                               strongest, top, float(right)))
    level = cube.level(adv)
    title = (f"{cube.experiment}: worst case found vs fixed attacks, {adv} "
             f"({LEVEL_TAG.get(level, level)}, {cube.mode(adv)}) on {dataset}")
    notes.append(
        "Mean over instances. Fixed attacks of the same mode at the same budget; filled grey: "
        "a level the adaptive adversary can simulate (Prop. adversaryLemma), hollow: a stronger level; "
        "a fixed attack that left a method undefined is not drawn. The adaptive adversary maximized "
        "the l2 error of each method separately; a randomized estimator (e.g. tukey) draws other "
        "random numbers in each cell, so the worst case may land slightly below a fixed attack it tried.")
    return DotPage(title, adv, list(methods), [styles[m].color for m in methods],
                   [(a, ok, LEVEL_TAG.get(cube.level(a), "?")) for a, ok in fixed],
                   metric_name(metric), panels, notes)


def draw_dots(page: DotPage) -> Figure:
    from matplotlib.lines import Line2D

    methods, colors = page.methods, page.colors
    n = len(page.panels)
    fig, axes = panel_grid(n, (math.ceil(n / min(n, 3)), min(n, 3)), sharey=True)
    y = np.arange(len(methods))[::-1].astype(float)
    for ax, panel in zip(axes.ravel(), page.panels):
        top, worst = panel.top, panel.worst
        for k, ((_, ok, _), v) in enumerate(zip(page.fixed, panel.fixed)):
            ax.scatter(np.minimum(v, top) if top else v, y, marker=FIXED_MARKERS[k % len(FIXED_MARKERS)],
                       s=24, facecolor="0.6" if ok else "white", edgecolor="0.3", linewidths=0.8,
                       zorder=3)
        for yi, s_, w, c in zip(y, panel.strongest, worst, colors):
            if np.isfinite(s_) and np.isfinite(w):
                ax.plot([s_, min(w, top) if top else w], [yi, yi], color=c, linewidth=2.2,
                        alpha=0.75, zorder=2, solid_capstyle="butt")
        ok = np.isfinite(worst)
        ax.scatter(np.minimum(worst[ok], top) if top else worst[ok], y[ok], marker="o", s=48,
                   c=[c for c, o in zip(colors, ok) if o], edgecolors="black", linewidths=0.7,
                   zorder=4)
        ax.set_xlim(0, panel.right)
        brk = panel.broken
        if brk.any():
            ax.scatter(np.full(brk.sum(), panel.right), y[brk], marker="X", s=60, clip_on=False,
                       c=[c for c, b_ in zip(colors, brk) if b_], edgecolors="black",
                       linewidths=0.6, zorder=5)
        ax.set_title(panel.title, loc="left", fontsize=9.5)
        ax.set_xlabel(page.xlabel)
        ax.set_yticks(y)
        ax.set_yticklabels([literal(m) for m in methods], fontsize=8)
        ax.set_ylim(-0.7, len(methods) - 0.3)
        ax.grid(axis="y", visible=False)
    for row in axes:
        for lab, c in zip(row[0].get_yticklabels(), colors):
            lab.set_color(c)

    handles = [Line2D([], [], marker="o", linestyle="none", markerfacecolor="0.5",
                      markeredgecolor="black", markersize=7,
                      label=f"{page.adversary} (worst case found; method colour)")]
    handles.append(Line2D([], [], color="0.35", linewidth=2.2,
                          label="gain over the strongest fixed attack within reach"))
    for k, (a, ok, tag) in enumerate(page.fixed):
        handles.append(Line2D([], [], marker=FIXED_MARKERS[k % len(FIXED_MARKERS)], linestyle="none",
                              markerfacecolor="0.6" if ok else "white", markeredgecolor="0.3",
                              markersize=6, label=f"{a} ({tag}{'' if ok else ', stronger level'})"))
    handles.append(Line2D([], [], marker="X", linestyle="none", markerfacecolor="0.5",
                          markeredgecolor="black", markersize=7,
                          label="worst case broke the method (undefined)"))
    labels = [h.get_label() for h in handles]
    ncol = legend_columns(labels, 8.5, 3)
    rows = math.ceil(len(handles) / ncol)
    h = PAGE[1]
    notes = wrap_notes(page.notes)
    fig.subplots_adjust(left=0.17, right=0.97, top=1 - (LEGEND_Y + 0.22 * rows + 0.35) / h,
                        bottom=(0.6 + NOTE_LINE * len(notes)) / h, wspace=0.08, hspace=0.35)
    draw_title(fig, page.title)
    page_legend(fig, handles, ncol, 0.5, fontsize=8.5, handlelength=2.2)
    draw_notes(fig, notes, bottom=0.1)
    if page.footer:
        fig.text(LEFT_MARGIN, 0.012, page.footer, fontsize=7.5, color="0.2")
    return fig


# -- page 2: error against d_ENTRY^1 -----------------------------------------------------
#: x variables of the distance pages: label, axis label, whether the theory's rate applies
DISTANCES = {
    "d_entry1": ("d_ENTRY^1", r"$d_{\mathrm{ENTRY}}^1$ of the corruption", True),
    "d_tv": ("d_TV", r"$d_{\mathrm{TV}}$ of the corruption (fraction of rows touched)", False),
}


@dataclass
class Scatter:
    """One method's points on a distance panel, fixed or adaptive attacks."""

    x: np.ndarray
    y: np.ndarray
    color: str
    marker: str
    adaptive: bool


@dataclass
class DistancePanel:
    title: str
    points: list[Scatter]
    top: Optional[float]  # y limit cutting off outliers, else None
    ymax: float
    xmax: float
    rate: Optional[tuple[int, int]]  # (n, m_A): the rate alpha n / m_A and m_A / 2n are drawn


@dataclass
class DistancePage:
    """Error against a distance of the corruption: what `draw_distance` draws."""

    title: str
    xlabel: str
    ylabel: str
    legend: list[tuple[str, str]]  # (label, colour) per method
    panels: list[DistancePanel]
    notes: list[str]


def dentry_pages(cube: Cube, styles: MethodStyles, var: str = "d_entry1") -> list[Page]:
    """Error against a distance of the corruption (``var``: d_entry1 or d_tv),
    one page per metric, one panel per data set."""
    if var not in cube.ds:
        return []
    name, xlabel, with_rate = DISTANCES[var]
    adaptive = set(adaptive_adversaries(cube))
    dent = cube.ds[var]  # dataset, instance, adversary, budget
    pages = []
    for metric in cube.metrics:
        vals = cube.ok_values(metric)
        shown = [d for d in cube.datasets if bool(np.isfinite(vals.sel(dataset=d).values).any())]
        if not shown:
            continue
        panels, notes = [], []
        for d in shown:
            x_all = dent.sel(dataset=d)
            points = []
            for m in cube.methods:
                v = vals.sel({"method": m, "dataset": d})
                for kind, advs in (("fixed", [a for a in cube.adversaries if a not in adaptive]),
                                   ("adaptive", [a for a in cube.adversaries if a in adaptive])):
                    if not advs:
                        continue
                    yy = v.sel(adversary=advs).values.ravel()
                    xx = x_all.sel(adversary=advs).transpose(*v.sel(adversary=advs).dims).values.ravel()
                    ok = np.isfinite(xx) & np.isfinite(yy)
                    if ok.any():
                        points.append(Scatter(xx[ok], yy[ok], styles[m].color, styles[m].marker,
                                              kind == "adaptive"))
            xs = np.concatenate([p.x for p in points]) if points else np.array([0.0])
            ys = np.concatenate([p.y for p in points]) if points else np.array([0.0])
            top = clip_top(ys)
            if top:
                notes.append(f"{d}: errors up to {fmt_num(float(ys.max()))} are off the top.")
            info = cube.datasets_info.get(d, {})
            shape = info.get("shape") or []
            rate = ((int(shape[1]), int(info["m_a"])) if with_rate and info.get("structure_known")
                    and info.get("m_a") and len(shape) == 2 else None)
            panels.append(DistancePanel(cube.dataset_title(d), points, top, float(ys.max()),
                                        max(float(xs.max()), 1e-3) * 1.05, rate))
        rate_drawn = any(p.rate for p in panels)
        notes.append(
            f"One point per (instance, adversary, budget) and method with an ok cell. {name} is "
            "measured on the adversary's own row correspondence (the runner's record); for an "
            "adaptive adversary it is the largest over the methods it attacked (each method had its "
            "own corruption). "
            + ("" if with_rate else "The same errors as on the d_ENTRY^1 page: d_TV counts rows "
               "touched, however few of their entries, so coordinate-level attacks of equal damage "
               "spread over it. ")
            + ("The rate alpha n/m_A is Corollary cor:upperBoundStructure's (Mahalanobis distance, "
               "up to a constant; tight by Theorem thm:lowerBoundStructure), valid below m_A/2n "
               "for missing entries." if rate_drawn else ""))
        record = DistancePage(f"{cube.experiment}: {metric_name(metric, math=False)} against {name}, all cells",
                              xlabel, metric_name(metric),
                              [(m, styles[m].color) for m in cube.methods], panels, notes)
        pages.append(Page(f"{cube.experiment}-stress-{var}-{metric}", record, draw_distance))
    return pages


def draw_distance(page: DistancePage) -> Figure:
    from matplotlib.lines import Line2D

    fig, axes = panel_grid(len(page.panels))
    rate_drawn = half_drawn = False
    for ax, panel in zip(axes.ravel(), page.panels):
        for p in panel.points:
            ax.scatter(p.x, p.y, s=26 if p.adaptive else 18, marker="o" if p.adaptive else p.marker,
                       facecolor=p.color if p.adaptive else "none", edgecolor=p.color, linewidths=0.8,
                       alpha=0.8, zorder=3 if p.adaptive else 2)
        if panel.top:
            ax.set_ylim(0, panel.top)
        else:
            ax.set_ylim(0, 1.06 * panel.ymax if panel.ymax > 0 else 1.0)
        ax.set_xlim(0, panel.xmax)
        if panel.rate:
            n_cols, m_a = panel.rate
            grid = np.linspace(0, panel.xmax, 50)
            ax.plot(grid, grid * n_cols / m_a, color="black", linestyle="--", linewidth=1.1, zorder=4)
            half = m_a / (2 * n_cols)
            if half <= panel.xmax:
                ax.axvline(half, color="0.45", linestyle=":", linewidth=1.1, zorder=1)
                half_drawn = True
            rate_drawn = True
        ax.set_title(panel.title, loc="left", fontsize=9.5)
        ax.set_xlabel(page.xlabel)
        ax.set_ylabel(page.ylabel)
    handles = [Line2D([], [], marker="o", linestyle="none", color=c, label=literal(m)) for m, c in page.legend]
    handles += [Line2D([], [], marker="o", linestyle="none", markerfacecolor="0.4",
                       markeredgecolor="0.4", label="adaptive (worst case)"),
                Line2D([], [], marker="s", linestyle="none", markerfacecolor="none",
                       markeredgecolor="0.4", label="fixed attacks (method marker)")]
    if rate_drawn:
        handles.append(Line2D([], [], color="black", linestyle="--",
                              label=r"$\alpha n/m_A$ (rate, constant 1)"))
    if half_drawn:
        handles.append(Line2D([], [], color="0.45", linestyle=":", label=r"$m_A/2n$"))
    ncol = legend_columns([h.get_label() for h in handles], 8.5, 6)
    rows = math.ceil(len(handles) / ncol)
    h = PAGE[1]
    notes = wrap_notes(page.notes)
    fig.subplots_adjust(left=LEFT_MARGIN, right=0.98, top=1 - (LEGEND_Y + LEGEND_ROW * rows + 0.4) / h,
                        bottom=(0.7 + NOTE_LINE * len(notes)) / h, hspace=0.5, wspace=0.22)
    draw_title(fig, page.title)
    page_legend(fig, handles, ncol, 0.5, fontsize=8.5)
    draw_notes(fig, notes)
    return fig


# -- page 3: table -----------------------------------------------------------------------
def worst_case_summary(cube: Cube) -> list[dict]:
    """Per adaptive adversary and method, over (data set, budget > 0) cells:

    ``cells`` with both a worst-case value and a fixed attack's; over those,
    ``worst`` the mean worst-case error and ``fixed`` the mean error of the
    strongest fixed attack within reach;
    ``ratio_median`` / ``ratio_max`` of worst / strongest fixed and where the
    max is; ``broken`` cells left undefined; ``evaluations`` mean pipeline calls
    (over cells that ended ok or undefined, not failed ones);
    ``d_entry1``, ``d_entry_inf``, ``d_tv`` means over the adversary's cells.
    """
    metric = _metric(cube)
    means = _means(cube, metric)
    broken = _broken(cube)
    evals = cube.by_method("evaluations") if "evaluations" in cube.ds else None
    rows = []
    pos = [b for b in cube.budgets if b > 0]
    for adv in adaptive_adversaries(cube):
        within = [a for a, ok in fixed_for(cube, adv) if ok]
        dist = {v: float(cube.ds[v].sel(adversary=adv, budget=pos).mean(skipna=True))
                if v in cube.ds and pos else float("nan") for v in ("d_entry1", "d_entry_inf", "d_tv")}
        for m in cube.methods:
            w = means.sel({"method": m, "adversary": adv, "budget": pos})
            if within:
                f = means.sel({"method": m, "adversary": within, "budget": pos})
                strongest_name = f.fillna(-np.inf).argmax("adversary")
                strongest = f.max("adversary", skipna=True)
            else:
                strongest = xr.full_like(w, np.nan)
            ok = np.isfinite(w.values) & np.isfinite(strongest.values)
            nbroken = int(broken.sel({"method": m, "adversary": adv, "budget": pos}).values.sum())
            if not ok.any() and not nbroken:
                continue
            pos_ok = ok & (strongest.values > 0)
            ratio = np.where(pos_ok, w.values / np.where(pos_ok, strongest.values, 1.0), np.nan)
            where = "–"
            if np.isfinite(ratio).any():
                i = np.unravel_index(np.nanargmax(ratio), ratio.shape)
                d, b = w["dataset"].values[i[0]], w["budget"].values[i[1]]
                name = within[int(strongest_name.values[i])] if within else ""
                where = f"{d}, {plain(cube.budget_symbol(adv))}={fmt_num(float(b))} vs {name}"
            ev = float("nan")
            if evals is not None:  # over the cells where the search ran to the end
                ran = cube.status().isin(["ok", *BROKEN]).sel({"method": m, "adversary": adv, "budget": pos})
                e = evals.sel({"method": m, "adversary": adv, "budget": pos}).where(ran).values
                ev = float(np.nanmean(e)) if np.isfinite(e).any() else float("nan")
            rows.append({
                "adversary": adv, "method": m, "cells": int(ok.sum()),
                "worst": float(np.mean(w.values[ok])) if ok.any() else float("nan"),
                "fixed": float(np.nanmean(strongest.values[ok])) if ok.any() else float("nan"),
                "ratio_median": float(np.nanmedian(ratio)) if np.isfinite(ratio).any() else float("nan"),
                "ratio_max": float(np.nanmax(ratio)) if np.isfinite(ratio).any() else float("nan"),
                "where": where, "broken": nbroken, "evaluations": ev, **dist})
    return rows


def summary_pages(cube: Cube) -> "TextPages | None":
    rows = worst_case_summary(cube)
    if not rows:
        return None
    tp = TextPages(f"{cube.experiment}: worst case found vs the strongest fixed attack")
    tp.para("Per adaptive adversary and method, over the (data set, budget > 0) cells: the mean "
            "error under the worst case found, the mean error under the strongest fixed attack "
            "it can simulate at the same budget (same mode, level no stronger), the median and "
            "largest ratio worst / fixed (and where the largest is), the cells where the worst "
            "case left the method undefined (not in the means), the pipeline evaluations spent "
            "per cell, and the mean d_ENTRY^1, d_ENTRY^inf and d_TV of the adversary's "
            "corruptions (largest over the methods attacked).", style="italic")
    for adv in dict.fromkeys(r["adversary"] for r in rows):
        level = cube.level(adv)
        first = next(r for r in rows if r["adversary"] == adv)
        tp.heading(f"{adv} ({LEVEL_TAG.get(level, level)}, {cube.mode(adv)}): d_ENTRY^1 "
                   f"{fmt_num(first['d_entry1'])}, d_ENTRY^inf {fmt_num(first['d_entry_inf'])}, "
                   f"d_TV {fmt_num(first['d_tv'])}")
        tp.table([Col("method", 2.0), Col("cells", 0.5, "right"), Col("worst case", 0.9, "right"),
                  Col("strongest fixed", 1.0, "right"), Col("ratio median", 0.8, "right"),
                  Col("ratio max", 0.7, "right"), Col("largest ratio at", 4.2),
                  Col("broke", 0.6, "right"), Col("evaluations", 0.9, "right")],
                 [[r["method"], str(r["cells"]), fmt_num(r["worst"]), fmt_num(r["fixed"]),
                   fmt_num(r["ratio_median"]), fmt_num(r["ratio_max"]), r["where"],
                   str(r["broken"]), fmt_num(r["evaluations"], 4)]
                  for r in rows if r["adversary"] == adv])
    return tp


# -- all --------------------------------------------------------------------------------
def stress_pages(cube: Cube, styles: MethodStyles) -> list[Page]:
    """The stress pages of a cube; none when it holds no adaptive adversary."""
    if not adaptive_adversaries(cube):
        return []
    pages = worst_vs_fixed_pages(cube, styles)
    pages += dentry_pages(cube, styles, "d_entry1")
    pages += dentry_pages(cube, styles, "d_tv")
    pages += text_pages(summary_pages(cube), f"{cube.experiment}-stress-summary")
    return pages


def stress_sections(cube: Cube, ctx) -> list[Section]:
    """A cube's worst-case adversaries section (none without an adaptive adversary)."""
    worst = stress_pages(cube, ctx.styles)
    return [Section(f"{cube.experiment}-stress", f"{cube.experiment}: worst-case adversaries", worst)] if worst else []
