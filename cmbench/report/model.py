"""The report as data: its sections, each a list of page records built once from the cubes.

`build_report` is the one place that decides what a report holds and in what
order: the sections of every registered kind of page (`kinds.PageKind`), the
report's own (`cmbench.report.pages`) first, then those plugins add, laid out
by place (head, once per experiment, tail). The PDF (`render.pdf`,
matplotlib) and the HTML (`render.html`, plotly) render the same `Section`
list, so both hold the same claims, tables, figures and notes. A section's
items are `layout.Page` objects: a figure record with its matplotlib drawing
function, or flowed text whose first page carries the text's blocks
(``Page.text``). Adding a page kind is a content module (its section builder,
record and drawing) and one registration line (`cmbench.report.pages`, or a
plugin's ``register_report_pages``).

A section that has no page says why (``omitted``): a cube may legally hold
no value to draw (every cell failed, undefined, NaN or inf), and the report
then states what it left out instead of stopping.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import PluginError, UserError
from ..version import __version__
from .kinds import Context, PageKind, page_kinds
from .layout import Page, Section
from .load import Cube, load_cube, load_cubes
from .style import MethodStyles

__all__ = ["Section", "build_report", "report_model", "flatten", "default_title"]


def default_title(cubes: Sequence[Cube]) -> str:
    """"cmbench report: <suite>" (the suites the cubes come from)."""
    suites = sorted({str(c.attrs.get("suite", "")) for c in cubes} - {""})
    return "cmbench report" + (f": {', '.join(suites)}" if suites else "")


def report_model(cubes: Sequence, baseline=None, title: str | None = None,
                 plugins: Sequence = ()) -> tuple[list[Section], str]:
    """The sections (`build_report`) of cubes and a baseline given as paths, Datasets or loaded
    `Cube` objects, and the title (default `default_title`); ``plugins`` (as for
    `cmbench.load_plugins`) add their kinds of page to the built-in ones."""
    kinds = None
    if plugins:
        from ..plugins import load_plugins

        kinds = page_kinds(load_plugins(plugins))
    loaded = load_cubes(cubes)
    base = load_cube(baseline, index=len(loaded)) if baseline is not None else None
    title = default_title(loaded) if title is None else title
    return build_report(loaded, title=title, baseline=base, kinds=kinds), title


def build_report(cubes: Sequence[Cube], *, title: str, baseline: Cube | None = None,
                 kinds: Sequence[PageKind] | None = None) -> list[Section]:
    """Every section of the report of ``cubes``, in order.

    Parameters
    ----------
    cubes : the loaded cubes, one per experiment.
    title : the report's title.
    baseline : a cube to compare against.
    kinds : the kinds of page (`kinds.page_kinds`); default: the built-in ones.

    Raises
    ------
    UserError
        ``baseline`` shares no method label and cell with the cubes.
    PluginError
        A kind's section builder raised, or gave a page whose record type or
        drawing it does not register.
    """
    from .content.tables import comparable

    kinds = page_kinds() if kinds is None else list(kinds)
    styles = MethodStyles(m for c in cubes for m in c.methods)
    if baseline is not None:
        for m in baseline.methods:
            styles[m]
    pairs = [(c, baseline) for c in cubes if baseline is not None and comparable(c, baseline)]
    if baseline is not None and not pairs:
        raise UserError(f"{baseline.source}: the baseline shares no method label and "
                        f"(data set, adversary, budget) with the cubes reported")
    ctx = Context(tuple(cubes), title, baseline, tuple(pairs), styles, __version__)
    out: list[Section] = []
    for place in ("head", "experiment", "tail"):
        at = [k for k in kinds if k.place == place]
        for cube in cubes if place == "experiment" else [None]:
            for kind in at:
                out += _sections(kind, ctx, cube)
    return out


def _sections(kind: PageKind, ctx: Context, cube: Cube | None) -> list[Section]:
    """``kind``'s sections, each page checked against its registration and given its HTML renderer."""
    built = list(kind.sections(ctx) if cube is None else kind.sections(cube, ctx))
    for section in built:
        if not isinstance(section, Section):
            raise PluginError(f"report page kind {kind.name!r}: its section builder gave {section!r}, "
                              "not a cmbench.report.Section")
        for page in section.pages:
            draw = kind.records.get(type(page.record))
            if draw is None or page.draw is not draw:
                raise PluginError(
                    f"report page kind {kind.name!r}: page {page.slug!r} holds a "
                    f"{type(page.record).__name__} drawn by {getattr(page.draw, '__name__', page.draw)!r}, "
                    f"which the kind does not register (records: "
                    f"{', '.join(f'{t.__name__} -> {d.__name__}' for t, d in kind.records.items())})")
            page.html = kind.html.get(type(page.record))
        section.kind = kind.name
    return built


def flatten(sections: Sequence[Section]) -> list[Page]:
    """The pages of every section, in order: the PDF's pages."""
    return [p for s in sections for p in s.pages]
