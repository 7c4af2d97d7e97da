"""The hooks a cmbench plugin implements.

Each hook returns an iterable of declarations of one kind (five kinds of component:
adversaries, recoverers, estimators, data sets and error metrics). Built-in methods are
registered through these same hooks (see ``plugins/``), exactly as a third
party's would be. A sixth, ``register_report_pages``, adds kinds of report page.
"""
from __future__ import annotations

from typing import Iterable

import pluggy

hookspec = pluggy.HookspecMarker("cmbench")
hookimpl = pluggy.HookimplMarker("cmbench")


@hookspec
def register_adversaries() -> Iterable["cmbench.Adversary"]:  # noqa: F821
    """Return the adversaries this plugin provides.

    Example::

        @cmbench.hookimpl
        def register_adversaries():
            return [cmbench.Adversary("hide-largest", hide_largest,
                                      level="value", mode="missing")]
    """


@hookspec
def register_recoverers() -> Iterable["cmbench.Recoverer"]:  # noqa: F821
    """Return the recoverers this plugin provides.

    Example::

        @cmbench.hookimpl
        def register_recoverers():
            return [cmbench.Recoverer("zero-fill", zero_fill, modes=("missing",))]
    """


@hookspec
def register_estimators() -> Iterable["cmbench.Estimator"]:  # noqa: F821
    """Return the estimators this plugin provides.

    Example::

        @cmbench.hookimpl
        def register_estimators():
            return [cmbench.Estimator("winsorized-mean", winsorized_mean,
                                      params={"limit": 0.05})]
    """


@hookspec
def register_datasets() -> Iterable["cmbench.Dataset"]:  # noqa: F821
    """Return the data sets this plugin provides.

    Example::

        @cmbench.hookimpl
        def register_datasets():
            return [cmbench.Dataset("my-table", load_my_table, shape=(500, 12), rank=4)]
    """


@hookspec
def register_metrics() -> Iterable["cmbench.Metric"]:  # noqa: F821
    """Return the error metrics this plugin provides: ``fn(mu_hat, data) -> float``.

    A suite lists them in an experiment's ``metrics = [...]``; the cube gets
    one variable per metric and the report one page each.

    Example::

        def relative_l2(mu_hat, data):
            return float(np.linalg.norm(mu_hat - data.mean) / np.linalg.norm(data.mean))

        @cmbench.hookimpl
        def register_metrics():
            return [cmbench.Metric("relative-l2", relative_l2,
                                   description="l2 error over the norm of the true mean")]
    """


@hookspec
def register_report_pages() -> Iterable["cmbench.PageKind"]:  # noqa: F821
    """Return the kinds of report page this plugin adds to the PDF and HTML reports.

    Each `cmbench.PageKind` names the function building its sections
    from the cubes, its record types with their matplotlib drawings and,
    optionally, plotly renderers for the HTML. The hook is called when a report
    is drawn, not when the plugin loads. The report's own pages are registered
    through this hook too (``cmbench.report.pages``).

    Example::

        @cmbench.hookimpl
        def register_report_pages():
            return [PageKind("cells-per-status", status_sections, {TextPage: draw_text_page})]
    """
