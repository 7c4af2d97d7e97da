"""What the runner hands components beyond the contract's arrays: the inliers' mean, the budget,
and data sets sized from their parameters; the per-process data memo capped in bytes."""
import os

import numpy as np
import pytest
import xarray as xr

import cmbench
from cmbench.errors import UserError
from cmbench import pools
from cmbench.runner import memo
from cmbench.runner.metrics import inlier_mean
from cmbench.theory import changed_entries
from conftest import write

PLUGIN = '''
import numpy as np
import cmbench

SEEN = []

def excess(mu_hat, data, *, inlier_mean, scale=1.0):
    return scale * (float(np.linalg.norm(mu_hat - data.mean)) - float(np.linalg.norm(inlier_mean - data.mean)))

def shrunk_mean(X, *, rng, eps=0.1):
    return np.nanmean(X, axis=0) * (1.0 - eps)

def isotropic(*, instance, rng, N=50, d=3):
    import os
    if os.environ.get("CMBENCH_TEST_LOG"):
        with open(os.environ["CMBENCH_TEST_LOG"], "a") as f:
            f.write(f"load {instance} {os.getpid()}\\n")
    X = rng.standard_normal((N, d))
    return cmbench.Data(X=X, mean=np.zeros(d), cov=np.eye(d))

@cmbench.hookimpl
def register_metrics():
    return [cmbench.Metric("excess", excess, inputs=("inlier_mean",))]

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("shrunk-mean", shrunk_mean, ranges={"eps": (0.0, 0.5, "[)")})]

@cmbench.hookimpl
def register_datasets():
    return [cmbench.Dataset("isotropic", isotropic, shape=lambda N, d: (N, d))]
'''

SUITE = '''
name = "s"
seed = 1
plugins = ["p.py"]
[[experiment]]
name = "e"
datasets = [{{name = "isotropic", N = 80, d = 4}}]
instances = 2
adversaries = ["replace-samples"]
budgets = {budgets}
recoverers = ["none"]
estimators = ["mean", {{name = "shrunk-mean", label = "bound", eps = "@budget"}}, {{name = "shrunk-mean", label = "fixed", eps = 0.2}}]
metrics = ["l2", "excess"]
'''


@pytest.fixture
def suite(tmp_path):
    write(tmp_path / "p.py", PLUGIN)
    return lambda budgets="[0.0, 0.1, 0.2]": write(tmp_path / "s.toml", SUITE.format(budgets=budgets))


def test_inlier_mean_is_the_mean_of_the_untouched_rows():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 3))
    Xc = X.copy()
    Xc[[2, 5], 1] = np.nan
    Xc[7] = 9.0
    m = inlier_mean(X, changed_entries(Xc, X))
    np.testing.assert_allclose(m, X[[0, 1, 3, 4, 6, 8, 9]].mean(0))
    assert inlier_mean(X, np.ones_like(X, dtype=bool)) is None  # every row touched


def test_metrics_asking_for_the_inlier_mean_get_it_and_the_cube_holds_its_error(suite, tmp_path):
    cube = cmbench.run_suite(suite(), out=tmp_path / "out")["e"]
    assert cube["inlier_l2"].dims == ("dataset", "instance", "adversary", "budget")
    clean = cube["inlier_l2"].sel(budget=0.0)  # nothing replaced: the inliers are the whole sample
    mean_l2 = cube["l2"].sel(budget=0.0, recoverer="none", estimator="mean")
    np.testing.assert_allclose(clean.values, mean_l2.values, rtol=1e-12)
    # excess = l2 - inlier_l2, cell by cell
    l2, excess = cube["l2"].sel(recoverer="none"), cube["excess"].sel(recoverer="none")
    np.testing.assert_allclose(excess.values, (l2 - cube["inlier_l2"]).transpose(*excess.dims).values,
                               rtol=1e-10, atol=1e-12)
    assert (cube["inlier_l2"].sel(budget=0.2) != clean.values).all()


def test_a_new_estimator_on_cached_recoveries_still_gets_the_inlier_mean(suite, tmp_path):
    path = suite()
    first = cmbench.run_suite(path, out=tmp_path / "out")["e"]
    text = path.read_text().replace('estimators = ["mean", ', 'estimators = ["mean", "cmedian", ')
    path.write_text(text)
    stats = cmbench.runner.Progress()
    second = cmbench.run_suite(path, out=tmp_path / "out", stats=stats)["e"]
    fresh = cmbench.run_suite(path, out=tmp_path / "fresh")["e"]
    assert stats.computed > 0  # the new estimator's cells, on the cached corruptions
    for v in ("excess", "inlier_l2", "l2"):
        np.testing.assert_array_equal(second[v].values, fresh[v].values)
    np.testing.assert_array_equal(second["excess"].sel(estimator="mean").values,
                                  first["excess"].sel(estimator="mean").values)


def test_a_parameter_bound_to_the_budget_receives_it(suite, tmp_path):
    cube = cmbench.run_suite(suite(), out=tmp_path / "out")["e"]
    mean = cube["l2"].sel(recoverer="none", estimator="mean")
    # shrunk-mean with eps = budget: at budget 0 it is the mean; otherwise it differs from eps = 0.2
    np.testing.assert_array_equal(cube["l2"].sel(recoverer="none", estimator="bound", budget=0.0).values,
                                  mean.sel(budget=0.0).values)
    np.testing.assert_array_equal(cube["l2"].sel(recoverer="none", estimator="bound", budget=0.2).values,
                                  cube["l2"].sel(recoverer="none", estimator="fixed", budget=0.2).values)
    assert (cube["l2"].sel(recoverer="none", estimator="bound", budget=0.1)
            != cube["l2"].sel(recoverer="none", estimator="fixed", budget=0.1)).all()


def test_a_budget_outside_a_bound_parameter_range_is_refused_when_the_suite_loads(suite, tmp_path):
    with pytest.raises(UserError, match=r"estimator 'bound': eps = '@budget' at budget 0.5: .*outside"):
        cmbench.run_suite(suite("[0.0, 0.5]"), out=tmp_path / "out")
    assert not (tmp_path / "out" / "s").exists() or not any((tmp_path / "out" / "s").glob("*.nc"))


def test_budget_binding_is_refused_for_a_data_set_and_a_non_float_parameter(tmp_path, suite):
    path = suite()
    bad = path.read_text().replace('N = 80, d = 4', 'N = "@budget", d = 4')
    path.write_text(bad)
    with pytest.raises(UserError, match="data set 'isotropic'.*loaded once"):
        cmbench.run_suite(path, out=tmp_path / "out")


def test_a_generated_data_set_is_sized_from_its_parameters_before_loading(suite, tmp_path, monkeypatch):
    path = suite()
    path.write_text(path.read_text().replace("N = 80, d = 4", "N = 600_000, d = 1_000"))
    with pytest.raises(UserError, match=r"'isotropic' would hold 600,000 x 1,000 values"):
        cmbench.run_suite(path, out=tmp_path / "out")
    from cmbench.options import RunOptions
    from cmbench.runner.dryrun import dry_run

    path.write_text(path.read_text().replace("N = 600_000, d = 1_000", "N = 70, d = 5"))
    plan = dry_run(path, RunOptions(out=tmp_path / "out"))
    assert plan.datasets == [("isotropic", (70, 5), "from its parameters")]


def test_the_data_memo_is_capped_in_bytes_and_drops_the_least_recently_used():
    def data(n):
        return cmbench.Data(X=np.zeros((n, 10)), mean=np.zeros(10))

    held = memo.DataMemo(cap=3 * 880)
    for k in range(3):
        held.put(k, data(10))  # 800 + 80 bytes each
    assert held.get(0) is not None  # 0 is now the most recent
    held.put(3, data(10))
    assert held.get(1) is None and held.get(0) is not None and held.get(3) is not None
    big = data(1000)  # larger than the cap: kept alone
    held.put(4, big)
    assert list(held.held) == [4] and held.bytes == memo.data_bytes(big)


def test_a_data_set_sized_by_its_parameters_is_described_without_a_load_before_the_sweep(suite, tmp_path, log):
    # each process that computes an instance's units loads it once, and the client loads nothing
    # to describe the data set before the sweep; the shared pool is made larger than asked, as an
    # earlier run may leave it, so that an instance's units may land on two workers
    pools.shared(2)
    cube = cmbench.run_suite(suite(), out=tmp_path / "out", workers=1)["e"]
    loads = [tuple(line.split()[1:]) for line in log.read_text().split("\n")[:-1]]
    assert {instance for instance, _ in loads} == {"0", "1"}
    assert len(set(loads)) == len(loads), loads
    assert str(os.getpid()) not in {pid for _, pid in loads}
    info = cube.attrs["datasets_info"]
    info = info if isinstance(info, dict) else __import__("json").loads(info)
    assert info["isotropic"]["shape"] == [80, 4]
