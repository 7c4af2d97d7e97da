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
from typing import Optional

import numpy as np

from ..version import __version__

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


def code_digest(package_dir: Path) -> str:
    """Size and modification time of a package's modules: an edited report module redraws."""
    h = hashlib.sha256()
    for path in sorted(Path(package_dir).glob("*.py")):
        st = path.stat()
        h.update(f"{path.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _sha256(path: Path) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


class Stamps:
    """What each output file was made from, kept in ``<cache>/outputs.json``."""

    def __init__(self, cache: Path) -> None:
        self.path = Path(cache) / STAMPS
        try:
            doc = json.loads(self.path.read_text())
            self.table = doc if isinstance(doc, dict) else {}
        except (OSError, ValueError):
            self.table = {}
        self.changed = False

    def current(self, output: Path, digest: str) -> Optional[dict]:
        """The stamp of ``output`` if the file is intact and was made from ``digest``, else None."""
        stamp = self.table.get(str(Path(output).resolve()))
        if not isinstance(stamp, dict) or stamp.get("digest") != digest:
            return None
        if stamp.get("sha256") != _sha256(Path(output)):
            return None
        return stamp

    def record(self, output: Path, digest: str, **extra) -> None:
        self.table[str(Path(output).resolve())] = {"digest": digest, "sha256": _sha256(Path(output)), **extra}
        self.changed = True

    def save(self) -> None:
        if self.changed:
            from .store import atomic_write_bytes

            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.path, json.dumps(self.table, sort_keys=True).encode())
            self.changed = False


def digest_of(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def remove(cache: Path) -> bool:
    """Forget every stamp (the outputs are then rewritten by the next run)."""
    path = Path(cache) / STAMPS
    if path.is_file():
        os.unlink(path)
        return True
    return False
