"""The interactive HTML report: the sections of `model.build_report`, rendered with plotly.

One self-contained file that works offline. It renders the same records the
PDF draws (`model`), so it holds every section of the PDF: provenance, the
claims with their verdicts and measured numbers, the suite file, per experiment
the curves (zoomable plotly panels, hover for the values, click a method in the
legend to hide or show it in every panel, double-click to show it alone), the
ranking with its significance tests and critical-difference diagram, the
stress pages, the recovery quality, the runtime, the cells that did not run,
the baseline comparison, and the paper's worked examples. Text records render
as HTML headings, paragraphs and tables; curve and runtime records as plotly
figures (the renderers its kind registers, `kinds.PageKind.html`); any other figure record as the inline SVG of its own
matplotlib drawing, kept in the suite's page cache (`pagecache`) by the
record's digest, so that a suite rerun neither computes nor draws an unchanged
figure again. plotly's library is inlined once in the page's head:
nothing is loaded from the network, so the file can be mailed, archived or
opened on an offline machine. Figures are written as plotly's JSON directly,
without plotly's Python figure objects.
"""
from __future__ import annotations

import datetime as _dt
import functools
import html
import os
import re
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import xarray as xr

from ...version import __version__
from ..layout import fmt_num, slug, Page, plain
from ..load import Cube
from ..model import Section, report_model
from ..plots.cd import CdPage, draw_cd_figure
from ..plots.curves import CurvePage, legend_label, off_range_notes
from ..plots.runtime import RuntimePage, runtime_heading, runtime_label
from .drawing import svg_of
from .pagecache import PageCache, record_digest, salt
from .writing import check_out, write_bytes

__all__ = ["write_html", "build_html", "render_curves", "render_runtime", "render_cd", "Figures"]

#: matplotlib marker / line style -> plotly's names, so a method looks alike in PDF and HTML
SYMBOLS = {"o": "circle", "s": "square", "^": "triangle-up", "D": "diamond", "v": "triangle-down",
           "P": "cross", "X": "x", "*": "star", "<": "triangle-left", ">": "triangle-right",
           "h": "hexagon", "p": "pentagon"}
DASHES = {"-": "solid", "--": "dash", "-.": "dashdot", ":": "dot"}
THRESHOLD_DASHES = ("dash", "dot", "dashdot", "longdashdot")
BAND_KEY = "\x00band"  # the band's legend entry among the method labels shown (no label holds NUL)

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1400px; padding: 0 1.5em 3em; color: #222; }
h1 { margin-top: 0.8em; } h2 { border-bottom: 2px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
h3 { margin-top: 1.5em; }
nav { background: #f4f4f4; padding: 0.5em 1em; border-radius: 4px; }
nav a { margin-right: 1.2em; }
table { border-collapse: collapse; margin: 0.6em 0 1em; font-size: 0.9em; }
th, td { padding: 0.25em 0.7em; text-align: left; vertical-align: top; }
th { border-bottom: 1.5px solid #444; } tr:nth-child(even) td { background: #f3f3f3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
p.note { font-style: italic; color: #444; max-width: 70em; }
p.fail { color: #b00000; }
pre.suite { background: #f7f7f7; padding: 0.6em; overflow-x: auto; }
.plot { width: 100%; }
.cd svg, .figure svg { max-width: 100%; height: auto; }
code { font-size: 0.95em; }
"""


def write_html(cubes: Sequence[str | os.PathLike | xr.Dataset | Cube], out: str | os.PathLike, *,
               title: str | None = None, baseline: str | os.PathLike | xr.Dataset | None = None,
               sections: Sequence[Section] | None = None,
               page_cache: str | os.PathLike | PageCache | None = None, plugins: Sequence = ()) -> Path:
    """Write the interactive HTML report of results cubes.

    Parameters
    ----------
    cubes : netCDF paths, Datasets or loaded `load.Cube` objects, one per experiment.
    out : the ``.html`` file to write; written whole to a temporary name and
        renamed, so a failed report leaves no half file.
    title : heading; default "cmbench report: <suite>".
    baseline : a cube to compare against, as for the PDF.
    sections : the report model (`model.build_report`) when the caller built
        it already (for the PDF too); else it is built here.
    plugins : plugins (paths, module names, objects; as for `cmbench.load_plugins`)
        whose kinds of report page (``register_report_pages``) are drawn besides
        the built-in ones, when the model is built here.
    page_cache : a folder of drawn pages and figures (`pagecache`), or that
        cache opened: an SVG figure whose record is found there is taken
        instead of drawn, and the figures drawn now are kept there.

    Returns
    -------
    The path written.

    Raises
    ------
    cmbench.errors.UserError
        ``out`` cannot be written (checked before anything is rendered), or a
        cube cannot be read or lacks a dimension or variable.
    """
    cubes = list(cubes) if not isinstance(cubes, (str, os.PathLike, xr.Dataset, Cube)) else [cubes]
    out = check_out(out, [*cubes, baseline], kind="html")
    if sections is None:
        sections, title = report_model(cubes, baseline, title, plugins)
    figures = Figures(PageCache.of(page_cache))
    write_bytes(out, build_html(sections, title=title, figures=figures).encode("utf-8"))
    if figures.cache is not None:
        figures.cache.save(out.name, figures.used)
    return out


def build_html(sections: Sequence[Section], *, title: str, figures: "Figures | None" = None) -> str:
    """The whole page as a string: a table of contents, then each section; ``figures``:
    where the SVG figures come from (default: drawn here, none kept)."""
    from plotly.offline import get_plotlyjs

    figures = figures or Figures(None)
    new_id = _id_maker()
    body = [f"<h1>{_e(title)}</h1>"]
    anchors = [(new_id(s.slug), s) for s in sections]
    body.append("<nav>" + " ".join(f'<a href="#{a}">{_e(s.title)}</a>' for a, s in anchors) + "</nav>")
    for anchor, section in anchors:
        body.append(render_section(section, anchor, new_id, figures))
    now = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{_e(title)}</title>",
        f'<meta name="generator" content="cmbench {__version__}">',
        f"<style>{CSS}</style>",
        # the plotting library, inlined: the page must work with no network
        f'<script type="text/javascript">{get_plotlyjs()}</script>',
        "</head>", "<body>", *body,
        f'<p class="note">Written {now} by cmbench {__version__}; nothing was rerun.</p>',
        "</body>", "</html>", ""])


def render_section(section: Section, anchor: str, new_id: Callable[[str], str], figures: "Figures") -> str:
    parts = [f'<section id="{anchor}">', f"<h2>{_e(plain(section.title))}</h2>"]
    for reason in section.omitted:
        parts.append(f'<p class="note">Left out: {_e(reason)}.</p>')
    for page in section.pages:
        if page.text is not None:
            parts.append(render_text(page.text, section.title))
        elif page.continues:
            continue  # a page continuing a text rendered whole on its first page
        else:
            parts.append((page.html or render_svg)(page, new_id(page.slug), figures))
    parts.append("</section>")
    return "\n".join(parts)


# -- text -----------------------------------------------------------------------------------
def render_text(text, section_title: str) -> str:
    """A flowed text's blocks (`layout.TextPages.blocks`) as HTML."""
    parts = [] if text.title == section_title else [f"<h3>{_e(text.title)}</h3>"]
    suite = text.title.startswith("Suite file")
    lines: list[str] = []
    for block in text.blocks:
        if suite and block[0] == "para" and block[2] == "normal":
            lines.append(block[1])  # the suite file's lines, as one preformatted block
            continue
        if block[0] == "heading":
            parts.append(f"<h4>{_e(block[1])}</h4>")
        elif block[0] == "para":
            _, body, style, color = block
            cls = "fail" if color != "black" else ("note" if style == "italic" else "")
            parts.append(f'<p class="{cls}">{_e(body)}</p>' if cls else f"<p>{_e(body)}</p>")
        elif block[0] == "table":
            _, cols, rows = block
            parts.append(_table([c.header for c in cols], rows,
                                num=[i for i, c in enumerate(cols) if c.align == "right"]))
    if lines:
        parts.append('<pre class="suite">' + _e("\n".join(lines)) + "</pre>")
    return "\n".join(parts)


# -- figures ----------------------------------------------------------------------------------
def _figure_head(title: str, subtitle: str = "") -> list[str]:
    out = [f"<h3>{_e(plain(title))}</h3>"]
    if subtitle:
        out.append(f'<p class="note">{_e(plain(subtitle))}</p>')
    return out


def render_curves(page: Page, div: str, figures: "Figures") -> str:
    """A `plots.curves.CurvePage` as a grid of plotly panels (one per data set), notes below."""
    rec: CurvePage = page.record
    n = len(rec.panels)
    ncols = min(n, 3)
    nrows = -(-n // ncols)
    fig = _Plot.grid(nrows, ncols, [_plain_title(p.title) for p in rec.panels])
    shown: set[str] = set()
    for k, panel in enumerate(rec.panels, start=1):
        x = np.asarray(panel.x, dtype=float)
        order = np.argsort(x)
        xs = x[order]
        centres = []
        # a curve that coincides with an earlier one goes on top, its markers open and larger
        ordered = sorted(panel.curves.items(), key=lambda item: item[0] in rec.same_as)
        for m, (centre, lower, upper) in ordered:
            centre, lower, upper = (np.asarray(a, float)[order] for a in (centre, lower, upper))
            if not np.isfinite(centre).any():
                continue
            centres.append(centre)
            st = rec.styles[m]
            band = np.isfinite(centre) & np.isfinite(lower) & np.isfinite(upper)
            if band.any():
                fig.add(k, type="scatter", x=np.concatenate([xs, xs[::-1]]),
                        y=np.concatenate([np.where(band, upper, np.nan), np.where(band, lower, np.nan)[::-1]]),
                        mode="lines", fill="toself",
                        fillcolor=_rgba(st.color, 0.16), line={"width": 0}, hoverinfo="skip",
                        legendgroup=m, showlegend=False, name=m, meta={"role": "band", "method": m})
            same = m in rec.same_as
            symbol = SYMBOLS.get(st.marker, "circle") + ("-open" if same else "")
            fig.add(k, type="scatter", x=xs, y=centre, mode="lines+markers" if st.marker else "lines",
                    name=_e(legend_label(rec, m)), legendgroup=m,
                    showlegend=m not in shown,
                    line={"color": st.color, "dash": DASHES.get(st.linestyle, "solid"), "width": 2},
                    marker={"symbol": symbol, "size": 10 if same else 6},
                    customdata=np.stack([lower, upper], -1),
                    meta={"role": "curve", "method": m},
                    hovertemplate=(f"<b>{_e(m)}</b><br>{_e(panel.key or panel.title)}<br>"
                                   f"{_e(plain(rec.xlabel))} %{{x:.4g}}<br>{_e(plain(rec.ylabel))} "
                                   "%{y:.4g}" + (" (band %{customdata[0]:.3g} to %{customdata[1]:.3g})"
                                                 if band.any() else "") + "<extra></extra>"))
            shown.add(m)
        # y range from the curves, not the bands: a band over two instances can be
        # huge and would flatten every curve (zoom out to see it whole)
        allc = np.concatenate(centres) if centres else np.array([0.0])
        top = float(np.nanmax(allc)) if np.isfinite(allc).any() else 1.0
        low = min(0.0, float(np.nanmin(allc))) if np.isfinite(allc).any() else 0.0
        top = top * 1.15 if top > 0 else 1.0
        if rec.yscale == "log":
            pos = allc[np.isfinite(allc) & (allc > 0)]
            fig.axis("y", k).update(type="log", dtick="D2")  # ticks at 1, 2 and 5 per decade, as in the PDF
            if pos.size:  # plotly's log range is in decades
                fig.axis("y", k)["range"] = [float(np.log10(pos.min() / 1.6)), float(np.log10(pos.max() * 1.6))]
                low, top = float(pos.min() / 1.6), float(pos.max() * 1.6)
        elif rec.floor_zero:
            fig.axis("y", k)["range"] = [low, top]
        if rec.xticks is not None:  # a tick at each value of the grid
            fig.axis("x", k).update(tickmode="array", tickvals=rec.xticks, ticktext=[fmt_num(v) for v in rec.xticks])
        # thresholds as lines with their label on hover (text on the plot would overlap)
        for j, (label, value) in enumerate(panel.thresholds):
            fig.add(k, type="scatter", x=[value, value], y=[low, top], mode="lines",
                    name="recovery thresholds", legendgroup="recovery thresholds",
                    showlegend="recovery thresholds" not in shown,
                    line={"color": "#555", "width": 1, "dash": THRESHOLD_DASHES[j % len(THRESHOLD_DASHES)]},
                    meta={"role": "threshold"},
                    hovertemplate=f"{_e(plain(label))} = {value:.4g}<extra></extra>")
            shown.add("recovery thresholds")
        if rec.zero_line:
            fig.add(k, type="scatter", x=[float(xs.min()), float(xs.max())], y=[0, 0], mode="lines",
                    line={"color": "#333", "width": 1}, hoverinfo="skip", showlegend=False)
        if rec.band_label and BAND_KEY not in shown:  # the legend says what the shading is
            fig.add(k, type="scatter", x=[None], y=[None], mode="lines", name=_e(rec.band_label),
                    line={"width": 10, "color": "rgba(128,128,128,0.3)"}, hoverinfo="skip",
                    legendgroup="band", meta={"role": "band-legend"})
            shown.add(BAND_KEY)
        fig.axis("x", k)["title"] = {"text": _e(plain(rec.xlabel))}
        fig.axis("y", k)["title"] = {"text": _e(plain(rec.ylabel))}
    height = 380 * nrows + 150
    plot_h = height - 150 - 50
    fig.layout.update(height=height, hovermode="closest",
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1 + 55 / plot_h,
                              "xanchor": "left", "x": 0, "groupclick": "togglegroup"},
                      margin={"t": 150, "l": 60, "r": 20, "b": 50})
    notes = rec.notes + off_range_notes(rec.panels)
    return "\n".join(_figure_head(rec.title, rec.subtitle) + [fig.to_html(div)]
                     + [f'<p class="note">{_e(plain(n))}</p>' for n in notes])


def render_runtime(page: Page, div: str, figures: "Figures") -> str:
    """A `plots.runtime.RuntimePage` as a bar per method (mean seconds per ok cell, log axis)."""
    rec: RuntimePage = page.record
    keep = [i for i, v in enumerate(rec.overall) if np.isfinite(v)]
    fig = _Plot({})
    fig.data.append({"type": "bar", "x": [rec.methods[i] for i in keep], "y": [float(rec.overall[i]) for i in keep],
                     "marker": {"color": [rec.styles[rec.methods[i]].color for i in keep]},
                     "hovertemplate": "%{x}: %{y:.3g} s per cell<extra></extra>"})
    fig.layout.update(height=360, yaxis={"title": {"text": "seconds per cell (mean over ok cells)"}, "type": "log"},
                      margin={"t": 30, "l": 60, "r": 20, "b": 100})
    rows = [[runtime_label(m, v).replace("\n", ", ")] + [fmt_num(t) for t in rec.per_dataset[i]]
            for i, (m, v) in enumerate(zip(rec.methods, rec.overall))]
    return "\n".join(_figure_head(*runtime_heading(rec))
                     + [fig.to_html(div), _table(["method, mean seconds per ok cell"] + rec.datasets, rows,
                                                 num=range(1, len(rec.datasets) + 1))])


def render_cd(page: Page, div: str, figures: "Figures") -> str:
    """A `plots.cd.CdPage`: its caption and the diagram as inline SVG."""
    rec: CdPage = page.record
    svg = figures.svg(page, "cd", lambda: draw_cd_figure(rec), div)
    return "\n".join(_figure_head(rec.title, rec.caption) + [f'<div class="cd" id="{div}">{svg}</div>'])


def render_svg(page: Page, div: str, figures: "Figures") -> str:
    """Any other figure record: the inline SVG of its matplotlib drawing (the PDF's page)."""
    title = getattr(page.record, "title", None) or page.slug
    svg = figures.svg(page, "page", lambda: page.draw(page.record), div)
    return "\n".join([f"<h3>{_e(plain(str(title)))}</h3>", f'<div class="figure" id="{div}">{svg}</div>'])


class Figures:
    """The SVG figures of one HTML report: taken from a page cache by record digest, else drawn
    (and kept there); ``used``: the digests this report holds, for `PageCache.save`."""

    def __init__(self, cache: PageCache | None) -> None:
        self.cache = cache
        self.salt = salt() if cache is not None else ""
        self.used: list[str] = []

    def svg(self, page: Page, how: str, draw: Callable, prefix: str) -> str:
        """The inline SVG of ``draw()``, a drawing of ``page``'s record (``how`` tells drawings of
        one record apart), its element ids prefixed with ``prefix``."""
        digest = self._digest(page, how)
        svg = self.cache.svg(digest) if digest is not None else None
        if svg is None:
            import matplotlib

            from ..style import RC

            with matplotlib.rc_context(RC):
                fig = draw()
                svg = svg_of(fig)
            fig.clear()
            if digest is not None:
                self.cache.add_svg(digest, svg)
        if digest is not None:
            self.used.append(digest)
        return _prefixed(svg, prefix)

    def wants(self, page: Page) -> dict[str, Callable | None]:
        """The SVG figures the HTML shows of ``page`` that the cache lacks, ``{how: drawing}``:
        its own drawing (`render_svg`; drawing None) or another drawing of its record (a
        renderer's in `SVG_DRAWINGS`). `pdf.write_report` hands them over (`add`) from the pass
        that draws the page, so that the process writing the HTML draws none of them."""
        if self.cache is None or page.text is not None or page.continues:
            return {}
        hows = {"page": None} if page.html is None else SVG_DRAWINGS.get(page.html, {})
        return {how: draw for how, draw in hows.items()
                if (digest := self._digest(page, how)) is not None and self.cache.svg(digest) is None}

    def add(self, page: Page, how: str, svg: str) -> None:
        """Keep the SVG figure ``how`` of ``page`` (as `wants` names it), drawn with the PDF's page."""
        self.cache.add_svg(self._digest(page, how), svg)

    def _digest(self, page: Page, how: str) -> str | None:
        return record_digest(page, f"{self.salt}\x1dsvg:{how}") if self.cache is not None else None


#: the SVG figures an HTML renderer shows besides plotly's, ``{renderer: {how: drawing}}``, each
#: drawing a picklable function of the page's record (the renderer passes ``how`` to
#: `Figures.svg`): drawn with the PDF's page, in the process that draws it (`Figures.wants`)
SVG_DRAWINGS: dict[Callable, dict[str, Callable]] = {render_cd: {"cd": draw_cd_figure}}


def _prefixed(svg: str, prefix: str) -> str:
    # matplotlib numbers its element ids per figure (figure_1, axes_1, ...): prefixed with the
    # figure's own id, they stay unique among the page's inline figures
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    return re.sub(r"#([A-Za-z_][\w.-]*)",
                  lambda m: f"#{prefix}-{m.group(1)}" if m.group(1) in ids else m.group(0), svg)


def _id_maker() -> Callable[[str], str]:
    """Element ids unique in the page: a repeated slug (two cubes of one experiment name) gets -2, -3."""
    seen: Counter = Counter()

    def new(name: str) -> str:
        base = slug(name, "x")
        seen[base] += 1
        return base if seen[base] == 1 else f"{base}-{seen[base]}"
    return new


# -- plotly figures as plain JSON ------------------------------------------------------------
class _Plot:
    """A plotly figure as plain dicts (``data``: traces, ``layout``), written with plotly.js.

    plotly's Python figure objects validate every property on every assignment;
    the page needs only the JSON. Grids of panels use plotly.js's own layout
    grid (``layout.grid``), with each panel's title as an annotation above it.
    """

    CONFIG = {"displaylogo": False, "responsive": True}

    def __init__(self, layout: dict, titles: Sequence[str] = ()) -> None:
        self.data: list[dict] = []
        self.layout = layout
        self.titles = list(titles)  # of the grid's panels

    @classmethod
    def grid(cls, rows: int, cols: int, titles: Sequence[str]) -> "_Plot":
        return cls({"grid": {"rows": rows, "columns": cols, "pattern": "independent", "roworder": "top to bottom",
                             "xgap": 0.18, "ygap": 0.45 if rows > 1 else 0.2}}, titles)

    def add(self, k: int, **trace) -> None:
        """Add a trace to subplot ``k`` (1-based, row by row)."""
        suffix = "" if k == 1 else str(k)
        self.data.append(dict(trace, xaxis=f"x{suffix}", yaxis=f"y{suffix}"))

    def axis(self, letter: str, k: int) -> dict:
        """Subplot ``k``'s x or y axis settings (made when absent)."""
        return self.layout.setdefault(f"{letter}axis{'' if k == 1 else k}", {})

    def to_html(self, div_id: str) -> str:
        import plotly.io as pio

        layout = dict(self.layout, template=_template())
        if self.titles:
            layout["annotations"] = [
                {"text": t, "showarrow": False, "xref": f"x{'' if k == 1 else k} domain",
                 "yref": f"y{'' if k == 1 else k} domain", "x": 0.5, "y": 1.0, "xanchor": "center",
                 "yanchor": "bottom", "font": {"size": 13}} for k, t in enumerate(self.titles, start=1)]
        return pio.to_html({"data": self.data, "layout": layout}, validate=False, full_html=False,
                           include_plotlyjs=False, div_id=div_id, config=self.CONFIG)


@functools.lru_cache(maxsize=None)
def _template() -> dict:
    import plotly.io as pio

    return pio.templates["plotly_white"].to_plotly_json()


# -- helpers ------------------------------------------------------------------------------
NUM = ' class="num"'  # a table cell holding a number


def _table(header: Sequence[str], rows: Sequence[Sequence], num: Sequence[int] = ()) -> str:
    """An HTML table; the columns ``num`` hold numbers (right-aligned)."""
    def cell(tag: str, i: int, value) -> str:
        return f"<{tag}{NUM if i in num else ''}>{_e(value)}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _e(value) -> str:
    return html.escape(str(value))


def _plain_title(text: str) -> str:
    """A matplotlib title (mathtext, newlines) as plotly text."""
    return _e(plain(text)).replace("\n", "<br>")


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"
