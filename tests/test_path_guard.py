"""The path guard: cmbench writes or deletes only what `cmbench.files.check_target` allows.

A report never replaces a cube, a table or any file of
another kind, nor one of its inputs, and gets a report's name; an export never
replaces its cubes; a symbolic link inside a suite's cache folder is refused,
never followed, by a run, ``--no-resume`` and ``cmbench cache clear``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cmbench.errors import UserError
from cmbench.files import check_target, sniff
from cmbench.runner import run_suite
from cmbench.options import RunOptions
from conftest import assert_user_error, cli_inproc as cli, good_suite


# ---------------------------------------------------------------- the function

def test_sniff_tells_kinds_by_content_not_by_name(tmp_path):
    cases = {"a.pdf": b"%PDF-1.7\n", "b.nc": b"\x89HDF\r\n\x1a\n\0\0", "c.nc": b"CDF\x01\0\0",
             "d.parquet": b"PAR1\0\0", "e.html": b"<!DOCTYPE html>\n<html>", "f.csv": b"a,b\n1,2\n",
             "g.txt": b"hello\n", "h.bin": b"\0\1\2", "i": b""}
    kinds = {}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        kinds[name] = sniff(tmp_path / name)
    assert kinds == {"a.pdf": "pdf", "b.nc": "netcdf", "c.nc": "netcdf", "d.parquet": "parquet",
                     "e.html": "html", "f.csv": "csv", "g.txt": "text", "h.bin": "binary", "i": "empty"}


def test_check_target_refuses_another_kind_an_input_a_folder_and_a_wrong_suffix(tmp_path):
    cube = tmp_path / "victim.nc"
    cube.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    with pytest.raises(UserError, match="another kind"):
        check_target(_renamed(cube, "victim.pdf"), kind="pdf")
    with pytest.raises(UserError, match="one of the inputs"):
        check_target(cube, inputs=[tmp_path / "." / "victim.nc"], kind="netcdf")
    with pytest.raises(UserError, match="is a folder"):
        check_target(tmp_path, kind=None)
    with pytest.raises(UserError, match=r"ending in \.pdf"):
        check_target(tmp_path / "r.csv", kind="pdf")
    old = tmp_path / "old.pdf"
    old.write_bytes(b"%PDF-1.4 old report")
    assert check_target(old, kind="pdf") == old  # a report replaces a report
    assert check_target(tmp_path / "new.pdf", kind="pdf") == tmp_path / "new.pdf"


def _renamed(path: Path, name: str) -> Path:
    return Path(shutil.copy(path, path.with_name(name)))


def test_check_target_refuses_a_path_outside_root_or_through_a_link(tmp_path):
    root, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (root / "s").mkdir(parents=True)
    elsewhere.mkdir()
    (root / "s" / "pages").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UserError, match="outside"):
        check_target(tmp_path / "x.json", root=root)
    with pytest.raises(UserError, match="outside"):
        check_target(root / ".." / "x.json", root=root)
    with pytest.raises(UserError, match="symbolic link"):
        check_target(root / "s" / "pages" / "index.json", root=root, action="delete")
    with pytest.raises(UserError, match="symbolic link"):
        check_target(root / "s" / "pages", root=root)
    assert check_target(root / "s" / "new" / "x.json", root=root) == root / "s" / "new" / "x.json"


# ---------------------------------------------------------------- cmbench report -o

@pytest.fixture
def cube(smoke_run, tmp_path) -> Path:
    return Path(shutil.copy(smoke_run / "smoke" / "synthetic.nc", tmp_path / "cube.nc"))


def test_report_never_overwrites_a_cube_of_another_name(cube, tmp_path):
    victim = Path(shutil.copy(cube, tmp_path / "victim.pdf"))
    before = victim.read_bytes()
    code, err = cli("report", cube, "-o", victim)
    assert_user_error(code, err, str(victim), "another kind", "netcdf")
    assert victim.read_bytes() == before


@pytest.mark.parametrize("name", ["victim.nc", "results.csv", "report.txt", "report"])
def test_report_refuses_a_name_that_is_not_pdf_or_html(cube, tmp_path, name):
    target = tmp_path / name
    if name != "report":
        shutil.copy(cube, target) if name.endswith(".nc") else target.write_text("a,b\n1,2\n")
    before = target.read_bytes() if target.exists() else None
    code, err = cli("report", cube, "-o", target)
    assert_user_error(code, err, str(target), ".pdf", ".html")
    assert (target.read_bytes() if target.exists() else None) == before


def test_html_report_onto_its_input_cube_named_htm_is_refused(cube, tmp_path):
    htm = Path(shutil.copy(cube, tmp_path / "c.htm"))
    before = htm.read_bytes()
    code, err = cli("report", htm, "-o", htm)
    assert_user_error(code, err, str(htm), "input")
    assert htm.read_bytes() == before


# ---------------------------------------------------------------- cmbench export -o

def test_export_never_overwrites_its_cube_or_a_file_of_another_kind(cube, tmp_path):
    pdf = tmp_path / "r.csv"
    pdf.write_bytes(b"%PDF-1.4 a report")
    code, err = cli("export", cube, "-o", pdf)
    assert_user_error(code, err, str(pdf), "another kind")
    assert pdf.read_bytes() == b"%PDF-1.4 a report"


def test_export_of_the_same_cube_twice_is_refused(cube, tmp_path):
    code, err = cli("export", cube, cube.parent / "." / cube.name, "-o", tmp_path / "t.csv")
    assert_user_error(code, err, "given twice")
    assert not (tmp_path / "t.csv").exists()


def test_export_of_two_copies_of_one_cube_tells_their_rows_apart(cube, tmp_path):
    import pandas as pd

    copy = Path(shutil.copy(cube, tmp_path / "copy.nc"))
    code, err = cli("export", cube, copy, "-o", tmp_path / "t.csv")
    assert code == 0, err
    df = pd.read_csv(tmp_path / "t.csv")
    assert list(df.columns[:1]) == ["cube"]
    assert set(df["cube"]) == {str(cube), str(copy)}
    ids = [c for c in df.columns if c in ("cube", "experiment", "dataset", "instance", "adversary",
                                          "budget", "recoverer", "estimator")]
    assert not df.duplicated(subset=ids).any()


def test_export_of_a_cube_with_malformed_methods_is_one_line(cube, tmp_path):
    import xarray as xr

    with xr.open_dataset(cube) as ds:
        ds = ds.load()
    ds.attrs["methods"] = "{not json"
    bad = tmp_path / "bad.nc"
    ds.to_netcdf(bad)
    code, err = cli("export", bad, "-o", tmp_path / "t.csv")
    assert_user_error(code, err, str(bad), "methods")
    ds.attrs["methods"] = '{"m": "mean"}'
    ds.to_netcdf(bad)
    code, err = cli("export", bad, "-o", tmp_path / "t.csv")
    assert_user_error(code, err, str(bad), "methods")


# ---------------------------------------------------------------- links inside the cache

def _run(tmp_path, out, **kw):
    return run_suite(good_suite(tmp_path), RunOptions(out=out, **kw))


def _foreign(tmp_path) -> Path:
    """A folder outside --out holding files with the names cmbench writes in its page cache."""
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    for name in ("index.json", "reports.json", ".x.tmp"):
        (foreign / name).write_text("precious")
    return foreign


def _listing(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _linked_cache_folder(tmp_path: Path, sub: str):
    """A finished run's ``.cache/<sub>`` replaced by a link to a foreign folder: (out, link, foreign,
    the foreign folder's listing)."""
    out = tmp_path / "out"
    _run(tmp_path, out)
    foreign = _foreign(tmp_path)
    linked = out / "r" / ".cache" / sub
    shutil.rmtree(linked, ignore_errors=True)
    linked.symlink_to(foreign, target_is_directory=True)
    return out, linked, foreign, _listing(foreign)


@pytest.mark.parametrize("sub", ["pages", "units"])
def test_cache_clear_refuses_a_linked_folder_and_deletes_nothing_behind_it(tmp_path, sub):
    out, linked, foreign, before = _linked_cache_folder(tmp_path, sub)
    code, err = cli("cache", "clear", "r", "--out", out)
    assert_user_error(code, err, str(linked), "symbolic link")
    assert _listing(foreign) == before


@pytest.mark.parametrize("sub", ["pages", "units"])
def test_runs_refuse_a_linked_cache_folder_and_write_nothing_behind_it(tmp_path, sub):
    out, linked, foreign, before = _linked_cache_folder(tmp_path, sub)
    for extra in ((), ("--no-resume",)):
        code, err = cli("suite", good_suite(tmp_path), "--out", out, "--no-report", *extra)
        assert_user_error(code, err, str(linked), "symbolic link")
        assert _listing(foreign) == before


def test_tables_never_overwrite_a_file_of_another_kind(cube, tmp_path):
    tables = tmp_path / "tb"
    # the HTML report: the tables are the same, and it is drawn in a fraction of the PDF's time
    code, err = cli("report", cube, "-o", tmp_path / "r.html", "--tables", tables)
    assert code == 0, err
    written = sorted(tables.iterdir())
    victim = next(p for p in written if p.suffix == ".tex")
    shutil.copy(cube, victim)  # a cube where a table goes
    before = victim.read_bytes()
    code, err = cli("report", cube, "-o", tmp_path / "r.html", "--tables", tables)
    assert_user_error(code, err, str(victim), "another kind")
    assert victim.read_bytes() == before
