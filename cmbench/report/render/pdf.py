"""The PDF report: the pages of `model.build_report`, drawn with matplotlib.

Pages whose record is kept in a page cache (`pagecache`) are copied from the
document they were drawn into; the others are drawn by the strategy the caller
passes (`drawing.draw_here` or a `drawing.Pool`), and the report is merged
from those documents with pypdf. A page drawn now gives the SVG figures the
HTML report shows of it in the same pass (`figures`, the HTML's `html.Figures`).
"""
from __future__ import annotations

import datetime as _dt
import io
import os
from pathlib import Path
from typing import Sequence

import xarray as xr

from ...files import check_target, replaced
from ...version import __version__
from . import drawing
from . import pagecache
from .drawing import Strategy
from ..layout import slug, Page
from ..load import Cube
from ..model import build_report, default_title, flatten, report_model
from .pagecache import PageCache
from .writing import check_out, write_bytes

__all__ = ["write_report", "build_pages", "default_title"]


def write_report(cubes: Sequence[str | os.PathLike | xr.Dataset], out: str | os.PathLike, *,
                 baseline: str | os.PathLike | xr.Dataset | None = None,
                 png_dir: str | os.PathLike | None = None, title: str | None = None,
                 page_cache: str | os.PathLike | PageCache | None = None, draw: Strategy | None = None,
                 figures=None, sections=None, plugins: Sequence = ()) -> Path:
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
    draw : how the pages not kept are drawn (`drawing`); default: in this process.
    figures : the SVG figures of the HTML report of the same model
        (`html.Figures`): each page drawn now that it ``wants`` is handed to
        it as SVG (``add``), so that the HTML does not compute it again.
    sections : the report model (`model.build_report`) when the caller built it
        already (for the HTML too); else it is built here.
    plugins : plugins (paths, module names, objects; as for `cmbench.load_plugins`)
        whose kinds of report page (``register_report_pages``) are drawn besides
        the built-in ones, when the model is built here.

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
        sections, title = report_model(cubes, baseline, title, plugins)
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
    if png is not None:  # every page drawn here, the figures written as PNG too
        draw, page_cache, figures = _with_png(png), None, None
    blob = _merged(pages, meta, PageCache.of(page_cache), name=out.name, draw=draw or drawing.draw_here,
                   figures=figures)
    write_bytes(out, blob)
    return out


def build_pages(cubes: Sequence[Cube], *, title: str, baseline: Cube | None = None) -> list[Page]:
    """Every page of the report, in order (the PDF's pages of `model.build_report`)."""
    return flatten(build_report(cubes, title=title, baseline=baseline))


def _with_png(png: Path) -> Strategy:
    """The strategy drawing every page here, in one document, and each figure page (`Page.png`) as
    ``png/<slug>.png`` too (a repeated slug gets -2, -3)."""
    def draw(pages: Sequence[tuple[int, Page]], meta: dict, svg=()) -> drawing.Drawn:
        used: set[str] = set()

        def write(k: int, fig) -> None:
            page = pages[k][1]
            if page.png:
                name = stem = slug(page.slug, "figure")
                n = 2
                while name in used:
                    name, n = f"{stem}-{n}", n + 1
                used.add(name)
                target = check_target(png / f"{name}.png", root=png, kind="png")
                with replaced(target, prefix=f".{target.name}.") as tmp:  # a hard link is replaced, not written through
                    fig.savefig(tmp, dpi=150, format="png")

        blob, _ = drawing.draw_document([(p.record, p.draw) for _, p in pages], meta, write)
        return [([i for i, _ in pages], blob, {})]
    return draw


def _merged(pages: Sequence[Page], meta: dict, cache: PageCache | None, name: str, draw: Strategy,
            figures=None) -> bytes:
    """The PDF, drawing only the pages whose record digest ``cache`` does not hold.

    The pages drawn now come back as one document per drawing process, which
    the cache keeps; the report is merged from them and the documents that
    hold the other pages. A report whose pages were all drawn now into one
    document is that document itself.
    """
    salt = pagecache.salt()
    digests = [pagecache.record_digest(p, salt) for p in pages]
    found = [cache.find(d) if cache is not None else None for d in digests]
    todo = [i for i, loc in enumerate(found) if loc is None]
    wanted = {i: figures.wants(pages[i]) for i in todo} if figures is not None else {}
    drawn = draw([(i, pages[i]) for i in todo], meta, {i: w for i, w in wanted.items() if w})
    for _, _, svgs in drawn:
        for i, texts in svgs.items():
            for how, text in texts.items():
                figures.add(pages[i], how, text)
    if len(drawn) == 1 and len(todo) == len(pages):
        if cache is not None:
            cache.add(drawn[0][1], [digests[i] for i in drawn[0][0]])
            cache.save(name, digests)
        return drawn[0][1]
    import pypdf

    docs: dict[str, bytes] = {}
    where: dict[int, tuple[str, int]] = {}
    for indices, blob, _ in drawn:
        doc = cache.add(blob, [digests[i] for i in indices]) if cache is not None else f"drawn-{len(docs)}"
        docs[doc] = blob
        where.update((i, (doc, k)) for k, i in enumerate(indices))
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
