"""A page's record and its matplotlib drawing, one module per kind of figure page.

Each module holds record types (dataclasses: the numbers, labels and colours a
page shows) and the function that draws a record into a figure; `content` builds
the records from the cubes. These modules import numpy, `layout` and `style`
alone, and matplotlib inside the drawing: never xarray, pandas or scipy. A
process that draws pages (a pool worker, `render.drawing`) imports a record's
module when it unpickles the record, so it imports what drawing needs and
nothing of the data stack (about 1 CPU-s of imports per drawing process).
"""
