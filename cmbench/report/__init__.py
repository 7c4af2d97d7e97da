"""Reports built from results cubes alone (nothing is rerun): a PDF and an interactive HTML page.

`write_report` (module `pdf`) lays out, for a list of cubes (one per experiment):

1. provenance: suite, seed, cmbench and plugin versions, data sets with shapes,
   when and where each cube was made, cells per status; then, when the suite
   declares claims, their verdicts ("The paper's claims", module `claims`);
2. per experiment (a section whose page titles start with the experiment):
   error versus budget, one page per (adversary, metric), one panel per data set,
   one line per method (mean over instances, 95% band), the recovery thresholds
   recorded for data sets with a known structure as labelled vertical lines;
   a ranking table; runtime per method; the cells that did not run (failures
   with messages, then undefined / not-applicable gaps);
   for cubes with adaptive (worst-case) adversaries, the stress pages of
   `stress`: worst case next to the fixed attacks, error against d_ENTRY^1,
   a worst-case summary table;
3. with a baseline: difference curves and a table against it;
4. the paper's worked examples the suite names (``theory_figures``), drawn from
   `cmbench.theory` alone (module `theory_pages`), e.g. Figure fig:disCompare.

`write_html` (module `html`) writes the same sections as one offline HTML file;
`write_suite_reports` (module `outputs`) draws both after a suite run, only
when their cubes changed, reusing each PDF page whose data did not change.

Each page is a `layout.Page`: its data as a small record (a dataclass: the
reduced numbers, labels and colours), built apart from the function that draws
it. Modules: `load` (reading and checking cubes), `layout` (the page type,
page sizes, margins, grids, legends, notes, text flow), `figures` (curves,
runtime), `tables` (provenance, ranking, cells, baseline), `significance`,
`recovery`, `claims`, `stress` (adaptive adversaries), `theory_pages`, each with
its records and drawing functions; `pdf` and `html` (the two reports),
`pagecache` (drawn pages kept by the digest of their record), `outputs` (the
reports of a suite run), `helpers` (processes that draw pages and build the
HTML page beside the one building the records), `fonts` (the embedded font
subsets), `style` (colour and marker per method, rc settings).

This package imports its plotting libraries only where a page is drawn, so
that a run whose reports are current loads none of them, and a process whose
helpers draw the pages only builds their records.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["write_report", "build_pages", "load_cube", "load_cubes", "Cube", "write_suite_reports"]

_LAZY = {"write_report": "pdf", "build_pages": "pdf", "load_cube": "load", "load_cubes": "load",
         "Cube": "load", "write_suite_reports": "suite_step"}

if TYPE_CHECKING:
    from .load import Cube, load_cube, load_cubes
    from .suite_step import write_suite_reports
    from .pdf import build_pages, write_report


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cmbench.report' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)
