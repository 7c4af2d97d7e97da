"""The inlier families of Anderson and Phillips (2025): `gaussian`'s diagonal variances and the
non-Gaussian data sets, each with its analytic mean and covariance (checked against large samples)."""
import numpy as np
import pytest

import cmbench
from cmbench.builtins.datasets import load_gaussian
from cmbench.builtins.distributions import (load_gaussian_mixture, load_laplace, load_poisson,
                                            load_student_t)
from cmbench.data import DataError


@pytest.mark.parametrize("load, params", [
    (load_gaussian, {"variances": {"linspace": [25.0, 0.1]}, "mean": 5.0}),
    (load_gaussian, {"variances": [4.0, 1.0, 0.5, 2.0, 3.0, 1.0], "mean": 1.0}),
    (load_student_t, {"df": 5.0}),  # df = 3 has an infinite fourth moment: the sample covariance converges slowly
    (load_laplace, {}),
    (load_poisson, {"lam": 5.0}),
    (load_gaussian_mixture, {}),
])
def test_the_declared_truth_is_the_distributions(load, params):
    data = load(instance=0, rng=np.random.default_rng(0), N=200_000, d=6, **params)
    X = data.X
    assert X.shape == (200_000, 6)
    scale = np.sqrt(np.diag(data.cov))
    np.testing.assert_allclose(X.mean(0), data.mean, atol=0.02 * scale.max())
    np.testing.assert_allclose(np.cov(X, rowvar=False), data.cov, atol=0.05 * data.cov.max())


def test_the_papers_parametrisation_is_the_default():
    rng = np.random.default_rng(1)
    assert np.all(load_student_t(instance=0, rng=rng, N=10, d=3).mean == 5.0)
    assert np.allclose(load_student_t(instance=0, rng=rng, N=10, d=3).cov, 3 * np.eye(3))
    assert np.allclose(load_laplace(instance=0, rng=rng, N=10, d=3).cov, 2 * np.eye(3))
    assert np.allclose(load_poisson(instance=0, rng=rng, N=10, d=3).mean, 5.0)
    mix = load_gaussian_mixture(instance=0, rng=rng, N=10, d=3)
    assert np.allclose(mix.mean, 0) and np.allclose(mix.cov, np.eye(3) + 2 / 3)
    # fewer rows than dimensions: the low-data regime (their n = 20 at d = 500)
    diag = load_gaussian(instance=0, rng=rng, N=20, d=500, variances={"linspace": [25, 0.1]})
    assert diag.X.shape == (20, 500)
    assert np.allclose(np.diag(diag.cov), np.linspace(25, 0.1, 500))


@pytest.mark.parametrize("params, message", [
    ({"variances": [1.0, 2.0]}, "give d = 3 numbers"),
    ({"variances": {"linspace": [1.0]}}, "expected a list of d numbers"),
    ({"variances": [1.0, -1.0, 2.0]}, "positive"),
    ({"variances": [1.0, 1.0, 1.0], "sd": 2.0}, "not both"),
])
def test_bad_variances_name_the_data_set(params, message):
    with pytest.raises(DataError, match=f"data set gaussian: .*{message}"):
        load_gaussian(instance=0, rng=np.random.default_rng(0), N=10, d=3, **params)


def test_bad_family_parameters_name_the_data_set():
    with pytest.raises(DataError, match="data set student-t: df = 2.0 must be a number > 2"):
        load_student_t(instance=0, rng=np.random.default_rng(0), N=10, d=3, df=2.0)
    with pytest.raises(DataError, match="data set poisson: d = 0"):
        load_poisson(instance=0, rng=np.random.default_rng(0), N=10, d=0)


def test_a_suite_sizes_the_families_from_their_parameters(tmp_path):
    (tmp_path / "s.toml").write_text('''
name = "s"
[[experiment]]
name = "e"
datasets = [{ name = "laplace", N = [30, 60], d = 4 }, { name = "gaussian", d = 3, N = 20, variances = { linspace = [2.0, 1.0] } }]
adversaries = [{ name = "ap25", scheme = "unif-top" }]
budgets = [0.1]
recoverers = ["none"]
estimators = ["mean"]
''')
    suite = cmbench.load_suite(tmp_path / "s.toml")
    shapes = {d.label: d.decl.shape_for(d.params) for d in suite.experiments[0].datasets}
    assert shapes == {"laplace.N_30": (30, 4), "laplace.N_60": (60, 4), "gaussian": (20, 3)}
