"""Kinds of report page as plugins register them: the built-in ones and the worked example of
docs/report-pages.md hold the same contract, and a plugin's page reaches both reports."""
from __future__ import annotations

import dataclasses
import json
import pickle
import re
from pathlib import Path

import pytest

from cmbench.errors import PluginError
from cmbench.plugins import load_plugins
from cmbench.report import Page, PageKind, Record, Section
from cmbench.report.kinds import page_kinds
from cmbench.report.load import load_cube
from cmbench.report.model import build_report
from cmbench.report.render.pagecache import record_digest
from conftest import cli_inproc, cli_inproc_result, good_suite
from helpers import make_cube, pdf_pages_text

DOC = Path(__file__).resolve().parents[1] / "docs" / "report-pages.md"


@pytest.fixture
def example(tmp_path) -> Path:
    """The page's plugin, saved under the name its first line gives."""
    (code,) = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)
    name = code.splitlines()[0].removeprefix("# ").strip()
    path = tmp_path / name
    path.write_text(code)
    return path


def test_every_registered_kind_keeps_the_record_contract(tmp_path, example):
    """Each page of each kind holds a `Record` of a type its kind registers, drawn by the drawing
    registered for it; its digest survives pickling (a drawing process gets it pickled), and the
    drawing gives a figure."""
    from matplotlib.figure import Figure

    kinds = page_kinds(load_plugins([example]))
    names = [k.name for k in kinds]
    assert names[:2] == ["provenance", "claims"]
    assert names[-3:-1] == ["theory", "suite-file"]  # the suite file: the built-in appendix
    assert kinds[-1].name == "cells-per-status"  # a plugin's kinds after the built-in ones
    for kind in kinds:
        for rtype in kind.records:
            assert dataclasses.is_dataclass(rtype), (kind.name, rtype)
    ds = make_cube()
    ds.attrs["theory_figures"] = json.dumps(["fig:disCompare"])
    ds.attrs["suite_text"] = "name = 'x'\n" * 80  # long enough to continue on a second page
    cube = load_cube(ds, index=0)
    base = load_cube(make_cube(seed=1), index=1)
    sections = build_report([cube], title="t", baseline=base, kinds=kinds)
    by_kind = {k.name: k for k in kinds}
    seen: dict[str, set] = {}
    drawn = set()
    for section in sections:
        for page in section.pages:
            kind = by_kind[section.kind]
            assert page.draw is kind.records[type(page.record)], (kind.name, page.slug)
            seen.setdefault(kind.name, set()).add(type(page.record))
            assert isinstance(page.record, Record), (kind.name, page.slug)
            digest = record_digest(page)
            assert record_digest(Page(page.slug, pickle.loads(pickle.dumps(page.record)), page.draw)) == digest
            assert page.html is kind.html.get(type(page.record))
            assert not (page.continues and page.text is not None), page.slug
            if (kind.name, type(page.record)) not in drawn:
                drawn.add((kind.name, type(page.record)))
                assert isinstance(page.draw(page.record), Figure), page.slug
    assert any(p.continues for s in sections if s.kind == "suite-file" for p in s.pages)
    # the kinds this cube has no page of: no claim, no parameter varied, no adaptive adversary,
    # no recovery to judge
    assert set(by_kind) - set(seen) == {"claims", "mean-sd", "stress", "recovery"}


def test_a_plugin_page_is_in_both_reports(tmp_path, example):
    """The worked example, loaded from its file by `--plugin`, adds its page to the suite's PDF and
    HTML, and to `cmbench report` drawn from the cube alone."""
    out = tmp_path / "out"
    suite = good_suite(tmp_path, 'metrics = ["l2", "mahalanobis"]', 'metrics = ["l2"]')  # a short report
    code, err = cli_inproc("suite", suite, "--out", out, "--plugin", example, "--workers", "1")
    assert code == 0, err
    pdf = [p for p in pdf_pages_text(out / "r.pdf") if "cells per status" in p]
    assert len(pdf) == 1 and "Each method's cells, counted by how they ended." in pdf[0], pdf
    html = (out / "r.html").read_text()
    assert re.search(r"<h2>[^<]*: cells per status</h2>", html)
    assert "<th class=\"num\">ok</th>" in html
    cube = next((out / "r").glob("*.nc"))
    # `cmbench report` loads the plugin's page kinds as the suite step does (the HTML: the PDF
    # renderer drew the page above, and the HTML is a tenth of the PDF's cost)
    code, err = cli_inproc("report", cube, "-o", tmp_path / "again.html", "--plugin", example)
    assert code == 0, err
    assert re.search(r"<h2>[^<]*: cells per status</h2>", (tmp_path / "again.html").read_text())
    code, err = cli_inproc("report", cube, "-o", tmp_path / "plain.html")
    assert code == 0, err
    assert "cells per status" not in (tmp_path / "plain.html").read_text()


def test_a_page_its_kind_does_not_register_is_refused():
    """A section builder whose page holds an unregistered record, and a hook returning something
    else than page kinds, are errors naming the kind or the plugin."""
    from cmbench.report.plots.curves import draw_curves
    from cmbench.report.layout import TextPage, draw_text_page, text_pages, TextPages

    def sections(cube, ctx):
        text = TextPages("x")
        text.para("y")
        return [Section("x", "x", text_pages(text, "x"))]

    cube = load_cube(make_cube(), index=0)
    wrong = PageKind("wrong-draw", sections, {TextPage: draw_curves})
    with pytest.raises(PluginError, match=r"report page kind 'wrong-draw': page 'x' holds a TextPage drawn by "
                                          r"'draw_text_page', which the kind does not register"):
        build_report([cube], title="t", kinds=[wrong])
    assert build_report([cube], title="t", kinds=[PageKind("right", sections, {TextPage: draw_text_page})])
    registry = load_plugins([type("Bad", (), {"register_report_pages": staticmethod(lambda: ["page"])})()])
    with pytest.raises(PluginError, match=r"plugin .*Bad.*: register_report_pages returned 'page'; "
                                          r"expected cmbench.PageKind"):
        page_kinds(registry)
    with pytest.raises(PluginError, match=r"register_report_pages\(\) must return an iterable of "
                                          r"cmbench.PageKind, got int"):
        page_kinds(load_plugins([type("Five", (), {"register_report_pages": staticmethod(lambda: 5)})()]))
    def broken(cube, ctx):
        return [Section("x", "x", [Page("x", 1 / 0, draw_text_page)])]

    raises = type("Raises", (), {"register_report_pages": staticmethod(
        lambda: [PageKind("broken", broken, {TextPage: draw_text_page})])})()
    with pytest.raises(PluginError, match=r"plugin .*Raises.*, report page kind 'broken': its section builder "
                                          r"raised ZeroDivisionError"):
        build_report([cube], title="t", kinds=page_kinds(load_plugins([raises])))
    twice = type("Twice", (), {"register_report_pages": staticmethod(
        lambda: [PageKind("cells", sections, {TextPage: draw_text_page})])})()
    with pytest.raises(PluginError, match=r"duplicate report page kind 'cells': registered by plugin "
                                          r"cmbench.report.pages and by plugin"):
        page_kinds(load_plugins([twice]))


def test_check_builds_and_draws_a_plugin_page_kind(tmp_path, example):
    """`cmbench check --plugin` on a plugin that adds only a page kind checks that kind: built on
    the hand-made cube, its records digested, its pages drawn; the built-in kinds are not."""
    result = cli_inproc_result("check", "--plugin", example)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:4]] == ["PASS report page kind cells-per-status"] * 3 + [
        "SKIP report page kind cells-per-status"]
    assert "no HTML renderer registered" in lines[3]
    assert lines[-1] == "0 components, 1 report page kind, 4 checks: 3 passed, 0 failed, 1 skipped"


BROKEN_PAGES = '''
import threading
from dataclasses import dataclass

import cmbench
from cmbench.report import Page, PageKind, Section


@dataclass
class Plain:
    value: float


@dataclass
class Locked:
    lock: object


def plain(cube, context):
    return [Section("p", "p", [Page("p", Plain(1.0), draw_nothing)])]


def locked(cube, context):
    return [Section("l", "l", [Page("l", Locked(threading.Lock()), draw_locked)])]


def raises(cube, context):
    raise ValueError("no cube like this")


def draw_nothing(record):
    return None


def draw_locked(record):
    from matplotlib.figure import Figure
    return Figure()


def html_number(page, div_id, figures):
    return 5


@cmbench.hookimpl
def register_report_pages():
    return [PageKind("draws-nothing", plain, {Plain: draw_nothing}),
            PageKind("holds-a-lock", locked, {Locked: draw_locked}, html={Locked: html_number}),
            PageKind("raises", raises, {Plain: draw_nothing})]
'''


def test_check_names_what_is_wrong_with_each_page_kind(tmp_path):
    """Each broken kind fails the check it breaks, with the reason, and the others still run: exit 1."""
    (tmp_path / "broken_pages.py").write_text(BROKEN_PAGES)
    result = cli_inproc_result("check", "--plugin", tmp_path / "broken_pages.py")
    assert result.returncode == 1, result.stdout
    out = result.stdout
    assert "Traceback" not in out + result.stderr
    assert re.search(r"FAIL report page kind draws-nothing: each page's drawing returns a matplotlib Figure: "
                     r".*draw_nothing returned NoneType, not a Figure", out), out
    assert re.search(r"FAIL report page kind holds-a-lock: each page's record holds plain values only .*: "
                     r"page 'l': its Locked does not digest \(a page record holds a lock", out), out
    assert re.search(r"FAIL report page kind holds-a-lock: each HTML renderer returns .*: "
                     r".*returned int, not str", out), out
    assert re.search(r"FAIL report page kind raises: builds its sections .*: .*raised ValueError: no cube like this",
                     out), out
    assert out.count("SKIP report page kind raises") == 3
    assert out.splitlines()[-1] == "0 components, 3 report page kinds, 12 checks: 4 passed, 4 failed, 4 skipped"
