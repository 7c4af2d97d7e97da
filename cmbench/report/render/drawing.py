"""How a report's pages are drawn into PDF documents: here, or in a pool of processes.

A drawing strategy is a callable ``draw(pages, meta, svg) -> Drawn`` taking
``(index, Page)`` pairs and the SVG figures the HTML report wants of them
(`Wanted`); `pdf.write_report` is handed one and merges the documents it
returns. `draw_here` draws every page in this process, in one document; `Pool`
draws them in the workers of the process's shared pool (`cmbench.pools.shared`,
the sweep's workers), one document per worker it uses (see `POOL_COST`); a
worker ends with the process that owns the pool. A worker that raises makes
`Pool.__call__` raise that error; one that dies raises
`concurrent.futures.process.BrokenProcessPool`. A page drawn for the PDF gives
the SVG figures the HTML shows of it in the same pass (its own figure, or
another drawing of its record, such as a critical-difference diagram without
the page's caption), so that the HTML computes none of them again and the
process that writes it need not import matplotlib.
"""
from __future__ import annotations

import contextlib
import io
from typing import Callable, Collection, Mapping, Optional, Sequence

from ...shares import equal_shares
from ..layout import Page

__all__ = ["draw_here", "Pool", "draw_document", "draw_pages", "svg_of", "POOL_COST"]

#: Pages to draw, in `Page.cost` units (a page of curves is 1, about 0.25 s), below which a
#: `Pool` whose workers are not running yet draws here: started for the report alone, they
#: import matplotlib, xarray and pandas first (about 1.1 s each) and embed the fonts once per
#: document. When the run's sweep started them, the pool draws every page, side by side in
#: every worker as soon as there are several: they are warm (`Pool.warm` has them import
#: matplotlib while this process builds the report model), and after the sweep they have
#: nothing else to do. A document per worker costs each its fonts and first-figure set-up: the
#: README's estimator's 13 changed pages of the paper suite take about 1 CPU-s more and 1.3 s
#: less of wall than in one document (benchmarks/report_tail.py, benchmarks/README.md).
POOL_COST = 12.0

#: the SVG figures wanted of the pages drawn, by page: ``{how: drawing}``, each drawing a function
#: of the page's record that returns a figure, None for the page's own figure (`html.Figures.wants`)
Wanted = Mapping[int, Mapping[str, Optional[Callable]]]
#: ``(page indices, their PDF document, {page index: {how: SVG}})`` per document
Drawn = list[tuple[list[int], bytes, dict[int, dict[str, str]]]]
Strategy = Callable[[Sequence[tuple[int, Page]], dict, Wanted], Drawn]


def draw_document(records: Sequence[tuple], meta: dict, drawn: Callable | None = None,
                  svg: Collection[int] = ()) -> tuple[bytes, dict[int, str]]:
    """One PDF document of pages given as ``(record, draw)`` pairs, drawn with the report's rc
    settings, and the SVG (`svg_of`) of the pages at the positions ``svg``; ``drawn(k, figure)``
    is called with each page's figure once it is in the document."""
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages

    from ..style import RC

    buf = io.BytesIO()
    svgs = {}
    with matplotlib.rc_context(RC), PdfPages(buf, metadata=meta) as pdf:
        for k, (record, draw) in enumerate(records):
            fig = draw(record)
            pdf.savefig(fig)
            if k in svg:
                svgs[k] = svg_of(fig)
            if drawn is not None:
                drawn(k, fig)
            fig.clear()
    return buf.getvalue(), svgs


def svg_of(fig) -> str:
    """A figure as inline SVG (no XML prolog, no date: the same figure gives the same SVG)."""
    import matplotlib

    # Text as SVG text, not outlines: the browser sets it (it can be selected and searched)
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def draw_pages(records: Sequence[tuple], meta: dict, wanted: Wanted) -> tuple[bytes, dict[int, dict[str, str]]]:
    """`draw_document` of ``records``, and the SVG figures ``wanted`` of them, by position:
    ``{k: {how: drawing}}``, a drawing None for the page's own figure, else a function of the
    page's record drawn here with the report's rc settings (as `html.Figures` draws it)."""
    own = {k for k, hows in wanted.items() if any(d is None for d in hows.values())}
    blob, svgs = draw_document(records, meta, None, own)
    out = {k: {how: svgs[k] for how, d in hows.items() if d is None} for k, hows in wanted.items()}
    others = [(k, how, d) for k, hows in wanted.items() for how, d in hows.items() if d is not None]
    if others:
        import matplotlib

        from ..style import RC

        with matplotlib.rc_context(RC):
            for k, how, draw in others:
                fig = draw(records[k][0])
                out[k][how] = svg_of(fig)
                fig.clear()
    return blob, out


def _task(group: Sequence[tuple[int, Page]], svg: Optional[Wanted]) -> tuple[list, dict]:
    """`draw_pages`' records and wanted SVG figures for the pages of ``group``."""
    wanted = dict(svg or {})
    return [(p.record, p.draw) for _, p in group], {k: wanted[i] for k, (i, _) in enumerate(group) if i in wanted}


def _result(group: Sequence[tuple[int, Page]], done: tuple[bytes, dict]) -> tuple[list[int], bytes, dict]:
    blob, svgs = done
    return [i for i, _ in group], blob, {group[k][0]: s for k, s in svgs.items()}


def draw_here(pages: Sequence[tuple[int, Page]], meta: dict, svg: Optional[Wanted] = None) -> Drawn:
    """Every page in this process, into one document."""
    if not pages:
        return []
    records, wanted = _task(pages, svg)
    return [_result(pages, draw_pages(records, meta, wanted))]


def warm() -> None:
    """Import what drawing a page needs (matplotlib, its PDF and SVG backends): run in a worker
    before its first page arrives."""
    import matplotlib.backends.backend_pdf  # noqa: F401
    import matplotlib.backends.backend_svg  # noqa: F401
    import matplotlib.figure  # noqa: F401


def split(pages: Sequence[tuple[int, Page]], n: int) -> list[list[tuple[int, Page]]]:
    """``n`` groups of about equal drawing cost (`Page.cost`), the costliest pages placed first;
    each group in report order (its document's page order: `pdf._merged` takes a lone document
    holding every page as the report itself)."""
    groups = [[pages[i] for i in g] for g in equal_shares([page.cost for _, page in pages], n)]
    return [sorted(g, key=lambda ip: ip[0]) for g in groups]


class Pool(contextlib.AbstractContextManager):
    """``workers`` processes that draw pages; a context manager (the pool ends on exit).

    The pool is the process's shared one (`cmbench.pools.shared`). When this
    process has not started it (no sweep ran), a report whose pages are all kept
    (`pagecache`), or that has fewer than `POOL_COST` to draw, starts none; when
    it runs, every page is drawn there, spread over its workers (a document
    each). On exit its workers stay warm for the next run, unless the drawing
    failed (they are then ended).
    """

    def __init__(self, workers: int) -> None:
        self.workers = max(1, int(workers))
        self._pool = None

    def _executor(self):
        if self._pool is None:
            from ... import pools

            self._pool = pools.shared(self.workers)
        return self._pool

    def warm(self) -> None:
        """Have the workers of a running shared pool import matplotlib now, while this process
        builds the report model; nothing when no pool runs (none is started for it)."""
        from ... import pools

        if pools.size() > 0:
            executor = self._executor()
            for _ in range(self.workers):
                executor.submit(warm)

    def __call__(self, pages: Sequence[tuple[int, Page]], meta: dict, svg: Optional[Wanted] = None) -> Drawn:
        from ... import pools

        cost = sum(p.cost for _, p in pages)
        running = pools.size() > 0
        # a running pool's workers are warm and idle: every one of them draws (the wall time
        # is the report's tail); a pool started for the report alone only for enough pages
        groups = split(pages, self.workers if running or cost >= POOL_COST else 1)
        if not running and (cost < POOL_COST or len(groups) <= 1):
            return draw_here(pages, meta, svg)
        pool = self._executor()
        futures = []
        for g in groups:
            records, wanted = _task(g, svg)
            futures.append((g, pool.submit(draw_pages, records, meta, wanted)))
        return [_result(g, f.result()) for g, f in futures]

    def __exit__(self, kind, *exc) -> None:
        if self._pool is not None and kind is not None:
            from ... import pools

            pools.stop(self._pool)  # a worker may still be drawing: no waiting for it
        self._pool = None
