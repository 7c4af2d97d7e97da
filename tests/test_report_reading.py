"""Reports read as a paper's figures: whole claim ids, stated bands, a readable y scale, visible
coinciding curves, no empty pages, ticks at the grid, tables a program can read."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cmbench.errors import SuiteError
from cmbench.report.content.figures import SAMPLING, y_scale
from cmbench.report.plots.runtime import draw_runtime
from cmbench.report.load import load_cube
from cmbench.report.model import build_report
from cmbench.report.render.html import Figures, render_curves
from cmbench.suite import load_suite
from test_params_as_data import suite_text
from conftest import cli_inproc
from helpers import drawn_page_texts, make_cube, set_cells

ROOT = Path(__file__).resolve().parents[1]
#: DKK17-quick's methods and the order of their errors there (the noisy mean's label is the
#: reference code's)
DKK = {"Sampling Error (with noise)": ["none", "mean"], "Naive Pruning": ["none", "prune"],
       "Geometric Median": ["none", "geomedian-dkk17"], "RANSAC": ["none", "ransac-reference"],
       "LRV": ["none", "lrv"], "Filter": ["none", "filter-reference"], "Filter (cmbench)": ["none", "filter"],
       "RANSAC (rows)": ["none", "ransac"], "Coordinate Median": ["none", "cmedian"],
       "Median of Means": ["none", "median-of-means"]}
#: gao19-quick's methods and the size of their l2 errors there (2 instances, d = 100, 200)
GAO = {"Dimension Halving": ["none", "lrv"], "Iterative Filtering": ["none", "filter-reference"],
       "Filter (cmbench)": ["none", "filter"], "Sample Mean": ["none", "mean"],
       "Coordinate Median": ["none", "cmedian"]}
GAO_SIZE = {"Dimension Halving": 0.3, "Iterative Filtering": 0.18, "Filter (cmbench)": 0.12,
            "Sample Mean": 12.0, "Coordinate Median": 4.0}


def sample_level(ds, adversary="replace-mixture"):
    ds.attrs["adversaries_info"] = json.dumps({adversary: {"name": "replace-mixture", "level": "sample",
                                                           "mode": "replace"}})
    return ds


def set_method(ds, method, methods, values):
    """Give ``method`` the l2 values ``values`` (broadcast over the cube's cells)."""
    r, e = methods[method]
    ds["l2"].loc[{"recoverer": r, "estimator": e}] = values
    return ds


def curve_pages(ds):
    sections = build_report([load_cube(ds)], title="t")
    return [p for s in sections if s.slug.endswith("-curves") for p in s.pages]


# -- claims ----------------------------------------------------------------------------------
def test_the_pdf_claims_page_of_dkk17_quick_has_every_claim_id_whole(tmp_path):
    exp = load_suite(ROOT / "suites" / "dkk17-quick.toml").experiments[0]
    ds = sample_level(make_cube(datasets=tuple(f"dkk17.d_{d}" for d in (100, 200, 300, 400)), instances=2,
                                adversaries=("replace-mixture",), budgets=(0.1,), methods=DKK,
                                metrics=("excess-l2", "l2")))
    ds["excess-l2"] = ds["l2"] - 0.01
    ds.attrs["claims"] = json.dumps(list(exp.claims))
    pages = drawn_page_texts([ds], lambda slug: slug.startswith("claims"), tmp_path)  # the page drawn
    claims = next(t for t in pages.values() if "claims" in t.splitlines()[0])
    ids = [c["id"] for c in exp.claims]
    assert "filter-near-sampling-error" in ids and len(ids) == 5
    lines = claims.splitlines()
    for claim_id in ids:  # whole, on one line of the page's text
        assert any(claim_id in line for line in lines), claim_id
    assert "epsilon all budgets" not in claims and "at every budget" in claims


def test_one_letter_claim_ids_leave_room_for_the_claim_column_header():
    """The paper's claims are a to e: the id column, fitted to its ids, was narrower than its
    own header, and "claim" ran into "in the paper"."""
    import matplotlib

    matplotlib.use("Agg")
    from cmbench.report.content.claims_page import claims_pages
    from cmbench.report.layout import draw_text_page
    from cmbench.report.style import RC

    exp = load_suite(ROOT / "suites" / "dkk17-quick.toml").experiments[0]
    ds = sample_level(make_cube(datasets=("dkk17.d_100",), instances=2, adversaries=("replace-mixture",),
                                budgets=(0.1,), methods=DKK, metrics=("excess-l2", "l2")))
    ds["excess-l2"] = ds["l2"] - 0.01
    ds.attrs["claims"] = json.dumps([{**c, "id": "abcde"[i]} for i, c in enumerate(exp.claims)])
    with matplotlib.rc_context(RC):
        fig = draw_text_page(claims_pages([load_cube(ds)]).pages[0])
        fig.canvas.draw()
        box = {t.get_text(): t.get_window_extent() for t in fig.texts if t.get_text() in ("claim", "in the paper")}
    assert box["claim"].x1 < box["in the paper"].x0, box


# -- bands -----------------------------------------------------------------------------------
@pytest.mark.parametrize("band", ["", "sd", "ci95", "minmax", "none"])
def test_a_two_instance_cube_draws_the_band_it_states(band):
    ds = make_cube(instances=2, datasets=("gaussian",))
    if band:
        ds.attrs["report_band"] = band
    page = curve_pages(ds)[0].record
    cube = load_cube(ds)
    values = cube.ok_values("mahalanobis").sel(adversary="min-rho", dataset="gaussian")
    v = values.sel({"method": "C-Median"}).transpose("instance", "budget").values
    centre, lower, upper = page.panels[0].curves["C-Median"]
    assert np.allclose(centre, v.mean(0))
    kind = band or "sd"  # two instances: the rule gives the spread, not a t interval
    if kind == "none":
        assert np.isnan(lower).all() and np.isnan(upper).all() and page.band_label == ""
        assert "no band" in page.subtitle
        return
    half = {"sd": v.std(0, ddof=1), "ci95": 12.7062047 * v.std(0, ddof=1) / np.sqrt(2)}
    low, high = ((v.mean(0) - half[kind], v.mean(0) + half[kind]) if kind in half else (v.min(0), v.max(0)))
    assert np.allclose(lower, low) and np.allclose(upper, high)
    words = {"sd": "standard deviation", "ci95": "95% Student-t confidence interval", "minmax": "smallest to largest"}
    assert words[kind] in page.subtitle and words[kind] in page.band_label
    assert ("as the suite asks" in page.subtitle) == bool(band)


def test_five_instances_give_the_t_interval_by_the_rule():
    page = curve_pages(make_cube(instances=5, datasets=("gaussian",)))[0].record
    assert "95% Student-t" in page.subtitle and "from 5 instances on" in page.subtitle


@pytest.mark.parametrize("extra, message", [
    ('report = { band = "sem" }', "key 'experiment[0].report.band': expected one of 'auto', 'sd', 'ci95', "
                                  "'minmax', 'none', got 'sem'"),
    ('report = { yscale = "symlog" }', "key 'experiment[0].report.yscale': expected one of 'auto', 'log', "
                                       "'linear', got 'symlog'"),
    ('report = { band = 1 }', "expected a string, got int 1"),
])
def test_a_bad_band_or_yscale_names_the_file_and_the_key(write_suite, extra, message):
    path = write_suite(suite_text(extra))
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value) and "\n" not in str(err.value)


def test_band_and_yscale_reach_the_experiment(write_suite):
    exp = load_suite(write_suite(suite_text('report = { band = "minmax", yscale = "log" }'))).experiments[0]
    assert (exp.report_band, exp.report_yscale) == ("minmax", "log")
    exp = load_suite(write_suite(suite_text())).experiments[0]
    assert (exp.report_band, exp.report_yscale) == ("", "")


# -- scale -----------------------------------------------------------------------------------
def gao_cube(**kw):
    ds = make_cube(instances=2, datasets=("gauss.d_100",), budgets=(0.05, 0.2), methods=GAO,
                   metrics=("l2",), **kw)
    rng = np.random.default_rng(1)
    for m, size in GAO_SIZE.items():
        set_method(ds, m, GAO, size * (1 + 0.05 * rng.standard_normal(ds["l2"].shape[:4])))
    return ds


def test_the_gao19_curve_page_puts_the_robust_methods_on_a_readable_scale():
    page = curve_pages(gao_cube())[0]
    rec = page.record
    assert rec.yscale == "log" and any("Log y axis" in n for n in rec.notes)
    fig = page.draw(rec)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    # Dimension Halving (0.3) and the filter (0.12) are apart by a tenth of the axis at least; on a
    # linear axis up to the sample mean (12) they are one line at the bottom (0.015 apart)
    to_axes = lambda y: ax.transLimits.transform(ax.transScale.transform((1.0, y)))[1]  # noqa: E731
    assert to_axes(0.3) - to_axes(0.12) > 0.1
    html = render_curves(page, "p", Figures(None))
    assert '"type": "log"' in html or '"type":"log"' in html


def test_yscale_linear_is_kept_and_close_curves_stay_linear():
    ds = gao_cube()
    ds.attrs["report_yscale"] = "linear"
    assert curve_pages(ds)[0].record.yscale == "linear"
    assert curve_pages(make_cube(datasets=("gaussian",)))[0].record.yscale == "linear"  # 4x apart at most


def test_values_at_or_below_zero_get_a_zoom_panel_of_the_small_curves_not_a_log_axis():
    x = np.array([1.0, 2.0])
    from cmbench.report.plots.curves import Panel

    nan = np.full(2, np.nan)
    panel = Panel("eps = 0.1", x, {"big": (np.array([10.0, 14.0]), nan, nan),
                                   "small": (np.array([-0.01, 0.02]), nan, nan),
                                   "mid": (np.array([3.0, 4.0]), nan, nan)})
    scale, panels, notes = y_scale([panel])
    assert scale == "linear" and len(panels) == 2 and list(panels[1].curves) == ["small"]
    assert "zoomed" in panels[1].title and notes and "<= 0" in notes[0]


# -- coinciding curves, names, ticks -----------------------------------------------------------
def test_a_curve_equal_to_another_is_named_and_drawn_open_on_top(tmp_path):
    methods = {"Noisy": ["none", "mean"], "RANSAC": ["none", "ransac"], "Filter": ["none", "filter"]}
    ds = make_cube(instances=2, datasets=("gaussian",), methods=methods, metrics=("l2",))
    ds["l2"].loc[{"estimator": "ransac"}] = ds["l2"].sel(estimator="mean").values
    page = curve_pages(ds)[0]
    assert page.record.same_as == {"RANSAC": "Noisy"}
    fig = page.draw(page.record)
    legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert "RANSAC (same as Noisy)" in legend and "Noisy" in legend
    line = next(ln for ln in fig.axes[0].get_lines() if ln.get_label() == "RANSAC")
    assert line.get_markerfacecolor() == "none" and line.get_zorder() > 3
    assert "RANSAC (same as Noisy)" in render_curves(page, "p", Figures(None))


def test_the_reference_line_and_the_metrics_have_one_display_name_each():
    ds = sample_level(make_cube(instances=2, adversaries=("replace-mixture",), datasets=("gaussian",),
                                methods=DKK, metrics=("excess-l2", "l2")))
    ds["excess-l2"] = ds["l2"] - 0.01
    ds["inlier_l2"] = ds["l2"].isel(recoverer=0, estimator=0) * 0 + 0.02
    pages = {p.slug: p.record for p in curve_pages(ds)}
    l2 = next(r for s, r in pages.items() if s.endswith("-l2") and not s.endswith("-excess-l2"))
    excess = next(r for s, r in pages.items() if s.endswith("-excess-l2"))
    assert SAMPLING in l2.panels[0].curves and "sampling error" not in SAMPLING.lower()
    assert l2.ylabel == r"$\ell_2$ error" and excess.ylabel == r"excess $\ell_2$ error"
    assert "excess l2 error" in excess.title and "excess-l2" not in excess.title


def test_ticks_sit_at_the_grid_values_in_both_renderers():
    page = curve_pages(make_cube(instances=2, datasets=("gaussian",), budgets=(0.1, 0.2, 0.3, 0.4)))[0]
    assert page.record.xticks == [0.1, 0.2, 0.3, 0.4]
    fig = page.draw(page.record)
    assert np.allclose(fig.axes[0].get_xticks(), [0.1, 0.2, 0.3, 0.4])
    html = render_curves(page, "p", Figures(None))
    assert re.search(r'"tickvals":\s*\[0\.1,\s*0\.2,\s*0\.3,\s*0\.4\]', html)
    many = curve_pages(make_cube(instances=2, datasets=("gaussian",), budgets=tuple(np.linspace(0, 0.3, 13))))[0]
    assert many.record.xticks is None


# -- pages with nothing to say -----------------------------------------------------------------
def with_recovery(ds):
    ds["recovery_rmse"] = ds["recovered_fraction"] * 5.2
    return ds


def test_a_suite_whose_only_recoverer_is_none_has_no_recovery_page():
    only_none = {"A": ["none", "mean"], "B": ["none", "coord-median"]}
    sections = build_report([load_cube(with_recovery(make_cube(methods=only_none)))], title="t")
    assert not [s for s in sections if s.slug.endswith("-recovery")]
    sections = build_report([load_cube(with_recovery(make_cube()))], title="t")  # "exact" recovers
    assert [s for s in sections if s.slug.endswith("-recovery")]


def test_a_one_budget_suite_has_no_by_budget_runtime_panel_and_one_panel_fills_the_page():
    sections = build_report([load_cube(make_cube(budgets=(0.1,), datasets=("gaussian",)))], title="t")
    runtime = next(s for s in sections if s.slug.endswith("-runtime")).pages[0]
    assert runtime.record.by_budget is None
    assert len([a for a in draw_runtime(runtime.record).axes if a.get_visible()]) == 1
    sections = build_report([load_cube(make_cube(datasets=("gaussian",)))], title="t")
    runtime = next(s for s in sections if s.slug.endswith("-runtime")).pages[0]
    assert len([a for a in draw_runtime(runtime.record).axes if a.get_visible()]) == 2
    curves = next(s for s in sections if s.slug.endswith("-curves")).pages[0]
    fig = curves.draw(curves.record)
    visible = [a for a in fig.axes if a.get_visible()]
    assert len(visible) == 1 and visible[0].get_position().width > 0.8


# -- tables for programs -------------------------------------------------------------------------
def test_report_tables_csvs_load_with_pandas_as_numbers(tmp_path):
    ds = make_cube(instances=2, datasets=("gaussian",), budgets=(0.1, 0.2), metrics=("l2",))
    ds.to_netcdf(tmp_path / "c.nc")
    code, stderr = cli_inproc("report", tmp_path / "c.nc", "-o", tmp_path / "r.html", "--tables", tmp_path / "t")
    assert code == 0, stderr
    ranking = pd.read_csv(tmp_path / "t" / "synthetic-ranking-l2.csv")
    means = pd.read_csv(tmp_path / "t" / "synthetic-mean-error-l2.csv")
    for frame, numeric in ((ranking, ("mean_error", "mean_rank", "cells", "total_cells")),
                           (means, ("budget", "mean", "sd", "instances"))):
        for col in numeric:
            assert pd.api.types.is_numeric_dtype(frame[col]), col
    assert ranking["best_mean_rank"].dtype == bool and means["best"].dtype == bool
    assert sorted(means["budget"].unique()) == [0.1, 0.2]  # the budget is a column, not averaged away
    assert len(means) == 3 * 2  # methods x budgets (one data set, one adversary)
    assert means.groupby("budget")["best"].sum().tolist() == [1, 1]


# -- legends -----------------------------------------------------------------------------------
def test_one_long_legend_entry_widens_its_own_column_only():
    """The paper's curve pages: six methods and the band's entry. Sized by the widest entry,
    every column was as wide as the band's and the legend took one column of seven rows; each
    column as wide as its own entries gives four, and the drawn legend still fits the page."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from cmbench.report.layout import legend_columns, page_legend
    from cmbench.report.style import PAGE, RC

    labels = ["Empirical Mean", "Data Sanitization", "C-Median", "Two-Step-M", "Two-Step-M (cmbench)",
              "Two-Step-E", "shaded: 95% Student-t confidence interval"]
    ncol = legend_columns(labels, 9, 6)
    assert ncol == 4
    assert legend_columns(labels[:-1] + ["x" * 140], 9, 6) == 1  # no two columns fit beside it
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=PAGE)
        page_legend(fig, [Line2D([], [], label=lb, marker="o") for lb in labels], ncol, 0.8, fontsize=9,
                    handlelength=3.0, columnspacing=2.0)
        fig.canvas.draw()
        box = fig.legends[0].get_window_extent()
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width, (box, fig.bbox)


def test_a_long_subtitle_is_wrapped_and_the_legend_moves_below_it():
    """The recovery pages' subtitle (band rule and what the RMSE is over) ran off the page's right
    edge in one line; wrapped, its second line pushes the legend down instead of under it."""
    import dataclasses

    import matplotlib

    matplotlib.use("Agg")
    from cmbench.report.plots.curves import draw_curves
    from cmbench.report.style import RC

    page = curve_pages(make_cube(instances=5, datasets=("gaussian",)))[0].record
    long = page.subtitle + "; over the hidden or replaced entries the recoverer filled, in the data's units"
    assert len(long) > 180
    with matplotlib.rc_context(RC):
        boxes = {}
        for name, sub in (("short", page.subtitle), ("long", long)):
            fig = draw_curves(dataclasses.replace(page, subtitle=sub))
            fig.canvas.draw()
            text = next(t for t in fig.texts if t.get_text().startswith("mean over"))
            boxes[name] = (text.get_window_extent(), fig.legends[0].get_window_extent(), fig.bbox)
    for name, (sub, legend, page_box) in boxes.items():
        assert sub.x1 <= page_box.width, f"{name} subtitle runs off the page"
        assert legend.y1 <= sub.y0, f"{name} subtitle overlaps the legend"
    assert boxes["long"][0].height > 1.5 * boxes["short"][0].height  # two lines against one


# -- one data set, several adversaries ---------------------------------------------------------
def test_one_data_sets_adversaries_share_a_page_per_metric(tmp_path):
    """A cube of one data set under three adversaries on one budget axis (ap25's eta experiments):
    one page per metric, a panel per adversary titled by it, not a page of one panel each; a second
    data set (three panels a page already) or a second budget axis keeps a page per adversary."""
    three = ("min-rho", "random-rho", "max-rho")
    ds = make_cube(datasets=("gaussian",), adversaries=three)
    pages = curve_pages(ds)
    assert sorted(p.slug for p in pages) == ["synthetic-l2", "synthetic-mahalanobis"]
    rec = next(p for p in pages if p.slug == "synthetic-l2").record
    assert rec.title == "synthetic: l2 error versus budget on gaussian (synthetic-linear), by adversary"
    assert [p.title.splitlines()[0] for p in rec.panels] == list(three)
    text = " ".join(drawn_page_texts([ds], lambda slug: slug == "synthetic-l2", tmp_path).values())
    assert all(a in text for a in three)
    set_cells(ds, "undefined", "no rows left", adversary="random-rho", budget=0.3)
    rec = next(p for p in curve_pages(ds) if p.slug == "synthetic-l2").record
    assert any(n.startswith("random-rho: Gaps in the curves") for n in rec.notes)  # whose gap it is

    assert len(curve_pages(make_cube(datasets=("gaussian", "uniform"), adversaries=three))) == 2 * len(three)
    mixed = make_cube(datasets=("gaussian",), adversaries=("min-rho", "replace-mixture"))
    sample_level(mixed)  # replace-mixture: a budget in rows (epsilon), min-rho in entries (rho)
    assert sorted(p.slug for p in curve_pages(mixed)) == [
        f"synthetic-{a}-{m}" for a in ("min-rho", "replace-mixture") for m in ("l2", "mahalanobis")]
