"""Stamps of written outputs: what each file was made from, and the SHA-256 of what was written.

A rerun that computes nothing assembles the same cubes; writing them and
redrawing the report again would cost most of its time. So the runner stamps
its cubes (with `content_digest`) and the report package its drawn reports,
and a rerun which would write the same content leaves the file alone. A file is
current only while both its source digest and its content digest match, so a
deleted, edited or replaced file is always written anew.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

import numpy as np

from .files import atomic_write, sha256_of
from .version import __version__

#: the stamps of written cubes, in the suite's cache folder
CUBE_STAMPS = "outputs.json"
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


class Stamps:
    """A table of stamps kept in one JSON file (an unreadable file counts as empty).

    Parameters
    ----------
    path : the JSON file holding the table.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
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
        return stamp if stamp.get("sha256") == sha256_of(Path(output)) else None

    def record(self, output: Path, digest: str, **extra) -> None:
        """Stamp ``output`` (as it is on disk now) as made from ``digest``; ``extra`` is kept with it."""
        self.table[str(Path(output).resolve())] = {"digest": digest, "sha256": sha256_of(Path(output)), **extra}
        self.changed = True

    def save(self) -> None:
        """Write the table if a stamp changed."""
        if self.changed:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps(self.table, sort_keys=True).encode())
            self.changed = False
