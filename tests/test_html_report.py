"""The interactive HTML report, opened in a real headless Chromium (Debian's `chromium`)."""
import json
import re
import shutil

import pytest

from cmbench.report.render.html import write_html
from conftest import assert_user_error, cli_inproc
from helpers import make_cube, pdf_pages_text, set_cells, squash

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


@pytest.fixture(scope="module")
def smoke_html(smoke_run, tmp_path_factory):
    """`cmbench report` of the smoke run's cube into an HTML file: (exit code, stderr, the file),
    once for this file's tests."""
    out = tmp_path_factory.mktemp("smoke-html") / "r.html"
    code, stderr = cli_inproc("report", smoke_run / "smoke" / "synthetic.nc", "-o", out)
    return code, stderr, out


def test_report_command_writes_html(smoke_run, smoke_html, tmp_path):
    code, stderr, html = smoke_html
    assert code == 0, stderr
    assert html.stat().st_size > 1_000_000  # plotly inlined
    code, stderr = cli_inproc("report", smoke_run / "smoke" / "synthetic.nc", "-o", tmp_path / "r2.html",
                              "--png", tmp_path)
    assert_user_error(code, stderr, "--png")
    assert not (tmp_path / "r2.html").exists()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_in_chromium_plots_render_and_the_legend_hides_a_method(smoke_html, tmp_path):
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    page_errors, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("pageerror", lambda exc: page_errors.append(str(exc)))
            page.on("request", lambda req: requests.append(req.url))
            code, stderr, html = smoke_html
            assert code == 0, stderr
            page.goto(html.as_uri())
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


CLAIMS = json.dumps([
    {"id": "a", "paper": "Fig. 1", "text": "the mean beats the median", "kind": "beats",
     "better": ["Empirical Mean"], "worse": ["C-Median"], "same": [], "datasets": ["gaussian"],
     "budgets": {"gaussian": {}}, "metric": "l2", "adversaries": ["min-rho"], "factor": 1.0, "peak": None,
     "rtol": 0.05},
    {"id": "b", "paper": "Fig. 2", "text": "the median beats the mean", "kind": "beats",
     "better": ["C-Median"], "worse": ["Empirical Mean"], "same": [], "datasets": ["gaussian"],
     "budgets": {"gaussian": {}}, "metric": "l2", "adversaries": ["min-rho"], "factor": 1.0, "peak": None,
     "rtol": 0.05}])


def _html_text(text: str) -> str:
    """The page's visible text, tags and scripts dropped, entities decoded, spaces removed."""
    import html as html_mod

    text = re.sub(r"<script.*?</script>", " ", text, flags=re.S)
    return squash(html_mod.unescape(re.sub(r"<[^>]+>", " ", text)))


def test_html_and_pdf_hold_the_same_sections_and_claims_verdicts(tmp_path):
    """One model, two renderers: every PDF page's title is a heading of the HTML, and the claims
    table (verdicts and measured numbers) is in both, with a baseline too."""
    from cmbench import verdicts as claims
    from cmbench.report import write_report
    from cmbench.report.model import build_report
    from cmbench.report.load import load_cubes

    ds = make_cube(instances=3, adversaries=("min-rho", "random-rho"))
    ds.attrs["claims"] = CLAIMS
    set_cells(ds, "failed", "RuntimeError: estimator exploded", dataset="uniform", budget=0.3,
              recoverer="none", estimator="coord-median")
    base = make_cube(instances=3, adversaries=("min-rho", "random-rho"), seed=1)
    pdf = write_report([ds], tmp_path / "r.pdf", baseline=base)
    page = write_html([ds], tmp_path / "r.html", baseline=base).read_text()
    text = _html_text(page)
    pages = [squash(t) for t in pdf_pages_text(pdf)]
    headings = [_html_text(h) for h in re.findall(r"<h[23][^>]*>(.*?)</h[23]>", page, re.S)]
    # every PDF page shows a heading of the HTML, every figure or text heading of the HTML is a PDF page's
    assert all(any(h in p for h in headings) for p in pages), [p[:60] for p in pages
                                                               if not any(h in p for h in headings)]
    figures = [_html_text(h) for h in re.findall(r"<h3>(.*?)</h3>", page, re.S)]
    assert figures and all(any(h in p for p in pages) for h in figures), figures
    sections = build_report(load_cubes([ds]), title="t", baseline=load_cubes([base])[0])
    assert [s.slug for s in sections] == re.findall(r'<section id="([^"]+)"', page)
    assert "baseline" in " ".join(s.slug for s in sections)
    verdicts = claims.evaluate_cube(ds)
    assert {v.verdict for v in verdicts} >= {"holds", "fails"}
    pdf_text = squash(" ".join(pdf_pages_text(pdf)))
    for v in verdicts:
        for fragment in (v.verdict, v.numbers, v.claim["text"]):
            assert squash(fragment) in text and squash(fragment) in pdf_text, fragment
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # no repeated element id


def test_two_cubes_of_one_experiment_name_get_distinct_ids(tmp_path):
    a, b = make_cube(), make_cube(seed=3)
    page = write_html([a, b], tmp_path / "r.html").read_text()
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)) and "synthetic-curves-2" in ids
