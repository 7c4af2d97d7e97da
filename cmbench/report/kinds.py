"""Kinds of report page: what a plugin registers (`PageKind`) to add pages to both reports.

A page kind is one registration: the function that builds its sections from
the cubes, the record types its pages hold with the matplotlib drawing of
each, and, optionally, a plotly renderer per record type for the HTML report
(a record type without one shows its matplotlib drawing there as SVG). The
report's own pages are registered the same way, by the built-in plugin
`cmbench.report.pages`, through the hook a third party implements
(`cmbench.hookspecs.register_report_pages`)::

    @cmbench.hookimpl
    def register_report_pages():
        return [PageKind("cells-per-status", status_sections, {TextPage: draw_text_page})]

Kinds are laid out in registration order (the built-in ones first) within
their ``place``: ``"head"`` (once, before the experiments), ``"experiment"``
(once per cube) or ``"tail"`` (once, after the experiments).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Collection, Mapping, Protocol, Sequence, runtime_checkable

from ..errors import PluginError

__all__ = ["PageKind", "Record", "Context", "PLACES", "page_kinds", "check_kind"]

#: where a kind's sections go: before the experiments, once per experiment's cube, after them
PLACES = ("head", "experiment", "tail")


@runtime_checkable
class Record(Protocol):
    """A page's data: a dataclass whose fields hold plain values only (numbers, strings,
    None, NumPy arrays and scalars, lists, tuples, dicts and other such dataclasses).

    The page cache (`render.pagecache.record_digest`) digests it to tell whether a
    drawn page can be reused, and a drawing process receives it pickled, so a
    record holds everything its drawing depends on and nothing else (no cube, no
    open file, no figure).
    """

    __dataclass_fields__: ClassVar[dict[str, Any]]


@dataclass(frozen=True)
class Context:
    """What every section builder may read: the cubes reported, in order, the report's title,
    the baseline cube (or None), the pairs (cube, baseline) that can be compared, one look per
    method (`style.MethodStyles`) and cmbench's version."""

    cubes: Sequence[Any]
    title: str
    baseline: Any
    pairs: Sequence[tuple[Any, Any]]
    styles: Any
    version: str


@dataclass(frozen=True)
class PageKind:
    """A kind of report page, as a plugin registers it (`cmbench.hookspecs.register_report_pages`).

    Attributes
    ----------
    name : str
        Kebab-case, unique among the kinds loaded.
    sections : callable
        Builds the kind's sections (`model.Section`), each a list of `layout.Page`
        objects: ``sections(context)`` for the places ``"head"`` and ``"tail"``,
        ``sections(cube, context)`` for ``"experiment"`` (once per cube). It
        returns an iterable of sections, empty when the cubes give it nothing to
        show.
    records : mapping of type to callable
        Each record type (a `Record`) this kind's pages hold, and the matplotlib
        drawing of such a record: ``draw(record) -> matplotlib.figure.Figure``.
        A page whose record or drawing is not listed here is refused.
    html : mapping of type to callable, optional
        A plotly renderer per record type for the HTML report:
        ``render(page, div_id, figures) -> str`` (an HTML fragment;
        ``figures``: `render.html.Figures`). A record type without one is shown
        as the SVG of its matplotlib drawing.
    place : str
        ``"head"``, ``"experiment"`` (default) or ``"tail"``.
    """

    name: str
    sections: Callable[..., Any]
    records: Mapping[type, Callable[[Any], Any]]
    html: Mapping[type, Callable[..., str]] = field(default_factory=dict)
    place: str = "experiment"


def check_kind(kind: object, plugin: str) -> PageKind:
    """``kind`` if it is a well-formed `PageKind`, else a `PluginError` naming ``plugin`` and what is wrong."""
    import re

    where = f"plugin {plugin}"
    if not isinstance(kind, PageKind):
        raise PluginError(f"{where}: register_report_pages returned {kind!r}; expected cmbench.PageKind")
    what = f"{where}, report page kind {kind.name!r}"
    if not isinstance(kind.name, str) or not re.match(r"^[a-z0-9]+(-[a-z0-9]+)*$", kind.name):
        raise PluginError(f"{what}: the name must be kebab-case (lowercase words joined by '-')")
    if kind.place not in PLACES:
        raise PluginError(f"{what}: place {kind.place!r} is not one of {', '.join(PLACES)}")
    if not callable(kind.sections):
        raise PluginError(f"{what}: sections is not callable")
    if not isinstance(kind.records, Mapping) or not kind.records:
        raise PluginError(f"{what}: records must map each record type to its drawing function")
    for rtype, draw in kind.records.items():
        if not (isinstance(rtype, type) and dataclasses.is_dataclass(rtype)):
            raise PluginError(f"{what}: record type {rtype!r} is not a dataclass (see cmbench.report.Record)")
        if not callable(draw):
            raise PluginError(f"{what}: the drawing of {rtype.__name__} is not callable")
    for rtype, render in dict(kind.html).items():
        if rtype not in kind.records:
            raise PluginError(f"{what}: html names {getattr(rtype, '__name__', rtype)!r}, "
                              f"which is not one of its record types")
        if not callable(render):
            raise PluginError(f"{what}: the HTML renderer of {rtype.__name__} is not callable")
    return kind


def page_kinds(registry=None, only: Collection[str] | None = None) -> list[PageKind]:
    """The page kinds of a plugin registry (`cmbench.plugins.load_plugins`), in registration
    order, the built-in ones first; with no registry, the built-in ones alone. ``only``:
    the kinds of these plugins alone (their names, as `cmbench.plugins.Source.plugin`).

    Raises
    ------
    cmbench.errors.PluginError
        A plugin's ``register_report_pages`` raised or returned something else
        than page kinds, or two kinds share a name.
    """
    from ..errors import describe_error
    from ..plugins import REPORT_PAGES, builtin_pages

    hooks = builtin_pages().page_hooks + list(getattr(registry, "page_hooks", ()))
    out: dict[str, tuple[PageKind, str]] = {}
    for source, hook in hooks:
        plugin = source.plugin
        try:
            found = hook()
        except Exception as exc:  # a plugin's own bug, reported as its own
            raise PluginError(f"plugin {plugin}: register_report_pages() raised {describe_error(exc)}") from None
        try:
            found = list(found or ())
        except TypeError:
            raise PluginError(f"plugin {plugin}: register_report_pages() must return an iterable of "
                              f"cmbench.PageKind, got {type(found).__name__}") from None
        for kind in found:
            check_kind(kind, plugin)
            if kind.name in out:
                raise PluginError(f"duplicate report page kind {kind.name!r}: registered by plugin "
                                  f"{out[kind.name][1]} and by plugin {plugin}")
            out[kind.name] = (kind if plugin == REPORT_PAGES else _guarded(kind, plugin), plugin)
    return [kind for kind, plugin in out.values() if only is None or plugin in only]


def _guarded(kind: PageKind, plugin: str) -> PageKind:
    """``kind`` whose section builder's errors are the plugin's, named as such (one line, as a
    component's), not a traceback out of the report."""
    from ..errors import describe_error

    build = kind.sections

    def sections(*args):
        try:
            return list(build(*args))
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(f"plugin {plugin}, report page kind {kind.name!r}: its section builder "
                              f"raised {describe_error(exc)}") from None

    return dataclasses.replace(kind, sections=sections)
