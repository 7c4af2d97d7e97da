"""The results format has one home, `cmbench.cube`: statuses, dims, variables, attributes, checks, records."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import xarray as xr

from cmbench import cube
from cmbench.errors import UserError


def small_cube(**attrs) -> xr.Dataset:
    """A two-cell cube built as the runner builds one: one unit, a failed and an ok cell."""
    coords = {"dataset": ["d"], "instance": [0], "adversary": ["a"], "budget": [0.1], "recoverer": ["r"],
              "estimator": ["good", "bad"]}
    unit = {"corruption": cube.record(cube.OK, seconds=0.1, d_tv=0.5),
            "recovery": {"r": cube.record(cube.OK, seconds=0.2, recovered_fraction=1.0)},
            "cells": {"r": {"good": cube.record(cube.OK, seconds=0.3, l2=1.5, mahalanobis=2.0),
                            "bad": cube.record(cube.FAILED, "estimator 'bad': ValueError", "Traceback ...")}}}
    return cube.build(coords, {("d", 0, "a", 0.1): unit}, {"experiment": "e", **attrs})


def test_every_module_takes_the_statuses_from_cube():
    from cmbench.report import load
    from cmbench.report.content import figures
    from cmbench.runner import store, units

    assert load.STATUSES is cube.STATUSES and load.DIMS is cube.DIMS
    assert figures.FAILURES is cube.FAILURES and figures.GAPS is cube.GAPS
    assert units.FAILURES is cube.FAILURES and units.OK is cube.OK
    assert set(store.CACHED_STATUSES) == set(cube.STATUSES) - set(cube.FAILURES)
    assert set(cube.GAPS) | set(cube.FAILURES) | {cube.OK} == set(cube.STATUSES)


def test_a_built_cube_holds_each_variable_with_its_dims_and_reads_back_through_the_report(tmp_path):
    from cmbench.report.load import load_cube

    ds = small_cube(methods={"m": ["r", "good"]})
    for var, dims in cube.VARIABLES.items():
        if var == "inlier_l2":  # only where a metric asks for the inliers' mean (none does here)
            assert var not in ds
            continue
        assert ds[var].dims == dims, var
    assert ds["status"].sel(estimator="bad").item() == cube.FAILED
    assert ds["traceback"].sel(estimator="bad").item() == "Traceback ..."
    assert ds["traceback"].sel(estimator="good").item() == ""
    assert [f["estimator"] for f in cube.failures(ds)] == ["bad"]
    path = cube.save(ds, tmp_path / "e.nc")
    loaded = load_cube(path)
    assert loaded.methods == {"m": ("r", "good")}
    assert cube.attr_json(cube.load(path), "methods") == {"m": ["r", "good"]}


@pytest.mark.parametrize("broken, needle", [
    (lambda ds: ds.drop_vars("error"), "lacks variable(s) error"),
    (lambda ds: ds.isel(estimator=0, drop=True).drop_vars([v for v in ds.data_vars
                                                           if "estimator" not in ds[v].dims]),
     "lacks dimension(s) estimator"),
    (lambda ds: ds.assign(d_tv=ds["l2"]), "variable 'd_tv' has dims"),
    (lambda ds: ds.assign_attrs(cube_format=cube.FORMAT + 1), "upgrade cmbench"),
])
def test_a_file_that_is_not_a_cube_is_refused_alike_by_cube_load_and_the_report(tmp_path, broken, needle):
    from cmbench.report.load import load_cube

    path = tmp_path / "bad.nc"
    broken(small_cube()).to_netcdf(path)
    for read in (cube.load, load_cube):
        with pytest.raises(UserError, match=str(path)) as info:
            read(path)
        assert needle in str(info.value), str(info.value)


def test_an_attribute_that_is_not_json_names_the_file_and_the_attribute():
    ds = small_cube()
    ds.attrs["methods"] = "{not json"
    with pytest.raises(UserError, match=r"e\.nc: attribute 'methods' is not valid JSON"):
        cube.attr_json(ds, "methods", {}, source="e.nc")
    assert cube.attr_json(ds.attrs, "absent", 7) == 7
    assert cube.encode_attrs({"a": (1, 2), "b": "x"}) == {"a": json.dumps([1, 2]), "b": "x"}


def test_a_unit_whose_data_did_not_load_gives_every_cell_its_verdict():
    load = cube.record(cube.FAILED, "data set 'd': ValueError", "Traceback ...")
    unit = cube.uniform_unit(["r1", "r2"], ["e1", "e2"], load)
    assert unit["corruption"] == load
    assert unit["recovery"]["r2"] == {"status": cube.FAILED, "error": "data set 'd': ValueError"}
    assert unit["cells"]["r1"]["e2"] == load
    assert cube.failed_cells(unit) == 4
    assert cube.verdict(cube.record(cube.UNDEFINED, "why", seconds=1.0, l2=3.0)) == {"status": "undefined",
                                                                                      "error": "why"}


def test_the_format_loads_without_xarray_as_a_worker_does():
    code = ("import sys, cmbench.cube, cmbench.runner.units; "
            "assert 'xarray' not in sys.modules, 'xarray imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_saved_cube_is_the_file_to_netcdf_writes_and_the_write_imports_no_cluster_library(tmp_path):
    """The cube is written through the netCDF4 engine's store: the same bytes as ``to_netcdf``,
    without the ``distributed`` import that ``to_netcdf`` makes to ask dask for its scheduler."""
    pytest.importorskip("distributed")
    ds = small_cube(methods={"m": ["r", "good"]})
    ds.to_netcdf(tmp_path / "reference.nc", engine="netcdf4")
    saved = cube.save(ds, tmp_path / "e.nc")
    assert saved.read_bytes() == (tmp_path / "reference.nc").read_bytes()
    code = ("import sys, pathlib, cmbench.cube as c; "
            "c.save(c.load(pathlib.Path(sys.argv[1])), pathlib.Path(sys.argv[2])); "
            "assert 'distributed' not in sys.modules, 'distributed imported'")
    subprocess.run([sys.executable, "-c", code, str(saved), str(tmp_path / "again.nc")], check=True)
    assert (tmp_path / "again.nc").read_bytes() == saved.read_bytes()
