"""The fonts embedded in the PDF report: TrueType (Type 42) subsets without OpenType layout tables.

matplotlib embeds each font a document uses as a subset made by fontTools,
once per document when it closes. With the default options fontTools keeps the
layout tables (GSUB, GPOS, GDEF, ...) and computes their closure over the
glyphs used, which is most of the cost of writing a document. A PDF never reads
those tables: it places glyphs by index, with the positions matplotlib
computed. `lean_subsets` has fontTools drop them while a report is written;
the glyph outlines, metrics, character map and hinting stay, and the fonts
stay Type 42 (text that can be searched and copied, as journals require).
"""
from __future__ import annotations

import contextlib
from typing import Iterator

#: OpenType tables that only text shaping reads; a PDF's text is already shaped
LAYOUT_TABLES = ("GSUB", "GPOS", "GDEF", "BASE", "JSTF", "MATH")


@contextlib.contextmanager
def lean_subsets() -> Iterator[None]:
    """While in this context, font subsets (fontTools) leave out `LAYOUT_TABLES`."""
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
