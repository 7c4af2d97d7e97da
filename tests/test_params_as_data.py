"""Parameters as data: each component parameter a suite sets or varies is a cube coordinate
(``<dim>_<param>``) and a ``p_<dim>_<param>`` column of `to_frame`; ``[experiment.report] x``."""
import math

import numpy as np
import pytest
import xarray as xr

import cmbench
from cmbench import cube as cubes
from cmbench.errors import SuiteError
from cmbench.suite import MISSING, load_suite

SUITE = """
name = "params"
seed = 3

[[experiment]]
name = "e"
datasets = [{{ name = "synthetic-gaussian", N = [60, 90] }}]
instances = 1
adversaries = ["hide-smallest"]
budgets = [0.1]
recoverers = ["none", {{ name = "ithsvd", label = "it", svd = "randomized", rank = 4 }}]
estimators = ["mean", {{ name = "trimmed-mean", proportion = [0.05, 0.2] }}]
{extra}
"""


def suite_text(extra: str = "") -> str:
    return SUITE.format(extra=extra)


def test_parameters_lists_what_the_suite_sets_with_defaults_and_missing(write_suite):
    exp = load_suite(write_suite(suite_text())).experiments[0]
    params = exp.parameters()
    assert params["dataset"] == {"N": [60, 90]}
    assert params["estimator"] == {"proportion": [MISSING, 0.05, 0.2]}  # mean has no proportion
    assert params["recoverer"] == {"svd": [MISSING, "randomized"], "rank": [MISSING, 4]}
    assert params["adversary"] == {}


def test_a_run_gives_coordinates_and_columns_that_round_trip_through_netcdf(write_suite, tmp_path):
    path = write_suite(suite_text('report = { x = "dataset.N" }'))
    ds = cmbench.run_suite(path, out=tmp_path / "out")["e"]
    assert ds["dataset_N"].dims == ("dataset",) and ds["dataset_N"].values.tolist() == [60.0, 90.0]
    prop = ds["estimator_proportion"].values
    assert math.isnan(prop[0]) and prop[1:].tolist() == [0.05, 0.2]
    assert ds["recoverer_svd"].values.tolist() == ["", "randomized"]  # not numeric: strings, "" where absent
    assert ds["recoverer_rank"].values[1] == 4.0 and math.isnan(ds["recoverer_rank"].values[0])
    assert ds.attrs["report_x"] == "dataset.N"
    with xr.open_dataset(tmp_path / "out" / "params" / "e.nc") as back:  # plain xarray, unchanged
        back = back.load()
    for name in ("dataset_N", "estimator_proportion", "recoverer_svd", "recoverer_rank"):
        assert name in back.coords
        np.testing.assert_array_equal(back[name].values, ds[name].values)
    assert back.attrs["report_x"] == "dataset.N"

    df = cmbench.to_frame(tmp_path / "out" / "params" / "e.nc")
    assert len(df) == 2 * 1 * 1 * 1 * 2 * 3
    n_by_label = dict(zip(df["dataset"], df["p_dataset_N"]))
    assert n_by_label == {"synthetic-gaussian.N_60": 60.0, "synthetic-gaussian.N_90": 90.0}
    trimmed = df[df["estimator"] == "trimmed-mean.proportion_0.2"]
    assert set(trimmed["p_estimator_proportion"]) == {0.2}
    assert df[df["estimator"] == "mean"]["p_estimator_proportion"].isna().all()
    assert set(df["p_recoverer_svd"]) == {"", "randomized"}
    # no methods table: the pair names the method
    assert set(df["method"]) == {f"{r}+{e}" for r in ("none", "it")
                                 for e in ("mean", "trimmed-mean.proportion_0.05", "trimmed-mean.proportion_0.2")}
    assert list(df.columns[8:12]) == ["p_dataset_N", "p_recoverer_svd", "p_recoverer_rank",
                                      "p_estimator_proportion"]  # after the ids, in the dims' order


def test_a_cube_without_parameter_coordinates_still_loads_and_exports(smoke_run, tmp_path):
    ds = cubes.load(smoke_run / "smoke" / "synthetic.nc")
    assert "dataset_N" in ds.coords  # the smoke suite sets N
    old = ds.drop_vars([c for c in ds.coords if c not in ds.dims])  # as cmbench wrote cubes before
    cubes.save(old, tmp_path / "old.nc")
    df = cmbench.to_frame(tmp_path / "old.nc")
    assert not [c for c in df.columns if c.startswith("p_")]
    assert (df["method"] != "").all()


def test_report_x_names_a_parameter_of_the_experiment(write_suite):
    exp = load_suite(write_suite(suite_text('report = { x = "estimator.proportion" }'))).experiments[0]
    assert exp.report_x == "estimator.proportion"
    # a parameter no entry sets is still data when the report draws against it
    exp = load_suite(write_suite(suite_text('report = { x = "dataset.mean_scale" }'))).experiments[0]
    assert exp.parameters()["dataset"]["mean_scale"] == [1.0, 1.0]


@pytest.mark.parametrize("extra, message", [
    ('report = { x = "dataset.mean_scal" }', "no dataset of this experiment has a parameter 'mean_scal'; did you mean 'mean_scale'?"),
    ('report = { x = "datasets.N" }', "expected \"<kind>.<parameter>\" with kind one of dataset, adversary"),
    ('report = { x = "N" }', "expected \"<kind>.<parameter>\""),
    ('report = { x = "recoverer.svd" }', "recoverer 'it': parameter 'svd' is 'randomized', not a number"),
    ('report = { x = 3 }', "expected a string, got int 3"),
    ('report = { y = "dataset.N" }', "unknown key in the [experiment.report] table"),
])
def test_a_bad_report_x_names_the_file_and_the_key(write_suite, extra, message):
    path = write_suite(suite_text(extra))
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    text = str(err.value)
    assert text.startswith(f"{path}: key 'experiment[0].report.")
    assert message in text
    assert "\n" not in text


def test_param_coords_types():
    coords = cubes.param_coords({"estimator": {"a": [1, None, MISSING], "b": [True, "x", [1, 2]]}})
    dim, a = coords["estimator_a"]
    assert dim == "estimator" and a.dtype == float and a[0] == 1.0 and np.isnan(a[1:]).all()
    assert coords["estimator_b"][1].tolist() == ["true", "x", "[1, 2]"]
