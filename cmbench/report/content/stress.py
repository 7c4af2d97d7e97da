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
``d_tv``; attributes ``adversaries_info``, ``datasets_info``). The records of pages 1 and 2
and their drawings are in `plots.stress`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import xarray as xr

from ..layout import Col, Page, Section, TextPages, clip_top, fmt_num, plain, text_pages
from ..load import Cube, metric_name, summarize
from ..plots.stress import DistancePage, DistancePanel, DotPage, DotPanel, Scatter, draw_distance, draw_dots
from ..style import MethodStyles

LEVEL_RANK = {"sample": 1, "value": 2, "coordinate": 3}
LEVEL_TAG = {"sample": "A1", "value": "A2", "coordinate": "A3"}
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


# -- page 2: error against d_ENTRY^1 -----------------------------------------------------
#: x variables of the distance pages: label, axis label, whether the theory's rate applies
DISTANCES = {
    "d_entry1": ("d_ENTRY^1", r"$d_{\mathrm{ENTRY}}^1$ of the corruption", True),
    "d_tv": ("d_TV", r"$d_{\mathrm{TV}}$ of the corruption (fraction of rows touched)", False),
}


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
