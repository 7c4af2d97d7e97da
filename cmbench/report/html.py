"""The interactive HTML report: one self-contained file that works offline.

Same sections as the PDF (`cmbench.report`): provenance; per experiment the
error-versus-budget curves (zoomable plotly panels, one per data set, hover for
the values, click a method in the legend to hide or show it in every panel,
double-click to show it alone), the recovery thresholds, the ranking with its
significance tests and critical-difference diagram, the recovery quality per
recoverer, the runtime per method, and the cells that did not run. plotly's library is inlined once in the page's head
and the diagram is inline SVG: nothing is loaded from the network, so the file
can be mailed, archived or opened on an offline machine. Figures are written
as plotly's JSON directly (`_Plot`), without plotly's Python figure objects.
"""
from __future__ import annotations

import copy
import datetime as _dt
import functools
import html
import io
import json
import os
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import xarray as xr

from ..cube import FAILURES, GAPS, STATUSES
from ..files import replaced
from ..version import __version__
from . import significance, tables
from .figures import thresholds_for
from .load import METRIC_TEXT, Cube, environment_attr, load_cubes, positions, summarize
from .style import RC, MethodStyles

__all__ = ["write_html", "build_html"]

#: matplotlib marker / line style -> plotly's names, so a method looks alike in PDF and HTML
SYMBOLS = {"o": "circle", "s": "square", "^": "triangle-up", "D": "diamond", "v": "triangle-down",
           "P": "cross", "X": "x", "*": "star", "<": "triangle-left", ">": "triangle-right",
           "h": "hexagon", "p": "pentagon"}
DASHES = {"-": "solid", "--": "dash", "-.": "dashdot", ":": "dot"}
THRESHOLD_DASHES = ("dash", "dot", "dashdot", "longdashdot")

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
td.best { font-weight: bold; }
p.note { font-style: italic; color: #444; max-width: 70em; }
p.fail { color: #b00000; }
.plot { width: 100%; }
.cd svg { max-width: 100%; height: auto; }
code { font-size: 0.95em; }
"""


def write_html(cubes: Sequence[str | os.PathLike | xr.Dataset | Cube], out: str | os.PathLike, *,
               title: str | None = None, text: str | None = None) -> Path:
    """Write the interactive HTML report of results cubes.

    Parameters
    ----------
    cubes : netCDF paths, Datasets or loaded `load.Cube` objects, one per experiment.
    out : the ``.html`` file to write; written to a temporary file first and
        moved into place, so a failed report leaves no half file.
    title : heading; default "cmbench report: <suite>".
    text : the page, when `build_html` already built it from these cubes
        (in a helper process); it is then only written.

    Returns
    -------
    The path written.

    Raises
    ------
    cmbench.errors.UserError
        A cube cannot be read or lacks a dimension or variable.
    """
    if text is None:
        loaded = load_cubes(list(cubes) if not isinstance(cubes, (str, os.PathLike, xr.Dataset, Cube))
                            else [cubes])
        if title is None:
            suites = sorted({str(c.attrs.get("suite", "")) for c in loaded} - {""})
            title = "cmbench report" + (f": {', '.join(suites)}" if suites else "")
        text = build_html(loaded, title=title)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with replaced(out, suffix=".html.part") as tmp:
        tmp.write_text(text, encoding="utf-8")
    return out


def build_html(cubes: Sequence[Cube], *, title: str) -> str:
    """The whole page as a string (see the module docstring for its sections)."""
    from plotly.offline import get_plotlyjs

    styles = MethodStyles(m for c in cubes for m in c.methods)
    body = [f"<h1>{_e(title)}</h1>", _nav(cubes), _provenance(cubes, title)]
    for cube in cubes:
        body.append(_experiment(cube, styles))
    now = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{_e(title)}</title>",
        f'<meta name="generator" content="cmbench {__version__}">',
        f"<style>{CSS}</style>",
        # the plotting library, inlined: the page must work with no network
        f'<script type="text/javascript">{get_plotlyjs()}</script>',
        "</head>", "<body>", *body,
        f'<p class="note">Written {now} by cmbench {__version__} from {len(cubes)} results cube(s); '
        f"nothing was rerun.</p>", "</body>", "</html>", ""])


# -- sections ---------------------------------------------------------------------------
def _nav(cubes: Sequence[Cube]) -> str:
    links = ['<a href="#provenance">provenance</a>']
    for c in cubes:
        s = _slug(c.experiment)
        links += [f'<a href="#{s}-curves">{_e(c.experiment)}: curves</a>',
                  f'<a href="#{s}-ranking">ranking</a>', f'<a href="#{s}-recovery">recovery</a>',
                  f'<a href="#{s}-cells">failures</a>']
    return "<nav>" + " ".join(links) + "</nav>"


def _provenance(cubes: Sequence[Cube], title: str) -> str:
    counts = [c.status_counts() for c in cubes]
    n_fail = sum(n.get(s, 0) for n in counts for s in FAILURES)
    parts = ['<h2 id="provenance">Provenance</h2>']
    suites = sorted({str(c.attrs.get("suite", "?")) for c in cubes})
    parts.append(f"<p>Suite: {_e(', '.join(suites))}.</p>")
    parts.append(f'<p class="fail">{n_fail} cell(s) failed or timed out; see each experiment\'s '
                 f"failures section.</p>" if n_fail else "<p>No cell failed or timed out.</p>")
    parts.append(_table(["experiment", "suite file (hash)", "seed", "created", "host", "cmbench"]
                        + [s for s in STATUSES],
                        [[c.experiment, f"{c.attrs.get('suite_file', '?')} "
                                        f"({str(c.attrs.get('suite_hash', '?'))[:12]})",
                          c.attrs.get("seed", "?"), c.attrs.get("created", "?"), c.attrs.get("host", "?"),
                          c.attrs.get("cmbench_version", "?")] + [n.get(s, 0) for s in STATUSES]
                         for c, n in zip(cubes, counts)], num=range(6, 6 + len(STATUSES))))
    env = _environment(cubes)
    if env:
        parts.append("<h3>Environment</h3>" + _table(["experiment", "what", "value"], env))
    plugins = {f"{p.get('plugin', p.get('name', '?'))} {p.get('version', '?')}": None
               for c in cubes for p in c.plugins}
    parts.append("<p>Plugins: " + _e(", ".join(plugins) or "not recorded") + ".</p>")
    rows = []
    for c in cubes:
        for d in c.datasets:
            info = c.datasets_info.get(d, {})
            shape = info.get("shape")
            rows.append([c.experiment, d, info.get("name", "?"), f"{shape[0]} x {shape[1]}" if shape else "?",
                         info.get("rank", "–") if info.get("rank") is not None else "–",
                         "yes" if info.get("structure_known") else "no",
                         info["m_a"] if info.get("m_a") is not None else "–", len(c.ds["instance"])])
    parts.append("<h3>Data sets</h3>" + _table(
        ["experiment", "label", "component", "N x n", "rank", "structure", "m_A", "instances"], rows,
        num=(3, 4, 6, 7)))
    rows = [[c.experiment, m, f"{r} + {e}"] for c in cubes for m, (r, e) in c.methods.items()]
    parts.append("<h3>Methods</h3>" + _table(["experiment", "method", "recoverer + estimator"], rows))
    suite_texts = {str(c.attrs.get("suite_text")) for c in cubes if c.attrs.get("suite_text")}
    for text in suite_texts:
        parts.append("<details><summary>Suite file</summary><pre>" + _e(text) + "</pre></details>")
    return "\n".join(parts)


def _environment(cubes: Sequence[Cube]) -> list[list]:
    """Versions, BLAS and CPU recorded in each cube's ``environment`` attribute, if any."""
    rows = []
    for c in cubes:
        env = environment_attr(c.attrs)
        if isinstance(env, dict):
            rows += [[c.experiment, k, v if isinstance(v, str) else json.dumps(v)] for k, v in env.items()]
    return rows


def _experiment(cube: Cube, styles: MethodStyles) -> str:
    s = _slug(cube.experiment)
    descr = str(cube.attrs.get("description", "")).strip()
    parts = [f'<h2 id="{s}-curves">{_e(cube.experiment)}: error versus budget</h2>']
    if descr:
        parts.append(f"<p>{_e(descr)}</p>")
    parts.append('<p class="note">Mean over instances with a 95% confidence band. Drag to zoom, '
                 "double-click to reset; hover for values; click a method in the legend to hide or "
                 "show it in every panel, double-click it to show it alone.</p>")
    for adversary in cube.adversaries:
        for metric in cube.metrics:
            fig = _curves(cube, adversary, metric, styles)
            if fig is None:
                continue
            parts.append(f"<h3>{_e(METRIC_TEXT.get(metric, metric))}, adversary {_e(adversary)}</h3>")
            parts.append(fig.to_html(f"{s}-{_slug(adversary)}-{_slug(metric)}"))
    parts.append(_ranking(cube))
    parts.append(_recovery(cube))
    rt = _runtime(cube, styles)
    if rt is not None:
        parts.append(f"<h3>{_e(cube.experiment)}: runtime per method</h3>")
        parts.append(rt.to_html(f"{s}-runtime"))
    parts.append(_cells(cube))
    return "\n".join(parts)


def _curves(cube: Cube, adversary: str, metric: str, styles: MethodStyles):
    summ = summarize(cube.ok_values(metric).sel(adversary=adversary))
    dims = ("method", "dataset", "budget")
    mean_a, half_a, count_a = (a.transpose(*dims).values for a in (summ.mean, summ.half, summ.count))
    mi, di = positions(summ.mean, "method"), positions(summ.mean, "dataset")
    datasets = [d for d in cube.datasets if np.isfinite(mean_a[:, di[d]]).any()]
    if not datasets:
        return None
    ncols = min(len(datasets), 3)
    nrows = -(-len(datasets) // ncols)
    titles = [_plain_title(cube.dataset_title(d)) for d in datasets]
    fig = _Plot.grid(nrows, ncols, titles, horizontal_spacing=0.06,
                     vertical_spacing=0.12 if nrows > 1 else 0.1)
    x = cube.budgets
    order = np.argsort(x)
    xs = x[order]
    shown: set[str] = set()
    for i, d in enumerate(datasets):
        k = i + 1  # the subplot, row by row
        for m in cube.methods:
            centre = mean_a[mi[m], di[d]][order]
            half = half_a[mi[m], di[d]][order]
            count = count_a[mi[m], di[d]][order]
            if not np.isfinite(centre).any():
                continue
            st = styles[m]
            band = np.isfinite(centre) & np.isfinite(half)
            if band.any():
                upper, lower = np.where(band, centre + half, np.nan), np.where(band, centre - half, np.nan)
                fig.add(k, type="scatter",
                        x=np.concatenate([xs, xs[::-1]]), y=np.concatenate([upper, lower[::-1]]),
                        mode="lines", fill="toself", fillcolor=_rgba(st.color, 0.16), line={"width": 0},
                        hoverinfo="skip", legendgroup=m, showlegend=False, name=m,
                        meta={"role": "band", "method": m})
            fig.add(k, type="scatter",
                x=xs, y=centre, mode="lines+markers", name=m, legendgroup=m,
                showlegend=m not in shown,
                line={"color": st.color, "dash": DASHES.get(st.linestyle, "solid"), "width": 2},
                marker={"symbol": SYMBOLS.get(st.marker, "circle"), "size": 6},
                customdata=np.stack([np.nan_to_num(half, nan=-1.0), count], axis=-1),
                meta={"role": "curve", "method": m},
                hovertemplate=(f"<b>{_e(m)}</b><br>{_e(d)}<br>budget %{{x:.4g}}<br>"
                               f"{_e(METRIC_TEXT.get(metric, metric))} %{{y:.4g}}"
                               " ± %{customdata[0]:.3g}<br>instances ok: %{customdata[1]}"
                               "<extra></extra>"))
            shown.add(m)
        # y range from the curves, not the bands: a band over two instances can be
        # huge and would flatten every curve (zoom out to see it whole)
        centres = mean_a[:, di[d]]
        top = float(np.nanmax(centres)) if np.isfinite(centres).any() else 1.0
        low = min(0.0, float(np.nanmin(centres)))
        top = top * 1.15 if top > 0 else 1.0
        fig.axis("y", k)["range"] = [low, top]
        # thresholds as lines with their label on hover (text on the plot would overlap)
        for j, (label, value) in enumerate(thresholds_for(cube, d, adversary)):
            text = _plain_title(label)
            fig.add(k, type="scatter",
                x=[value, value], y=[low, top], mode="lines", name="recovery thresholds",
                legendgroup="recovery thresholds", showlegend="recovery thresholds" not in shown,
                line={"color": "#555", "width": 1, "dash": THRESHOLD_DASHES[j % len(THRESHOLD_DASHES)]},
                meta={"role": "threshold"},
                hovertemplate=f"{text} = {value:.4g}<extra></extra>")
            shown.add("recovery thresholds")
    axis = cube.budget_axis(adversary)
    for k in range(1, len(datasets) + 1):
        fig.axis("x", k)["title"] = {"text": _plain_title(axis)}
        fig.axis("y", k)["title"] = {"text": METRIC_TEXT.get(metric, metric)}
    height = 380 * nrows + 150
    plot_h = height - 150 - 50
    fig.layout.update(height=height, hovermode="closest",
                      # above the two-line panel titles
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1 + 55 / plot_h,
                              "xanchor": "left", "x": 0, "groupclick": "togglegroup"},
                      margin={"t": 150, "l": 60, "r": 20, "b": 50})
    return fig


def _recovery(cube: Cube) -> str:
    """Recovery quality per recoverer: RMSE of the recovered entries and fraction recovered."""
    from .recovery import QUANTITIES, tolerance_text

    if "recovery_rmse" not in cube.ds.data_vars:
        return ""
    s = _slug(cube.experiment)
    recs = [str(r) for r in cube.ds["recoverer"].values]
    styles = MethodStyles(recs)
    ok_any = (cube.ds["status"] == "ok").any("estimator")
    parts = [f'<h2 id="{s}-recovery">{_e(cube.experiment)}: recovery quality</h2>',
             f'<p class="note">Per recoverer, mean over instances: the RMSE of the recovered entries '
             f"against the clean values (over the hidden or replaced entries it filled, in the data's "
             f"units) and the fraction of corrupted entries recovered; {_e(tolerance_text(cube))}.</p>"]
    x = cube.budgets
    order = np.argsort(x)
    for adversary in cube.adversaries:
        for var, (ylabel, what) in QUANTITIES.items():
            if var not in cube.ds.data_vars:
                continue
            values = cube.ds[var].where(ok_any & np.isfinite(cube.ds[var])).sel(adversary=adversary)
            mean = values.mean("instance", skipna=True)
            mean_a = mean.transpose("recoverer", "dataset", "budget").values
            ri, di = positions(mean, "recoverer"), positions(mean, "dataset")
            datasets = [d for d in cube.datasets if np.isfinite(mean_a[:, di[d]]).any()]
            if not datasets:
                continue
            ncols = min(len(datasets), 3)
            nrows = -(-len(datasets) // ncols)
            fig = _Plot.grid(nrows, ncols, [_e(d) for d in datasets])
            shown: set[str] = set()
            for i, d in enumerate(datasets):
                for r in recs:
                    y = mean_a[ri[r], di[d]][order]
                    if not np.isfinite(y).any():
                        continue
                    st = styles[r]
                    fig.add(i + 1, type="scatter",
                        x=x[order], y=y, mode="lines+markers", name=r, legendgroup=r,
                        showlegend=r not in shown, line={"color": st.color},
                        marker={"symbol": SYMBOLS.get(st.marker, "circle")},
                        hovertemplate=f"<b>{_e(r)}</b> on {_e(d)}<br>budget %{{x:.4g}}<br>"
                                      f"{_e(ylabel)} %{{y:.4g}}<extra></extra>")
                    shown.add(r)
            for k in range(1, nrows * ncols + 1):
                fig.axis("x", k)["title"] = {"text": _plain_title(cube.budget_axis(adversary))}
                fig.axis("y", k).update(title={"text": ylabel}, rangemode="tozero")
            fig.layout.update(height=330 * nrows + 90, margin={"t": 70, "l": 60, "r": 20, "b": 50})
            parts.append(f"<h3>{_e(what)}, adversary {_e(adversary)}</h3>")
            parts.append(fig.to_html(f"{s}-{_slug(adversary)}-{var}"))
    return "\n".join(parts)


def _runtime(cube: Cube, styles: MethodStyles):
    secs = cube.by_method("seconds").where(cube.status() == "ok")
    means = {m: float(secs.sel({"method": m}).mean(skipna=True)) for m in cube.methods}
    means = {m: v for m, v in means.items() if np.isfinite(v)}
    if not means:
        return None
    fig = _Plot({})
    fig.data.append({"type": "bar", "x": list(means), "y": list(means.values()),
                     "marker": {"color": [styles[m].color for m in means]},
                     "hovertemplate": "%{x}: %{y:.3g} s per cell<extra></extra>"})
    fig.layout.update(height=360, yaxis={"title": {"text": "seconds per cell (mean)"}, "type": "log"},
                      margin={"t": 30, "l": 60, "r": 20, "b": 100})
    return fig


def _ranking(cube: Cube) -> str:
    s = _slug(cube.experiment)
    parts = [f'<h2 id="{s}-ranking">{_e(cube.experiment)}: ranking of methods</h2>',
             '<p class="note">A cell is one (data set, adversary, budget); a method\'s value there is '
             "its mean over the instances that are ok. Ranks are taken per cell (1 = lowest error); a "
             "method without a value in a cell shares the ranks below those that have one. Mean error "
             "is over the cells where the method has a value.</p>"]
    for metric in cube.metrics:
        df = tables.ranking(cube, metric)
        parts.append(f"<h3>By {_e(METRIC_TEXT.get(metric, metric))}</h3>")
        if not np.isfinite(df["mean_rank"]).any():
            parts.append(f'<p class="note">No method has a {_e(metric)} value in this experiment.</p>')
            continue
        full = (df["cells"] == df["total_cells"]).to_numpy()
        errs = df["mean_error"].where(full)
        best_err = errs == errs.min()
        best_rank = df["mean_rank"] == df["mean_rank"].min()
        rows = [[i + 1, r.method, f"{r.recoverer} + {r.estimator}",
                 (tables.fmt_num(r.mean_error), bool(best_err.iloc[i])),
                 (tables.fmt_num(r.mean_rank, 3), bool(best_rank.iloc[i])), f"{r.cells} / {r.total_cells}"]
                for i, r in enumerate(df.itertuples())]
        parts.append(_table(["#", "method", "recoverer + estimator", "mean error", "average rank",
                             "cells with a value"], rows, num=(0, 3, 4, 5)))
        result, blocks, reason = significance.run_tests(cube, metric)
        for text in significance.describe(result, blocks, reason, metric):
            parts.append(f"<p>{_e(text)}</p>")
        if result is not None:
            parts.append(f'<div class="cd" id="{s}-cd-{_slug(metric)}">{_cd_svg(result)}</div>')
    return "\n".join(parts)


def _cd_svg(result) -> str:
    import matplotlib

    # Text as SVG text, not outlines: the browser sets it (it can be selected and searched), and
    # the diagram is written in 40-60% less time (0.16 s against 0.3-0.38 s for the paper suite's three)
    with matplotlib.rc_context({**RC, "svg.fonttype": "none"}):
        fig = significance.cd_diagram(result)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight")
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]  # drop the XML prolog and doctype: inline SVG


def _cells(cube: Cube) -> str:
    s = _slug(cube.experiment)
    parts = [f'<h2 id="{s}-cells">{_e(cube.experiment)}: cells that did not run</h2>']
    n_inst, n_budget = len(cube.ds["instance"]), len(cube.ds["budget"])
    for statuses, head, empty in (
            (FAILURES, "Failed and timed-out cells", "No cell failed or timed out."),
            (GAPS, "Gaps: undefined and not-applicable cells (not failures)",
             "Every method is defined and applicable on every cell.")):
        df = tables.cells_with_status(cube, statuses)
        parts.append(f"<h3>{_e(head)}" + (f" ({int(df['cells'].sum())} cells)" if len(df) else "") + "</h3>")
        if df.empty:
            parts.append(f'<p class="note">{_e(empty)}</p>')
            continue
        parts.append(_table(
            ["status", "method", "recoverer + estimator", "data set", "adversary", "budgets", "instances",
             "cells", "message"],
            [[r.status, r.method or "–", f"{r.recoverer} + {', '.join(r.estimators)}", ", ".join(r.datasets),
              r.adversary, tables.fmt_list(r.budgets, n_budget), tables.fmt_list(r.instances, n_inst),
              r.cells, tables.brief_error(r.error) or "(no message)"] for r in df.itertuples()],
            num=(7,)))
    return "\n".join(parts)


# -- plotly figures as plain JSON ------------------------------------------------------------
class _Plot:
    """A plotly figure as plain dicts (``data``: traces, ``layout``), written with plotly.js.

    plotly's Python figure objects validate every property on every assignment,
    which took most of the HTML report's time; the page needs only the JSON.
    Grids get the axis domains and panel titles plotly's `make_subplots` would
    give them (`_grid_layout`).
    """

    CONFIG = {"displaylogo": False, "responsive": True}

    def __init__(self, layout: dict) -> None:
        self.data: list[dict] = []
        self.layout = layout

    @classmethod
    def grid(cls, rows: int, cols: int, titles: Sequence[str], horizontal_spacing=None,
             vertical_spacing=None) -> "_Plot":
        layout = copy.deepcopy(_grid_layout(rows, cols, len(titles), horizontal_spacing, vertical_spacing))
        for note, title in zip(layout.get("annotations", []), titles):
            note["text"] = title
        return cls(layout)

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
        return pio.to_html({"data": self.data, "layout": layout}, validate=False, full_html=False,
                           include_plotlyjs=False, div_id=div_id, config=self.CONFIG)


@functools.lru_cache(maxsize=None)
def _grid_layout(rows: int, cols: int, titles: int, horizontal_spacing, vertical_spacing) -> dict:
    """The layout plotly's ``make_subplots(rows, cols, subplot_titles=...)`` makes: its arithmetic
    for a plain grid (``tests/test_html_report.py`` checks it against plotly's own).

    Importing `plotly.subplots` and building one figure with it took 0.11-0.2 s of
    the HTML page's 0.7-0.95 s, on every run that rebuilds the page.
    """
    hs = 0.2 / cols if horizontal_spacing is None else horizontal_spacing
    vs = 0.5 / rows if vertical_spacing is None else vertical_spacing  # plotly's default with titles
    widths = [(1.0 - hs * (cols - 1)) / cols] * cols
    heights = [(1.0 - vs * (rows - 1)) / rows] * rows
    layout: dict = {}
    notes = []
    for r in range(rows):  # row 1 at the top
        below = rows - 1 - r
        y_s = sum(heights[:below]) + below * vs
        y_e = y_s + heights[-1 - r]
        y_s, y_e = (min(max(y, 0.0), 1.0) for y in (y_s, y_e))  # plotly's rounding at the edges
        for c in range(cols):
            k = r * cols + c + 1
            suffix = "" if k == 1 else str(k)
            x_s = sum(widths[:c]) + c * hs
            x_domain, y_domain = [x_s, x_s + widths[c]], [y_s, y_e]
            layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "domain": x_domain}
            layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "domain": y_domain}
            if k <= titles:
                notes.append({"font": {"size": 16}, "showarrow": False, "text": f"title {k - 1}",
                              "x": sum(x_domain) / 2.0, "xanchor": "center", "xref": "paper",
                              "y": y_domain[1], "yanchor": "bottom", "yref": "paper"})
    if notes:
        layout["annotations"] = notes
    return layout


@functools.lru_cache(maxsize=None)
def _template() -> dict:
    import plotly.io as pio

    return pio.templates["plotly_white"].to_plotly_json()


# -- helpers ------------------------------------------------------------------------------
def _table(header: Sequence[str], rows: Sequence[Sequence], num: Sequence[int] = ()) -> str:
    """An HTML table; a cell given as (text, best) is bold when best."""
    num = set(num)
    out = ["<table><thead><tr>"
           + "".join(f'<th{" class=num" if i in num else ""}>{_e(h)}</th>' for i, h in enumerate(header))
           + "</tr></thead><tbody>"]
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            best = False
            if isinstance(v, tuple):
                v, best = v
            cls = " ".join(c for c, on in (("num", i in num), ("best", best)) if on)
            cells.append(f'<td{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}>{_e(v)}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _e(value) -> str:
    return html.escape(str(value))


def _plain_title(text: str) -> str:
    """A matplotlib title (mathtext, newlines) as plotly text."""
    text = str(text).replace("$\\epsilon$", "ε").replace("$\\rho$", "ρ").replace("$\\alpha$", "α")
    text = re.sub(r"\$([^$]*)\$", r"\1", text).replace("\\", "")
    return html.escape(text).replace("\n", "<br>")


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(text)).strip("-") or "x"
