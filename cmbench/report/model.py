"""The report as data: its sections, each a list of page records built once from the cubes.

`build_report` is the one place that decides what a report holds and in what
order; the PDF (`pdf`, matplotlib) and the HTML (`html`, plotly) render the
same `Section` list, so both hold the same claims, tables, figures and notes.
A section's items are `layout.Page` objects: a figure record with its
matplotlib drawing function, or flowed text whose first page carries the
text's blocks (``Page.text``). Adding a page kind is a content module (its
record and drawing) plus a line here, and optionally a plotly renderer in
`html` (without one the HTML shows the record's matplotlib drawing as SVG).

A section that has no page says why (``omitted``): a cube may legally hold
no value to draw (every cell failed, undefined, NaN or inf), and the report
then states what it left out instead of stopping.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..errors import UserError
from ..version import __version__
from .content import claims_page as claims
from .content import figures
from .content import parameter
from .content import recovery
from .content import significance
from .content import stress
from .content import tables
from .content import theory_pages
from .layout import Page, text_pages
from .load import Cube, load_cube, load_cubes
from .style import MethodStyles

__all__ = ["Section", "build_report", "report_model", "flatten", "default_title"]


@dataclass
class Section:
    """One section of a report: an anchor, a heading, its pages and what it left out."""

    slug: str
    title: str
    pages: list[Page] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)


def default_title(cubes: Sequence[Cube]) -> str:
    """"cmbench report: <suite>" (the suites the cubes come from)."""
    suites = sorted({str(c.attrs.get("suite", "")) for c in cubes} - {""})
    return "cmbench report" + (f": {', '.join(suites)}" if suites else "")


def report_model(cubes: Sequence, baseline=None, title: str | None = None) -> tuple[list[Section], str]:
    """The sections (`build_report`) of cubes and a baseline given as paths, Datasets or loaded
    `Cube` objects, and the title (default `default_title`)."""
    loaded = load_cubes(cubes)
    base = load_cube(baseline, index=len(loaded)) if baseline is not None else None
    title = default_title(loaded) if title is None else title
    return build_report(loaded, title=title, baseline=base), title


def build_report(cubes: Sequence[Cube], *, title: str, baseline: Cube | None = None) -> list[Section]:
    """Every section of the report of ``cubes``, in order.

    Raises
    ------
    UserError
        ``baseline`` shares no method label and cell with the cubes.
    """
    styles = MethodStyles(m for c in cubes for m in c.methods)
    if baseline is not None:
        for m in baseline.methods:
            styles[m]
    pairs = [(c, baseline) for c in cubes
             if baseline is not None and tables.comparable(c, baseline)]
    if baseline is not None and not pairs:
        raise UserError(f"{baseline.source}: the baseline shares no method label and "
                        f"(data set, adversary, budget) with the cubes reported")
    out = [Section("provenance", "Provenance",
                   text_pages(tables.provenance_pages(cubes, title, __version__, baseline), "provenance"))]
    found = claims.claims_pages(cubes)
    if found is not None:
        out.append(Section("claims", found.title, text_pages(found, "claims")))
    for k, tp in enumerate(tables.suite_text_pages(cubes)):
        out.append(Section(f"suite-file-{k + 1}" if k else "suite-file", tp.title, text_pages(tp, "suite-file")))
    for cube in cubes:
        e = cube.experiment
        by_x = parameter.report_x(cube)  # error against a parameter, not the budget
        curves = parameter.parameter_pages(cube, styles) if by_x else figures.error_pages(cube, styles)
        out.append(Section(f"{e}-curves", f"{e}: error versus {by_x[1] if by_x else 'budget'}", curves,
                           [] if curves else [figures.no_curves_reason(cube)]))
        table = parameter.mean_sd_text(cube)
        if table is not None:
            out.append(Section(f"{e}-mean-sd", table.title, text_pages(table, f"{e}-mean-sd")))
        ranking = text_pages(tables.ranking_pages(cube), f"{e}-ranking")
        out.append(Section(f"{e}-ranking", f"{e}: ranking of methods", ranking + significance.cd_pages(cube)))
        worst = stress.stress_pages(cube, styles)  # only cubes with adaptive adversaries
        if worst:
            out.append(Section(f"{e}-stress", f"{e}: worst-case adversaries", worst))
        rec = recovery.recovery_pages(cube)
        if rec:
            out.append(Section(f"{e}-recovery", f"{e}: recovery quality", rec))
        rt = figures.runtime_page(cube, styles)
        out.append(Section(f"{e}-runtime", f"{e}: runtime per method", [rt] if rt is not None else [],
                           [] if rt is not None else ["no cell ran to the end with a finite time"]))
        out.append(Section(f"{e}-cells", f"{e}: cells that did not run",
                           text_pages(tables.cells_pages(cube), f"{e}-cells")))
        for c, b in pairs:
            if c is cube:
                out.append(Section(f"{e}-baseline", f"{e}: difference against the baseline",
                                   figures.baseline_pages(c, b, styles)
                                   + text_pages(tables.baseline_table_pages(c, b), f"{e}-baseline")))
    theory = theory_pages.theory_pages(cubes)  # the paper's worked examples the suite names
    if theory:
        out.append(Section("theory", "The paper's worked examples", theory))
    return out


def flatten(sections: Sequence[Section]) -> list[Page]:
    """The pages of every section, in order: the PDF's pages."""
    return [p for s in sections for p in s.pages]
