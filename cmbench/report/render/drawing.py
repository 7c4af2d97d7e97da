"""How a report's pages are drawn into PDF documents: here, or in a pool of processes.

A drawing strategy is a callable ``draw(pages, meta) -> [(page indices, PDF bytes)]``
taking ``(index, Page)`` pairs; `pdf.write_report` is handed one and merges the
documents it returns. `draw_here` draws every page in this process, in one
document; `Pool` spreads the pages over worker processes of a
`concurrent.futures.ProcessPoolExecutor`, one document per worker, started by
cmbench's forkserver where the platform has it, else spawned
(`cmbench.forking.context`, asked to preload matplotlib's PDF backend and the
drawing modules: a forkserver started by this call imports them once); a worker
ends with the process that owns the pool (`cmbench.forking.exit_with_parent`).
A worker that raises makes `Pool.__call__` raise that error; one that dies
raises `concurrent.futures.process.BrokenProcessPool`.
"""
from __future__ import annotations

import contextlib
import io
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence

from ..layout import Page

__all__ = ["draw_here", "Pool", "draw_document", "PRELOAD"]

#: modules the forkserver imports once, so that each worker starts with them
PRELOAD = ["matplotlib.backends.backend_pdf", "cmbench.report.content.figures", "cmbench.report.content.stress",
           "cmbench.report.content.significance", "cmbench.report.content.theory_pages"]

Drawn = list[tuple[list[int], bytes]]
Strategy = Callable[[Sequence[tuple[int, Page]], dict], Drawn]


def draw_document(records: Sequence[tuple], meta: dict, drawn: Callable | None = None) -> bytes:
    """One PDF document of pages given as ``(record, draw)`` pairs, drawn with the report's rc settings;
    ``drawn(k, figure)`` is called with each page's figure once it is in the document."""
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages

    from ..style import RC

    buf = io.BytesIO()
    with matplotlib.rc_context(RC), PdfPages(buf, metadata=meta) as pdf:
        for k, (record, draw) in enumerate(records):
            fig = draw(record)
            pdf.savefig(fig)
            if drawn is not None:
                drawn(k, fig)
            fig.clear()
    return buf.getvalue()


def draw_here(pages: Sequence[tuple[int, Page]], meta: dict) -> Drawn:
    """Every page in this process, into one document."""
    if not pages:
        return []
    return [([i for i, _ in pages], draw_document([(p.record, p.draw) for _, p in pages], meta))]


def split(pages: Sequence[tuple[int, Page]], n: int) -> list[list[tuple[int, Page]]]:
    """``n`` groups of about equal drawing cost (`Page.cost`), the costliest pages placed first."""
    groups: list[list[tuple[int, Page]]] = [[] for _ in range(max(1, n))]
    load = [0.0] * len(groups)
    for item in sorted(pages, key=lambda ip: -ip[1].cost):
        k = load.index(min(load))
        groups[k].append(item)
        load[k] += item[1].cost
    return [g for g in groups if g]


class Pool(contextlib.AbstractContextManager):
    """``workers`` processes that draw pages; a context manager (the pool ends on exit).

    The processes start on first use, so a report whose pages are all kept
    (`pagecache`) starts none.
    """

    def __init__(self, workers: int) -> None:
        self.workers = max(1, int(workers))
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            from ...forking import context, exit_with_parent

            # cmbench's one forkserver (else spawn); a worker ends with this process, even killed
            self._pool = ProcessPoolExecutor(self.workers, mp_context=context(PRELOAD),
                                             initializer=exit_with_parent, initargs=(os.getpid(),))
        return self._pool

    def __call__(self, pages: Sequence[tuple[int, Page]], meta: dict) -> Drawn:
        groups = split(pages, self.workers)
        if len(groups) <= 1:
            return draw_here(pages, meta)
        pool = self._executor()
        futures = [(g, pool.submit(draw_document, [(p.record, p.draw) for _, p in g], meta)) for g in groups]
        return [([i for i, _ in g], f.result()) for g, f in futures]

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
