"""The report's own kinds of page, registered as a plugin's would be (`cmbench.hookspecs.register_report_pages`).

One line per kind: its name, the content module's section builder, its record
types with their matplotlib drawings (`plots`, or `layout` for text) and, where
the HTML has one, their plotly renderers. The order of the lines is the order of
the sections within each place (head, once per experiment, tail). The content
modules are imported when a report is drawn, not when plugins load.
"""
from __future__ import annotations

from ..hookspecs import hookimpl
from .kinds import PageKind


@hookimpl
def register_report_pages() -> list[PageKind]:
    from .content import claims_page, figures, parameter, recovery, stress, tables, theory_pages
    from .layout import TextPage, draw_text_page
    from .plots.cd import CdPage, draw_cd_page
    from .plots.curves import CurvePage, draw_curves
    from .plots.runtime import RuntimePage, draw_runtime
    from .plots.stress import DistancePage, DotPage, draw_distance, draw_dots
    from .plots.theory import TheoryPage, draw_dis_compare
    from .render.html import render_cd, render_curves, render_runtime

    text = {TextPage: draw_text_page}
    curves = {CurvePage: draw_curves}
    return [
        PageKind("provenance", tables.provenance_sections, text, place="head"),
        PageKind("claims", claims_page.claims_sections, text, place="head"),
        PageKind("curves", parameter.curve_sections, curves, html={CurvePage: render_curves}),
        PageKind("mean-sd", parameter.mean_sd_sections, text),
        PageKind("ranking", tables.ranking_sections, {**text, CdPage: draw_cd_page}, html={CdPage: render_cd}),
        PageKind("stress", stress.stress_sections, {**text, DotPage: draw_dots, DistancePage: draw_distance}),
        PageKind("recovery", recovery.recovery_sections, curves, html={CurvePage: render_curves}),
        PageKind("runtime", figures.runtime_sections, {RuntimePage: draw_runtime}, html={RuntimePage: render_runtime}),
        PageKind("cells", tables.cells_sections, text),
        PageKind("baseline", figures.baseline_sections, {**text, **curves}, html={CurvePage: render_curves}),
        PageKind("theory", theory_pages.theory_sections, {TheoryPage: draw_dis_compare}, place="tail"),
        # an appendix, as in a paper: the reader meets the claims and figures first
        PageKind("suite-file", tables.suite_file_sections, text, place="tail"),
    ]
