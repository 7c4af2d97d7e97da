"""Outputs that need no rewriting: a cube or report whose content is already on disk.

A rerun that computes nothing assembles the same cubes; writing them and
redrawing the report again would cost most of its time. Each output is
stamped (in the cache folder) with a digest of what it was made from and the
SHA-256 of the file written; an output is rewritten unless both still match,
so a deleted, edited or replaced file is always written anew.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from ..version import __version__

#: the stamps of written cubes (`cmbench.stamps.Stamps`), in the cache folder
STAMPS = "outputs.json"
_VOLATILE = ("created", "host")  # attributes that say when and where, not what


def content_digest(ds) -> str:
    """A digest of a cube's variables, coordinates and attributes, except its creation time and host."""
    h = hashlib.sha256(__version__.encode())
    for name in sorted(map(str, ds.variables)):
        var = ds.variables[name]
        a = np.asarray(var.values)
        h.update(f"\x1e{name}{var.dims}{a.shape}{a.dtype.kind}".encode())
        if a.dtype.kind in "OUS":
            h.update("\x1f".join(map(str, a.ravel())).encode())
        else:
            h.update(np.ascontiguousarray(a).tobytes())
    attrs = {k: v for k, v in ds.attrs.items() if k not in _VOLATILE}
    h.update(json.dumps(attrs, sort_keys=True, default=str).encode())
    return h.hexdigest()


def digest_of(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def remove(cache: Path) -> bool:
    """Forget every stamp (the outputs are then rewritten by the next run)."""
    path = Path(cache) / STAMPS
    if path.is_file():
        os.unlink(path)
        return True
    return False
