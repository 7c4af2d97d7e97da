"""``cmbench check`` on a plugin's kinds of report page: built on a hand-made cube and drawn.

A plugin that adds report pages (`cmbench.report.PageKind`) learns whether
they work before any suite runs: each kind builds its sections on
`cmbench.report.example.example_cube` (at its place: once for the cube, or
once at the head or tail), and every page it gives is checked as a report
would use it: its record holds plain values only (the page cache digests it,
a drawing process receives it pickled), its drawing returns a matplotlib
figure, and its HTML renderer, if the kind registers one, returns an HTML
fragment. Every call of the plugin's code goes
through the runner's guarded call, as a suite's cells do: a per-call timeout,
anything it raises reported as a failed check.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

from .report.kinds import PageKind

__all__ = ["PAGE_CHECKS", "Finding", "probe_page_kind"]

#: the checks of a kind of report page, in the order they are printed
PAGE_CHECKS = (
    "builds its sections on a hand-made cube (cmbench.report.example)",
    "each page's record holds plain values only (it is digested and pickled)",
    "each page's drawing returns a matplotlib Figure",
    "each HTML renderer returns an HTML fragment (str)",
)


class Finding(NamedTuple):
    """One check of a kind: ``problem`` (why it failed) or ``skipped`` (why it did not run), else passed."""

    check: str
    problem: str = ""
    skipped: str = ""


def probe_page_kind(kind: PageKind, timeout: Optional[float] = None) -> list[Finding]:
    """Check ``kind`` (as `kinds.page_kinds` gives it) on the hand-made cube; one `Finding` per `PAGE_CHECKS`."""
    from .runner.guard import Context

    context = Context(timeout)
    build, record, draw, html = PAGE_CHECKS
    sections, problem = _guarded(_build, context, kind)
    if problem:
        return [Finding(build, problem), *(Finding(c, skipped="no sections to check") for c in (record, draw, html))]
    pages = [page for section in sections for page in section.pages]
    if not pages:
        why = "the kind gave no page on the hand-made cube"
        return [Finding(build), *(Finding(c, skipped=why) for c in (record, draw, html))]
    out = [Finding(build), Finding(record, _first(_record_problem(p) for p in pages))]
    out.append(Finding(draw, _first(_guarded(_drawn, context, p)[1] for p in pages)))
    rendered = [p for p in pages if p.html is not None]
    if not rendered:
        out.append(Finding(html, skipped="no HTML renderer registered: the HTML shows the drawing as SVG"))
    else:
        out.append(Finding(html, _first(_guarded(_rendered, context, p)[1] for p in rendered)))
    return out


def _build(kind: PageKind) -> list:
    from .report.example import example_cube
    from .report.load import load_cube
    from .report.model import build_report

    cube = load_cube(example_cube(), source="<cmbench check's hand-made cube>")
    return build_report([cube], title="cmbench check", kinds=[kind])


def _record_problem(page) -> str:
    """Why the page's record is not plain values (`cmbench.report.Record`), or "": the digest
    walks every field and refuses anything else, so a record it takes also pickles."""
    from .report.render.pagecache import record_digest

    try:
        record_digest(page)
    except Exception as exc:
        return f"page {page.slug!r}: its {type(page.record).__name__} does not digest ({exc})"
    return ""


def _drawn(page) -> None:
    from matplotlib.figure import Figure

    fig = page.draw(page.record)
    if not isinstance(fig, Figure):
        raise TypeError(f"page {page.slug!r}: {page.draw.__name__} returned {type(fig).__name__}, not a Figure")
    fig.clear()


def _rendered(page) -> None:
    from .report.render.html import Figures

    text = page.html(page, "check-0", Figures(None))
    if not isinstance(text, str):
        raise TypeError(f"page {page.slug!r}: its HTML renderer returned {type(text).__name__}, not str")


def _guarded(fn: Callable, context: Any, arg: Any) -> tuple[Any, str]:
    """``(fn(arg), "")``, or ``(None, why)`` when it raised or ran out of time (`guard.run`)."""
    from .cube import OK
    from .runner.guard import run

    outcome = run(fn, (arg,), context=context, home=None)
    return (outcome.value, "") if outcome.status == OK else (None, outcome.error)


def _first(problems) -> str:
    return next((p for p in problems if p), "")
