"""Pages of the paper's worked examples, computed with `cmbench.theory` alone.

A suite names the examples its report shows (``theory_figures =
["fig:disCompare"]``); the runner records the names in each cube's
``theory_figures`` attribute and the report draws each once. The pages' record
(`plots.theory.TheoryPage`) names the example; its drawing computes it.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Sequence

from ... import theory
from ..layout import Page, Section
from ...cube import attr_json
from ..load import Cube
from ..plots.theory import TheoryPage, draw_dis_compare


def theory_pages(cubes: Sequence[Cube]) -> list[Page]:
    """The pages of every example the cubes name, each once, in the order named."""
    names: dict[str, None] = {}
    for c in cubes:
        for name in attr_json(c.attrs, "theory_figures", [], c.source) or []:
            names[str(name)] = None
    return [PAGES[n]() for n in names if n in PAGES]


def dis_compare_page(k: int = 16, seed: int = 0) -> Page:
    """Figure fig:disCompare (see `draw_dis_compare`)."""
    code = hashlib.sha256(Path(theory.__file__).read_bytes()).hexdigest()
    return Page("theory-fig-disCompare", TheoryPage(k, seed, code),
                draw_dis_compare, cost=5.0)  # it computes an assignment and a linear program


#: example name (as a suite names it) -> page builder
PAGES: dict[str, Callable[[], Page]] = {"fig:disCompare": dis_compare_page}


def theory_sections(ctx) -> list[Section]:
    """The paper's worked examples the suites name, once each (none when they name none)."""
    theory = theory_pages(ctx.cubes)
    return [Section("theory", "The paper's worked examples", theory)] if theory else []
