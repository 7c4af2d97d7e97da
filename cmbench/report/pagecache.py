"""Drawn report pages, kept by the digest of their data record (``<suite>/.cache/pages``).

A page's record (module `pages`) holds everything its drawing depends on; a
page whose record digest is found here is copied from the PDF document it was
drawn into, and only the other pages are drawn. Files: ``<sha256>.pdf``
(documents of drawn pages), ``index.json`` (record digest -> document and page),
``reports.json`` (the stamps of `outputs`). Every document is checked against
its SHA-256 before a page is taken from it; a damaged one is ignored and its
pages drawn again.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

#: the names this cache gives its files; `clear` deletes nothing else
NAME = re.compile(r"^([0-9a-f]{64}\.pdf|index\.json|reports\.json)$")
TEMP = re.compile(r"^\..+\.tmp$")


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary name in the same folder, then rename over ``path`` (a kill leaves no half file)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def clear(folder: Path) -> int:
    """Delete the files this cache wrote in ``folder``; return how many."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if (NAME.match(entry.name) or TEMP.match(entry.name)) and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
            removed += 1
    return removed
