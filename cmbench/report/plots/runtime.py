"""The runtime page: seconds per cell per method (`RuntimePage`, built by `content.figures`), and `draw_runtime`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..layout import PAGE, draw_title, fmt_num, literal
from ..style import LineStyle

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass
class RuntimePage:
    """Seconds per cell per method, reduced: what `draw_runtime` draws."""

    experiment: str
    methods: list[str]
    styles: dict[str, LineStyle]
    overall: np.ndarray  # method: mean seconds over ok cells
    datasets: list[str]
    per_dataset: np.ndarray  # (method, dataset): mean seconds
    budgets: np.ndarray  # sorted
    by_budget: np.ndarray | None  # (method, budget): mean seconds, budgets sorted; None for one budget
    budget_label: str
    timeouts: int
    failures: int


def draw_runtime(page: RuntimePage) -> Figure:
    from matplotlib.figure import Figure

    methods, overall, styles = page.methods, page.overall, page.styles
    fig = Figure(figsize=PAGE)
    # bars keep a readable thickness: the axes grow with the number of methods
    height = min(0.42, 0.05 + 0.06 * len(methods))
    # the budget panel's legend (8 pt, right of the axes) must hold the longest method name:
    # about 0.062 in per character and 0.45 in for the line handle, on a page 11.69 in wide
    # (a label longer than a third of the page is cut there: the legend stays beside the axes)
    legend = min(0.45 + 0.062 * max(map(len, methods)), PAGE[0] / 3) / PAGE[0]
    width = min(0.62, 0.97 - 0.22 - 0.01 - legend)
    if page.by_budget is None:  # the bars alone: they take the page's height, up to a readable bar
        height = min(0.78, 0.12 * len(methods))
    ax = fig.add_axes([0.22, 0.86 - height, width, height])
    if page.by_budget is not None:
        _runtime_by_budget(fig.add_axes([0.22, 0.08, width, 0.86 - height - 0.17]), page)
    y = np.arange(len(methods))[::-1]
    ax.barh(y, np.where(np.isfinite(overall), overall, 0.0),
            color=[styles[m].color for m in methods], alpha=0.8, height=0.62, zorder=2)
    markers = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
    if len(page.datasets) > 1:
        for j, d in enumerate(page.datasets):
            ax.scatter(page.per_dataset[:, j], y, marker=markers[j % len(markers)],
                       facecolor="white", edgecolor="0.1", s=26, zorder=3, label=literal(d),
                       linewidths=0.9)
        ax.legend(title="mean per data set", loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  fontsize=8, title_fontsize=8, frameon=False)
    pos = overall[np.isfinite(overall) & (overall > 0)]
    log = bool(pos.size and pos.max() / pos.min() > 100)
    if log:
        ax.set_xscale("log")
    ax.set_yticks(y)
    # the mean goes with the method's name: written at the bar's end it covered the
    # per-data-set markers that fall just beyond it
    ax.set_yticklabels([literal(runtime_label(m, v)) for m, v in zip(methods, overall)],
                       fontsize=9 if len(methods) <= 8 else 7.5, linespacing=1.1)
    ax.set_ylim(-0.6, len(methods) - 0.4)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("seconds per cell, mean over ok cells" + (" (log scale)" if log else ""))
    draw_title(fig, *runtime_heading(page))
    return fig


def runtime_heading(page: RuntimePage) -> tuple[str, str]:
    """The runtime page's title and subtitle."""
    return (f"{page.experiment}: runtime per method",
            f"Seconds recorded per cell (data set, instance, adversary, budget) for each method; "
            f"{page.timeouts} timed-out and {page.failures} failed cells are left out.")


def runtime_label(method: str, mean: float) -> str:
    """A runtime bar's label: the method and its mean seconds per ok cell."""
    return f"{method}\n{fmt_num(mean)} s" if np.isfinite(mean) else f"{method}\nno ok cell"


def _runtime_by_budget(ax, page: RuntimePage) -> None:
    """Mean seconds per cell against the budget, over data sets, instances and
    adversaries: how a method's cost grows with the corruption."""
    for m, row in zip(page.methods, page.by_budget):
        ax.plot(page.budgets, row, label=literal(m), **page.styles[m].kwargs())
    vals = page.by_budget[np.isfinite(page.by_budget) & (page.by_budget > 0)]
    if vals.size and vals.max() / vals.min() > 100:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel(page.budget_label)
    ax.set_ylabel("seconds per cell")
    ax.set_title("mean over data sets, instances and adversaries, by budget", loc="left",
                 fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
