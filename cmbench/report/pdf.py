"""The PDF report: every page of a list of cubes, in order (see the package docstring)."""
from __future__ import annotations

import datetime as _dt
import os
import re
import tempfile
from pathlib import Path
from typing import Sequence

import matplotlib
import xarray as xr
from matplotlib.backends.backend_pdf import PdfPages

from .. import __version__
from ..errors import UserError
from ..output import follow_umask, writable_folder
from . import claims, figures, recovery, significance, stress, tables, theory_pages
from .figures import Page
from .load import Cube, load_cube, load_cubes
from .style import RC, MethodStyles

__all__ = ["write_report", "build_pages"]


def write_report(cubes: Sequence[str | os.PathLike | xr.Dataset], out: str | os.PathLike, *,
                 baseline: str | os.PathLike | xr.Dataset | None = None,
                 png_dir: str | os.PathLike | None = None, title: str | None = None) -> Path:
    """Write a PDF report of results cubes.

    Parameters
    ----------
    cubes : netCDF paths or ``xarray.Dataset`` objects, one per experiment.
    out : the PDF to write (parent folders are made); written to a temporary
        file first and moved into place, so a failed report leaves no half file.
    baseline : a cube to compare against; each cube sharing method labels and
        coordinates with it gets difference pages.
    png_dir : also write each figure (error curves, runtime, baseline
        differences) as a PNG there, for READMEs and slides.
    title : first-page title; default "cmbench report: <suite>".

    Returns
    -------
    The path of the PDF.

    Raises
    ------
    cmbench.errors.UserError
        A cube cannot be read or lacks a dimension, variable or label; the
        message names the file.
    """
    cubes = list(cubes) if not isinstance(cubes, (str, os.PathLike, xr.Dataset)) else [cubes]
    out = Path(out)
    refuse_overwriting_inputs(out, [*cubes, baseline])
    loaded = load_cubes(cubes)
    base = load_cube(baseline, index=len(loaded)) if baseline is not None else None
    if title is None:
        suites = sorted({str(c.attrs.get("suite", "")) for c in loaded} - {""})
        title = "cmbench report" + (f": {', '.join(suites)}" if suites else "")
    writable_folder(out.parent, "report folder")
    png = Path(png_dir) if png_dir is not None else None
    if png is not None:
        writable_folder(png, "PNG folder")

    fd, tmp = tempfile.mkstemp(suffix=".pdf.part", dir=out.parent)
    os.close(fd)
    try:
        with matplotlib.rc_context(RC):
            pages = build_pages(loaded, title=title, baseline=base)
            _save(pages, Path(tmp), png, title=title, cubes=loaded)
        follow_umask(tmp)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


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
    pages = [Page(f, "provenance", png=False)
             for f in tables.provenance_pages(cubes, title, __version__, baseline)]
    pages += [Page(f, "claims", png=False) for f in claims.claims_pages(cubes)]
    pages += [Page(f, "suite-file", png=False) for f in tables.suite_text_pages(cubes)]
    for cube in cubes:
        pages += figures.error_pages(cube, styles)
        pages += [Page(f, f"{cube.experiment}-ranking", png=False)
                  for f in tables.ranking_pages(cube)]
        pages += significance.cd_pages(cube)
        pages += stress.stress_pages(cube, styles)  # only cubes with adaptive adversaries
        pages += recovery.recovery_pages(cube)
        rt = figures.runtime_page(cube, styles)
        if rt is not None:
            pages.append(rt)
        pages += [Page(f, f"{cube.experiment}-cells", png=False) for f in tables.cells_pages(cube)]
        for c, b in pairs:
            if c is cube:
                pages += figures.baseline_pages(c, b, styles)
                pages += [Page(f, f"{c.experiment}-baseline", png=False)
                          for f in tables.baseline_table_pages(c, b)]
    pages += theory_pages.theory_pages(cubes)  # the paper's worked examples the suite names
    return pages


def _save(pages: Sequence[Page], pdf_path: Path, png: Path | None, *, title: str,
          cubes: Sequence[Cube]) -> None:
    meta = {
        "Title": title,
        "Author": f"cmbench {__version__}",
        "Subject": "Robust mean estimation under coordinate-level corruption: "
                   + ", ".join(c.experiment for c in cubes),
        "Keywords": "cmbench; robust mean estimation; coordinate-level corruption",
        "Creator": "cmbench.report",
        "CreationDate": _dt.datetime.now(_dt.timezone.utc),
    }
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
            page.fig.clear()  # free the artists now rather than at the end


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "figure"
