"""The tidy long table: one row per cell, every variable a column, Parquet and CSV."""
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import cmbench
from cmbench import cube as cubes
from cmbench.errors import UserError
from cmbench.export import export, frames
from conftest import assert_user_error, cli_inproc_result


@pytest.fixture
def smoke_cube(smoke_run):
    return cubes.load(smoke_run / "smoke" / "synthetic.nc")


def test_one_row_per_cell_with_every_variable(smoke_cube):
    df = cmbench.to_frame(smoke_cube)
    assert len(df) == int(np.prod([smoke_cube.sizes[d] for d in cubes.DIMS]))
    for col in (*cubes.DIMS, "experiment", "method", "l2", "mahalanobis", "status", "error",
                "seconds", "recovered_fraction", "discarded_fraction", "d_entry1", "d_entry_inf", "d_tv"):
        assert col in df.columns, col
    assert not df.duplicated(list(cubes.DIMS)).any()
    assert set(df["status"]) == {"ok"} and set(df["error"]) == {""}
    pair = df[(df.recoverer == "exact") & (df.estimator == "mean")]
    assert set(pair["method"]) == {"Two-Step-E"}
    assert set(df[(df.recoverer == "exact") & (df.estimator == "cmedian")]["method"]) == {"exact+cmedian"}  # no label: the pair


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_round_trip_of_a_known_cell(smoke_run, smoke_cube, tmp_path, suffix):
    path, rows = export([smoke_run / "smoke" / "synthetic.nc"], tmp_path / f"t{suffix}")
    df = pd.read_parquet(path) if suffix == ".parquet" else pd.read_csv(path, keep_default_na=False,
                                                                     na_values=[""])
    assert rows == len(df) == smoke_cube["l2"].size
    where = dict(dataset="synthetic-gaussian", instance=1, adversary="hide-smallest", budget=0.2,
                 recoverer="exact", estimator="mean")
    row = df[np.logical_and.reduce([df[k] == v for k, v in where.items()])]
    assert len(row) == 1
    row = row.iloc[0]
    for var in ("l2", "mahalanobis", "seconds"):
        assert row[var] == pytest.approx(float(smoke_cube[var].sel(where)), rel=1e-12)
    rec = {k: where[k] for k in cubes.DIMS[:5]}
    assert row["recovered_fraction"] == pytest.approx(float(smoke_cube["recovered_fraction"].sel(rec)))
    cor = {k: where[k] for k in cubes.DIMS[:4]}
    assert row["d_entry1"] == pytest.approx(float(smoke_cube["d_entry1"].sel(cor)))
    assert row["d_tv"] > 0 and row["status"] == "ok"


def test_new_variables_flow_through_by_their_dims(smoke_cube):
    ds = smoke_cube.copy()
    per_rec = xr.DataArray(np.arange(np.prod([ds.sizes[d] for d in cubes.DIMS[:5]])).reshape(
        [ds.sizes[d] for d in cubes.DIMS[:5]]), dims=cubes.DIMS[:5])
    ds["iterations"] = per_rec.transpose(*reversed(cubes.DIMS[:5]))  # stored in another order
    ds["converged"] = per_rec % 2 == 0
    ds["elsewhere"] = xr.DataArray(np.zeros(3), dims="other")  # not one value per cell: left out
    df = cmbench.to_frame(ds)
    assert "elsewhere" not in df.columns
    for r in df.sample(10, random_state=0).itertuples():
        sel = {d: getattr(r, d) for d in cubes.DIMS[:5]}
        assert r.iterations == int(per_rec.isel({d: list(ds[d].values).index(sel[d]) for d in sel}))
        assert r.converged == (r.iterations % 2 == 0)


def test_experiments_concatenate_and_suites_get_a_column(smoke_cube):
    other = smoke_cube.copy()
    other.attrs = dict(smoke_cube.attrs, experiment="second")
    df = frames([smoke_cube, other])
    assert len(df) == 2 * smoke_cube["l2"].size
    assert "suite" not in df.columns and list(df["experiment"].unique()) == ["synthetic", "second"]
    other.attrs["suite"] = "another"
    df = frames([smoke_cube, other])
    assert list(df.columns[:2]) == ["suite", "experiment"]
    assert df.groupby("suite").size().to_dict() == {"smoke": smoke_cube["l2"].size,
                                                    "another": smoke_cube["l2"].size}


def test_cli_export_and_its_errors(smoke_run, tmp_path):
    nc = smoke_run / "smoke" / "synthetic.nc"
    result = cli_inproc_result("export", nc, "-o", tmp_path / "cells.csv")
    assert result.returncode == 0, result.stderr
    assert "32 rows" in result.stdout and (tmp_path / "cells.csv").is_file()
    for args, fragment in (((nc, "-o", tmp_path / "cells.xlsx"), "'.xlsx'"),
                           ((tmp_path / "nope.nc", "-o", tmp_path / "x.csv"), "nope.nc")):
        bad = cli_inproc_result("export", *args)
        assert_user_error(bad.returncode, bad.stderr, fragment)
    assert not list(tmp_path.glob("*.part")) and not (tmp_path / "x.csv").exists()
    with pytest.raises(UserError, match="no results cube"):
        frames([])
