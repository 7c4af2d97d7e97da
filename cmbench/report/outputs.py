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


def write_suite_reports(outputs, *, pdf: bool = True, html: bool = True) -> list[Path]:
    """Draw the PDF and HTML reports of a finished run, unless those on disk were drawn from these cubes.

    Parameters
    ----------
    outputs : `cmbench.runner.RunOutputs` (read by attribute: ``cubes``,
        ``digests``, ``report``, ``cache``): the cubes a run wrote, their
        content digests, the reports' path without suffix and the cache folder.
    pdf, html : which reports to write.

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
    digest = hashlib.sha256("\x1f".join([*outputs.digests, code_digest()]).encode()).hexdigest()
    stamps = Stamps(cache / PAGES / STAMPS)
    cubes = [Path(c) for c in outputs.cubes]
    written = []
    if pdf:
        path = inside(stem.parent, stem.with_name(stem.name + ".pdf"))
        if not stamps.current(path, digest):
            from .pdf import write_report

            write_report(cubes, path, page_cache=cache / PAGES)
            stamps.record(path, digest)
            stamps.save()
        written.append(path)
    if html:
        path = inside(stem.parent, stem.with_name(stem.name + ".html"))
        if not stamps.current(path, digest):
            from .html import write_html

            write_html(cubes, path)
            stamps.record(path, digest)
            stamps.save()
        written.append(path)
    return written


def clear(cache: Path) -> int:
    """Delete the stamps and drawn pages kept in ``cache``; return the files deleted."""
    from .pagecache import clear as clear_pages

    return clear_pages(Path(cache) / PAGES)


