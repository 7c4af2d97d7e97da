"""Reports of cubes that hold nothing to draw (every cell failed, undefined, NaN or inf), of awkward
method labels, and of report paths that cannot be written: a report with what the cube supports,
saying what it left out, or a one-line error naming the output path, before anything is drawn."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from cmbench.errors import UserError
from cmbench.report import write_report
from cmbench.report.render.html import write_html

from helpers import make_cube, pdf_pages_text, set_cells, squash


def _failed(ds):
    set_cells(ds, "failed", "RuntimeError: boom")
    return ds


def _undefined(ds):
    set_cells(ds, "undefined", "too few rows")
    return ds


def _nan(ds):
    ds["l2"][:] = np.nan
    ds["mahalanobis"][:] = np.nan
    return ds


def _inf(ds):
    ds["l2"][:] = np.inf
    ds["mahalanobis"][:] = np.inf
    return ds


@pytest.mark.parametrize("spoil", [_failed, _undefined, _nan, _inf])
def test_a_cube_with_no_value_gets_a_report_that_says_what_it_left_out(tmp_path, spoil):
    ds = spoil(make_cube(methods={"Empirical Mean": ("none", "mean")}, metrics=("l2",)))
    stale = _stale_temporary_file(tmp_path / "r.pdf")
    pdf = write_report([ds], tmp_path / "r.pdf")
    assert not stale.exists()  # a killed report's leftover is removed by the next report
    page = write_html([ds], tmp_path / "r.html").read_text()
    text = squash(" ".join(pdf_pages_text(pdf)))
    assert "Provenance" in page and "Left out: no curve page" in page
    assert squash("cells that did not run") in text


LONG = "a-very-long-method-label-" * 6  # 150 characters


@pytest.fixture(scope="module")
def awkward(tmp_path_factory):
    """PDF and HTML reports of a cube with awkward method labels and a suite file and host that
    must not show, read from a deep folder (one metric: every kind of page, a short report);
    the pages' text squashed, once for this file's tests."""
    folder = tmp_path_factory.mktemp("awkward")
    ds = make_cube(methods={"$5 vs $10": ("none", "mean"), LONG: ("none", "coord-median")}, metrics=("l2",))
    ds.attrs["suite_file"] = str(folder / "suites" / "mine.toml")
    ds.attrs["host"] = "secret-host"
    cube = folder / "deep" / "folder" / "synthetic.nc"
    cube.parent.mkdir(parents=True)
    ds.to_netcdf(cube, engine="netcdf4")
    pdf = squash(" ".join(pdf_pages_text(write_report([cube], folder / "r.pdf"))))
    return folder, pdf, write_html([cube], folder / "r.html").read_text()


def test_labels_with_dollars_and_long_labels_are_plain_text(awkward):
    _, pdf, page = awkward
    assert squash("$5 vs $10") in pdf and squash(LONG)[:60] in pdf
    assert "$5 vs $10" in page.replace("&#x27;", "'")


@pytest.mark.parametrize("kind", ["pdf", "html"])
def test_an_unwritable_report_path_is_named_before_anything_is_drawn(tmp_path, kind, monkeypatch):
    from cmbench.report import model

    folder = tmp_path / f"r.{kind}"
    folder.mkdir()  # a folder where the report should go
    built = []
    monkeypatch.setattr(model, "build_report", lambda *a, **k: built.append(1))
    writer = write_report if kind == "pdf" else write_html
    with pytest.raises(UserError, match=f"{folder}: is a folder"):
        writer([make_cube()], folder)
    assert not built


def _stale_temporary_file(report: Path) -> Path:
    """The temporary file a report killed an hour ago left beside ``report``."""
    import os
    import time

    stale = report.parent / f".{report.name}.abc123.tmp"
    stale.write_bytes(b"")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    return stale


def test_no_module_of_the_report_imports_another_in_a_circle():
    """Relative imports among cmbench/report's modules (at any depth, in functions too) form no cycle."""
    folder = Path(__file__).resolve().parents[1] / "cmbench" / "report"
    mods = {".".join(p.relative_to(folder).with_suffix("").parts): p for p in folder.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod.split(".")[:-1] if not mod.endswith("__init__") else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level >= 1):
                continue
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            if node.level - 1 > len(package):
                continue  # outside the report package
            targets = [".".join(base + node.module.split("."))] if node.module else []
            targets += [".".join(base + ([*node.module.split(".")] if node.module else []) + [a.name])
                        for a in node.names]
            graph[mod] |= {t for t in targets if t in mods and t != mod}
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for n in graph[m]:
            if state.get(n) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(n):] + [n]))
            if n not in state:
                visit(n, stack + [n])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [m])
    assert "render.pdf" in graph and "content.figures" in graph["pages"]  # function-level imports are read


def test_reports_hold_no_absolute_path_and_no_host(awkward):
    folder, pdf, page = awkward
    for text in (pdf, squash(page)):
        assert squash(str(folder)) not in text and "secret-host" not in text
        assert "mine.toml" in text and "synthetic.nc" in text
