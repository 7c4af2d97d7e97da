"""The PDF report: the pages of `model.build_report`, drawn with matplotlib.

Pages whose record is kept in a page cache (`pagecache`) are copied from the
document they were drawn into; the others are drawn here, into one document,
and the report is merged from those documents with pypdf. The pages are drawn
in the process that builds the report: a pool of drawing processes cost more
CPU than it saved wall time on two cores, even for a whole report
(benchmarks/README.md).
"""
from __future__ import annotations

import datetime as _dt
import io
import os
from pathlib import Path
from typing import Callable, Sequence

import xarray as xr

from ...files import check_target
from ...version import __version__
from . import pagecache
from ..layout import slug, Page
from ..load import Cube
from ..model import build_report, default_title, flatten, report_model
from .pagecache import PageCache
from .writing import check_out, write_bytes

__all__ = ["write_report", "build_pages", "default_title"]


def write_report(cubes: Sequence[str | os.PathLike | xr.Dataset], out: str | os.PathLike, *,
                 baseline: str | os.PathLike | xr.Dataset | None = None,
                 png_dir: str | os.PathLike | None = None, title: str | None = None,
                 page_cache: str | os.PathLike | PageCache | None = None, drawn: Callable | None = None,
                 sections=None) -> Path:
    """Write a PDF report of results cubes.

    Parameters
    ----------
    cubes : netCDF paths, ``xarray.Dataset`` objects or loaded `load.Cube` objects,
        one per experiment.
    out : the PDF to write (parent folders are made); written whole to a
        temporary name beside it and renamed, so a failed report leaves no half file.
    baseline : a cube to compare against; each cube sharing method labels and
        coordinates with it gets difference pages.
    png_dir : also write each figure (error curves, runtime, baseline
        differences) as a PNG there, for READMEs and slides.
    title : first-page title; default "cmbench report: <suite>".
    page_cache : a folder of drawn pages (`pagecache`), or that cache opened:
        a page whose record is found there is copied instead of drawn, and the
        pages drawn now are kept there.
    drawn : called as ``drawn(page, figure)`` with each page drawn now, once it
        is in the document (the HTML report takes its SVG figures from there).
    sections : the report model (`model.build_report`) when the caller built it
        already (for the HTML too); else it is built here.

    Returns
    -------
    The path of the PDF.

    Raises
    ------
    cmbench.errors.UserError
        ``out`` cannot be written, or a cube cannot be read or lacks a dimension,
        variable or label; the message names the file.
    """
    cubes = list(cubes) if not isinstance(cubes, (str, os.PathLike, xr.Dataset, Cube)) else [cubes]
    out = check_out(out, [*cubes, baseline], kind="pdf")
    png = Path(png_dir) if png_dir is not None else None
    if png is not None:
        from ...output import writable_folder

        writable_folder(png, "PNG folder")
    if sections is None:
        sections, title = report_model(cubes, baseline, title)
    pages = flatten(sections)
    meta = {
        "Title": title,
        "Author": f"cmbench {__version__}",
        "Subject": "Robust mean estimation under coordinate-level corruption: "
                   + ", ".join(s.slug[: -len("-curves")] for s in sections if s.slug.endswith("-curves")),
        "Keywords": "cmbench; robust mean estimation; coordinate-level corruption",
        "Creator": "cmbench.report",
        "CreationDate": _dt.datetime.now(_dt.timezone.utc),
    }
    if png is not None:  # every page drawn, the figures written as PNG too
        drawn, page_cache = _with_png(png, drawn), None
    blob = _merged(pages, meta, PageCache.of(page_cache), name=out.name, drawn=drawn)
    write_bytes(out, blob)
    return out


def build_pages(cubes: Sequence[Cube], *, title: str, baseline: Cube | None = None) -> list[Page]:
    """Every page of the report, in order (the PDF's pages of `model.build_report`)."""
    return flatten(build_report(cubes, title=title, baseline=baseline))


def draw_document(pages: Sequence[Page], meta: dict, drawn: Callable | None = None) -> bytes:
    """One PDF document of ``pages``, drawn with the report's rc settings; ``drawn(page, figure)``
    is called with each page's figure once it is in the document."""
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages

    from ..style import RC

    buf = io.BytesIO()
    with matplotlib.rc_context(RC), PdfPages(buf, metadata=meta) as pdf:
        for page in pages:
            fig = page.draw(page.record)
            pdf.savefig(fig)
            if drawn is not None:
                drawn(page, fig)
            fig.clear()
    return buf.getvalue()


def _with_png(png: Path, then: Callable | None) -> Callable:
    """A ``drawn`` hook writing each figure page (`Page.png`) as ``png/<slug>.png`` (a repeated slug
    gets -2, -3), then calling ``then``."""
    used: set[str] = set()

    def write(page: Page, fig) -> None:
        if page.png:
            name = stem = slug(page.slug, "figure")
            n = 2
            while name in used:
                name, n = f"{stem}-{n}", n + 1
            used.add(name)
            fig.savefig(check_target(png / f"{name}.png", root=png, kind="png"), dpi=150)
        if then is not None:
            then(page, fig)
    return write


def _merged(pages: Sequence[Page], meta: dict, cache: PageCache | None, name: str,
            drawn: Callable | None) -> bytes:
    """The PDF, drawing only the pages whose record digest ``cache`` does not hold.

    The pages drawn now make one document, which the cache keeps; the report
    is merged from it and the documents that hold the other pages. A report
    whose pages were all drawn now is that document itself.
    """
    salt = pagecache.salt()
    digests = [pagecache.record_digest(p, salt) for p in pages]
    found = [cache.find(d) if cache is not None else None for d in digests]
    todo = [i for i, loc in enumerate(found) if loc is None]
    blob = draw_document([pages[i] for i in todo], meta, drawn) if todo else None
    doc = cache.add(blob, [digests[i] for i in todo]) if blob is not None and cache is not None else "drawn"
    if blob is not None and len(todo) == len(pages):
        if cache is not None:
            cache.save(name, digests)
        return blob
    import pypdf

    docs: dict[str, bytes] = {doc: blob} if blob is not None else {}
    where = {i: (doc, k) for k, i in enumerate(todo)}
    readers: dict = {}
    writer = pypdf.PdfWriter()
    for i in range(len(pages)):
        doc, k = found[i] if found[i] is not None else where[i]
        if doc not in readers:
            readers[doc] = pypdf.PdfReader(io.BytesIO(docs[doc] if doc in docs else cache.document(doc)))
        writer.add_page(readers[doc].pages[k])
    dedupe = getattr(writer, "compress_identical_objects", None)  # pypdf >= 4.3
    if dedupe is not None:
        dedupe()
    created = meta["CreationDate"].strftime("D:%Y%m%d%H%M%SZ")
    writer.add_metadata({f"/{k}": v for k, v in meta.items() if k != "CreationDate"}
                        | {"/CreationDate": created, "/Producer": f"matplotlib pdf backend, pypdf {pypdf.__version__}"})
    buf = io.BytesIO()
    writer.write(buf)
    if cache is not None:
        cache.save(name, digests)
    return buf.getvalue()
