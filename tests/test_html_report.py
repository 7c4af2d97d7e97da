"""The interactive HTML report, opened in a real headless Chromium (Debian's `chromium`)."""
import json
import re
import shutil
import subprocess
import sys

import pytest

from cmbench.report.html import write_html
from test_report import make_cube, set_cells

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_self_contained_and_same_sections(tmp_path):
    ds = make_cube(instances=3)
    set_cells(ds, "failed", "RuntimeError: estimator exploded", dataset="uniform", budget=0.3,
              recoverer="none", estimator="coord-median")
    out = write_html([ds], tmp_path / "r.html")
    text = out.read_text()
    # nothing from the network: no external script, stylesheet or image
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=[\"']?(https?:)?//", text)
    assert "<script src" not in text and text.count("<script") >= 3
    for fragment in ("Provenance", "synthetic: error versus budget", "synthetic: ranking of methods",
                     "Friedman test", "Post-hoc test: Nemenyi", "synthetic: cells that did not run",
                     "RuntimeError: estimator exploded", "<svg"):
        assert fragment in text, fragment
    assert not list(tmp_path.glob("*.part"))


def test_report_command_writes_html(smoke_run, tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "cmbench.cli", *map(str, a)],  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    result = run("report", smoke_run / "smoke" / "synthetic.nc", "-o", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "r.html").stat().st_size > 1_000_000  # plotly inlined
    bad = run("report", smoke_run / "smoke" / "synthetic.nc", "-o", tmp_path / "r2.html", "--png", tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("cmbench: error:") and "--png" in bad.stderr
    assert (smoke_run / "smoke.html").is_file()  # cmbench suite writes it beside the PDF


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_in_chromium_plots_render_and_the_legend_hides_a_method(smoke_run, tmp_path):
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    page_errors, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("pageerror", lambda exc: page_errors.append(str(exc)))
            page.on("request", lambda req: requests.append(req.url))
            page.goto((smoke_run / "smoke.html").as_uri())
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20_000)
            # two metrics' curves, recovery RMSE and fraction, the runtime chart: SVG by plotly
            plots = page.query_selector_all(".js-plotly-plot")
            assert len(plots) == 5
            assert all(p.query_selector(".main-svg .scatterlayer, .main-svg .barlayer") for p in plots)
            first = plots[0]

            def drawn_paths(method):
                return page.evaluate(
                    """([gd, m]) => gd._fullData.filter(t => t.legendgroup === m && t.visible === true)
                                   .length""", [first, method])

            def visible_lines():
                return first.eval_on_selector_all(".scatterlayer .trace",
                                                  "els => els.filter(e => e.querySelector('path.js-line')"
                                                  " && e.style.opacity !== '0').length")

            assert drawn_paths("Empirical Mean") >= 1
            before = visible_lines()
            assert before >= 3  # a curve per method at least
            first.query_selector(".legend .traces:has-text('Empirical Mean')").click()
            page.wait_for_function(
                "gd => gd._fullData.filter(t => t.legendgroup === 'Empirical Mean')"
                ".every(t => t.visible === 'legendonly')", arg=first, timeout=5_000)
            assert drawn_paths("Empirical Mean") == 0 and drawn_paths("C-Median") >= 1
            assert visible_lines() < before
            page.screenshot(path=str(tmp_path / "toggled.png"))
            first.query_selector(".legend .traces:has-text('Empirical Mean')").click()
            page.wait_for_function(
                "gd => gd._fullData.filter(t => t.legendgroup === 'Empirical Mean')"
                ".every(t => t.visible === true)", arg=first, timeout=5_000)
            assert page.query_selector(".cd svg") is not None  # the CD diagram, inline
        finally:
            browser.close()
    assert not page_errors, page_errors
    assert all(u.startswith(("file:", "data:", "blob:", "about:")) for u in requests), requests


@pytest.mark.parametrize("rows, cols, titles, spacing", [
    (1, 1, 1, {}), (1, 3, 3, {}), (2, 3, 5, {}), (2, 2, 4, {}), (1, 3, 3, {"vertical_spacing": 0.1}),
    (2, 3, 5, {"vertical_spacing": 0.12}), (3, 3, 7, {"vertical_spacing": 0.12}), (4, 3, 12, {})])
@pytest.mark.parametrize("horizontal", [0.06, None])
def test_plain_json_figures_match_plotlys_subplots(rows, cols, titles, spacing, horizontal):
    """The report writes figures as plain JSON: the same grid, axes and traces as plotly's objects
    (the grid's arithmetic is cmbench's own: plotly.subplots is not imported to write a report)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from cmbench.report.html import _Plot

    names = [f"panel {i}" for i in range(titles)]
    ref = make_subplots(rows=rows, cols=cols, subplot_titles=names, horizontal_spacing=horizontal, **spacing)
    ours = _Plot.grid(rows, cols, names, horizontal_spacing=horizontal, **spacing)
    for i in range(titles):
        ref.add_trace(go.Scatter(x=[0, 1], y=[i, i], name=f"t{i}"), row=i // cols + 1, col=i % cols + 1)
        ref.update_yaxes(range=[0, i + 1], row=i // cols + 1, col=i % cols + 1)
        ours.add(i + 1, type="scatter", x=[0, 1], y=[i, i], name=f"t{i}")
        ours.axis("y", i + 1)["range"] = [0, i + 1]
    want = ref.to_plotly_json()
    want["layout"].pop("template")
    assert [{k: list(v) if isinstance(v, tuple) else v for k, v in t.items()} for t in want["data"]] == \
        [dict(t, type="scatter") for t in ours.data]
    assert json.loads(json.dumps(want["layout"])) == json.loads(json.dumps(ours.layout))
