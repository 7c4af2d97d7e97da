"""The worked examples' pages (`TheoryPage`, built by `content.theory_pages`): the paper's
distribution comparison computed by `cmbench.theory` and drawn (`draw_dis_compare`)."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ... import theory
from ..layout import fmt_num
from ..style import PAGE

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: colour of a sample by the number of its corrupted coordinates (0, 1, 2)
CORRUPTED_COLORS = ("0.55", "#E08214", "#B2182B")


@dataclass(frozen=True)
class TheoryPage:
    """A worked example's page: its parameters and the digest of the theory code that computes it.

    The numbers are a function of these alone, so the record names them instead
    of holding them: computing them is most of the page's cost, and a page
    whose record is unchanged is not drawn again.
    """

    k: int
    seed: int
    theory: str  # SHA-256 of cmbench/theory.py


def draw_dis_compare(page: TheoryPage) -> Figure:
    """Figure fig:disCompare: D1 uniform on the square and its corruptions D2 and D3,
    with d_TV, d_ENTRY^1 and d_ENTRY^inf computed on the samples (exactly: an
    assignment and a linear program) beside the values section sec:dentry states."""
    from matplotlib.figure import Figure

    samples = theory.dis_compare_example(page.k, seed=page.seed)
    X = samples["D1"]
    fig = Figure(figsize=PAGE)
    fig.suptitle("Figure fig:disCompare: d_TV against d_ENTRY on a two-dimensional uniform",
                 x=0.07, ha="left", y=0.965, fontsize=12, fontweight="bold")
    fig.text(0.07, 0.925, textwrap.fill(f"D1 is uniform on the unit square (grey box; {len(X)} stratified samples, "
             "light grey). An adversary moves the coordinates it corrupts out of [0, 1]: horizontal "
             "ones to the left, vertical ones up. The distances are computed by cmbench.theory on "
             "the samples (d_ENTRY exactly: an assignment for p = 1, a linear program for p = inf).",
             150), fontsize=9, style="italic", va="top")
    rows = []
    for pos, (name, caption) in enumerate((
            ("D2", "(a) D2: both coordinates of the upper-left quadrant, one of the\n"
                   "lower-left and upper-right quadrants (A3 with alpha = 1/2)"),
            ("D3", "(b) D3: the horizontal coordinate of the left-most 3/4\n"
                   "(A3 with alpha = 3/8)"))):
        Y = samples[name]
        ax = fig.add_axes([0.07 + 0.47 * pos, 0.34, 0.4, 0.47])
        _scatter(ax, X, Y)
        ax.set_title(caption, fontsize=9, loc="left")
        measured = {"d_tv": theory.d_tv_empirical(X, Y),
                    "d_entry1": theory.d_entry(X, Y, p=1, method="exact"),
                    "d_entry_inf": theory.d_entry(X, Y, p="inf", method="exact")}
        paper = theory.DIS_COMPARE_PAPER[name]
        rows.append((f"D1 vs {name}", measured, paper,
                     float(np.mean((X != Y).any(axis=1)))))
    _table(fig, rows)
    return fig


def _scatter(ax, X: np.ndarray, Y: np.ndarray) -> None:
    from matplotlib.patches import Rectangle

    changed = (X != Y).sum(axis=1)
    ax.add_patch(Rectangle((0, 0), 1, 1, facecolor="0.93", edgecolor="0.4", linewidth=1.0,
                           zorder=0))
    ax.scatter(X[:, 0], X[:, 1], s=6, color="0.7", zorder=1, linewidths=0)
    for c, label in ((1, "one coordinate corrupted"), (2, "both coordinates corrupted")):
        hit = changed == c
        if hit.any():
            ax.scatter(Y[hit, 0], Y[hit, 1], s=9, color=CORRUPTED_COLORS[c], zorder=3,
                       linewidths=0, label=label)
            for i in np.flatnonzero(hit)[::12]:  # a few moves, drawn as arrows
                ax.annotate("", xy=Y[i], xytext=X[i], zorder=2,
                            arrowprops={"arrowstyle": "->", "color": CORRUPTED_COLORS[c],
                                        "alpha": 0.45, "linewidth": 0.6})
    same = changed == 0
    ax.scatter(Y[same, 0], Y[same, 1], s=9, color="0.35", zorder=3, linewidths=0,
               label="not corrupted")
    ax.set_xlim(-1.1, 1.1)
    ax.set_ylim(-0.1, 2.1)
    ax.set_aspect("equal")
    ax.set_xlabel("horizontal coordinate")
    ax.set_ylabel("vertical coordinate")
    ax.legend(loc="upper center", fontsize=7.5, framealpha=0.9)


def _table(fig: Figure, rows) -> None:
    cols = ("", "corrupted samples", "d_TV (paper / computed)",
            "d_ENTRY^1 (paper / computed)", "d_ENTRY^inf (computed)")
    xs = (0.07, 0.2, 0.36, 0.56, 0.77)
    y = 0.24
    for x, c in zip(xs, cols):
        fig.text(x, y, c, fontsize=9, fontweight="bold", va="baseline")
    for r, (name, measured, paper, frac) in enumerate(rows):
        yy = y - 0.045 * (r + 1)
        cells = (name, fmt_num(frac), f"{fmt_num(paper['d_tv'])} / {fmt_num(measured['d_tv'])}",
                 f"{fmt_num(paper['d_entry1'])} / {fmt_num(measured['d_entry1'])}",
                 fmt_num(measured["d_entry_inf"]))
        for x, c in zip(xs, cells):
            fig.text(x, yy, c, fontsize=9, va="baseline")
    fig.text(0.07, y - 0.045 * (len(rows) + 1) - 0.01, textwrap.fill(
             "Both corruptions change 3/4 of the samples, so d_TV cannot tell them apart; "
             "d_ENTRY^1 counts the corrupted coordinates (1/2 against 3/8), as an A3 adversary "
             "spends its budget. d_ENTRY^inf, the largest fraction corrupted in one coordinate, "
             "ranks them the other way (1/2 against 3/4): it is the A2 adversary's budget.", 165),
             fontsize=8.5, va="top", color="0.2")
