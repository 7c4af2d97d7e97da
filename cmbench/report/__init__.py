"""Reports built from results cubes alone (nothing is rerun): a PDF and an interactive HTML page.

Three layers, each importing only the ones above it:

* the cubes and the page layout: `load` (reading and checking cubes), `layout`
  (the `Page` type, page geometry, text flow, the text pages' drawing), `style`
  (one look per method);
* ``plots/``: the figure pages' record types and their matplotlib drawings
  (`plots.curves`, `plots.runtime`, `plots.cd`, `plots.stress`, `plots.theory`),
  importing no xarray, pandas or scipy, so that a process that only draws
  pages imports none of them;
* ``content/``: what a report shows, as data. One module per kind of page
  builds its records from the cubes (`figures`: curves, runtime, baseline;
  `tables`: provenance, ranking, cells; `claims_page`, `significance`,
  `recovery`, `stress`, `parameter`: error against a component parameter,
  `theory_pages`), plus the terminal `summary` and the LaTeX/CSV
  `paper_tables`. `model.build_report` puts the records in sections, in
  order: the report model;
* ``render/``: the PDF (`render.pdf`, drawn by a strategy of `render.drawing`,
  pages kept by `render.pagecache`) and the HTML (`render.html`, plotly, its
  other figures as SVG from the PDF's drawing, kept there too) of the same
  model; `render.writing` checks and writes the output file;

and `kinds` (`PageKind`: what a plugin registers to add a kind of page;
`pages` registers the report's own; `example`, a hand-made cube on which
``cmbench check`` builds a plugin's kinds, `cmbench.check_pages`), and `suite_step`, the report step of a suite run (both reports, only when
their cubes changed).

This package imports its plotting libraries only where a page is drawn, so
that a run whose reports are current loads none of them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["write_report", "build_pages", "load_cube", "load_cubes", "Cube", "write_suite_reports",
           "PageKind", "Record", "Context", "Section", "Page", "Col", "TextPages", "TextPage", "text_pages",
           "draw_text_page"]

_LAZY = {"write_report": "render.pdf", "build_pages": "render.pdf", "load_cube": "load", "load_cubes": "load",
         "Cube": "load", "write_suite_reports": "suite_step",
         # what a plugin adding a kind of page uses (`kinds`, `cmbench.hookspecs.register_report_pages`)
         "PageKind": "kinds", "Record": "kinds", "Context": "kinds", "Section": "layout", "Page": "layout",
         "Col": "layout", "TextPages": "layout", "TextPage": "layout", "text_pages": "layout",
         "draw_text_page": "layout"}

if TYPE_CHECKING:
    from .kinds import Context, PageKind, Record
    from .layout import Col, Page, Section, TextPage, TextPages, draw_text_page, text_pages
    from .load import Cube, load_cube, load_cubes
    from .suite_step import write_suite_reports
    from .render.pdf import build_pages, write_report


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cmbench.report' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)
