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


def _one_metric_cube():
    """The example cube with one metric (a shorter report, the same steps) and fig:disCompare."""
    ds = make_cube(metrics=("l2",))
    ds.attrs["theory_figures"] = json.dumps(["fig:disCompare"])
    return ds


@pytest.fixture(scope="module")
def first_reports(tmp_path_factory):
    """`_one_metric_cube`'s reports, written once by the report step with an empty page cache,
    for the tests that read them or copy them before writing again; ``calls`` counts the
    computations of fig:disCompare meanwhile."""
    folder = tmp_path_factory.mktemp("first-reports")
    with pytest.MonkeyPatch.context() as monkeypatch:
        calls = _counted_dis_compare(monkeypatch)
        pdf, html = write_suite_reports(_outputs(folder, _one_metric_cube()))
    return SimpleNamespace(folder=folder, pdf=pdf, html=html, calls=len(calls))


def _copy_of(first_reports, tmp_path: Path) -> SimpleNamespace:
    """The outputs of `first_reports` (cube and page cache, not the reports), copied into ``tmp_path``."""
    shutil.copytree(first_reports.folder / "smoke", tmp_path / "smoke")
    return _outputs(tmp_path, _one_metric_cube())


def test_a_figure_is_computed_once_for_both_reports_and_kept_for_the_next_run(tmp_path, monkeypatch,
                                                                                 first_reports):
    assert first_reports.calls == 1  # drawn for the PDF; the HTML took that drawing's SVG
    assert any("fig:disCompare" in t for t in pdf_pages_text(first_reports.pdf))
    page = first_reports.html.read_text()
    assert "d_ENTRY" in page and len(_svgs(page)) >= 2  # the figure and the CD diagrams
    outputs = _copy_of(first_reports, tmp_path)
    assert list((outputs.cache / "pages").glob("*.svg"))

    assert not [p for p in tmp_path.iterdir() if p.suffix in (".pdf", ".html")]  # the reports are not copied
    calls = _counted_dis_compare(monkeypatch)
    pdf, html = write_suite_reports(outputs)  # both reports again, from the page cache: nothing computed
    assert not calls and pdf.is_file() and html.is_file()
    assert _svgs(html.read_text()) == _svgs(page)

    from cmbench.report.render.html import write_html  # without a page cache, the HTML draws its figure itself

    alone = write_html([outputs.cubes[0]], tmp_path / "alone.html")
    assert len(calls) == 1
    assert _svgs(alone.read_text()) == _svgs(page)


def test_svg_figures_no_report_uses_are_deleted(tmp_path, first_reports):
    outputs = _copy_of(first_reports, tmp_path)
    first = {p.name for p in (outputs.cache / "pages").glob("*.svg")}
    assert first  # fig:disCompare and the critical-difference diagrams
    changed = _one_metric_cube()  # other numbers: other ranks, other diagrams
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
    outputs = _outputs(tmp_path, _one_metric_cube())
    pdf, html = write_suite_reports(outputs, workers=2)
    docs = {loc[0] for loc in json.loads((outputs.cache / "pages" / "index.json").read_text())["pages"].values()}
    assert len(docs) == 2  # drawn by the pool's two processes
    n_cd = html.read_text().count('class="cd"')
    assert n_cd >= 1 and len(drawn_here) == n_cd  # the CD diagrams only: fig:disCompare came from the pool
    alone = html_module.write_html([outputs.cubes[0]], tmp_path / "alone.html")  # drawn here, no cache
    assert _svgs(alone.read_text()) == _svgs(html.read_text())
