"""The stress pages of an adaptive adversary: its worst case beside the fixed attacks (`DotPage`,
`draw_dots`) and the error against a distance of the corruption (`DistancePage`, `draw_distance`),
built by `content.stress`."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np

from ..layout import (LEFT_MARGIN, LEGEND_ROW, LEGEND_Y, NOTE_LINE, PAGE, draw_notes, draw_title, legend_columns,
                      literal, page_legend, panel_grid, wrap_notes)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FIXED_MARKERS = ("s", "^", "D", "v", "P", "<", ">", "h", "p", "*")


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


# -- page 2: error against a distance of the corruption ------------------------------------
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
