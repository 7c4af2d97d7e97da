"""The report step of a suite run: its PDF and HTML, drawn only when their cubes or the report code changed.

`cmbench suite` and `cmbench.run_suite` call `write_suite_reports` once the
runner has written the cubes. A rerun that changed no cube finds each report
stamped (in the suite's cache folder) with a digest of what it was drawn from
and the SHA-256 of the file written, and leaves it alone without loading any
plotting library; a deleted, edited or replaced report is always drawn anew.
When a report must be drawn, the report model (`model.build_report`) is built
once from the cubes read back from disk; the PDF's pages come from the page
cache (`pagecache`) wherever their record did not change, the others are drawn
(`drawing`: here, or in a process pool when there are many), and the HTML
renders the same model. Its SVG figures come from the same cache
(`html.Figures`), where the PDF's drawing left those it drew: a figure is
computed and drawn once for both reports.
"""
from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

from ..files import PAGES, check_target
from ..stamps import Stamps
from .render.pagecache import code_digest

#: the stamps of drawn reports (`cmbench.stamps.Stamps`), in the cache folder's ``pages`` folder
STAMPS = "reports.json"


def write_suite_reports(outputs, *, pdf: bool = True, html: bool = True, workers: int = 1) -> list[Path]:
    """Draw the PDF and HTML reports of a finished run, unless those on disk were drawn from these cubes.

    Parameters
    ----------
    outputs : `cmbench.runner.RunOutputs` (read by attribute: ``cubes``,
        ``digests``, ``report``, ``cache``, ``registry``): the cubes a run wrote, their
        content digests, the reports' path without suffix, the cache folder, and
        the run's plugins, whose kinds of report page (`kinds.page_kinds`) are drawn
        (None: the built-in ones).
    pdf, html : which reports to write.
    workers : with more than 1, the PDF's pages are drawn in up to this many
        processes when there are many (`drawing.Pool`). The reports are the same.

    Returns
    -------
    The report paths (``<report>.pdf``, ``<report>.html``), written or already current.

    Raises
    ------
    cmbench.errors.UserError
        A report path lies outside the output folder, or a cube cannot be read.
    """
    stem = Path(outputs.report)
    cache = Path(outputs.cache)
    registry = getattr(outputs, "registry", None)
    digest = hashlib.sha256("\x1f".join([*outputs.digests, code_digest(), *_page_plugins(registry)])
                            .encode()).hexdigest()
    stamps = Stamps(cache / PAGES / STAMPS)
    cubes = [Path(c) for c in outputs.cubes]
    paths = {kind: check_target(stem.with_name(f"{stem.name}.{kind}"), root=stem.parent, kind=kind)
             for kind, wanted in (("pdf", pdf), ("html", html)) if wanted}
    todo = {kind: path for kind, path in paths.items() if not stamps.current(path, digest)}
    if todo:
        _draw(cubes, todo, cache / PAGES, workers, stamps, digest, registry)
    return list(paths.values())


def report_step(workers: int):
    """The report step of a suite run (its ``then``, `cmbench.runner.run_suite`):
    `write_suite_reports` with as many drawing processes as the run had."""
    def draw(outputs) -> list[Path]:
        return write_suite_reports(outputs, workers=max(workers, 1))

    return draw


def _page_plugins(registry) -> list[str]:
    """Who adds kinds of page besides the report itself: each plugin's name, version and code
    digest, so that a plugin added, removed or edited draws the reports anew."""
    import inspect

    from ..plugins import REPORT_PAGES

    out = []
    for source, hook in getattr(registry, "page_hooks", ()):
        if source.plugin != REPORT_PAGES:
            try:  # the module's code: a plugin file has no version to tell its edits apart
                code = hashlib.sha256(inspect.getsource(inspect.getmodule(hook)).encode()).hexdigest()
            except (OSError, TypeError):
                code = ""
            out.append(f"{source.plugin} {source.version} {source.digest} {code}")
    return out


def _draw(cubes: list[Path], todo: dict, pages: Path, workers: int, stamps: Stamps, digest: str,
          registry=None) -> None:
    """Write the reports in ``todo`` (kind -> path) and stamp each once written."""
    from .kinds import page_kinds
    from .load import load_cubes
    from .model import build_report, default_title
    from .render.drawing import Pool, draw_here
    from .render.html import Figures, write_html
    from .render.pagecache import PageCache

    pool = Pool(workers) if workers > 1 and "pdf" in todo else None
    cache = PageCache(pages)
    with pool if pool is not None else contextlib.nullcontext():
        # The sweep's workers draw the pages, a part each (`Pool`): they import matplotlib while
        # the model is built here, for a folder's first report as for the few pages a new
        # estimator changes.
        if pool is not None:
            pool.warm()
        loaded = load_cubes(cubes)
        title = default_title(loaded)
        sections = build_report(loaded, title=title, kinds=page_kinds(registry))
        if "pdf" in todo:
            from .render.pdf import write_report

            figures = Figures(cache) if "html" in todo else None
            write_report(loaded, todo["pdf"], page_cache=cache, draw=pool or draw_here, figures=figures,
                         title=title, sections=sections)
            stamps.record(todo["pdf"], digest)
            stamps.save()
    if "html" in todo:
        write_html(loaded, todo["html"], title=title, sections=sections, page_cache=cache)
        stamps.record(todo["html"], digest)
        stamps.save()


def clear(cache: Path) -> int:
    """Delete the stamps and drawn pages kept in ``cache``; return the files deleted."""
    from .render.pagecache import clear as clear_pages

    return clear_pages(Path(cache) / PAGES)
