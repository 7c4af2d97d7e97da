"""The critical-difference page: a Friedman test's result (`Friedman`, computed by
`content.significance`), its page (`CdPage`) and the diagram (`cd_diagram`, Demšar 2006, Fig. 1)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..layout import SUBTITLE_LINE
from ..style import PAGE

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: the two ranks a report shows, named apart: the CD diagram's (the Friedman test's, per block) and
#: the ranking table's (per cell of instance means)
BLOCK_RANK = "average block rank"
CELL_RANK = "average cell rank"


@dataclass
class Friedman:
    """A Friedman test with its Nemenyi post-hoc comparison.

    Attributes
    ----------
    methods : labels, in the order of the score columns.
    avg_ranks : average rank of each method over the blocks (1 = best).
    n_blocks : N, the number of blocks.
    chi2, p_value : Friedman's statistic (tie-corrected, as scipy computes it) and
        its chi-square p-value with k - 1 degrees of freedom.
    f_stat, f_p_value : the Iman-Davenport F form, which Demšar recommends as
        less conservative, with (k - 1, (k - 1)(N - 1)) degrees of freedom.
    cd : the Nemenyi critical difference at ``alpha``.
    different : (k, k) bool, True where two methods' average ranks differ by at
        least ``cd``.
    """

    methods: list[str]
    avg_ranks: np.ndarray
    n_blocks: int
    chi2: float
    p_value: float
    f_stat: float
    f_p_value: float
    cd: float
    alpha: float
    different: np.ndarray

    @property
    def significant(self) -> bool:
        return bool(self.p_value < self.alpha)

    def order(self) -> np.ndarray:
        """Method indices, best average rank first."""
        return np.argsort(self.avg_ranks, kind="stable")

    def cliques(self) -> list[tuple[int, int]]:
        """Groups of methods not significantly different, as (first, last) positions in
        `order`: every maximal run whose average ranks span less than ``cd``."""
        r = self.avg_ranks[self.order()]
        runs = []
        for i in range(len(r)):
            j = i
            while j + 1 < len(r) and r[j + 1] - r[i] < self.cd:
                j += 1
            if j > i and not any(a <= i and j <= b for a, b in runs):
                runs.append((i, j))
        return runs


@dataclass
class CdPage:
    """A critical-difference page: its title, caption and the test's result."""

    title: str
    caption: str
    result: Friedman


def draw_cd_page(page: CdPage) -> Figure:
    from matplotlib.figure import Figure

    result = page.result
    fig = Figure(figsize=PAGE)
    fig.text(0.03, 0.965, page.title, fontsize=13.5, fontweight="bold", va="top")
    fig.text(0.03, 0.925, page.caption, fontsize=9, va="top", style="italic")
    # the diagram starts 0.1 in below the caption's last line: a fixed top let a three-line
    # caption touch the CD scale's label
    top = 0.925 - (SUBTITLE_LINE * (page.caption.count("\n") + 1) + 0.1) / PAGE[1]
    rows = max((len(result.methods) + 1) // 2, 1) + len(result.cliques())
    h = min(top - 0.02, 0.16 + 0.042 * rows)
    cd_diagram(result, fig=fig, rect=(0.03, top - h, 0.94, h))
    return fig


def draw_cd_figure(page: CdPage) -> Figure:
    """The diagram of a `CdPage` alone, without its page's title and caption (the HTML report's figure)."""
    return cd_diagram(page.result)


def cd_diagram(result: Friedman, title: str = "", fig: Figure | None = None,
               rect: tuple = (0.02, 0.02, 0.96, 0.9)) -> Figure:
    """A critical-difference diagram (Demšar 2006, Fig. 1).

    The axis holds the average ranks (1 = best, at the left); each method is a
    tick with its label, the better half to the left, the other half to the
    right; a thick bar joins methods whose average ranks differ by less than the
    critical difference, whose length the scale bar above the axis shows.
    """
    from matplotlib.figure import Figure

    order = result.order()
    k = len(order)
    r = result.avg_ranks[order]
    names = [result.methods[i] for i in order]
    half = (k + 1) // 2
    rows = max(half, k - half)
    cliques = result.cliques()
    height = 1.6 + 0.28 * (rows + len(cliques))
    if fig is None:
        fig = Figure(figsize=(11.0, max(height, 2.4)))
    ax = fig.add_axes(list(rect))
    ax.set_axis_off()
    lo, hi = 1, max(k, 2)
    # vertical layout in data units: axis at y = 0, labels below at negative y
    line_h = 1.0
    bar_top = 0.3 + 0.35 * len(cliques)
    ax.set_xlim(lo - 0.35 * (hi - lo + 1) - 0.2, hi + 0.35 * (hi - lo + 1) + 0.2)
    ax.set_ylim(-(bar_top + (rows + 0.8) * line_h), 2.15)
    ax.plot([lo, hi], [0, 0], color="black", lw=1.0)
    step = 1 if k <= 15 else 5  # keep the rank labels legible for many methods
    for t in range(lo, hi + 1):
        ax.plot([t, t], [0, 0.12], color="black", lw=1.0)
        if t == lo or t % step == 0:
            ax.text(t, 0.2, str(t), ha="center", va="bottom", fontsize=8)
    for t in np.arange(lo + 0.5, hi, 1.0):
        ax.plot([t, t], [0, 0.06], color="black", lw=0.6)
    # the CD scale bar
    ax.plot([lo, lo + result.cd], [1.35, 1.35], color="black", lw=1.0)
    for x in (lo, lo + result.cd):
        ax.plot([x, x], [1.27, 1.43], color="black", lw=1.0)
    ax.text(lo + result.cd / 2, 1.48, f"CD = {result.cd:.2f}", ha="center", va="bottom", fontsize=8)
    # the axis's caption on a line of its own: a CD as wide as the axis (few blocks) put the scale
    # bar's label under it
    ax.text(hi, 1.8, f"{BLOCK_RANK} (Friedman), 1 = best", ha="right", va="bottom", fontsize=8,
            style="italic")
    # cliques: thick bars just below the axis
    for c, (a, b) in enumerate(cliques):
        y = -0.3 - 0.35 * c
        ax.plot([r[a] - 0.03, r[b] + 0.03], [y, y], color="black", lw=3.0, solid_capstyle="butt")
    left_x, right_x = lo - 0.25, hi + 0.25
    for pos in range(k):
        x = r[pos]
        if pos < half:
            y = -(bar_top + (pos + 0.6) * line_h)
            ax.plot([x, x, left_x], [0, y, y], color="0.25", lw=0.8)
            ax.text(left_x - 0.05, y, f"{names[pos]} ({x:.2f})", ha="right", va="center", fontsize=8.5,
                    parse_math=False)
        else:
            y = -(bar_top + (k - 1 - pos + 0.6) * line_h)
            ax.plot([x, x, right_x], [0, y, y], color="0.25", lw=0.8)
            ax.text(right_x + 0.05, y, f"({x:.2f}) {names[pos]}", ha="left", va="center", fontsize=8.5,
                    parse_math=False)
    if title:
        fig.suptitle(title, fontsize=10, fontweight="bold", x=0.02, ha="left")
    return fig
