"""Hand-made results cubes and the reading of PDFs, for the report tests.

`make_cube` builds a cube as the runner writes one, with a known order of
methods; `set_cells` marks cells failed or undefined; `pdf_pages_text`,
`pdf_info` and `squash` read a written PDF back; `drawn_page_texts` draws a
few pages of a report and reads them back.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cmbench.report.example import EXAMPLE_METHODS as SMOKE_METHODS, THRESHOLDS, example_cube as make_cube  # noqa: F401


def set_cells(ds, status, message, **where):
    """Mark the cells at ``where`` (labels) with ``status`` and NaN metrics."""
    idx = {k: ds.indexes[k].get_indexer(np.atleast_1d(v)) for k, v in where.items()}
    for k in idx:
        assert (idx[k] >= 0).all(), k
    sel = tuple(idx.get(d, slice(None)) for d in ds["status"].dims)
    sel = np.ix_(*[np.atleast_1d(s) if not isinstance(s, slice)
                   else np.arange(ds.sizes[d]) for s, d in zip(sel, ds["status"].dims)])
    for var in ("l2", "mahalanobis", "seconds"):
        ds[var].values[sel] = np.nan
    ds["status"].values[sel] = status
    ds["error"].values[sel] = message
    return ds


# -- reading the PDF -----------------------------------------------------------------
# A page's text by the digest of everything its extraction reads (`_page_digest`): the report
# tests compare reports whose pages mostly come from one page cache, byte for byte the same, and
# pypdf's extraction (about 0.05 s a page) of the same page again cost them seconds.
_PAGE_TEXTS: dict[str, str] = {}


def pdf_pages_text(path: Path) -> list[str]:
    """The text layer, page by page (pypdf, else poppler's pdftotext).

    A page whose content, resources (fonts and their encodings included) and geometry are byte
    for byte those of a page read before gets that page's text without a second extraction:
    the same input to the same extraction, so the same text.
    """
    try:
        import pypdf
    except ImportError:
        pypdf = None
    if pypdf is not None:
        texts = []
        for page in pypdf.PdfReader(str(path)).pages:
            key = _page_digest(page)
            if key not in _PAGE_TEXTS:
                _PAGE_TEXTS[key] = page.extract_text() or ""
            texts.append(_PAGE_TEXTS[key])
        return texts
    if shutil.which("pdftotext"):
        out = subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True,
                             capture_output=True, text=True).stdout
        return out.split("\f")[:-1] if out.endswith("\f") else out.split("\f")
    pytest.skip("neither pypdf nor pdftotext is installed to read the PDF's text layer")


def _page_digest(page) -> str:
    """SHA-256 of a pypdf page as its text extraction sees it: every object it reaches (content
    streams decoded, fonts, their ToUnicode maps and widths, form XObjects), but not its parent."""
    from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, StreamObject

    digest = hashlib.sha256()
    seen: set = set()

    def feed(obj) -> None:
        if isinstance(obj, IndirectObject):
            ref = (obj.idnum, obj.generation)
            if ref in seen:  # a shared or circular reference: its content is already in
                digest.update(b"R%d " % obj.idnum)
                return
            seen.add(ref)
            obj = obj.get_object()
        if isinstance(obj, StreamObject):
            data = obj.get_data()
            digest.update(b"S%d:" % len(data) + data)
        if isinstance(obj, DictionaryObject):
            digest.update(b"{")
            for key in sorted(obj):
                if key in ("/Parent", "/Length", "/Filter", "/DecodeParms"):  # not the page's text
                    continue
                digest.update(key.encode() + b"=")
                feed(obj[key])
            digest.update(b"}")
        elif isinstance(obj, ArrayObject):
            digest.update(b"[")
            for item in obj:
                feed(item)
            digest.update(b"]")
        elif not isinstance(obj, StreamObject):
            digest.update(repr(obj).encode() + b" ")

    feed(page)
    return digest.hexdigest()


def drawn_page_texts(cubes, wanted, folder: Path) -> dict[str, str]:
    """The text of the report pages whose slug ``wanted(slug)`` accepts, by slug, in report order.

    The pages are built by the report's model (`cmbench.report.build_pages`) and drawn as the PDF
    draws them (`drawing.draw_document`: the report's rc settings) into one document in
    ``folder``: for a test of what a page says, without drawing the rest of the report (each
    PDF document costs its font embedding; the pages a test does not read cost their drawing).
    """
    from cmbench.report import build_pages
    from cmbench.report.load import load_cubes
    from cmbench.report.render.drawing import draw_document

    pages = [p for p in build_pages(load_cubes(cubes), title="t") if wanted(p.slug)]
    assert pages, "no page of the report is wanted"
    blob, _ = draw_document([(p.record, p.draw) for p in pages], {})
    path = folder / f"pages-{hashlib.sha256(blob).hexdigest()[:12]}.pdf"
    path.write_bytes(blob)
    return dict(zip([p.slug for p in pages], pdf_pages_text(path), strict=True))


def pdf_info(path: Path) -> dict[str, str]:
    """The PDF's metadata (pypdf, else poppler's pdfinfo)."""
    try:
        import pypdf
    except ImportError:
        pypdf = None
    if pypdf is not None:
        meta = pypdf.PdfReader(str(path)).metadata
        return {k.lstrip("/"): str(v) for k, v in meta.items()}
    if shutil.which("pdfinfo"):
        out = subprocess.run(["pdfinfo", str(path)], check=True, capture_output=True,
                             text=True).stdout
        return {k.strip(): v.strip() for k, _, v in
                (line.partition(":") for line in out.splitlines())}
    pytest.skip("neither pypdf nor pdfinfo is installed to read the PDF's metadata")


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)
