"""Pages of curves: error (or difference) against the budget or a parameter, a panel per data set
or adversary (`CurvePage`, built by `content.figures` and `content.parameter`), and `draw_curves`."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..layout import (BAND_RATIO, CLIP_RATIO, LEFT_MARGIN, LEGEND_ROW, LEGEND_Y, NOTE_LINE, PAGE, SUBTITLE_LINE,
                      draw_notes, draw_title, fmt_num, legend_columns, literal, page_legend, panel_grid, wrap_notes)
from ..style import LineStyle

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

THRESHOLD_STYLES = (("0.25", "--"), ("0.45", ":"), ("0.25", "-."), ("0.55", (0, (5, 2, 1, 2))))


@dataclass
class Panel:
    """One data set's curves: per method, (centre, band's lower edge, band's upper edge) at ``x``
    (NaN edges: no band there)."""

    title: str
    x: np.ndarray
    curves: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    thresholds: list[tuple[str, float]] = field(default_factory=list)
    off_range: list[str] = field(default_factory=list)  # thresholds not drawn
    key: str = ""  # the data set's label, for notes


@dataclass
class CurvePage:
    """A page of error (or difference) curves: everything `draw_curves` draws."""

    title: str
    panels: list[Panel]
    styles: dict[str, LineStyle]  # method -> its look, for the methods drawn
    xlabel: str
    ylabel: str
    notes: list[str] = field(default_factory=list)
    subtitle: str = ""
    zero_line: bool = False
    floor_zero: bool = True
    band_label: str = ""  # the legend's entry for the shaded bands ("" when none is drawn)
    yscale: str = "linear"  # or "log"
    xticks: list[float] | None = None  # a tick at each of these x values; None: the renderer's own
    same_as: dict[str, str] = field(default_factory=dict)  # method -> the earlier one it coincides with


def legend_label(page: CurvePage, method: str) -> str:
    """A method's legend entry: its label, and the method its curve coincides with."""
    return f"{method} (same as {page.same_as[method]})" if method in page.same_as else method


def draw_curves(page: CurvePage) -> Figure:
    """A page of panels in a grid (3 columns at most), one shared legend on top,
    and notes at the bottom.

    ``floor_zero`` starts a linear y axis at 0 (errors are non-negative), so a
    method that recovers exactly sits visibly at zero; the record says when the
    axis is logarithmic instead (`y_scale`). When one method's mean explodes (more
    than `CLIP_RATIO` times the 90th percentile of all means) the axis is cut
    above the rest, the cut points are marked on the top edge and a note gives
    their maxima. Confidence bands are cut at `BAND_RATIO` times the panel's
    highest mean, so that a wide band does not flatten the curves. Recovery thresholds shared by every panel that has them go
    into the top legend; otherwise each panel has its own small legend.
    """
    from matplotlib.lines import Line2D

    panels, styles = page.panels, page.styles
    fig, axes = panel_grid(len(panels))
    nrows = axes.shape[0]
    methods = list(styles)
    with_thr = [p.thresholds for p in panels if p.thresholds]
    shared_thr = with_thr[0] if with_thr and all(t == with_thr[0] for t in with_thr) else None
    clipped: dict[str, list[str]] = {}
    for ax, panel in zip(axes.ravel(), panels):
        for m, text in _draw_panel(ax, panel, page, thr_legend=shared_thr is None):
            clipped.setdefault(m, []).append(text)
        ax.set_xlabel(page.xlabel)
        ax.set_ylabel(page.ylabel)
    notes = page.notes + off_range_notes(panels)
    if clipped:
        notes.append("Off the top of the y axis (marked by triangles on the top edge): "
                     + "; ".join(f"{m} on {', '.join(v)}" for m, v in clipped.items()) + ".")
    notes = wrap_notes(notes)

    h = PAGE[1]
    labels = [legend_label(page, m) for m in methods] + ([page.band_label] if page.band_label else [])
    ncol = legend_columns(labels, 9, 6)
    thr_labels = [f"{lb} = {fmt_num(v)}" for lb, v in shared_thr or []]
    thr_ncol = legend_columns(["recovery thresholds:"] + thr_labels, 8.5, 6)
    thr_rows = math.ceil((len(thr_labels) + 1) / thr_ncol) if shared_thr else 0
    rows = math.ceil(len(labels) / ncol) + thr_rows
    top = LEGEND_Y + SUBTITLE_LINE * draw_title(fig, page.title, page.subtitle)  # the legend's top
    fig.subplots_adjust(left=LEFT_MARGIN, right=0.98, top=1 - (top + LEGEND_ROW * rows + 0.45) / h,
                        bottom=(0.72 + NOTE_LINE * len(notes)) / h,
                        hspace=0.5 if nrows > 1 else 0.2, wspace=0.22)
    if methods:
        from matplotlib.patches import Patch

        handles = [Line2D([], [], label=literal(legend_label(page, m)), **_line_kwargs(page, m)) for m in methods]
        if page.band_label:
            handles.append(Patch(facecolor="0.5", alpha=0.3, linewidth=0, label=page.band_label))
        page_legend(fig, handles, ncol, top, fontsize=9, handlelength=3.0, columnspacing=2.0)
    if shared_thr:
        intro = Line2D([], [], linestyle="none", label="recovery thresholds:")
        page_legend(fig, [intro] + _threshold_handles(shared_thr), thr_ncol,
                    top + LEGEND_ROW * (rows - thr_rows), fontsize=8.5, handlelength=3.0,
                    columnspacing=1.5, handletextpad=0.4)
    draw_notes(fig, notes)
    return fig


def off_range_notes(panels: Sequence[Panel]) -> list[str]:
    """A note per set of recovery thresholds beyond the budgets shown, naming the panels it is of."""
    off: dict[str, list[str]] = {}
    for p in panels:
        if p.off_range:
            off.setdefault("; ".join(p.off_range), []).append(p.key or p.title.splitlines()[0])
    return [f"Recovery thresholds beyond the budgets shown ({', '.join(where)}): {text}."
            for text, where in off.items()]


def _threshold_handles(thresholds: Sequence[tuple[str, float]]) -> list[Line2D]:
    from matplotlib.lines import Line2D

    return [Line2D([], [], color=c, linestyle=ls, linewidth=1.2,
                   label=f"{label} = {fmt_num(value)}")
            for (label, value), (c, ls) in zip(thresholds, itertools.cycle(THRESHOLD_STYLES))]


def _line_kwargs(page: CurvePage, method: str) -> dict:
    """A curve's matplotlib look: a curve that coincides with an earlier one has open, larger
    markers, drawn on top, so that both stay visible."""
    kw = page.styles[method].kwargs()
    if method in page.same_as:
        kw.update(markerfacecolor="none", markersize=8, markeredgewidth=1.3)
    return kw


def _draw_panel(ax, panel: Panel, page: CurvePage, *, thr_legend: bool) -> list[tuple[str, str]]:
    """Draw one panel; return (method, "data set (max v)") for curves cut at the top."""
    styles, floor_zero = page.styles, page.floor_zero and page.yscale != "log"
    x = np.asarray(panel.x, dtype=float)
    order = np.argsort(x)
    x = x[order]
    drawn = {}
    if page.yscale == "log":
        ax.set_yscale("log")
    for m, (centre, lower, upper) in panel.curves.items():
        c, lo, hi = (np.asarray(a, float)[order] for a in (centre, lower, upper))
        if not np.isfinite(c).any():
            continue
        st = styles[m]
        band = np.isfinite(c) & np.isfinite(lo) & np.isfinite(hi)
        if band.any():
            ax.fill_between(x, np.where(band, lo, np.nan), np.where(band, hi, np.nan),
                            color=st.color, alpha=0.16, linewidth=0, zorder=2)
        ax.plot(x, c, label=literal(m), zorder=4 if m in page.same_as else 3, **_line_kwargs(page, m))
        drawn[m] = (c, np.where(band, hi, c))
    if page.zero_line:
        ax.axhline(0.0, color="0.2", linewidth=0.8, zorder=1)
    for (_, value), h in zip(panel.thresholds, _threshold_handles(panel.thresholds)):
        ax.axvline(value, color=h.get_color(), linestyle=h.get_linestyle(), linewidth=1.2,
                   zorder=1)
    if thr_legend and panel.thresholds:
        ax.legend(handles=_threshold_handles(panel.thresholds), loc="best", fontsize=7.5,
                  framealpha=0.85, handlelength=2.5, title="recovery thresholds",
                  title_fontsize=7.5)
    cut = []
    top = _ylimits(ax, drawn, floor_zero=floor_zero, log=page.yscale == "log")
    if top is not None:
        for m, (c, _) in drawn.items():
            over = np.isfinite(c) & (c > top)
            if over.any():
                ax.plot(x[over], np.full(over.sum(), top), linestyle="none", marker="^",
                        markersize=7, color=styles[m].color, clip_on=False, zorder=4)
                where = panel.key or panel.title.splitlines()[0]
                cut.append((m, f"{where} (max {fmt_num(c[over].max())})"))
    ax.set_title(panel.title, fontsize=9.5, loc="left")
    if page.xticks is not None:  # a tick at each value of the grid (`MAX_TICKS`)
        ax.set_xticks(page.xticks)
        ax.set_xticklabels([fmt_num(v) for v in page.xticks])
    return cut


def _ylimits(ax, drawn: dict, *, floor_zero: bool, log: bool = False) -> float | None:
    """Set the y range; return the top when a curve was cut, else None."""
    if not drawn:
        return None
    centres = np.concatenate([c[np.isfinite(c)] for c, _ in drawn.values()])
    tops = np.concatenate([t[np.isfinite(t)] for _, t in drawn.values()])
    if log:  # the means' range, a little more: a band reaching far below would compress it
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        pos = centres[centres > 0]
        if pos.size:
            ax.set_ylim(pos.min() / 1.6, max(pos.max(), min(tops.max(), BAND_RATIO * pos.max())) * 1.6)
        # ticks at 1, 2 and 5 times each power of ten, written as numbers: decades alone leave
        # a curve between two labels unreadable
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_num(v)))
        ax.yaxis.set_minor_formatter(NullFormatter())
        return None
    if not floor_zero or centres.min() < 0:
        return None  # differences: matplotlib's own range, around the zero line
    ref = float(np.percentile(centres, 90))
    limit = CLIP_RATIO * ref
    if ref > 0 and centres.max() > limit:
        kept = np.concatenate([centres[centres <= limit], tops[tops <= limit]])
        top = 1.06 * float(kept.max())
        ax.set_ylim(0, top)
        return top
    hi = max(float(centres.max()), min(float(tops.max()), BAND_RATIO * float(centres.max())))
    ax.set_ylim(0, 1.06 * hi if hi > 0 else 1.0)
    return None
