"""The report step of a suite run (`cmbench.report.suite_step`): the PDF and the HTML drawn from one
model, a figure computed once for both and kept for the next run, and no half-written report."""
from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from cmbench.report.content import theory_pages
from cmbench.report.suite_step import write_suite_reports

from helpers import make_cube, pdf_pages_text


def _outputs(tmp_path: Path, ds) -> SimpleNamespace:
    """A finished run's outputs (as the runner gives them) for the cube ``ds``."""
    from cmbench.cube import save
    from cmbench.stamps import content_digest

    cube = save(ds, tmp_path / "smoke" / "synthetic.nc")
    return SimpleNamespace(cubes=(cube,), digests=(content_digest(ds),), report=tmp_path / "smoke",
                           cache=tmp_path / "smoke" / ".cache")


def _counted_dis_compare(monkeypatch) -> list:
    """Count the computations of Figure fig:disCompare (its linear programs and drawing)."""
    calls = []
    original = theory_pages.draw_dis_compare

    def draw_dis_compare(page):
        calls.append(page)
        return original(page)

    monkeypatch.setattr(theory_pages, "draw_dis_compare", draw_dis_compare)
    return calls


def _svgs(html: str) -> list[str]:
    """The inline SVG figures of an HTML report, without the ids the page gives them."""
    return [re.sub(r'id="[^"]*"|#[\w.-]+', "", s) for s in re.findall(r"<svg.*?</svg>", html, flags=re.S)]


def test_a_figure_is_computed_once_for_both_reports_and_kept_for_the_next_run(tmp_path, monkeypatch):
    ds = make_cube(metrics=("l2",))  # one metric: a shorter report, the same steps
    ds.attrs["theory_figures"] = json.dumps(["fig:disCompare"])
    calls = _counted_dis_compare(monkeypatch)
    outputs = _outputs(tmp_path, ds)
    pdf, html = write_suite_reports(outputs)
    assert len(calls) == 1  # drawn for the PDF; the HTML took that drawing's SVG
    assert any("fig:disCompare" in t for t in pdf_pages_text(pdf))
    page = html.read_text()
    assert "d_ENTRY" in page and len(_svgs(page)) >= 2  # the figure and the CD diagrams
    kept = list((outputs.cache / "pages").glob("*.svg"))
    assert kept

    pdf.unlink()
    html.unlink()
    write_suite_reports(outputs)  # both reports again, from the page cache: nothing computed
    assert len(calls) == 1
    assert _svgs(html.read_text()) == _svgs(page)

    calls.clear()  # without a page cache, the HTML draws its figure itself
    from cmbench.report.render.html import write_html

    alone = write_html([outputs.cubes[0]], tmp_path / "alone.html")
    assert len(calls) == 1
    assert _svgs(alone.read_text()) == _svgs(page)


def test_svg_figures_no_report_uses_are_deleted(tmp_path):
    ds = make_cube(metrics=("l2",))  # one metric: a shorter report, the same steps
    outputs = _outputs(tmp_path, ds)
    pdf, html = write_suite_reports(outputs)
    first = {p.name for p in (outputs.cache / "pages").glob("*.svg")}
    assert first  # the critical-difference diagrams
    changed = ds.copy(deep=True)  # other numbers: other ranks, other diagrams
    changed["l2"][:] = changed["l2"].values[..., ::-1]
    write_suite_reports(_outputs(tmp_path, changed))
    second = {p.name for p in (outputs.cache / "pages").glob("*.svg")}
    index = json.loads((outputs.cache / "pages" / "index.json").read_text())
    assert second == {f"{n}.svg" for n in index["svgs"].values()}
    assert second - first and first - second


def test_a_pool_hands_its_figures_to_the_html(tmp_path, monkeypatch):
    from cmbench.report.render import drawing, html as html_module

    monkeypatch.setattr(drawing, "POOL_COST", 0.0)  # the pool draws even this small report
    drawn_here = []
    original = html_module.svg_of
    monkeypatch.setattr(html_module, "svg_of", lambda fig: drawn_here.append(fig) or original(fig))
    ds = make_cube(metrics=("l2",))  # one metric: fig:disCompare and one CD diagram, half the pages
    ds.attrs["theory_figures"] = json.dumps(["fig:disCompare"])
    outputs = _outputs(tmp_path, ds)
    pdf, html = write_suite_reports(outputs, workers=2)
    docs = {loc[0] for loc in json.loads((outputs.cache / "pages" / "index.json").read_text())["pages"].values()}
    assert len(docs) == 2  # drawn by the pool's two processes
    n_cd = html.read_text().count('class="cd"')
    assert n_cd >= 1 and not drawn_here  # fig:disCompare and the CD diagrams came from the pool
    alone = html_module.write_html([outputs.cubes[0]], tmp_path / "alone.html")  # drawn here, no cache
    assert _svgs(alone.read_text()) == _svgs(html.read_text())


def test_with_its_pages_drawn_by_a_pool_the_writing_process_imports_no_plotting_or_cluster_library(tmp_path):
    """A run's report drawn by warm workers: the process that writes both reports (and saved the
    cube) loads neither matplotlib nor distributed; the HTML's diagrams came with the pages."""
    import subprocess
    import sys

    pytest.importorskip("distributed")
    code = """if True:
        import sys
        from pathlib import Path
        from types import SimpleNamespace
        from cmbench import pools
        from cmbench.cube import save
        from cmbench.report.example import example_cube
        from cmbench.report.suite_step import write_suite_reports
        from cmbench.stamps import content_digest

        out = Path(sys.argv[1])
        ds = example_cube(metrics=("l2",))
        cube = save(ds, out / "smoke" / "synthetic.nc")
        pools.shared(2)  # started, as a sweep leaves them: any two pages or more are drawn there
        pdf, html = write_suite_reports(SimpleNamespace(cubes=(cube,), digests=(content_digest(ds),),
                                                        report=out / "smoke", cache=out / "smoke" / ".cache"),
                                        workers=2)
        assert html.read_text().count('class="cd"') >= 1
        loaded = sorted(m for m in ("matplotlib", "distributed") if m in sys.modules)
        assert not loaded, loaded
    """
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
