"""The PDF report: every page of a list of cubes, in order (see the package docstring)."""
from __future__ import annotations

import datetime as _dt
import io
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import contextlib
from importlib.metadata import version

import xarray as xr

from ..version import __version__
from ..errors import UserError
from ..files import replaced
from ..output import writable_folder
from . import claims, figures, pagecache, recovery, significance, stress, tables, theory_pages
from .fonts import font_subsets
from .pagecache import PageCache
from .layout import Page, text_pages
from .load import Cube, load_cube, load_cubes
from .style import RC, MethodStyles

if TYPE_CHECKING:
    from .helpers import Helpers

__all__ = ["write_report", "build_pages"]


def write_report(cubes: Sequence[str | os.PathLike | xr.Dataset], out: str | os.PathLike, *,
                 baseline: str | os.PathLike | xr.Dataset | None = None,
                 png_dir: str | os.PathLike | None = None, title: str | None = None,
                 page_cache: str | os.PathLike | None = None, workers: int = 1,
                 helpers: "Helpers | None" = None) -> Path:
    """Write a PDF report of results cubes.

    Parameters
    ----------
    cubes : netCDF paths, ``xarray.Dataset`` objects or loaded `load.Cube` objects,
        one per experiment.
    out : the PDF to write (parent folders are made); written to a temporary
        file first and moved into place, so a failed report leaves no half file.
    baseline : a cube to compare against; each cube sharing method labels and
        coordinates with it gets difference pages.
    png_dir : also write each figure (error curves, runtime, baseline
        differences) as a PNG there, for READMEs and slides.
    title : first-page title; default "cmbench report: <suite>".
    page_cache : a folder of drawn pages (`pagecache`): a page whose record
        is found there is copied instead of drawn, and the pages drawn now are
        kept there. Not used with ``png_dir`` (every figure is drawn then).
    workers : draw the pages in this many helper processes (`helpers`) when
        more than 1; the report is the same as drawn in this process.
    helpers : helper processes already started (`helpers.Helpers`), used
        instead of ``workers``; the caller closes them.

    Returns
    -------
    The path of the PDF.

    Raises
    ------
    cmbench.errors.UserError
        A cube cannot be read or lacks a dimension, variable or label; the
        message names the file.
    cmbench.report.helpers.HelperError
        A helper process failed; nothing was written.
    """
    cubes = list(cubes) if not isinstance(cubes, (str, os.PathLike, xr.Dataset, Cube)) else [cubes]
    out = Path(out)
    refuse_overwriting_inputs(out, [*cubes, baseline])
    loaded = load_cubes(cubes)
    base = load_cube(baseline, index=len(loaded)) if baseline is not None else None
    if title is None:
        title = default_title(loaded)
    writable_folder(out.parent, "report folder")
    png = Path(png_dir) if png_dir is not None else None
    if png is not None:
        writable_folder(png, "PNG folder")

    own = None
    if helpers is None and workers > 1 and png is None:
        from .helpers import Helpers

        helpers = own = Helpers(workers, fonts=str(page_cache) if page_cache is not None else None)
    try:
        with replaced(out, suffix=".pdf.part") as tmp, \
                _drawing_here(helpers if png is None else None, page_cache if png is None else None):
            pages = build_pages(loaded, title=title, baseline=base)
            _save(pages, tmp, png, title=title, cubes=loaded,
                  page_cache=Path(page_cache) if page_cache is not None else None,
                  helpers=helpers if png is None else None)
    finally:
        if own is not None:
            own.close()
    return out


def _drawing_here(helpers, page_cache=None) -> contextlib.AbstractContextManager:
    """The rc settings of the pages and lean font subsets (`fonts`; kept in ``page_cache``,
    if given), when this process draws them (matplotlib is then loaded); nothing when helper
    processes draw: the records need no plotting library."""
    stack = contextlib.ExitStack()
    if helpers is None:
        import matplotlib

        stack.enter_context(matplotlib.rc_context(RC))
        stack.enter_context(font_subsets(page_cache))
    return stack


def default_title(cubes: Sequence[Cube]) -> str:
    """"cmbench report: <suite>" (the suites the cubes come from)."""
    suites = sorted({str(c.attrs.get("suite", "")) for c in cubes} - {""})
    return "cmbench report" + (f": {', '.join(suites)}" if suites else "")


def refuse_overwriting_inputs(out: Path, inputs: Sequence) -> None:
    """A report never replaces the cubes it is drawn from (``report X.nc -o X.nc``).

    Raises
    ------
    UserError
        ``out`` is one of the input files (the same path, or a link to it).
    """
    if not out.exists():
        return  # an input must exist to be read
    for item in inputs:
        if isinstance(item, (str, os.PathLike)) and Path(item).exists() and os.path.samefile(item, out):
            raise UserError(f"refusing to write the report over its input {item}; choose another -o")


def build_pages(cubes: Sequence[Cube], *, title: str, baseline: Cube | None = None
                ) -> list[Page]:
    """Every page of the report, in order (see the module docstring)."""
    styles = MethodStyles(m for c in cubes for m in c.methods)
    if baseline is not None:
        for m in baseline.methods:
            styles[m]
    pairs = [(c, baseline) for c in cubes
             if baseline is not None and tables.comparable(c, baseline)]
    if baseline is not None and not pairs:
        raise UserError(f"{baseline.source}: the baseline shares no method label and "
                        f"(data set, adversary, budget) with the cubes reported")
    pages = text_pages(tables.provenance_pages(cubes, title, __version__, baseline), "provenance")
    pages += text_pages(claims.claims_pages(cubes), "claims")
    pages += text_pages(tables.suite_text_pages(cubes), "suite-file")
    for cube in cubes:
        pages += figures.error_pages(cube, styles)
        pages += text_pages(tables.ranking_pages(cube), f"{cube.experiment}-ranking")
        pages += significance.cd_pages(cube)
        pages += stress.stress_pages(cube, styles)  # only cubes with adaptive adversaries
        pages += recovery.recovery_pages(cube)
        rt = figures.runtime_page(cube, styles)
        if rt is not None:
            pages.append(rt)
        pages += text_pages(tables.cells_pages(cube), f"{cube.experiment}-cells")
        for c, b in pairs:
            if c is cube:
                pages += figures.baseline_pages(c, b, styles)
                pages += text_pages(tables.baseline_table_pages(c, b), f"{c.experiment}-baseline")
    pages += theory_pages.theory_pages(cubes)  # the paper's worked examples the suite names
    return pages


def _save(pages: Sequence[Page], pdf_path: Path, png: Path | None, *, title: str,
          cubes: Sequence[Cube], page_cache: Path | None = None, helpers=None) -> None:
    meta = {
        "Title": title,
        "Author": f"cmbench {__version__}",
        "Subject": "Robust mean estimation under coordinate-level corruption: "
                   + ", ".join(c.experiment for c in cubes),
        "Keywords": "cmbench; robust mean estimation; coordinate-level corruption",
        "Creator": "cmbench.report",
        "CreationDate": _dt.datetime.now(_dt.timezone.utc),
    }
    if (page_cache is not None or helpers is not None) and png is None:
        _save_cached(pages, pdf_path, meta, PageCache(page_cache) if page_cache is not None else None,
                     name=pdf_path.name, helpers=helpers)
        return
    from matplotlib.backends.backend_pdf import PdfPages

    used: set[str] = set()
    with PdfPages(pdf_path, metadata=meta) as pdf:
        for page in pages:
            pdf.savefig(page.fig)
            if png is not None and page.png:
                name = _slug(page.slug)
                stem, k = name, 2
                while name in used:
                    name, k = f"{stem}-{k}", k + 1
                used.add(name)
                page.fig.savefig(png / f"{name}.png", dpi=150)
            page.release()


def _save_cached(pages: Sequence[Page], pdf_path: Path, meta: dict, cache: PageCache | None, name: str,
                 helpers=None) -> None:
    """Write the PDF, drawing only the pages whose record digest the cache does not hold.

    The pages drawn now go into one new document (fonts are subset once for all
    of them), or with ``helpers`` one per helper process, which the cache keeps;
    the report is then merged from them and the documents that hold the other
    pages. A report whose pages are all in one new document is that document
    itself. ``cache`` None (with ``helpers``): every page is drawn, nothing kept.
    """
    from .outputs import code_digest

    salt = "\x1d".join([code_digest(), repr(sorted(RC.items())), version("matplotlib")])
    digests = [pagecache.record_digest(p, salt) for p in pages]
    found = [cache.find(d) if cache is not None else None for d in digests]
    todo = [i for i, loc in enumerate(found) if loc is None]
    drawn: list[tuple[list[int], bytes]] = []  # (page indices, document)
    if helpers is not None:  # also when nothing is to draw: they may be building the HTML page
        for i in sorted(todo, key=lambda i: -pages[i].cost):  # the costliest first
            helpers.draw(i, pages[i])
        drawn = helpers.finish()
    elif todo:
        from matplotlib.backends.backend_pdf import PdfPages

        buf = io.BytesIO()
        with PdfPages(buf, metadata=meta) as pdf:
            for i in todo:
                pdf.savefig(pages[i].fig)
                pages[i].release()
        drawn = [(todo, buf.getvalue())]
    docs: dict[str, bytes] = {}
    where: dict[int, tuple[str, int]] = {}
    for indices, blob in drawn:
        if cache is not None:
            doc = cache.add(blob, [digests[i] for i in indices])
        else:
            doc = f"drawn-{len(docs)}"
        docs[doc] = blob
        where.update((i, (doc, k)) for k, i in enumerate(indices))
    if helpers is None and len(todo) == len(pages):
        pdf_path.write_bytes(drawn[0][1])  # every page new, drawn here in one document: it is the report
    else:
        import pypdf

        readers: dict = {}
        writer = pypdf.PdfWriter()
        for i in range(len(pages)):
            doc, k = found[i] if found[i] is not None else where[i]
            if doc not in readers:
                readers[doc] = pypdf.PdfReader(io.BytesIO(docs[doc] if doc in docs else cache.document(doc)))
            writer.add_page(readers[doc].pages[k])
        # Documents drawn in other runs or helpers each embed their own copy of a font subset;
        # kept subsets (`fonts`) are the same bytes, written once here (6 ms; a report with a new
        # estimator went from 526 kB to 298 kB). pypdf before 4.3 lacks it: the copies stay.
        dedupe = getattr(writer, "compress_identical_objects", None)
        if dedupe is not None:
            dedupe()
        created = meta["CreationDate"].strftime("D:%Y%m%d%H%M%SZ")
        writer.add_metadata({f"/{k}": v for k, v in meta.items() if k != "CreationDate"}
                            | {"/CreationDate": created, "/Producer": f"matplotlib pdf backend, pypdf {pypdf.__version__}"})
        with open(pdf_path, "wb") as f:
            writer.write(f)
    if cache is not None:
        cache.save(name, digests)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "figure"
