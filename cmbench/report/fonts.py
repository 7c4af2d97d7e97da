"""The fonts embedded in the PDF report: TrueType (Type 42) subsets without OpenType layout
tables, kept from one report to the next.

matplotlib embeds each font a document uses as a subset made by fontTools,
once per document when it closes. With the default options fontTools keeps the
layout tables (GSUB, GPOS, GDEF, ...) and computes their closure over the
glyphs used, which is most of the cost of writing a document. A PDF never reads
those tables: it places glyphs by index, with the positions matplotlib
computed. `font_subsets` has fontTools drop them while a report is written;
the glyph outlines, metrics, character map and hinting stay, and the fonts
stay Type 42 (text that can be searched and copied, as journals require).

Even lean, a subset costs 25-45 ms, most of it reading the whole font file
again, and matplotlib 3.11 makes up to six per document (a regular, bold and
oblique face, each with a second subset for its ligature glyphs): 0.15-0.25 s
for each document a report helper writes, every run. Given a folder,
`font_subsets` keeps the subsets there (`SubsetCache`) and a later document
reads them back. So that a document holding other pages than last time still
finds its subset, a subset that holds any glyph of `COMMON_TEXT` holds all of
them: the glyph sets of the report's documents are then the same from run to
run, at the price of more glyphs per font (about 106: a font program of 22-26 kB,
15 kB compressed, where a one-line page's 20 glyphs take 6 kB). The merged report
writes identical font programs once (`cmbench.report.pdf`), so it got smaller.
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import struct
from pathlib import Path
from typing import Iterator, Optional

from ..files import PAGE_FILE, atomic_write

#: OpenType tables that only text shaping reads; a PDF's text is already shaped
LAYOUT_TABLES = ("GSUB", "GPOS", "GDEF", "BASE", "JSTF", "MATH")
#: the characters every kept subset of a font holds once it holds one of them: printable ASCII
#: and the other characters the report prints (the minus sign of tick labels, rho, ell, dashes)
COMMON_TEXT = "".join(map(chr, range(32, 127))) + "\u2212\u2013\u2014\u2026\u00d7\u00b7\u00b1\u2264\u2265\u03c1\u2113"
#: kept subsets at most per folder; past it the least recently used go (a suite's report uses 6)
KEEP = 48
#: a kept subset's file: this suffix, after the SHA-256 of what it was made from
SUFFIX = ".font"
_MAGIC = b"CMBF"


@contextlib.contextmanager
def font_subsets(cache: Optional[Path] = None) -> Iterator[None]:
    """While in this context, font subsets (fontTools) leave out `LAYOUT_TABLES`, and with a
    ``cache`` folder, matplotlib's PDF backend takes its subsets from there (`SubsetCache`)."""
    with _lean(), (_cached(Path(cache)) if cache is not None else contextlib.nullcontext()):
        yield


@contextlib.contextmanager
def _lean() -> Iterator[None]:
    from fontTools import subset

    try:
        drop, features = subset.Options._drop_tables_default, subset.Options._layout_features_default
    except AttributeError:  # another fontTools: its default subsets, bigger but as correct
        yield
        return
    subset.Options._drop_tables_default = drop + [t for t in LAYOUT_TABLES if t not in drop]
    subset.Options._layout_features_default = []
    try:
        yield
    finally:
        subset.Options._drop_tables_default, subset.Options._layout_features_default = drop, features


@contextlib.contextmanager
def _cached(folder: Path) -> Iterator[None]:
    from matplotlib.backends import _backend_pdf_ps as pdfps

    original = getattr(pdfps, "get_glyphs_subset", None)
    # the interface of matplotlib 3.11 (glyph indices in, a font and an index map out); with
    # another, matplotlib makes its own subsets, as correct and as slow as before
    if (original is None or not hasattr(pdfps, "SubsetResults") or not hasattr(pdfps, "font_as_file")
            or list(inspect.signature(original).parameters) != ["fontfile", "glyphs"]):
        yield
        return
    cache = SubsetCache(folder, original)
    pdfps.get_glyphs_subset = cache.subset
    try:
        yield
    finally:
        pdfps.get_glyphs_subset = original


class SubsetCache:
    """Font subsets kept in a folder, by the SHA-256 of what they are made from.

    The key covers the font file (path, face, size, modification time), the
    glyph indices, and the versions and options of fontTools and matplotlib. A
    file is checked against the SHA-256 it stores; a damaged one is made anew.

    Parameters
    ----------
    folder : where subsets are kept (made when the first is written).
    make : matplotlib's ``get_glyphs_subset(fontfile, glyphs)``, called on a miss.
    """

    def __init__(self, folder: Path, make) -> None:
        self.folder = Path(folder)
        self.make = make
        self._common: dict = {}

    def subset(self, fontfile, glyphs):
        """What ``make`` returns for ``glyphs`` (completed by `COMMON_TEXT`'s glyphs, see the module)."""
        from matplotlib.backends import _backend_pdf_ps as pdfps

        wanted = {int(g) for g in glyphs}
        common = self._common_glyphs(fontfile)
        if wanted & common:
            wanted |= common
        key = self._key(fontfile, wanted)
        path = self.folder / f"{key}{SUFFIX}"
        kept = _read(path)
        if kept is None:
            with self.make(fontfile, wanted) as made:
                data = pdfps.font_as_file(made.font).getvalue()
                index = {int(k): int(v) for k, v in made.glyph_index_map.items()}
            self._write(path, data, index)
        else:
            data, index = kept
            with contextlib.suppress(OSError):
                os.utime(path)  # recently used: kept when older ones go
        return pdfps.SubsetResults(_SavedFont(data), index)._as_cm()

    def _common_glyphs(self, fontfile) -> frozenset:
        if fontfile not in self._common:
            from matplotlib.font_manager import get_font

            font = get_font(fontfile)
            self._common[fontfile] = frozenset(g for g in (font.get_char_index(ord(c)) for c in COMMON_TEXT) if g)
        return self._common[fontfile]

    @staticmethod
    def _key(fontfile, glyphs: set) -> str:
        import fontTools
        import matplotlib
        from fontTools import subset

        st = os.stat(os.fspath(fontfile))
        what = [os.fspath(fontfile), getattr(fontfile, "face_index", 0), st.st_size, st.st_mtime_ns,
                sorted(glyphs), fontTools.version, matplotlib.__version__,
                sorted(getattr(subset.Options, "_drop_tables_default", [])),
                sorted(getattr(subset.Options, "_layout_features_default", []))]
        return hashlib.sha256(json.dumps(what).encode()).hexdigest()

    def _write(self, path: Path, data: bytes, index: dict) -> None:
        head = json.dumps({"sha256": hashlib.sha256(data).hexdigest(),
                           "index": sorted(index.items())}).encode()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(path, _MAGIC + struct.pack("<I", len(head)) + head + data)
            # only the names this cache gives its files (`cmbench.files.PAGE_FILE`), oldest first
            kept = sorted((p for p in self.folder.glob(f"*{SUFFIX}") if PAGE_FILE.match(p.name)),
                          key=lambda p: p.stat().st_mtime_ns)
            for old in kept[:-KEEP]:
                old.unlink(missing_ok=True)
        except OSError:  # a folder that cannot be written: the subset is made each time, as without it
            pass


def _read(path: Path) -> Optional[tuple[bytes, dict]]:
    """A kept subset's font bytes and glyph index map; None when absent or damaged."""
    try:
        blob = path.read_bytes()
        if blob[:4] != _MAGIC:
            return None
        (size,) = struct.unpack("<I", blob[4:8])
        head = json.loads(blob[8:8 + size])
        data = blob[8 + size:]
        if hashlib.sha256(data).hexdigest() != head["sha256"]:
            return None
        return data, {int(k): int(v) for k, v in head["index"]}
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None


class _SavedFont:
    """A kept subset where matplotlib expects a fontTools ``TTFont``: it is only saved to a file."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def save(self, file, reorderTables: bool = True) -> None:
        file.write(self.data)

    def close(self) -> None:
        pass

    def __enter__(self) -> "_SavedFont":
        return self

    def __exit__(self, *exc) -> None:
        pass
