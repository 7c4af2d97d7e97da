"""The report step of a suite run (`cmbench.report.suite_step`): the PDF and the HTML drawn from one
model, a figure computed once for both and kept for the next run, and no half-written report."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from cmbench.report.content import theory_pages
from cmbench.report.plots import theory as plot_theory
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

    # the page builder's name and the kind's registered drawing (`report.pages`) are one function
    monkeypatch.setattr(theory_pages, "draw_dis_compare", draw_dis_compare)
    monkeypatch.setattr(plot_theory, "draw_dis_compare", draw_dis_compare)
    return calls


def _svgs(html: str) -> list[str]:
    """The inline SVG figures of an HTML report, without the ids the page gives them."""
    return [re.sub(r'id="[^"]*"|#[\w.-]+', "", s) for s in re.findall(r"<svg.*?</svg>", html, flags=re.S)]


def _dis_compare_cube():
    """The example cube with Figure fig:disCompare (one metric: a shorter report, the same steps)."""
    ds = make_cube(metrics=("l2",))
    ds.attrs["theory_figures"] = json.dumps(["fig:disCompare"])
    return ds


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> SimpleNamespace:
    """`_dis_compare_cube`'s run with both reports drawn here, once for this file's tests, and how
    often the figure was computed for them: tests work on a copy (`_copy`)."""
    folder = tmp_path_factory.mktemp("drawn")
    ds = _dis_compare_cube()
    with pytest.MonkeyPatch.context() as monkeypatch:
        calls = _counted_dis_compare(monkeypatch)
        outputs = _outputs(folder, ds)
        write_suite_reports(outputs)
    return SimpleNamespace(folder=folder, digests=outputs.digests, calls=len(calls))


def _copy(drawn: SimpleNamespace, tmp_path: Path) -> SimpleNamespace:
    """The outputs of `drawn`'s run (cube, reports, page cache) copied into ``tmp_path``."""
    shutil.copytree(drawn.folder, tmp_path, dirs_exist_ok=True)
    return SimpleNamespace(cubes=(tmp_path / "smoke" / "synthetic.nc",), digests=drawn.digests,
                           report=tmp_path / "smoke", cache=tmp_path / "smoke" / ".cache")


@pytest.fixture(scope="module")
def alone(drawn, tmp_path_factory) -> SimpleNamespace:
    """The HTML report of `drawn`'s cube written alone (no page cache): its SVG figures, and how
    often it computed fig:disCompare."""
    from cmbench.report.render.html import write_html

    with pytest.MonkeyPatch.context() as monkeypatch:
        calls = _counted_dis_compare(monkeypatch)
        html = write_html([drawn.folder / "smoke" / "synthetic.nc"], tmp_path_factory.mktemp("alone") / "alone.html")
    return SimpleNamespace(svgs=_svgs(html.read_text()), calls=len(calls))


def test_a_figure_is_computed_once_for_both_reports_and_kept_for_the_next_run(tmp_path, monkeypatch, drawn, alone):
    assert drawn.calls == 1  # drawn for the PDF; the HTML took that drawing's SVG
    outputs = _copy(drawn, tmp_path)
    pdf, html = (outputs.report.with_suffix(s) for s in (".pdf", ".html"))
    assert any("fig:disCompare" in t for t in pdf_pages_text(pdf))
    page = html.read_text()
    assert "d_ENTRY" in page and len(_svgs(page)) >= 2  # the figure and the CD diagrams
    kept = list((outputs.cache / "pages").glob("*.svg"))
    assert kept

    calls = _counted_dis_compare(monkeypatch)
    pdf.unlink()
    html.unlink()
    write_suite_reports(outputs)  # both reports again, from the page cache: nothing computed
    assert not calls
    assert _svgs(html.read_text()) == _svgs(page)

    assert alone.calls == 1  # without a page cache, the HTML draws its figure itself
    assert alone.svgs == _svgs(page)


def test_svg_figures_no_report_uses_are_deleted(tmp_path, drawn):
    outputs = _copy(drawn, tmp_path)
    first = {p.name for p in (outputs.cache / "pages").glob("*.svg")}
    assert first  # fig:disCompare and the critical-difference diagram
    changed = _dis_compare_cube()  # other numbers: other ranks, another diagram
    changed["l2"][:] = changed["l2"].values[..., ::-1]
    write_suite_reports(_outputs(tmp_path, changed))
    second = {p.name for p in (outputs.cache / "pages").glob("*.svg")}
    index = json.loads((outputs.cache / "pages" / "index.json").read_text())
    assert second == {f"{n}.svg" for n in index["svgs"].values()}
    assert second - first and first - second


def test_a_pool_hands_its_figures_to_the_html(tmp_path, monkeypatch, alone):
    from cmbench.report.render import drawing, html as html_module

    monkeypatch.setattr(drawing, "POOL_COST", 0.0)  # the pool draws even this small report
    drawn_here = []
    original = html_module.svg_of
    monkeypatch.setattr(html_module, "svg_of", lambda fig: drawn_here.append(fig) or original(fig))
    outputs = _outputs(tmp_path, _dis_compare_cube())  # fig:disCompare and one CD diagram
    pdf, html = write_suite_reports(outputs, workers=2)
    docs = {loc[0] for loc in json.loads((outputs.cache / "pages" / "index.json").read_text())["pages"].values()}
    assert len(docs) == 2  # drawn by the pool's two processes
    n_cd = html.read_text().count('class="cd"')
    assert n_cd >= 1 and not drawn_here  # fig:disCompare and the CD diagrams came from the pool
    assert alone.svgs == _svgs(html.read_text())  # as drawn here, without a cache


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
