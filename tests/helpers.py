"""Hand-made results cubes and the reading of PDFs, for the report tests.

`make_cube` builds a cube as the runner writes one, with a known order of
methods; `set_cells` marks cells failed or undefined; `pdf_pages_text`,
`pdf_info` and `squash` read a written PDF back.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

SMOKE_METHODS = {"Empirical Mean": ["none", "mean"], "C-Median": ["none", "coord-median"],
                 "Two-Step-E": ["exact", "mean"]}


# cmbench.theory.thresholds(A) for m_A = 5, n = 16, with its labels
THRESHOLDS = {
    "m_a/2n": {"value": 5 / 32, "label": "m_A/2n (missing, Cor. 2)"},
    "m_a/4n": {"value": 5 / 64, "label": "m_A/4n (replace, Cor. 2)"},
    "rho_learn": {"value": 4 / 28,
                  "label": "(m_A-1)/(n+(m_A-1)(m_A-2)) (A2 learnable, Lemma 3)"},
    "rho_unlearnable": {"value": 4 / 16, "label": "(m_A-1)/n (A2 unrecoverable, Lemma 3)"},
    "1/n": {"value": 1 / 16, "label": "1/n (A3 unknown A, Lemma 2)"},
}


def make_cube(*, datasets=("gaussian", "uniform"), instances=3, adversaries=("min-rho",),
              budgets=(0.0, 0.1, 0.2, 0.3), methods=SMOKE_METHODS, metrics=("mahalanobis", "l2"),
              real=(), seed=0, experiment="synthetic", attrs=True) -> xr.Dataset:
    """A cube as the runner writes it; method k's error grows like (k + 1) * budget,
    so the methods' order is known. Data sets in ``real`` have no structure and
    no Mahalanobis error."""
    rng = np.random.default_rng(seed)
    recs = sorted({p[0] for p in methods.values()})
    ests = sorted({p[1] for p in methods.values()})
    coords = {"dataset": list(datasets), "instance": np.arange(instances),
              "adversary": list(adversaries), "budget": np.asarray(budgets, float),
              "recoverer": recs, "estimator": ests}
    dims = tuple(coords)
    shape = tuple(len(v) for v in coords.values())
    b = np.asarray(budgets, float)[None, None, None, :, None, None]
    scale = np.zeros(shape[4:])
    for k, (r, e) in enumerate(methods.values()):
        scale[recs.index(r), ests.index(e)] = k + 1
    l2 = scale * (0.05 + b) * (1 + 0.1 * rng.standard_normal(shape))
    maha = 1.7 * l2
    for d in real:
        maha[list(datasets).index(d)] = np.nan
    status = np.full(shape, "ok", dtype=object)
    ds = xr.Dataset(
        {"l2": (dims, l2), "mahalanobis": (dims, maha),
         "seconds": (dims, 0.01 * (1 + scale) * np.ones(shape)),
         "status": (dims, status), "error": (dims, np.full(shape, "", dtype=object)),
         "recovered_fraction": (dims[:5], np.ones(shape[:5])),
         "discarded_fraction": (dims[:5], np.zeros(shape[:5]))},
        coords=coords)
    if attrs:
        ds.attrs.update({
            "suite": "smoke", "suite_file": "suites/smoke.toml", "suite_hash": "ab" * 32,
            "experiment": experiment, "description": "hand-made cube", "seed": 7,
            "cmbench_version": "0.1.0", "created": "2024-01-02T03:04:05+00:00",
            "host": "testhost",
            "plugins": json.dumps([{"plugin": "cmbench.builtins.estimators", "version": "0.1.0"}]),
            "metrics": json.dumps(list(metrics)), "methods": json.dumps(methods),
            "datasets_info": json.dumps({d: {
                "name": "real-data" if d in real else "synthetic-linear",
                "shape": [200, 16], "rank": 8, "structure_known": d not in real,
                "m_a": None if d in real else 5,
                "thresholds": {} if d in real else THRESHOLDS}
                for d in datasets}),
            "adversaries_info": json.dumps({a: {"name": "min-value", "level": "value",
                                                "mode": "missing"} for a in adversaries}),
        })
    return ds


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
