"""The reports of a suite run, drawn after it: only when their cubes or the report code changed.

`cmbench suite` and `cmbench.run_suite` call `write_suite_reports` once the
runner has written the cubes. A rerun that changed no cube finds each report
stamped (in the suite's cache folder) with a digest of what it was drawn from
and the SHA-256 of the file written, and leaves it alone without loading any
plotting library; a deleted, edited or replaced report is always drawn anew.
When a report must be drawn, its pages come from the page cache (`pagecache`)
wherever their data did not change.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from ..files import PAGES
from ..output import inside
from ..stamps import Stamps

#: the stamps of drawn reports (`cmbench.stamps.Stamps`), in the cache folder's ``pages`` folder
STAMPS = "reports.json"


def code_digest() -> str:
    """Size and modification time of the report package's modules and cmbench's version:
    an edited report module redraws."""
    from ..version import __version__

    h = hashlib.sha256(__version__.encode())
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        st = path.stat()
        h.update(f"{path.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def write_suite_reports(outputs, *, pdf: bool = True, html: bool = True, workers: int = 1,
                        start: str | None = None) -> list[Path]:
    """Draw the PDF and HTML reports of a finished run, unless those on disk were drawn from these cubes.

    Parameters
    ----------
    outputs : `cmbench.runner.RunOutputs` (read by attribute: ``cubes``,
        ``digests``, ``report``, ``cache``, and ``lock`` and ``datasets`` if
        present): the cubes a run wrote, their content digests, the reports' path
        without suffix, the cache folder, the run lock's file (which forked
        helpers close), and the cubes in memory (drawn from rather than the files
        read back: 0.1 s less, before the helpers can start).
    pdf, html : which reports to write.
    workers : with more than 1, the PDF's pages are drawn in up to this many
        helper processes (`helpers`; started as early as pays, see there), and
        the HTML page is built by one of them meanwhile. The reports are the
        same as with 1.
    start : how helpers start, ``"fork"`` or ``"spawn"`` (default:
        `helpers.start_method`); after a run on a Dask cluster, ``"spawn"``.

    Returns
    -------
    The report paths (``<report>.pdf``, ``<report>.html``), written or already current.

    Raises
    ------
    cmbench.errors.UserError
        A report path lies outside the output folder, or a cube cannot be read.
    cmbench.report.helpers.HelperError
        A helper process failed; neither report was written.
    """
    stem = Path(outputs.report)
    cache = Path(outputs.cache)
    digest = hashlib.sha256("\x1f".join([*outputs.digests, code_digest()]).encode()).hexdigest()
    stamps = Stamps(cache / PAGES / STAMPS)
    cubes = [Path(c) for c in outputs.cubes]
    paths = {kind: inside(stem.parent, stem.with_name(f"{stem.name}.{kind}"))
             for kind, wanted in (("pdf", pdf), ("html", html)) if wanted}
    todo = {kind: path for kind, path in paths.items() if not stamps.current(path, digest)}
    if todo:
        lock = getattr(outputs, "lock", None)  # held by the run drawing its report
        _draw(cubes, list(outputs.digests), todo, cache / PAGES, workers, stamps, digest, start,
              inherited=(lock,) if lock is not None else (), datasets=tuple(getattr(outputs, "datasets", ())))
    return list(paths.values())


def report_step(workers: int, scheduler: str | None = None):
    """The report step of a suite run (its ``then``, `cmbench.runner.run_suite`):
    `write_suite_reports` with as many drawing processes as the run had, spawned
    after a run on a Dask cluster (a process with a Dask client is never forked)."""
    def draw(outputs) -> list[Path]:
        return write_suite_reports(outputs, workers=max(workers, 1), start="spawn" if scheduler else None)

    return draw


def _draw(cubes: list[Path], contents: list[str], todo: dict, pages: Path, workers: int, stamps: Stamps,
          digest: str, start: str | None, inherited: tuple = (), datasets: tuple = ()) -> None:
    """Write the reports in ``todo`` (kind -> path) and stamp each once written; ``contents``:
    the cubes' content digests; ``datasets``: the cubes in memory, else they are read from ``cubes``."""
    from .load import load_cube, load_cubes
    from .pdf import default_title, write_report

    helpers = method = None
    if workers > 1 and "pdf" in todo:
        from .helpers import Helpers, preload, start_method

        method = start or start_method()
        if method == "spawn":  # a spawned helper imports everything: start it first, to overlap
            helpers = Helpers(workers, method=method, inherited=inherited, fonts=str(pages))
    try:
        if len(datasets) == len(cubes):  # copies (a cube is about 1 MB): the caller keeps its own
            loaded = [load_cube(ds.copy(deep=True), index=i, source=str(path))
                      for i, (ds, path) in enumerate(zip(datasets, cubes))]
        else:
            loaded = load_cubes(cubes)
        if method == "fork":  # a forked helper inherits the parent's modules: import them once, here
            preload()
            helpers = Helpers(workers, method=method, inherited=inherited, fonts=str(pages))
        for cube, content in zip(loaded, contents):
            cube.digest = content
        title = default_title(loaded)
        if helpers is not None and "html" in todo:
            helpers.build_html(loaded, title)
        if "pdf" in todo:
            write_report(loaded, todo["pdf"], page_cache=pages, helpers=helpers, title=title)
            stamps.record(todo["pdf"], digest)
            stamps.save()
        if "html" in todo:
            from .html import write_html

            write_html(loaded, todo["html"], title=title, text=helpers.html if helpers is not None else None)
            stamps.record(todo["html"], digest)
            stamps.save()
    finally:
        if helpers is not None:
            helpers.close()


def clear(cache: Path) -> int:
    """Delete the stamps and drawn pages kept in ``cache``; return the files deleted."""
    from .pagecache import clear as clear_pages

    return clear_pages(Path(cache) / PAGES)


