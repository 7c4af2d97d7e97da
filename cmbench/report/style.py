"""One colour, marker and line style per method, shared by every page of a report.

Colours come from the Okabe-Ito palette (distinguishable with the common colour
vision deficiencies; its yellow is dropped because it vanishes on white paper),
then from darker tab10 colours. Markers differ too, so curves stay apart when
printed in grey. Past the palette, line styles cycle.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

PALETTE = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#8C564B",  # brown
    "#7F7F7F",  # grey
    "#9467BD",  # purple
)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
LINESTYLES = ("-", "--", "-.", ":")

#: the rc settings of every page: text stays text (TrueType, fonttype 42), and
#: sizes read well on A4 landscape when printed.
RC = {
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "lines.linewidth": 1.5,
    "lines.markersize": 4.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 100,
    "savefig.dpi": 150,
}
PAGE = (11.69, 8.27)  # A4 landscape, inches


@dataclass(frozen=True)
class LineStyle:
    color: str
    marker: str
    linestyle: str

    def kwargs(self) -> dict:
        return {"color": self.color, "marker": self.marker, "linestyle": self.linestyle}


class MethodStyles:
    """Styles assigned in order of first appearance, so a method keeps its look on
    every page and in every experiment of one report.

    >>> s = MethodStyles(["Mean", "C-Median"]); s["Mean"] == s["Mean"]
    True
    """

    def __init__(self, labels: Iterable[str] = ()):
        self._styles: dict[str, LineStyle] = {}
        for label in labels:
            self[label]

    def __getitem__(self, label: str) -> LineStyle:
        if label not in self._styles:
            i = len(self._styles)
            self._styles[label] = LineStyle(
                color=PALETTE[i % len(PALETTE)],
                marker=MARKERS[i % len(MARKERS)],
                linestyle=LINESTYLES[(i // len(PALETTE)) % len(LINESTYLES)],
            )
        return self._styles[label]

    def __contains__(self, label: str) -> bool:
        return label in self._styles

    def __len__(self) -> int:
        return len(self._styles)
