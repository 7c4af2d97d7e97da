"""Hand-made results cubes and the reading of PDFs, for the report tests.

`make_cube` builds a cube as the runner writes one, with a known order of
methods; `set_cells` marks cells failed or undefined; `pdf_pages_text`,
`pdf_info` and `squash` read a written PDF back.
"""
from __future__ import annotations

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
def pdf_pages_text(path: Path) -> list[str]:
    """The text layer, page by page (pypdf, else poppler's pdftotext)."""
    try:
        import pypdf
    except ImportError:
        pypdf = None
    if pypdf is not None:
        return [p.extract_text() or "" for p in pypdf.PdfReader(str(path)).pages]
    if shutil.which("pdftotext"):
        out = subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True,
                             capture_output=True, text=True).stdout
        return out.split("\f")[:-1] if out.endswith("\f") else out.split("\f")
    pytest.skip("neither pypdf nor pdftotext is installed to read the PDF's text layer")


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
