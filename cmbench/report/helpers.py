"""Helper processes that draw report pages, and the HTML page, beside the process building them.

A suite's report step has three parts that need not wait for each other once
the page records exist: drawing the PDF's changed pages, subsetting their fonts,
and writing the HTML page. The parent builds the records and hands the helpers
work through one queue:

* ``("page", index, slug, record, draw)``: draw one page; each helper draws the
  pages it takes into its own PDF document (its fonts are subset once, when the
  document closes);
* ``("html", cubes, title)``: build the HTML page from the loaded cubes (handed
  over first, before the parent builds the records).

Helpers take the next task as soon as they are free, so a helper held up by
the HTML page or a heavy figure draws fewer pages. `Helpers.finish` returns
each helper's document with the indices of the pages it holds, in its order;
the parent merges the report from them (`cmbench.report.pdf`), so the report's
pages and their order are those of drawing them in one process.

When to start them: a forked helper starts with the parent's modules, so the
parent first imports the drawing modules (`preload`, once for all) and loads
the cubes, then forks; a spawned helper imports everything itself, so it is
started before the parent does anything else, and its imports overlap the
parent's. (Forked before the parent's imports, each helper would import
matplotlib on its own: on 2 cores that costs more than it overlaps.)

Start method: a helper is forked from the parent only where that is safe
(`cmbench.forking`): on Linux, with no other thread running in the parent and
no Dask client made in it (a fork copies locks that other threads may hold; a
run on a Dask cluster asks for ``spawn``).
Elsewhere it is spawned, and imports what it needs. ``CMBENCH_REPORT_START``
(``fork`` or ``spawn``) overrides the choice.

A helper that raises makes `finish` raise `HelperError` naming the page and the
helper's traceback; one that ends without reporting (killed, out of memory)
makes it raise `HelperError` with its exit code. The parent writes nothing
then: reports are written only once every part is back.
"""
from __future__ import annotations

import gc
import multiprocessing as mp
import os
import queue
import time
import traceback
from multiprocessing.reduction import ForkingPickler
from typing import Optional, Sequence

__all__ = ["Helpers", "HelperError", "preload", "start_method", "START_ENV"]

#: environment variable forcing the helpers' start method (``fork`` or ``spawn``)
START_ENV = "CMBENCH_REPORT_START"
#: seconds between checks that the helpers are alive while waiting for them
POLL = 0.2


class HelperError(RuntimeError):
    """A report helper process failed; nothing of the report was written."""


def start_method() -> str:
    """``"fork"`` where forking this process is safe (`cmbench.forking`), else ``"spawn"``;
    ``CMBENCH_REPORT_START`` overrides it.

    Raises
    ------
    cmbench.errors.UserError
        ``CMBENCH_REPORT_START`` names another method, or one this platform lacks.
    """
    # cmbench.forking no longer forks the parent (issue 32); the report's helpers move to a pool
    forced = os.environ.get(START_ENV, "").strip()
    if forced and (forced not in ("fork", "spawn") or forced not in mp.get_all_start_methods()):
        from ..errors import UserError

        raise UserError(f"{START_ENV}={forced!r}: expected 'fork' or 'spawn' "
                        f"(this platform has {', '.join(mp.get_all_start_methods())})")
    return forced or "spawn"


def preload() -> None:
    """Import what the report step needs (matplotlib's PDF backend, fontTools, pypdf, the
    drawing and HTML modules) and build matplotlib's mathtext grammar, so that helpers forked
    afterwards start with them. A suite run calls it while its units compute
    (`cmbench.runner.warmup`)."""
    from importlib import import_module

    for name in ("matplotlib.figure", "matplotlib.backends.backend_pdf", "matplotlib.lines",
                 "matplotlib.patches", "fontTools.subset", "pypdf"):
        import_module(name)
    for name in (".pdf", ".html"):
        import_module(name, __package__)
    # matplotlib builds its mathtext grammar (log-axis tick labels such as 10^-2 are mathtext) once
    # per process, in 0.06 s: built here, forked helpers inherit it instead of each building its own
    from matplotlib.mathtext import MathTextParser

    MathTextParser("path").parse("$10^{-2}$")


class Helpers:
    """``n`` helper processes, started at once, waiting for pages to draw.

    Parameters
    ----------
    n : how many processes (at least 1).
    method : ``"fork"`` or ``"spawn"``; default `start_method`.
    meta : the metadata of each helper's PDF document.
    inherited : paths whose descriptors a forked helper closes (the run lock held while
        a suite's report is drawn: `cmbench.forking.close_inherited`).
    fonts : a folder where the helpers keep font subsets (`fonts.font_subsets`), or None.
    """

    def __init__(self, n: int, *, method: Optional[str] = None, meta: Optional[dict] = None,
                 inherited: tuple = (), fonts: Optional[str] = None) -> None:
        self.method = method or start_method()
        ctx = mp.get_context(self.method)
        self.tasks = ctx.Queue()
        self.results = ctx.Queue()
        self.procs = [ctx.Process(target=_main, args=(self.tasks, self.results, k, meta or {}, os.getpid(),
                                        inherited if self.method == "fork" else (), fonts),
                                  name=f"cmbench-report-{k}", daemon=True) for k in range(max(1, n))]
        if self.method == "fork":
            # A forked helper shares the parent's memory until it writes to a page; the cyclic
            # garbage collector writes into every object it visits. Objects frozen now are never
            # visited in the helpers, which then copy only the memory they use.
            gc.freeze()
        try:
            for p in self.procs:
                p.start()
        finally:
            if self.method == "fork":
                gc.unfreeze()
        self.pages = 0
        self.html_asked = False
        self.html: Optional[str] = None

    def draw(self, index: int, page) -> None:
        """Have a helper draw ``page`` (a `layout.Page`) as page ``index`` of the report."""
        self._put(("page", index, page.slug, page.record, page.draw))
        self.pages += 1

    def build_html(self, cubes: Sequence, title: str) -> None:
        """Have a helper build the HTML page of the loaded ``cubes`` (`load.Cube`), from now.

        It is handed over at once, ahead of the pages: the helper that takes it
        works on it while this process builds the PDF's records, when the
        other core would be idle. That helper computes the cubes' per-method
        views again (the records compute them here too): on 2 cores, a run
        with a new estimator took 0.3-0.75 s less (3 interleaved pairs).
        """
        self.html_asked = True
        self._put(("html", list(cubes), title))

    def _put(self, task: tuple) -> None:
        # Pickled here (as the queue would: between these processes only), not in the queue's
        # feeder thread: what cannot be pickled fails here, and objects the caller goes on
        # using are sent as they are now.
        self.tasks.put(bytes(ForkingPickler.dumps(task)))

    def finish(self) -> list[tuple[list[int], bytes]]:
        """Wait for every task; return each helper's document as (page indices, PDF bytes).

        Helpers that drew no page give no document. The HTML page, if asked
        for, is then in ``html``.

        Raises
        ------
        HelperError
            A helper raised, or ended without reporting.
        """
        for _ in self.procs:
            self.tasks.put(None)
        docs: dict[int, tuple[list[int], Optional[bytes]]] = {}
        html_done = not self.html_asked
        while len(docs) < len(self.procs) or not html_done:
            try:
                msg = self.results.get(timeout=POLL)
            except queue.Empty:
                self._check_alive(docs)
                continue
            if msg[0] == "error":
                _, k, what, text = msg
                raise HelperError(f"report helper {k} failed while {what}; no report was written:\n{text}")
            if msg[0] == "html":
                self.html, html_done = msg[1], True
            elif msg[0] == "doc":
                _, k, indices, blob = msg
                docs[k] = (indices, blob)
        out = [(indices, blob) for _, (indices, blob) in sorted(docs.items()) if indices]
        if sum(len(i) for i, _ in out) != self.pages:
            raise HelperError(f"report helpers returned {sum(len(i) for i, _ in out)} of the "
                              f"{self.pages} pages asked for; no report was written")
        return out

    def _check_alive(self, docs: dict) -> None:
        for k, p in enumerate(self.procs):
            if k not in docs and p.exitcode is not None:
                # a helper that finished has flushed its result into the queue: look once more
                time.sleep(POLL)
                if self.results.empty():
                    raise HelperError(f"report helper {k} (pid {p.pid}) ended with exit code "
                                      f"{p.exitcode} before finishing its pages; no report was written")
                return

    def close(self) -> None:
        """Stop the helpers (at once, if they still run) and free the queues."""
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        for p in self.procs:
            p.join(timeout=5)
        for q in (self.tasks, self.results):
            q.cancel_join_thread()  # a task nobody will read must not hold the parent at exit
            q.close()

    def __enter__(self) -> "Helpers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- the helper's side --------------------------------------------------------------------------
def _main(tasks, results, k: int, meta: dict, parent: int, inherited: tuple = (),
          fonts: Optional[str] = None) -> None:
    """Draw pages into one document until told to stop; report it (or the first error);
    ``fonts``: where font subsets are kept (`fonts.font_subsets`).

    A helper whose parent is killed ends too (`cmbench.forking.exit_with_parent`): it
    would otherwise wait for its next task for ever. A forked one first closes its
    copies of the descriptors open on ``inherited`` (the run lock).
    """
    from ..forking import exit_with_parent

    exit_with_parent(parent)  # filelock 4 closes the run lock's descriptor in a forked child itself
    what = "starting"
    try:
        import io

        import matplotlib
        from matplotlib.backends.backend_pdf import PdfPages

        from importlib import import_module

        import_module(".pdf", __package__)  # the drawing modules, imported while the parent builds
        from .fonts import font_subsets
        from .style import RC

        buf, doc, indices = io.BytesIO(), None, []
        with matplotlib.rc_context(RC), font_subsets(fonts):
            while True:
                what = "waiting for work"
                task = tasks.get()
                if task is None:
                    break
                task = ForkingPickler.loads(task)
                if task[0] == "html":
                    what = "building the HTML report"
                    from .html import build_html

                    results.put(("html", build_html(task[1], title=task[2])))
                    continue
                _, index, slug, record, draw = task
                what = f"drawing page {index + 1} ({slug})"
                if doc is None:
                    doc = PdfPages(buf, metadata=meta)
                fig = draw(record)
                doc.savefig(fig)
                fig.clear()
                indices.append(index)
            what = "writing its PDF document (fonts)"
            if doc is not None:
                doc.close()
        results.put(("doc", k, indices, buf.getvalue() if indices else None))
    except BaseException as exc:  # the parent must hear of any failure, then stop the others
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        try:
            results.put(("error", k, what, text.rstrip()))
        finally:
            results.close()
            results.join_thread()
        os._exit(1)

