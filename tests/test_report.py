"""Reports from results cubes built by hand (the layout the runner writes)."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from cmbench.errors import UserError
from cmbench.report import write_report
from cmbench.report.content.figures import thresholds_for
from cmbench.report.load import load_cube, summarize
from cmbench.report.style import MethodStyles
from cmbench.report.content.tables import baseline_difference, brief_error, cells_with_status, ranking
from helpers import SMOKE_METHODS, make_cube, pdf_info, pdf_pages_text, set_cells, squash

# -- reports -------------------------------------------------------------------------
def test_smoke_report_pages_text_metadata_and_png(tmp_path):
    ds = make_cube(adversaries=("min-rho", "random-rho"))
    path = tmp_path / "synthetic.nc"
    ds.to_netcdf(path, engine="netcdf4")
    out = write_report([path], tmp_path / "out" / "report.pdf", png_dir=tmp_path / "png",
                       title="My smoke run")
    assert out == tmp_path / "out" / "report.pdf" and out.is_file()
    assert not list(out.parent.glob("*.part"))
    pages = pdf_pages_text(out)
    # provenance + 2 adversaries x 2 metrics + ranking + CD diagram per metric + runtime + cells
    assert len(pages) == 1 + 2 * 2 + 1 + 2 + 1 + 1
    text = squash("\n".join(pages))
    for label in list(SMOKE_METHODS) + ["gaussian", "uniform", "min-rho", "random-rho"]:
        assert squash(label) in text, label
    assert "testhost" not in text and "0.1.0" in text and "200x16" in text  # no host name in a shared report
    assert "Nocellfailed" in text
    # thresholds of the value-level adversary drawn and labelled; m_A, n, r in titles
    assert "recoverythresholds" in text and "=0.143" in text and "=0.25" in text
    assert "Lemma3" in text and "=0.156" in text and "=0.0781" not in text
    assert "n=16" in text and "r=8" in text

    info = pdf_info(out)
    assert info["Title"] == "My smoke run" and info["Author"].startswith("cmbench")
    pngs = sorted(p.name for p in (tmp_path / "png").glob("*.png"))
    # the figures (2 adversaries x 2 metrics, CD diagrams, runtime); not the text pages
    assert pngs == sorted([f"synthetic-{a}-{m}.png" for a in ("min-rho", "random-rho")
                           for m in ("l2", "mahalanobis")] + ["synthetic-runtime.png"]
                          + [f"synthetic-cd-{m}.png" for m in ("l2", "mahalanobis")])
    assert all((tmp_path / "png" / p).read_bytes()[:4] == b"\x89PNG" for p in pngs)


def test_failed_cells_are_listed_and_gaps_are_not_failures(tmp_path):
    ds = make_cube(metrics=("l2",))  # cells fail whatever the metric: one is enough
    set_cells(ds, "failed", "ValueError: estimator coord-median returned NaN",
              dataset="uniform", budget=0.3, recoverer="none", estimator="coord-median")
    set_cells(ds, "timeout", "cell exceeded 60 s", dataset="gaussian", instance=1,
              budget=0.2, recoverer="exact", estimator="mean")
    set_cells(ds, "undefined", "no complete row left", dataset="gaussian", budget=0.3,
              recoverer="none", estimator="mean")
    out = write_report([ds], tmp_path / "r.pdf")
    pages = pdf_pages_text(out)
    text = squash("\n".join(pages))
    assert squash("ValueError: estimator coord-median returned NaN") in text
    assert squash("cell exceeded 60 s") in text
    assert "4cell(s)failedortimedout" in text  # 3 instances + 1 timeout, provenance page
    cells = [squash(p) for p in pages if squash(p).startswith("synthetic:cellsthatdidnotrun")]
    assert cells, "no page of cells that did not run"
    failed_part, _, gap_part = cells[0].partition("Gaps:")
    assert "returnedNaN" in failed_part and "norow" not in failed_part
    assert squash("no complete row left") in gap_part
    # the curve pages say why they have a gap
    assert "Gapsinthecurves" in text and "undefinedongaussian" in text

    df = cells_with_status(load_cube(ds), ("failed", "timeout"))
    assert set(df["status"]) == {"failed", "timeout"}
    assert df["cells"].sum() == 3 + 1
    assert df.loc[df.status == "failed", "instances"].iloc[0] == [0, 1, 2]


def test_failed_cells_group_into_exact_blocks():
    ds = make_cube()
    # a recoverer failing fails every estimator after it: one row
    set_cells(ds, "failed", "boom", dataset="gaussian", budget=[0.2, 0.3], instance=[0, 1],
              recoverer="none")
    set_cells(ds, "failed", "boom", dataset="gaussian", budget=0.1, instance=2,
              recoverer="none")
    df = cells_with_status(load_cube(ds), ("failed",))
    assert df["cells"].sum() == 2 * 2 * 2 + 2
    rows = {(tuple(r.budgets), tuple(r.instances)): r for r in df.itertuples()}
    assert set(rows) == {((0.2, 0.3), (0, 1)), ((0.1,), (2,))}
    top = rows[((0.2, 0.3), (0, 1))]
    assert top.estimators == ["coord-median", "mean"] and top.cells == 8
    assert set(top.method.split(", ")) == {"Empirical Mean", "C-Median"}
    tb = ('Traceback (most recent call last):\n  File "a.py", line 3, in f\n    g()\n'
          '  File "b.py", line 9, in g\n    raise ValueError("bad")\nValueError: bad\n')
    assert brief_error(tb) == 'ValueError: bad (File "b.py", line 9, in g)'
    assert brief_error("x" * 1000).endswith("…") and len(brief_error("x" * 1000)) == 400


def test_older_cube_is_reported_without_rerun(tmp_path):
    """An older run: no methods/metrics/info attributes, no optional variables,
    another cmbench version; read from disk and reported as it is."""
    ds = make_cube(attrs=False).drop_vars(["recovered_fraction", "discarded_fraction"])
    ds.attrs.update({"suite": "paper", "experiment": "old", "cmbench_version": "0.0.9",
                     "created": "2021-05-01T00:00:00", "seed": 1})
    path = tmp_path / "old.nc"
    ds.to_netcdf(path, engine="netcdf4")
    cube = load_cube(path)
    assert list(cube.methods) == ["exact+coord-median", "exact+mean", "none+coord-median",
                                  "none+mean"]
    assert cube.metrics == ["mahalanobis", "l2"]
    text = squash("\n".join(pdf_pages_text(write_report([path], tmp_path / "old.pdf"))))
    assert "0.0.9" in text and "none+coord-median" in text and "exact+mean" in text


def test_several_experiments_baseline_and_real_data(tmp_path):
    synth = make_cube()
    real = make_cube(datasets=("leaf", "breast", "blood", "sensor", "mice"), real=(
        "leaf", "breast", "blood", "sensor", "mice"), metrics=("l2",), experiment="real",
        methods={k: v for k, v in SMOKE_METHODS.items() if k != "Two-Step-E"})
    base = synth.copy(deep=True)
    base["l2"] = base["l2"] + 0.5
    out = write_report([synth, real], tmp_path / "r.pdf", baseline=base)
    pages = [squash(p) for p in pdf_pages_text(out)]
    kinds = ("cmbenchreport:smoke", "Mahalanobiserrorversusbudget", "l2errorversusbudget",
             "Mahalanobiserror,thisrunminusbaseline", "l2error,thisrunminusbaseline",
             "rankingofmethods", "runtimepermethod", "cellsthatdidnotrun",
             "differenceagainstthebaseline", "critical-differencediagram(Mahalanobiserror)",
             "critical-differencediagram(l2error)")
    found = {}
    for p in pages:  # every page has one title; the text order within a page is free
        hits = [(e, k) for e in ("", "synthetic:", "real:") for k in kinds
                if (e + k) in p and (e or k.startswith("cmbench"))]
        assert len(hits) == 1, hits
        found[hits[0]] = found.get(hits[0], 0) + 1
    n_prov = found.pop(("", "cmbenchreport:smoke"))
    assert n_prov in (1, 2)  # provenance may run onto a second page
    s, r = "synthetic:", "real:"
    assert found == {
        (s, "Mahalanobiserrorversusbudget"): 1, (s, "l2errorversusbudget"): 1,
        (s, "rankingofmethods"): 1, (s, "runtimepermethod"): 1, (s, "cellsthatdidnotrun"): 1,
        (s, "Mahalanobiserror,thisrunminusbaseline"): 1, (s, "l2error,thisrunminusbaseline"): 1,
        (s, "differenceagainstthebaseline"): 1,
        (s, "critical-differencediagram(Mahalanobiserror)"): 1,
        (s, "critical-differencediagram(l2error)"): 1, (r, "critical-differencediagram(l2error)"): 1,
        (r, "l2errorversusbudget"): 1,  # real data: no Mahalanobis, no baseline
        (r, "rankingofmethods"): 1, (r, "runtimepermethod"): 1, (r, "cellsthatdidnotrun"): 1}
    assert "cmbenchreport:smoke" in pages[0] and "real:cellsthatdidnotrun" in pages[-1]
    real_curves = [p for p in pages if "real:l2errorversus" in p]
    assert all(d in real_curves[0] for d in ("leaf", "breast", "blood", "sensor", "mice"))
    assert "Two-Step-E" not in real_curves[0]
    table = next(p for p in pages if p.startswith("synthetic:differenceagainst"))
    assert "-0.5" in table  # mean difference in the baseline table

    diff, half, _, _ = baseline_difference(load_cube(synth), load_cube(base), "l2")
    np.testing.assert_allclose(diff.values, -0.5)
    assert np.isfinite(half.values).all()


def test_thresholds_apply_by_level_and_mode_where_structure_is_known():
    ds = make_cube(datasets=("gaussian", "leaf"), real=("leaf",))

    def values(level, mode, dataset="gaussian"):
        ds.attrs["adversaries_info"] = json.dumps(
            {"min-rho": {"name": "x", "level": level, "mode": mode}})
        return [v for _, v in thresholds_for(load_cube(ds), dataset, "min-rho")]

    # A2 (value) with missing entries: m_A/2n and both thresholds of Lemma recovery_rho
    assert values("value", "missing") == pytest.approx([4 / 28, 5 / 32, 0.25])
    assert values("value", "replace") == pytest.approx([5 / 64])
    assert values("coordinate", "missing") == pytest.approx([1 / 16, 5 / 32])
    assert values("sample", "missing") == []
    assert values("value", "missing", dataset="leaf") == []  # structure unknown


def test_summary_is_mean_with_student_t_band():
    ds = make_cube(instances=5)
    set_cells(ds, "undefined", "why", instance=4, dataset="gaussian", budget=0.1)
    cube = load_cube(ds)
    s = summarize(cube.ok_values("l2"))
    v = ds["l2"].sel(dataset="gaussian", adversary="min-rho", budget=0.1, recoverer="none",
                     estimator="mean").values[:4]
    at = {"method": "Empirical Mean", "dataset": "gaussian", "adversary": "min-rho",
          "budget": 0.1}  # a dict: sel(method=...) is sel's own keyword
    assert float(s.mean.sel(at)) == pytest.approx(v.mean())
    t_975_3 = 3.182446305284263
    assert float(s.half.sel(at)) == pytest.approx(t_975_3 * v.std(ddof=1) / np.sqrt(4))
    assert int(s.count.sel(at)) == 4


def test_ranking_puts_the_dominant_method_first_and_penalizes_gaps():
    ds = make_cube()  # error of method k grows like k + 1
    df = ranking(load_cube(ds), "l2")
    assert list(df["method"]) == ["Empirical Mean", "C-Median", "Two-Step-E"]
    assert list(df["mean_rank"]) == [1.0, 2.0, 3.0]
    # Empirical Mean undefined everywhere but budget 0: it no longer wins
    set_cells(ds, "undefined", "no row", budget=[0.1, 0.2, 0.3], recoverer="none",
              estimator="mean")
    df = ranking(load_cube(ds), "l2")
    assert df["method"].iloc[0] == "C-Median"
    row = df.set_index("method").loc["Empirical Mean"]
    assert row.cells == 2 and row.total_cells == 8  # 2 data sets x 4 budgets


def test_styles_are_stable_and_distinct():
    s = MethodStyles(["a", "b"])
    assert s["a"] == MethodStyles(["a"])["a"]
    many = [s[f"m{i}"] for i in range(20)]
    assert len({(x.color, x.marker, x.linestyle) for x in many}) == 20


def test_errors_name_file_and_missing_part(tmp_path):
    path = tmp_path / "broken.nc"
    make_cube().drop_vars("status").to_netcdf(path, engine="netcdf4")
    with pytest.raises(UserError, match=r"broken\.nc.*status"):
        write_report([path], tmp_path / "r.pdf")
    junk = tmp_path / "junk.nc"
    junk.write_text("not a cube")
    with pytest.raises(UserError, match=r"junk\.nc"):
        write_report([junk], tmp_path / "r.pdf")
    with pytest.raises(UserError, match=r"nothere\.nc.*not found"):
        write_report([tmp_path / "nothere.nc"], tmp_path / "r.pdf")
    bad = make_cube()
    bad.attrs["methods"] = json.dumps({"X": ["ghost", "mean"]})
    with pytest.raises(UserError, match=r"ghost"):
        write_report([bad], tmp_path / "r.pdf")
    other = make_cube(methods={"Other": ["none", "mean"]})
    with pytest.raises(UserError, match=r"baseline shares no method"):
        write_report([make_cube()], tmp_path / "r.pdf", baseline=other)
    assert not (tmp_path / "r.pdf").exists()


def test_report_never_imports_the_runner():
    pkg = Path(__file__).resolve().parents[1] / "cmbench" / "report"
    files = sorted(pkg.rglob("*.py"))  # content/ and render/ too
    assert {f.parent.name for f in files} >= {"report", "content", "render"}
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            assert not any("runner" in n for n in names), f.relative_to(pkg)


# -- the page cache: a page is drawn again only when its record changed ---------------------------
def _drawn_pages(monkeypatch) -> list:
    """Record the slug of every page drawn from now on (by the default drawing strategy)."""
    from cmbench.report.render import drawing

    drawn = []
    original = drawing.draw_here

    def draw_here(pages, meta, svg=()):
        drawn.extend(p.slug for _, p in pages)
        return original(pages, meta, svg)

    monkeypatch.setattr(drawing, "draw_here", draw_here)
    return drawn


def _texts_without_times(path) -> list:
    return [re.sub(r"Report written \S+", "", t) for t in pdf_pages_text(path)]


def test_page_cache_redraws_only_the_pages_whose_data_changed(tmp_path, monkeypatch):
    ds = make_cube(adversaries=("min-rho", "random-rho"))
    cache = tmp_path / "pages"
    drawn = _drawn_pages(monkeypatch)
    first = write_report([ds], tmp_path / "a.pdf", page_cache=cache)
    slugs = list(drawn)
    assert {"synthetic-min-rho-l2", "synthetic-random-rho-l2", "synthetic-runtime"} <= set(slugs)

    drawn.clear()  # the same cube: every page but provenance (it says when) is reused
    again = write_report([ds], tmp_path / "b.pdf", page_cache=cache)
    assert set(drawn) == {"provenance"}
    assert _texts_without_times(again) == _texts_without_times(first)

    changed = ds.copy(deep=True)  # one method's l2 error under one adversary
    sel = dict(adversary="random-rho", recoverer="none", estimator="mean")
    changed["l2"].loc[sel] = changed["l2"].loc[sel] * 3
    kept = set(cache.glob("*.pdf"))
    drawn.clear()
    merged = write_report([changed], tmp_path / "c.pdf", page_cache=cache)
    redrawn = set(drawn)
    assert "synthetic-random-rho-l2" in drawn
    assert not {"synthetic-min-rho-l2", "synthetic-min-rho-mahalanobis", "synthetic-random-rho-mahalanobis",
                "synthetic-runtime", "synthetic-cd-mahalanobis"} & set(drawn)
    fresh = write_report([changed], tmp_path / "fresh.pdf")  # no cache: every page drawn
    assert _texts_without_times(merged) == _texts_without_times(fresh)
    assert len(pdf_pages_text(merged)) == len(slugs)

    # a torn or edited document is never used: the pages it held (here, those drawn just now) are
    # drawn again, the others still taken from the cache, and no report uses it any more
    (new,) = set(cache.glob("*.pdf")) - kept
    blob = bytearray(new.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    new.write_bytes(bytes(blob))
    drawn.clear()
    again = write_report([changed], tmp_path / "d.pdf", page_cache=cache)
    # provenance says when: redrawn whenever the clock has moved on since the last report, so
    # either run may or may not have drawn it
    assert set(drawn) - {"provenance"} == redrawn - {"provenance"}
    assert _texts_without_times(again) == _texts_without_times(fresh)
    assert new not in set(cache.glob("*.pdf"))


def test_page_records_have_a_digest_and_the_same_record_the_same_digest():
    from cmbench.report import build_pages
    from cmbench.report.load import load_cube as load
    from cmbench.report.render.pagecache import record_digest

    ds = make_cube(adversaries=("min-rho", "random-rho"))
    a = build_pages([load(ds)], title="t")
    b = build_pages([load(ds.copy(deep=True))], title="t")
    da = [record_digest(p) for p in a if p.slug != "provenance"]
    assert all(da) and da == [record_digest(p) for p in b if p.slug != "provenance"]
    assert len(set(da)) == len(da)  # every page its own record


def test_a_wide_confidence_band_does_not_flatten_the_curves():
    from matplotlib.figure import Figure

    from cmbench.report.plots.curves import _ylimits
    from cmbench.report.layout import BAND_RATIO

    ax = Figure().add_subplot()
    c = np.array([0.1, 0.5, 1.0, 2.0])
    wide = c + np.array([0.0, 0.1, 0.2, 40.0])  # one budget with few instances
    assert _ylimits(ax, {"m": (c, wide)}, floor_zero=True) is None
    assert ax.get_ylim()[1] == pytest.approx(1.06 * BAND_RATIO * 2.0)
    ax = Figure().add_subplot()
    _ylimits(ax, {"m": (c, c + 0.1)}, floor_zero=True)  # a narrow band is shown whole
    assert ax.get_ylim()[1] == pytest.approx(1.06 * 2.1)


def test_runtime_page_labels_cover_no_per_dataset_marker():
    """The mean seconds per method are written in the method's label, not at the bar's end,
    where a data set's mean (a marker just beyond the bar) was hidden under the text."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from cmbench.report.content import figures
    from cmbench.report.style import RC, MethodStyles

    ds = make_cube(datasets=("gaussian", "uniform", "exponential"))
    # one data set 10% slower than the others: its marker sits just right of the bar's end
    ds["seconds"].values[list(ds["dataset"].values).index("exponential")] *= 1.1
    cube = load_cube(ds)
    page = figures.runtime_page(cube, MethodStyles(cube.methods))
    with matplotlib.rc_context(RC):
        fig = page.draw(page.record)
        renderer = FigureCanvasAgg(fig).get_renderer()
        ax = fig.axes[0]
        markers = [b for coll in ax.collections for b in _marker_boxes(coll, renderer)]
        texts = [t.get_window_extent(renderer) for t in ax.texts + ax.get_yticklabels() if t.get_text()]
    assert markers and all(not t.overlaps(m) for t in texts for m in markers)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert all(lab.endswith(" s") and "\n" in lab for lab in labels), labels  # "<method>\n<mean> s"


def _marker_boxes(collection, renderer):
    from matplotlib.transforms import Bbox

    size = np.sqrt(collection.get_sizes()[0]) * renderer.points_to_pixels(1.0)  # marker width in pixels
    for x, y in collection.get_offset_transform().transform(collection.get_offsets()):
        yield Bbox.from_bounds(x - size / 2, y - size / 2, size, size)


def test_pdf_pages_text_gives_each_page_its_own_text_when_pages_repeat(tmp_path):
    """The tests' reader of PDFs remembers a page's text by its content: a page met again gets the
    text it had, a page that differs (one word, same fonts) gets its own."""
    import pypdf
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    def document(path, words):
        with PdfPages(path) as pdf:
            for word in words:
                fig = Figure(figsize=(2, 1))
                fig.text(0.1, 0.5, word)
                pdf.savefig(fig)
        return path

    first = document(tmp_path / "a.pdf", ["alpha", "beta"])
    second = document(tmp_path / "b.pdf", ["alpha", "betb"])
    assert [t.strip() for t in pdf_pages_text(first)] == ["alpha", "beta"]
    assert [t.strip() for t in pdf_pages_text(second)] == ["alpha", "betb"]
    assert pdf_pages_text(second) == [p.extract_text() for p in pypdf.PdfReader(second).pages]


def test_a_pools_groups_keep_the_report_order():
    """Each process's document holds its pages in the report's order, whatever their costs: a
    lone document holding every page is the report itself."""
    from cmbench.report.layout import Page
    from cmbench.report.render.drawing import split

    pages = [(i, Page(f"p{i}", i, _no_draw, cost=cost)) for i, cost in enumerate([0.2, 1.0, 3.0, 0.5, 2.0])]
    assert [[i for i, _ in g] for g in split(pages, 1)] == [[0, 1, 2, 3, 4]]
    groups = split(pages, 2)
    assert sorted(i for g in groups for i, _ in g) == [0, 1, 2, 3, 4]
    assert all([i for i, _ in g] == sorted(i for i, _ in g) for g in groups)
    assert sorted(sum(p.cost for _, p in g) for g in groups) == pytest.approx([3.2, 3.5])  # balanced by cost


def _no_draw(record):
    raise AssertionError("not drawn")
