"""Drawn report pages, kept by the digest of their data record (``<suite>/.cache/pages``).

A page's record (`layout.Page`) holds everything its drawing depends on; a
page whose record digest is found here is copied from the PDF document it was
drawn into, and only the other pages are drawn. The HTML report's inline SVG
figures are kept the same way (`PageCache.svg`), so that a figure whose record
did not change is neither computed nor drawn again. Files: ``<sha256>.pdf``
(documents of drawn pages), ``<sha256>.svg`` (figures), ``index.json`` (record
digest -> document and page, or SVG file), ``reports.json`` (the stamps of
`suite_step`). Every file is checked against its SHA-256 before it is used; a
damaged one is ignored and its pages drawn again.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Optional, Sequence

from ...files import PAGE_FILE, TEMP_FILE, atomic_write, remove_matching

#: the names this cache gives its files; `clear` deletes nothing else
INDEX = "index.json"


def clear(folder: Path) -> int:
    """Delete the files this cache wrote in ``folder``; return how many."""
    return remove_matching(folder, PAGE_FILE, TEMP_FILE)


# -- digests of page records ----------------------------------------------------------------
def _feed(h, obj) -> None:
    """Feed a canonical encoding of a record (dataclasses, containers, arrays, scalars) to ``h``."""
    import dataclasses

    import numpy as np

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(f"<{type(obj).__module__}.{type(obj).__qualname__}".encode())
        for f in dataclasses.fields(obj):
            h.update(f"\x1f{f.name}=".encode())
            _feed(h, getattr(obj, f.name))
        h.update(b">")
    elif isinstance(obj, dict):
        h.update(b"{")
        for k, v in obj.items():  # in order: the order of a legend or of panels is drawn
            _feed(h, k)
            h.update(b":")
            _feed(h, v)
        h.update(b"}")
    elif isinstance(obj, (list, tuple)):
        h.update(b"[" if isinstance(obj, list) else b"(")
        for v in obj:
            _feed(h, v)
            h.update(b",")
        h.update(b"]")
    elif isinstance(obj, np.ndarray):
        a = np.ascontiguousarray(obj)
        if a.dtype.kind in "OUS":
            h.update(f"a{a.dtype.kind}{a.shape}".encode() + "\x1e".join(map(str, a.ravel())).encode())
        else:
            h.update(f"a{a.dtype.str}{a.shape}".encode() + a.tobytes())
    elif isinstance(obj, (bool, int, float, str, type(None), np.generic)):
        h.update(f"{type(obj).__name__}:{obj!r}".encode())
    else:
        raise TypeError(f"a page record holds a {type(obj).__name__}, which has no digest")


def code_digest() -> str:
    """Size and modification time of the report package's modules and cmbench's version:
    an edited report module redraws its pages and reports."""
    from ...version import __version__

    h = hashlib.sha256(__version__.encode())
    for path in sorted(Path(__file__).resolve().parent.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def salt() -> str:
    """What a drawn page depends on besides its record: the report code, the rc settings and
    matplotlib's version."""
    from importlib.metadata import version

    from ..style import RC

    return "\x1d".join([code_digest(), repr(sorted(RC.items())), version("matplotlib")])


def record_digest(page, salt: str = "") -> Optional[str]:
    """The digest of a page's record and drawing function (None: the page has no record).

    ``salt`` names what else the drawing depends on (the report code, rc settings).
    """
    if page.record is None:
        return None
    h = hashlib.sha256(salt.encode())
    h.update(f"{page.draw.__module__}.{page.draw.__qualname__}\x1d".encode())
    _feed(h, page.record)
    return h.hexdigest()


# -- the cache ---------------------------------------------------------------------------
class PageCache:
    """Drawn pages of one suite's reports, in the PDF documents they were drawn in.

    ``index.json``: ``pages`` (record digest -> [document, page number]),
    ``svgs`` (record digest -> SVG file) and ``reports`` (report name -> the
    record digests of its pages or figures, in order). Files that no report
    uses any more, and damaged ones, are deleted after each report.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        try:
            doc = json.loads((self.folder / INDEX).read_text())
            ok = isinstance(doc, dict) and isinstance(doc.get("pages"), dict) and isinstance(doc.get("reports"), dict)
        except (OSError, ValueError):
            ok = False
        self.pages: dict = {d: loc for d, loc in doc["pages"].items()  # a malformed entry is dropped
                            if isinstance(loc, list) and len(loc) == 2 and isinstance(loc[0], str)
                            and isinstance(loc[1], int)} if ok else {}
        self.reports: dict = {k: v for k, v in doc["reports"].items() if isinstance(v, list)} if ok else {}
        svgs = doc.get("svgs") if ok else None
        self.svgs: dict = {d: n for d, n in svgs.items() if isinstance(n, str)} if isinstance(svgs, dict) else {}
        self._docs: dict = {}  # file name -> bytes, or None when absent or damaged
        self._added: set = set()  # files written since this cache was opened: kept by `save`
        self.damaged = 0

    @classmethod
    def of(cls, cache: "str | os.PathLike | PageCache | None") -> "Optional[PageCache]":
        """``cache`` opened (a folder), as it is (an open cache), or None."""
        return cache if cache is None or isinstance(cache, PageCache) else cls(Path(cache))

    def document(self, name: str, suffix: str = ".pdf") -> Optional[bytes]:
        """A stored file whose SHA-256 is its name; None when absent or damaged."""
        if name not in self._docs:
            blob = None
            if re.fullmatch(r"[0-9a-f]{64}", str(name)):
                try:
                    blob = (self.folder / f"{name}{suffix}").read_bytes()
                except OSError:
                    blob = None
                if blob is not None and hashlib.sha256(blob).hexdigest() != name:
                    self.damaged += 1
                    blob = None
            self._docs[name] = blob
        return self._docs[name]

    def find(self, digest: Optional[str]) -> Optional[tuple[str, int]]:
        """Where the page drawn from ``digest`` is kept (document, page number), if it is intact."""
        loc = self.pages.get(digest) if digest else None  # entries are checked when read and added
        return (loc[0], loc[1]) if loc is not None and self.document(loc[0]) is not None else None

    def add(self, blob: bytes, digests: Sequence[Optional[str]]) -> str:
        """Keep a document whose pages were drawn from ``digests``; return its name."""
        name = hashlib.sha256(blob).hexdigest()
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.folder / f"{name}.pdf", blob)
        self._docs[name] = blob
        self._added.add(name)
        for i, d in enumerate(digests):
            if d is not None:
                self.pages[d] = [name, i]
        return name

    def svg(self, digest: Optional[str]) -> Optional[str]:
        """The SVG figure kept for the record digest ``digest``, if it is intact."""
        name = self.svgs.get(digest) if digest else None
        blob = self.document(name, ".svg") if name is not None else None
        return blob.decode("utf-8") if blob is not None else None

    def add_svg(self, digest: str, text: str) -> None:
        """Keep the SVG figure drawn from the record digest ``digest``."""
        blob = text.encode("utf-8")
        name = hashlib.sha256(blob).hexdigest()
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.folder / f"{name}.svg", blob)
        self._docs[name] = blob
        self._added.add(name)
        self.svgs[digest] = name

    def save(self, report: str, digests: Sequence[Optional[str]]) -> None:
        """Record the pages or figures of ``report``; delete the files no report uses (but those
        written since this cache was opened: the PDF's drawing keeps the HTML's figures)."""
        self.reports[report] = [d for d in digests if d]
        used = {d for ds in self.reports.values() for d in ds}

        def keep(d: str, name: str) -> bool:
            return name in self._added or (d in used and not (name in self._docs and self._docs[name] is None))

        self.pages = {d: loc for d, loc in self.pages.items() if keep(d, loc[0])}
        self.svgs = {d: name for d, name in self.svgs.items() if keep(d, name)}
        files = {loc[0] for loc in self.pages.values()} | set(self.svgs.values())
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.folder / INDEX, json.dumps({"pages": self.pages, "svgs": self.svgs,
                                                      "reports": self.reports}, sort_keys=True).encode())
        for entry in os.scandir(self.folder):
            if entry.name[-4:] in (".pdf", ".svg") and PAGE_FILE.match(entry.name) and entry.name[:-4] not in files:
                os.unlink(entry.path)
