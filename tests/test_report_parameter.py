"""Error against a numeric data-set parameter (``report_x``), the inliers' reference
(``inlier_l2``) and the mean (sd) table, on a cube built as the runner writes one with
parameters as coordinates."""
from __future__ import annotations

import json

import numpy as np

from cmbench.report.render.html import write_html
from cmbench.report.content.figures import SAMPLING
from cmbench.report.load import load_cube
from cmbench.report.model import build_report

from helpers import drawn_page_texts, make_cube, squash

DIMS = (100, 200, 300)


def _by_d(inliers: bool = True, adversaries=("replace-mixture",), budgets=(0.05, 0.1)):
    ds = make_cube(datasets=tuple(f"gaussian.d_{d}" for d in DIMS), adversaries=adversaries,
                   budgets=budgets, instances=3)
    ds = ds.assign_coords(dataset_d=("dataset", np.array(DIMS, float)))
    ds.attrs["report_x"] = "dataset.d"
    ds.attrs["adversaries_info"] = json.dumps({a: {"name": a, "level": "sample", "mode": "replace"}
                                               for a in adversaries})
    if inliers:
        shape = tuple(ds.sizes[d] for d in ("dataset", "instance", "adversary", "budget"))
        ds["inlier_l2"] = (("dataset", "instance", "adversary", "budget"), np.full(shape, 0.02))
    return ds


def test_curves_are_drawn_against_the_parameter_one_panel_per_budget(tmp_path):
    ds = _by_d()
    sections = build_report([load_cube(ds)], title="t")
    curves = next(s for s in sections if s.slug == "synthetic-curves")
    assert curves.title == "synthetic: error versus d"
    page = next(p for p in curves.pages if p.slug.endswith("-l2-by-d"))
    rec = page.record
    assert rec.xlabel == "d" and len(rec.panels) == 2  # one per budget
    assert list(rec.panels[0].x) == list(DIMS)
    assert rec.panels[0].curves[SAMPLING][0].tolist() == [0.02] * 3
    maha = next(p for p in curves.pages if p.slug.endswith("-mahalanobis-by-d")).record
    assert SAMPLING not in maha.panels[0].curves  # the reference is an l2 error
    pages = drawn_page_texts([ds], lambda slug: slug.endswith("-l2-by-d") or "mean-sd" in slug, tmp_path)
    assert len(pages) >= 2  # the curves above and the table, drawn
    text = squash(" ".join(pages.values()))
    assert squash("l2 error versus d, adversary replace-mixture") in text
    assert squash("mean (sd) per data set and method") in text and squash("d = 300") in text
    page = write_html([ds], tmp_path / "r.html").read_text()
    assert SAMPLING in page and 'id="synthetic-mean-sd"' in page


def test_the_adversaries_share_a_page_per_metric_when_their_panels_fit(tmp_path):
    """Three adversaries at two budgets: one page per metric, budget by budget and the adversaries in
    the suite's order (a paper sets its corruption schemes side by side); past `MAX_PANELS` panels,
    a page per adversary as before."""
    from cmbench.report.layout import MAX_PANELS

    three = ("replace-mixture", "replace-far", "replace-near")
    ds = _by_d(adversaries=three)
    curves = next(s for s in build_report([load_cube(ds)], title="t") if s.slug == "synthetic-curves")
    assert sorted(p.slug for p in curves.pages) == ["synthetic-l2-by-d", "synthetic-mahalanobis-by-d"]
    rec = next(p for p in curves.pages if p.slug == "synthetic-l2-by-d").record
    assert rec.title == "synthetic: l2 error versus d, by adversary"
    assert [p.title for p in rec.panels] == [f"{a}\n$\\epsilon$ = {b}" for b in ("0.05", "0.1") for a in three]
    assert all(SAMPLING in p.curves for p in rec.panels)
    text = squash(" ".join(drawn_page_texts([ds], lambda slug: slug == "synthetic-l2-by-d", tmp_path).values()))
    assert all(squash(a) in text for a in three)

    many = tuple(f"replace-{k}" for k in range(MAX_PANELS // 2 + 1))  # 2 budgets: past MAX_PANELS panels
    cube = load_cube(_by_d(adversaries=many))
    curves = next(s for s in build_report([cube], title="t") if s.slug == "synthetic-curves")
    assert [p.slug for p in curves.pages] == [f"synthetic-{a}-{m}-by-d" for a in many for m in cube.metrics]
    assert all(len(p.record.panels) == 2 for p in curves.pages)


def test_mean_sd_table_gives_each_method_per_data_set():
    ds = _by_d(inliers=False)
    sections = build_report([load_cube(ds)], title="t")
    table = next(s for s in sections if s.slug == "synthetic-mean-sd").pages[0].text
    rows = [row for b in table.blocks if b[0] == "table" for row in b[2]]
    l2 = ds["l2"].sel(recoverer="none", estimator="mean", adversary="replace-mixture", budget=0.05)
    first = l2.sel(dataset="gaussian.d_100").values
    from cmbench.report.layout import fmt_num
    want = f"{fmt_num(first.mean())} ({fmt_num(first.std(ddof=1))})"
    assert any(want in row for row in rows)


def test_a_cube_without_report_x_keeps_its_budget_curves():
    sections = build_report([load_cube(make_cube())], title="t")
    assert next(s for s in sections if s.slug == "synthetic-curves").title == "synthetic: error versus budget"
    assert not any(s.slug.endswith("-mean-sd") for s in sections)


def test_the_sampling_error_is_drawn_for_sample_level_adversaries_only():
    """A value- or coordinate-level adversary touches most rows: the rows it left are no reference."""
    ds = make_cube()  # value level
    ds["inlier_l2"] = (("dataset", "instance", "adversary", "budget"),
                       np.full(tuple(ds.sizes[d] for d in ("dataset", "instance", "adversary", "budget")), 0.02))
    pages = [p for s in build_report([load_cube(ds)], title="t") for p in s.pages]
    assert not any(SAMPLING in getattr(p.record, "panels", [None])[0].curves
                   for p in pages if hasattr(p.record, "panels"))
    sample = _by_d()
    del sample.attrs["report_x"]  # budget curves, a sample-level adversary: the reference is drawn
    pages = [p for s in build_report([load_cube(sample)], title="t") for p in s.pages
             if p.slug.endswith("-l2") and hasattr(p.record, "panels")]
    assert pages and all(SAMPLING in p.record.panels[0].curves for p in pages)
