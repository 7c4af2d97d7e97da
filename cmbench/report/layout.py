"""Page layout shared by every page of the PDF report: sizes, margins, grids, legends, notes, text flow.

A page is a `Page`: its data as a record (a dataclass built from the cubes by
the module of that page) and the function that draws that record into a figure. The
helpers here hold the layout rules (page size, margins in inches, how many
panels per row, how many legend columns fit, where notes go) so that each
drawing function only places its own content.
"""
from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from .style import PAGE

__all__ = ["PAGE", "Page", "Section", "Col", "TextPages", "TextPage", "draw_text_page", "grid_shape",
           "legend_columns", "row_major", "wrap_notes", "plain", "CLIP_RATIO", "BAND_RATIO", "MAX_NOTE_LINES",
           "SUBTITLE_WIDTH", "SUBTITLE_LINE", "MAX_PANELS", "MESSAGE_CHARS", "fmt_num", "fmt_list", "shorten",
           "TITLE_Y", "LEGEND_Y", "LEGEND_ROW", "NOTE_LINE", "LEFT_MARGIN"]

#: y is clipped when the largest value exceeds CLIP_RATIO times the 90th
#: percentile of the values drawn: one exploding method would flatten all others.
CLIP_RATIO = 5.0
#: a confidence band is cut at BAND_RATIO times the highest mean of its panel:
#: with few instances a t interval can be many times the curves' range.
BAND_RATIO = 1.25
MAX_NOTE_LINES = 7
#: vertical layout of a figure page, in inches from the top edge: the title's
#: baseline, the top of the shared legend, one legend row; one line of notes
TITLE_Y, LEGEND_Y, LEGEND_ROW, NOTE_LINE = 0.18, 0.62, 0.24, 0.15
#: a subtitle's line: its characters (9 pt italic across the page) and its height, in inches
SUBTITLE_WIDTH, SUBTITLE_LINE = 160, 0.16
LEFT_MARGIN = 0.07  # figure fraction: titles, notes and the first column of panels start here


@dataclass
class Page:
    """One page of the report: its data record and how to draw it.

    ``record`` holds everything the drawing depends on (numbers, labels,
    colours), so that its digest says whether a drawn page can be reused;
    ``None`` means the page is always drawn. ``cost``: about how long the page takes
    to draw, relative to a page of curves; the drawing pool (`render.drawing`) splits the
    pages into groups of about equal cost, costliest first, so that no process is left
    with a long page at the end.
    """

    slug: str
    record: Any
    draw: Callable[[Any], Any]
    png: bool = True
    cost: float = 1.0
    #: on the first page of flowed text: the text as blocks (`TextPages.blocks`), which the
    #: HTML renders whole; None on figure pages and on the pages that continue a text
    text: Any = field(default=None, repr=False, compare=False)
    #: a page continuing a flowed text: the HTML shows nothing for it (its first page holds the text whole)
    continues: bool = False
    #: the plotly renderer of this page's record type, set by `model.build_report` from its
    #: kind's registration (`kinds.PageKind.html`); None: the HTML shows the drawing as SVG
    html: Optional[Callable[..., str]] = field(default=None, repr=False, compare=False)


@dataclass
class Section:
    """One section of a report: an anchor, a heading, its pages and what it left out."""

    slug: str
    title: str
    pages: list[Page] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)
    #: the kind of page that built it (`kinds.PageKind.name`), set by `model.build_report`
    kind: str = ""


# -- numbers and short texts ---------------------------------------------------------------
MESSAGE_CHARS = 400  # of one error message


def fmt_num(x: float, digits: int = 3) -> str:
    """Three significant digits; an en dash for a missing value."""
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:.{digits}g}"


def fmt_list(values: Sequence, total: int | None = None, limit: int = 6) -> str:
    """A short list: "all 5" when complete, "0.1, 0.2", or for a long evenly spaced
    one "0, 0.05, …, 0.5 (11 values)"."""
    values = list(values)
    if total is not None and len(values) == total and total > 1:
        return f"all {total}"
    shown = [fmt_num(v, 3) if isinstance(v, float) else str(v) for v in values]
    if len(shown) <= limit:
        return ", ".join(shown)
    return f"{shown[0]}, {shown[1]}, …, {shown[-1]} ({len(shown)} values)"


def shorten(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` on one line (runs of white space made one space), cut to ``limit`` characters with "…"."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- grids, legends, notes ------------------------------------------------------------------
#: The most panels a page of curves gathers from several adversaries (`figures.error_pages`,
#: `parameter.parameter_pages`): a 2 x 3 grid still reads on A4 landscape.
MAX_PANELS = 6


def grid_shape(n: int) -> tuple[int, int]:
    """(rows, columns) for ``n`` panels: 3 columns at most; one panel takes the page, four a 2 x 2."""
    ncols = 2 if n == 4 else max(1, min(n, 3))
    return math.ceil(n / ncols), ncols


def legend_columns(labels: Sequence[str], fontsize: float, most: int) -> int:
    """The most columns (at most ``most``) for which a legend of ``labels``, read row by row
    (`row_major`: entry i in column i mod ncol), fits the page width: each column as wide as
    its widest entry, as matplotlib sets it (one long entry no longer makes every column wide)."""
    if not labels:
        return 1
    widths = [len(x) * 0.6 * fontsize / 72 + 0.75 for x in labels]  # text + handle, in
    for ncol in range(min(most, len(labels)), 1, -1):
        if sum(max(widths[c::ncol]) for c in range(ncol)) <= PAGE[0] - 1.0:
            return ncol
    return 1


def row_major(handles: list, ncol: int) -> list:
    """Legends fill columns first; reorder so that the legend reads row by row."""
    nrow = math.ceil(len(handles) / ncol)
    return [handles[r * ncol + c] for c in range(ncol) for r in range(nrow)
            if r * ncol + c < len(handles)]


def wrap_notes(notes: Sequence[str], width: int = 190) -> list[str]:
    """Notes wrapped to the page width, cut to `MAX_NOTE_LINES` with a pointer to the cells page."""
    lines = []
    for note in notes:
        lines.extend(textwrap.wrap(note, width, subsequent_indent="    ") or [""])
    if len(lines) > MAX_NOTE_LINES:
        cut = len(lines) - MAX_NOTE_LINES + 1
        lines = lines[: MAX_NOTE_LINES - 1] + [f"… {cut} more note lines; the page of cells "
                                                "that did not run lists every gap."]
    return lines


def panel_grid(n: int, shape: tuple[int, int] | None = None, **kw):
    """An A4 landscape figure with ``n`` panels in a grid (`grid_shape` unless ``shape`` is given)
    and the grid cells left over hidden: ``(figure, axes)``, ``axes`` 2-D."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=PAGE)
    axes = fig.subplots(*(shape or grid_shape(n)), squeeze=False, **kw)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    return fig, axes


def page_legend(fig, handles: list, ncol: int, top: float, **kw) -> None:
    """A legend centred across the page, its top ``top`` inches below the page's top, read row by row."""
    fig.legend(handles=row_major(handles, ncol), loc="upper center", ncol=ncol,
               bbox_to_anchor=(0.5, 1 - top / PAGE[1]), frameon=False, **kw)


def draw_notes(fig, notes: Sequence[str], bottom: float = 0.12) -> None:
    """The notes block at the foot of a figure page (``bottom``: inches below its first line's top)."""
    if notes:
        fig.text(LEFT_MARGIN, (bottom + NOTE_LINE * len(notes)) / PAGE[1], "\n".join(notes), fontsize=7.5,
                 va="top", color="0.2", linespacing=1.35, parse_math=False)


def draw_title(fig, title: str, subtitle: str = "") -> int:
    """A figure page's bold title and optional italic subtitle, top left; the subtitle wrapped
    to the page width (`SUBTITLE_WIDTH`). Returns the subtitle's lines beyond its first: what
    sits below it moves down `SUBTITLE_LINE` inches per line."""
    h = PAGE[1]
    fig.suptitle(title, x=LEFT_MARGIN, ha="left", y=1 - TITLE_Y / h, fontsize=12, fontweight="bold",
                 parse_math=False)
    lines = textwrap.wrap(subtitle, SUBTITLE_WIDTH) if subtitle else []
    if lines:
        fig.text(LEFT_MARGIN, 1 - 0.45 / h, "\n".join(lines), fontsize=9, style="italic", va="top",
                 parse_math=False)
    return max(0, len(lines) - 1)


def slug(text: str, default: str = "x") -> str:
    """``text`` as a file name or element id: runs of other characters than letters, digits,
    ``.``, ``_`` and ``-`` become one ``-``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-") or default


def literal(label: str) -> str:
    """A label (a method's, a data set's) drawn as its plain text: a ``$`` in it is a dollar
    sign, never the start of mathtext."""
    return str(label).replace("$", r"\$")


def plain(text: str) -> str:
    """Mathtext to plain text, for titles and notes drawn with math off."""
    swaps = {r"$\ell_2$": "l2", r"$\epsilon$": "ε", r"$\rho$": "ρ", r"$\alpha$": "α"}
    for k, v in swaps.items():
        text = text.replace(k, v)
    return text.replace("$", "")


def clip_top(values: np.ndarray) -> Optional[float]:
    """A limit cutting off values more than `CLIP_RATIO` times the 90th percentile, else None."""
    if values.size < 3:
        return None
    ref = float(np.percentile(values, 90))
    if ref > 0 and values.max() > CLIP_RATIO * ref:
        return 1.08 * float(values[values <= CLIP_RATIO * ref].max())
    return None


# -- text pages ---------------------------------------------------------------------------
@dataclass
class Col:
    """A table column: header, width (fraction of the text width), alignment."""

    header: str
    width: float
    align: str = "left"


@dataclass
class TextPage:
    """A text page as drawing operations: ``("text", x, y, s, kwargs)``, ``("rule", x0, x1, y)``,
    ``("band", x0, x1, y_top, height)``, in figure fractions; ``kwargs`` as sorted pairs."""

    ops: list = field(default_factory=list)


class TextPages:
    """Flows headings, paragraphs and tables down A4 pages, starting a new page
    (with "(continued)" and the table header repeated) whenever one is full.

    The result, ``pages``, is a list of `TextPage` records: the flow is
    computed here, the drawing by `draw_text_page`. ``blocks`` keeps the same
    content unflowed (``("heading", text)``, ``("para", text, style, color)``,
    ``("table", cols, rows)``): the HTML report renders it.

    Parameters
    ----------
    title : printed at the top of every page.
    fontsize : body text size in points.
    """

    LEFT, RIGHT, TOP, BOTTOM = 0.06, 0.96, 0.93, 0.05

    def __init__(self, title: str, *, fontsize: float = 8.5):
        self.title = title
        self.fs = fontsize
        self.pages: list[TextPage] = []
        self.blocks: list[tuple] = []
        self._line = fontsize * 1.45 / 72 / PAGE[1]  # one text line, figure fraction
        self._asc = fontsize * 1.0 / 72 / PAGE[1]  # row top to first baseline
        self._char = fontsize * 0.6 / 72 / PAGE[0]  # one average character
        self._new_page()

    # public -------------------------------------------------------------------
    def heading(self, text: str) -> None:
        self.blocks.append(("heading", text))
        self._need(6)  # never a heading alone at the foot of a page
        self.y -= 0.6 * self._line
        self._text(self.LEFT, self.y - 1.3 * self._asc, text, fontsize=self.fs + 2.5,
                   fontweight="bold", va="baseline")
        self.y -= 1.8 * self._line

    def para(self, text: str, *, style: str = "normal", color: str = "black") -> None:
        self.blocks.append(("para", text, style, color))
        lines = self._wrap(text, self.RIGHT - self.LEFT)
        for line in lines:
            self._need(1)
            self._text(self.LEFT, self.y - self._asc, line, fontsize=self.fs,
                       va="baseline", style=style, color=color)
            self.y -= self._line
        self.y -= 0.4 * self._line

    def table(self, cols: Sequence[Col], rows: Iterable[Sequence[str]]) -> None:
        total = sum(c.width for c in cols)
        span = self.RIGHT - self.LEFT
        widths = [c.width / total * span for c in cols]
        lefts = np.concatenate([[self.LEFT], self.LEFT + np.cumsum(widths)[:-1]])
        rows = [[str(v) for v in row] for row in rows]
        self.blocks.append(("table", list(cols), rows))
        self._need(2 + (max(len(self._wrap(v, w)) for v, w in zip(rows[0], widths)) if rows else 1))
        self._header(cols, widths, lefts)
        for i, row in enumerate(rows):
            cells = [self._wrap(str(v), w) for v, w in zip(row, widths)]
            height = max(len(c) for c in cells)
            if self.y - height * self._line < self.BOTTOM:
                self._new_page(continued=True)
                self._header(cols, widths, lefts)
            if i % 2 == 1:  # zebra stripes guide the eye along wide rows
                self.page.ops.append(("band", self.LEFT, self.RIGHT, self.y, height * self._line))
            for col, lines, left, w in zip(cols, cells, lefts, widths):
                x = left + (w - 0.006 if col.align == "right" else 0.0)
                self._lines(x, self.y - self._asc, lines, ha=col.align)
            self.y -= height * self._line
        self.y -= 0.8 * self._line

    # internals ----------------------------------------------------------------
    def _text(self, x: float, y: float, s: str, **kw) -> None:
        self.page.ops.append(("text", float(x), float(y), s, tuple(sorted(kw.items()))))

    def _header(self, cols, widths, lefts):
        heads = [self._wrap(c.header, w, whole_words=True) for c, w in zip(cols, widths)]
        height = max(len(h) for h in heads)
        for col, lines, left, w in zip(cols, heads, lefts, widths):
            x = left + (w - 0.006 if col.align == "right" else 0.0)
            # bottom-aligned, so one-line headers sit on the rule like the others
            y = self.y - self._asc - (height - len(lines)) * self._line
            self._lines(x, y, lines, ha=col.align, fontweight="bold")
        self.y -= height * self._line
        self.page.ops.append(("rule", self.LEFT, self.RIGHT, self.y - 0.05 * self._line))
        self.y -= 0.4 * self._line

    def _lines(self, x: float, y: float, lines: Sequence[str], **kw) -> None:
        # one Text per line: a multi-line Text's "baseline" is its last line's
        for k, line in enumerate(lines):
            self._text(x, y - k * self._line, line, fontsize=self.fs, va="baseline", **kw)

    def _wrap(self, text: str, width: float, whole_words: bool = False) -> list[str]:
        chars = max(int(width / self._char) - 1, 4)
        out = []
        for part in str(text).split("\n"):
            # at spaces, then after hyphens: an id such as "filter-near-sampling-error" wraps
            # between its words, never inside one (only a word longer than the column is cut)
            out.extend(textwrap.wrap(part, chars, break_long_words=not whole_words,
                                     break_on_hyphens=True) or [""])
        return out

    def _need(self, lines: float) -> None:
        if self.y - lines * self._line < self.BOTTOM:
            self._new_page(continued=True)

    def _new_page(self, continued: bool = False) -> None:
        self.page = TextPage()
        title = self.title + ("  (continued)" if continued else "")
        self._text(self.LEFT, 0.965, title, fontsize=self.fs + 5, fontweight="bold", va="top")
        self.pages.append(self.page)
        self.y = self.TOP - 0.01


def fitted_widths(texts: Iterable[str], others: Sequence[float], *, fontsize: float = 8.5,
                  most: float = 0.35) -> list[float]:
    """Column widths (`Col.width`) giving the first column the width of its longest text, so that
    each of ``texts`` fits on one line, at most ``most`` of the text width; the ``others`` keep
    their proportions in the rest."""
    span = (TextPages.RIGHT - TextPages.LEFT) * PAGE[0]  # inches
    longest = max((len(str(t)) for t in texts), default=4)
    first = min((longest + 2) * fontsize * 0.6 / 72, most * span)  # `TextPages._wrap`'s measure
    scale = (span - first) / sum(others)
    return [first] + [w * scale for w in others]


def draw_text_page(page: TextPage):
    """Draw a `TextPage` record on an A4 landscape figure."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    fig = Figure(figsize=PAGE)
    for op in page.ops:
        if op[0] == "text":
            _, x, y, s, kw = op
            fig.text(x, y, s, parse_math=False, **dict(kw))
        elif op[0] == "rule":
            _, x0, x1, y = op
            fig.add_artist(Line2D([x0, x1], [y, y], linewidth=0.6, color="0.3"))
        elif op[0] == "band":
            _, x0, x1, y_top, height = op
            fig.add_artist(Rectangle((x0 - 0.004, y_top - height), x1 - x0 + 0.008, height,
                                     transform=fig.transFigure, facecolor="0.94", edgecolor="none",
                                     zorder=-1))
    return fig


def text_pages(texts: "TextPages | Sequence[TextPages] | None", slug: str) -> list[Page]:
    """Flowed texts (`TextPages`) as report pages (never written as PNG); the first page of
    each carries the text whole (``Page.text``) for the HTML."""
    if texts is None:
        return []
    out: list[Page] = []
    for tp in [texts] if isinstance(texts, TextPages) else texts:
        pages = [Page(slug, p, draw_text_page, png=False, cost=0.3, continues=k > 0) for k, p in enumerate(tp.pages)]
        if pages:
            pages[0].text = tp
        out += pages
    return out
