"""Sample-level components: the gaussian data set, replace-mixture, prune,
ransac, lrv, median-of-means, the filter's default against its faithful mode,
and excess-l2 (reference equality: test_sample_level_reference.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import cmbench
from cmbench.builtins import estimators, sample_estimators

DKK17_POINT = np.array([12.0, -2.0])


@pytest.fixture(scope="module")
def registry():
    return cmbench.load_plugins()


def call(decl, *args, **params):
    return decl.fn(*args, **{**decl.params, **params})


def gaussian(registry, seed=0, **params):
    return call(registry.datasets["gaussian"], instance=0, rng=np.random.default_rng(seed), **params)


def mixture(registry, X, budget, seed=1, **params):
    return call(registry.adversaries["replace-mixture"], X, budget, rng=np.random.default_rng(seed),
                structure=None, **params)


def estimate(registry, name, X, seed=0, **params):
    return call(registry.estimators[name], X, rng=np.random.default_rng(seed), **params)


# ------------------------------------------------------------------ gaussian


def test_gaussian_size_mean_and_covariance(registry):
    data = gaussian(registry, d=7, samples_per_dim=30, mean=[1, 2, 3, 4, 5, 6, 7], sd=2.0)
    assert data.X.shape == (210, 7)
    np.testing.assert_array_equal(data.mean, np.arange(1.0, 8.0))
    np.testing.assert_array_equal(data.cov, 4.0 * np.eye(7))
    assert abs((data.X - data.mean).std() - 2.0) < 0.15
    assert gaussian(registry, d=3, N=50, samples_per_dim=1000).X.shape == (50, 3)  # N wins
    assert gaussian(registry, d=4).X.shape == (400, 4)  # 100 d by default


@pytest.mark.parametrize("params, match", [({"d": 3, "mean": [1, 2]}, "length d = 3"),
                                           ({"d": 0}, "positive integer"),
                                           ({"d": 3, "sd": -1.0}, "sd"),
                                           ({"d": 10, "N": 1}, "N >= 2")])
def test_gaussian_bad_parameters_name_the_key(registry, params, match):
    with pytest.raises(cmbench.data.DataError, match=match):
        gaussian(registry, **params)


def test_suite_size_check_sees_n_times_d_before_loading(tmp_path, monkeypatch):
    from cmbench import suite
    text = """name = "big"
seed = 1
[[experiment]]
name = "e"
datasets = [{ name = "gaussian", d = 2000, samples_per_dim = 1000 }]
instances = 1
adversaries = ["replace-mixture"]
budgets = [0.1]
recoverers = ["none"]
estimators = ["mean"]
"""
    path = tmp_path / "big.toml"
    path.write_text(text)
    with pytest.raises(suite.SuiteError, match="2,000,000 x 2,000"):
        suite.load_suite(path)


# ------------------------------------------------------------ replace-mixture


@pytest.mark.parametrize("N, budget", [(1000, 0.1), (999, 0.1), (57, 0.33), (10, 0.05)])
def test_mixture_replaces_exactly_floor_eps_n_rows(registry, N, budget):
    X = np.random.default_rng(0).standard_normal((N, 5)) + 1.0
    before = X.copy()
    out = mixture(registry, X, budget)
    np.testing.assert_array_equal(X, before)  # input untouched
    changed = (out != X).any(axis=1)
    assert changed.sum() == math.floor(budget * N + 1e-9)


def test_dkk17_noise_is_half_hypercube_half_point(registry):
    X = 1.0 + np.random.default_rng(0).standard_normal((2000, 6))
    out = mixture(registry, X, 0.1)
    rows = (out != X).any(axis=1)
    noise = out[rows]
    point = np.concatenate([DKK17_POINT, np.zeros(4)])
    at_point = (noise == point).all(axis=1)
    cube = np.isin(noise, (0.0, 1.0)).all(axis=1)
    assert at_point.sum() == 100 and cube.sum() == 100
    assert 0.4 < noise[cube].mean() < 0.6  # uniform on {0, 1}: both values drawn
    # random rows, not the extreme ones
    assert np.flatnonzero(rows).min() < 200 and np.flatnonzero(rows).max() > 1800


def test_mixture_weights_and_kinds(registry):
    X = np.zeros((3001, 4))
    comps = [{"kind": "gaussian", "weight": 2, "shift": 100.0, "sd": 0.5},
             {"kind": "cauchy", "weight": 1, "shift": [1, 2, 3, 4], "scale": 1.0},
             {"kind": "hypercube", "weight": 1, "low": -3, "high": 3}]
    out = mixture(registry, X, 0.4, components=comps)  # 1200 rows: 600 / 300 / 300
    rows = out[(out != 0).any(axis=1)]
    cube = np.isin(rows, (-3.0, 3.0)).all(axis=1)
    gauss = np.abs(rows - 100.0).max(axis=1) < 5 * 0.5
    assert cube.sum() == 300 and gauss.sum() == 600
    cauchy = rows[~cube & ~gauss]
    assert len(cauchy) == 300
    np.testing.assert_allclose(np.median(cauchy, axis=0), [1, 2, 3, 4], atol=0.4)
    assert np.isfinite(out).all()


def test_mixture_is_deterministic_and_budget_zero_is_a_copy(registry):
    X = np.random.default_rng(0).standard_normal((100, 3))
    np.testing.assert_array_equal(mixture(registry, X, 0.2, seed=5), mixture(registry, X, 0.2, seed=5))
    np.testing.assert_array_equal(mixture(registry, X, 0.0), X)


@pytest.mark.parametrize("components, match", [
    ([], "non-empty"), ([{"kind": "box"}], "kind = one of"),
    ([{"kind": "point", "point": [1, 2], "shift": 3}], "unknown key"),
    ([{"kind": "gaussian", "weight": -1}], "weight"),
    ([{"kind": "gaussian", "shift": [1, 2]}], "vector of length 3")])
def test_mixture_bad_components_are_named(registry, components, match):
    with pytest.raises(ValueError, match=match):
        mixture(registry, np.zeros((20, 3)), 0.5, components=components)


# ------------------------------------------------------------------ prune


def test_prune_keeps_the_far_point_once_its_radius_passes_it(registry):
    # DKK17's point lies about sqrt(130 + d) from the median, the radius is
    # 0.33 sqrt(d ln(N / eps)): eps = 1e-4 makes it pass the point at d = 200
    # with N = 4000 (at N = 1000 d, eps = 0.1 it does between d = 300 and 400).
    for d, kept in ((30, False), (200, True)):
        data = gaussian(registry, seed=d, d=d, N=4000, mean=1.0)
        Xc = mixture(registry, data.X, 0.1)
        est = estimate(registry, "prune", Xc, eps=1e-4)
        if kept:
            np.testing.assert_allclose(est, Xc.mean(axis=0), rtol=0, atol=1e-12)
        else:
            assert abs(est[0] - 1.0) < abs(Xc.mean(axis=0)[0] - 1.0) / 2


# ------------------------------------------------------------------ ransac


def test_ransac_intended_returns_the_mean_when_every_row_is_an_inlier(registry):
    X = np.random.default_rng(0).standard_normal((600, 2))
    eps, tau = 0.3, 0.1
    N, d = X.shape
    t = d + 2 * (math.sqrt(d * math.log(N / tau)) + math.log(N / tau)) + eps ** 2 * math.log(1 / eps) ** 2
    assert (((X - X.mean(axis=0)) ** 2).sum(axis=1) <= t).all()  # the premise
    assert math.ceil(2 * (d * math.log(4) + math.log(2 / tau)) / eps ** 2) <= N  # subsets are drawn
    np.testing.assert_array_equal(estimate(registry, "ransac", X, eps=eps, count="intended"), X.mean(axis=0))


def test_ransac_reference_count_reads_the_first_column(registry):
    # The reference's norm(m - data(j)): data(j) is the j-th entry in column order.
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3000, 2))
    X[:, 1] += 100.0  # far in column 2 only: rows are outliers, first-column entries are not
    plain = estimate(registry, "ransac", X, eps=0.3, count="reference")
    # the mean's count under the reference rule: entries x_j1 with ||m - x_j1 1||^2 <= t
    m = X.mean(axis=0)
    N, d = X.shape
    t = d + 2 * (math.sqrt(d * math.log(N / 0.1)) + math.log(N / 0.1)) + 0.09 * math.log(1 / 0.3) ** 2
    flat = X.flatten(order="F")
    count = sum(np.sum((m - flat[j]) ** 2) <= t for j in range(N))
    assert count == 0  # column 2's mean is 100 away from every first-column entry
    assert np.isfinite(plain).all()


def test_ransac_small_n_returns_the_mean(registry):
    X = np.random.default_rng(0).standard_normal((50, 10))
    np.testing.assert_array_equal(estimate(registry, "ransac", X, eps=0.1), X.mean(axis=0))


def _ransac_one_at_a_time(X, rng, eps, count, tau=0.1, iterations=100):
    """RANSAC transcribed plainly: one candidate at a time, distances as differences."""
    N, d = X.shape
    s = math.ceil(2 * (d * math.log(4) + math.log(2 / tau)) / eps ** 2)
    t = d + 2 * (math.sqrt(d * math.log(N / tau)) + math.log(N / tau)) + eps ** 2 * math.log(1 / eps) ** 2

    def inliers(m):
        if count == "reference":
            return int(np.count_nonzero(((m[None, :] - X[:, :1]) ** 2).sum(axis=1) <= t))
        return int(np.count_nonzero(((X - m) ** 2).sum(axis=1) <= t))

    best = X.mean(axis=0)
    best_count = inliers(best)
    for _ in range(iterations):
        m = X[rng.choice(N, size=s, replace=False)].mean(axis=0)
        k = inliers(m)
        if k > best_count:
            best, best_count = m, k
    return best


@pytest.mark.parametrize("count", ["intended", "reference"])
def test_ransac_candidates_computed_together_equal_one_at_a_time(count):
    # the batched candidates (drawn first, means and counts in matrix products) pick the candidate
    # the plain loop picks: a far cluster makes the counts differ from candidate to candidate
    rng = np.random.default_rng(11)
    X = rng.standard_normal((4000, 5))
    X[:1200] += 12.0  # the noisy mean sits 3.6 from the inliers in every coordinate
    plain = _ransac_one_at_a_time(X, np.random.default_rng(5), 0.3, count, iterations=40)
    batched = sample_estimators.ransac_mean(X, rng=np.random.default_rng(5), eps=0.3, count=count,
                                            iterations=40)
    assert not np.allclose(plain, X.mean(axis=0))  # a drawn candidate won, not the first
    np.testing.assert_allclose(batched, plain, rtol=0, atol=1e-12)


@pytest.mark.parametrize("N", [1, 2, 7, 10, 1001, 1000, 2500])
def test_column_medians_equal_numpys_median(N):
    from cmbench.builtins.rows import column_medians

    rng = np.random.default_rng(N)
    Y = rng.standard_normal((N, 9))
    Y[:, 1] = rng.integers(0, 3, N)  # ties at the middle
    Y[:, 2] = 5.0  # a constant column
    if N > 2:
        Y[N // 3, 4] = np.nan  # numpy's median of a column holding NaN is NaN
    np.testing.assert_array_equal(column_medians(Y), np.median(Y, axis=0))


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (1023, 2), (1024, 5), (2049, 3)])
def test_transposed_is_the_transpose_across_tiles(shape):
    from cmbench.builtins.rows import transposed

    full = np.random.default_rng(3).standard_normal((shape[0], 2 * shape[1] + 1))
    B = full[:, 1::2]  # a strided column block, as `by_columns` hands it
    out = transposed(B)
    assert out.flags.c_contiguous and out.shape == (shape[1], shape[0])
    np.testing.assert_array_equal(out, B.T)


# -------------------------------------------------------- lrv, median of means


def test_lrv_one_dimension_is_the_shortest_window_mean(registry):
    z = np.array([0.0, 0.1, 0.2, 0.3, 0.35, 0.4, 0.5, 0.6, 10.0, 20.0])
    # window floor(10 * 0.81) = 8: z[0:8] spans 0.6, the others more
    assert estimate(registry, "lrv", z[:, None], eps=0.1)[0] == pytest.approx(z[:8].mean(), abs=1e-15)


@pytest.mark.parametrize("median", ["geometric", "coordinate"])
def test_median_of_means_resists_a_far_cluster(registry, median):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, 5))
    X[:200] = 50.0
    est = estimate(registry, "median-of-means", X, eps=0.05, median=median)
    assert np.linalg.norm(est) < 0.2 * np.linalg.norm(X.mean(axis=0))


# ----------------------------------------- filter default against the reference


# 50 rows per dimension: the whitening reads every row; 120: subsamples of 5000 and 7000 rows
@pytest.mark.parametrize("per_dim", [50, 120])
@pytest.mark.parametrize("noise", ["dkk17", "shift"])
def test_default_filter_within_twice_the_reference_filter(registry, noise, per_dim):
    d = 100  # below, the default is weaker: the filter's docstring
    data = gaussian(registry, seed=7, d=d, samples_per_dim=per_dim, mean=1.0 if noise == "dkk17" else 0.0)
    assert (estimators._whitening_rows(d * per_dim, d)[0] < d * per_dim) == (per_dim == 120)
    comps = ({} if noise == "dkk17" else
             {"components": [{"kind": "gaussian", "shift": 0.5, "sd": 1.0}]})
    Xc = mixture(registry, data.X, 0.1, **comps)
    untouched = (Xc == data.X).all(axis=1)
    sampling = np.linalg.norm(data.X[untouched].mean(axis=0) - data.mean)

    def excess(name, **p):
        return np.linalg.norm(estimate(registry, name, Xc, eps=0.1, **p) - data.mean) - sampling

    ref = excess("filter", whiten=False, rule="reference")
    ours = excess("filter")
    noisy = np.linalg.norm(Xc.mean(axis=0) - data.mean) - sampling
    assert ref < noisy / 5  # the reference does filter here
    assert ours <= 2 * max(ref, 0.0) + 1e-3, (ours, ref)


class RowReads(np.ndarray):
    """A float array recording which of its rows are read: the rows an index selects, every
    row when a ufunc or a NumPy function takes the whole array (or a view of it)."""

    def __new__(cls, X):
        obj = np.asarray(X, dtype=float).view(cls)
        obj.read = np.zeros(X.shape[0], dtype=bool)
        return obj

    def __array_finalize__(self, obj):
        self.read = getattr(obj, "read", None)  # a view shares its base's record

    def __getitem__(self, key):
        self.read[key[0] if isinstance(key, tuple) else key] = True
        return np.asarray(super().__getitem__(key))

    @staticmethod
    def _plain(args):
        for a in args:
            if isinstance(a, RowReads):
                a.read[:] = True
        return tuple(np.asarray(a) if isinstance(a, RowReads) else a for a in args)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return getattr(ufunc, method)(*self._plain(inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*self._plain(args), **kwargs)


def test_row_reads_records_indexing_and_whole_array_use():
    Y = RowReads(np.arange(12.0).reshape(6, 2))
    Y[np.array([4, 1])].sum()
    Y[2:3, :1].copy()
    assert np.flatnonzero(Y.read).tolist() == [1, 2, 4]
    np.median(Y, axis=0)
    assert Y.read.all()
    Z = RowReads(np.ones((4, 2)))
    assert (Z.T @ np.ones(4)).tolist() == [4.0, 4.0] and Z.read.all()


def test_filter_whitening_reads_two_subsamples_of_many_rows():
    N, n = 40_000, 5
    m, k = estimators._whitening_rows(N, n)
    assert (m, k) == (5000, 20_000)
    assert estimators._whitening_rows(10_000, n) == (10_000, 10_000)  # few rows: all of them, in both
    Y = RowReads(np.random.default_rng(0).standard_normal((N, n)))
    center, W = estimators._spectral_whitening(Y, 0.1, np.random.default_rng(1))
    assert Y.read.sum() == m + k
    # the subsamples are the rng's: another seed reads other rows, the same seed the same
    again = RowReads(np.asarray(Y))
    estimators._spectral_whitening(again, 0.1, np.random.default_rng(1))
    other = RowReads(np.asarray(Y))
    estimators._spectral_whitening(other, 0.1, np.random.default_rng(2))
    assert (again.read == Y.read).all() and not (other.read == Y.read).all()
    # and the whitening is one: unit variances along every direction of the inliers
    np.testing.assert_allclose(np.linalg.svd(W, compute_uv=False), 1.0, atol=0.1)
    assert np.abs(center).max() < 0.1


# --------------------------------------------------------------- excess-l2


def test_excess_l2(registry):
    metric = registry.metrics["excess-l2"]
    assert metric.inputs == ("inlier_mean",)
    data = cmbench.Data(X=np.zeros((3, 2)), mean=np.zeros(2))
    assert metric.fn(np.array([3.0, 4.0]), data, inlier_mean=np.array([0.0, 1.0])) == pytest.approx(4.0)
    with pytest.raises(cmbench.Undefined, match="inlier_mean"):
        metric.fn(np.zeros(2), data)


def test_the_sample_level_estimators_are_a_built_in_plugin_of_their_own(registry):
    for name in ("prune", "ransac", "lrv", "median-of-means"):
        assert registry.estimators[name].fn.__module__ == sample_estimators.__name__
        assert registry.source("estimators", name).plugin == "cmbench.sample_estimators"
