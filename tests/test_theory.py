"""Properties of cmbench.theory stated in the paper (ICML 2021, coordinate-level corruption)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
import scipy.stats

from cmbench import theory as T


def block_diagonal(rng, blocks=2, shape=(8, 4)):
    """The paper's synthetic structure: a block-diagonal A of generic blocks."""
    return scipy.linalg.block_diag(*(rng.normal(size=shape) for _ in range(blocks)))


def rank(A):
    return np.linalg.matrix_rank(A) if A.size else 0


# ----------------------------------------------------------------------------- m_A

@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_m_identity_is_one(n):
    assert T.m_a(np.eye(n)) == 1


@pytest.mark.parametrize("n,r", [(1, 1), (4, 3), (7, 2)])
def test_m_repeated_e1_is_n(n, r):
    A = np.zeros((n, r))
    A[:, 0] = 1.0
    assert T.m_a(A) == n
    assert T.critical_rows(A).tolist() == list(range(n))


@pytest.mark.parametrize("n,r,seed", [(6, 2, 0), (10, 4, 1), (12, 6, 2), (9, 9, 3)])
def test_m_generic_is_n_minus_r_plus_one(n, r, seed):
    A = np.random.default_rng(seed).normal(size=(n, r))
    assert T.m_a(A) == n - r + 1
    crit = T.critical_rows(A)
    assert rank(np.delete(A, crit, axis=0)) == r - 1


def test_block_diagonal_8x4_blocks():
    A = block_diagonal(np.random.default_rng(7))
    assert A.shape == (16, 8) and rank(A) == 8
    assert T.m_a(A) == 5
    crit = T.critical_rows(A)
    assert crit.dtype.kind == "i" and crit.tolist() == sorted(crit.tolist()) and crit.size == 5
    assert rank(np.delete(A, crit, axis=0)) == 7
    # minimality: no 4 rows lower the rank (batched over all C(16, 4) sets)
    keep = np.array([np.setdiff1d(np.arange(16), R) for R in itertools.combinations(range(16), 4)])
    assert np.all(np.linalg.matrix_rank(A[keep]) == 8)


def test_m_zero_rows_rank_deficiency_and_dependencies():
    rng = np.random.default_rng(3)
    A = block_diagonal(rng)
    padded = np.vstack([A[:5], np.zeros((3, 8)), A[5:]])
    assert T.m_a(padded) == 5
    assert not set(T.critical_rows(padded)) & {5, 6, 7}  # zero rows lie in every hyperplane
    B = rng.normal(size=(10, 3)) @ rng.normal(size=(3, 6))  # rank 3 in R^6
    assert T.m_a(B) == 10 - 3 + 1
    assert rank(np.delete(B, T.critical_rows(B), axis=0)) == 2
    assert T.m_a(np.vstack([np.eye(4), np.eye(4)])) == 2
    C = rng.normal(size=(8, 4))
    C = np.vstack([C, C[:3].sum(axis=0), 2 * C[4] - C[5]])  # 4 rows in one hyperplane
    assert T.m_a(C) == 10 - 4
    assert T.critical_rows(C).tolist() == [3, 4, 5, 6, 7, 9]


def test_m_removal_enumeration_agrees_with_hyperplanes():
    rng = np.random.default_rng(5)
    mats = [block_diagonal(rng), np.vstack([np.eye(3)] * 3), rng.normal(size=(7, 3)),
            np.kron(np.eye(3), rng.normal(size=(3, 2)))]
    for A in mats:
        geo = T._RowGeometry(A, None)
        crit, _ = T._critical_by_removals(geo, 1e6)
        assert crit.size == T.m_a(A)
        assert rank(np.delete(A, crit, axis=0)) == rank(A) - 1


def test_m_budget_error_and_search():
    rng = np.random.default_rng(11)
    A = rng.normal(size=(30, 8))
    with pytest.raises(ValueError, match="max_subsets"):
        T.m_a(A, max_subsets=1000)
    # A generic A: any random hyperplane is a largest one, the search is exact.
    assert T.m_a(A, method="search", n_draws=200) == 30 - 8 + 1
    Bd = block_diagonal(rng, blocks=3)  # m_A = 5, too many hyperplanes for a 1e3 budget
    with pytest.raises(ValueError):
        T.m_a(Bd, max_subsets=1000)
    up = T.m_a(Bd, method="search", n_draws=5000)
    assert up >= 5
    crit = T.critical_rows(Bd, method="search", n_draws=5000)
    assert crit.size == up and rank(np.delete(Bd, crit, axis=0)) == 11
    assert T.m_a(Bd, max_subsets=2e5) == 5  # removal sets of size <= 5 fit that budget


def test_m_rejects_bad_input_and_cache_is_safe():
    with pytest.raises(ValueError, match="rank 0"):
        T.m_a(np.zeros((3, 2)))
    with pytest.raises(ValueError):
        T.m_a(np.array([[1.0, np.nan]]))
    A = np.eye(3)
    c = T.critical_rows(A)
    first = c.tolist()
    c[:] = 99
    assert T.critical_rows(A).tolist() == first and len(first) == 1


# ----------------------------------------------------------------------------- structured attack

def test_critical_set_is_exact_when_affordable_else_a_rank_lowering_search():
    rng = np.random.default_rng(5)
    Bd = block_diagonal(rng)  # the paper's A: m_A = 5
    exact = T.critical_set(Bd)
    assert exact.tolist() == sorted(T.critical_rows(Bd).tolist()) and exact.size == T.m_a(Bd) == 5
    # Too many subsets for the exact search: the seeded fallback still lowers the rank.
    big = block_diagonal(rng, blocks=3)
    with pytest.raises(ValueError):
        T.critical_rows(big, max_subsets=1000)
    found = T.critical_set(big, max_subsets=1000, n_draws=2000)
    assert found.size >= T.m_a(big) and rank(np.delete(big, found, axis=0)) == rank(big) - 1
    assert found.tolist() == T.critical_set(big, max_subsets=1000, n_draws=2000).tolist()  # seeded
    assert np.all(np.diff(found) > 0)


def test_critical_set_and_hidden_direction_reject_rank_zero_and_nan():
    for bad in (np.zeros((4, 2)), np.array([[1.0, np.nan], [0.0, 1.0]])):
        with pytest.raises(ValueError):
            T.critical_set(bad)
    with pytest.raises(ValueError, match="rank 0"):
        T.hidden_direction(np.zeros((4, 2)), [0])


@pytest.mark.parametrize("seed", range(4))
def test_hidden_direction_moves_only_the_critical_rows_and_stays_structured(seed):
    """Lemma lemma:corruptionRecover's indistinguishable shift: x + t w = A z' differs from x on C only."""
    rng = np.random.default_rng(seed)
    A = block_diagonal(rng) if seed % 2 else rng.normal(size=(9, 4))
    rows = T.critical_set(A)
    w = T.hidden_direction(A, rows)
    rest = np.setdiff1d(np.arange(A.shape[0]), rows)
    assert np.all(w[rest] == 0.0) and np.linalg.norm(w) == pytest.approx(1.0)
    z, *_ = np.linalg.lstsq(A, w, rcond=None)
    assert np.allclose(A @ z, w, atol=1e-10)  # w lies in range(A)
    with pytest.raises(ValueError):  # no direction of range(A) lives on a single row of a generic A
        T.hidden_direction(rng.normal(size=(9, 4)), [0])


def test_changed_entries_counts_nan_as_a_value():
    X = np.array([[1.0, np.nan, 3.0], [np.nan, 0.0, -0.0]])
    Y = np.array([[1.0, np.nan, np.nan], [2.0, 0.0, 0.0]])
    assert T.changed_entries(X, Y).tolist() == [[False, False, True], [True, False, False]]
    assert T.changed_entries(X[:, :, None], Y[:, None, :]).shape == (2, 3, 3)  # broadcasts


def test_changed_entries_of_a_sample_larger_than_a_cache_block_is_the_plain_expression():
    rng = np.random.default_rng(3)
    n = 7
    N = 3 * (T.CACHE_ELEMENTS // n) + 5  # three whole row blocks and a partial one
    X = rng.standard_normal((N, n))
    Y = X.copy()
    Y[rng.random(N) < 0.1] = 5.0  # whole rows replaced
    Y[rng.random((N, n)) < 0.01] = np.nan  # entries hidden
    X[rng.random((N, n)) < 0.01] = np.nan  # some hidden in both
    X[0, 0], Y[0, 0] = -0.0, 0.0  # equal numbers
    plain = ~((X == Y) | (np.isnan(X) & np.isnan(Y)))
    assert np.array_equal(T.changed_entries(X, Y), plain)
    assert plain.any() and not plain.all()


def test_budget_count():
    assert T.budget_count(0.29, 100) == 29  # 0.29 * 100 == 28.999999999999996 in floats
    assert T.budget_count(0.3, 10) == 3
    assert T.budget_count(0.099, 10) == 0
    assert T.budget_count(1.0, 7) == 7
    assert T.budget_count(1 / 16, 16 * 1000) == 1000
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError):
            T.budget_count(bad, 10)


# ----------------------------------------------------------------------------- disc

def brute_disc(M):
    s = M / np.sqrt(np.outer(np.diag(M), np.diag(M)))
    X = np.array(list(itertools.product([-1.0, 1.0], repeat=M.shape[0])))
    return math.sqrt(np.max(np.einsum("ij,jk,ik->i", X, s, X)))


@pytest.mark.parametrize("n", [1, 4, 11, 30])
def test_disc_extremes(n):
    assert T.disc(np.eye(n)) == pytest.approx(math.sqrt(n))  # tight lower bound, Lemma lm:psd_bounds
    assert T.disc(np.ones((n, n))) == pytest.approx(n)  # tight upper bound


@pytest.mark.parametrize("n,seed", [(3, 0), (8, 1), (13, 2), (19, 3)])
def test_disc_psd_bounds(n, seed):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(n, rng.integers(1, n + 1)))
    M = G @ G.T + 1e-3 * np.eye(n)
    d = T.disc(M)
    assert math.sqrt(n) - 1e-9 <= d <= n + 1e-9
    D = np.diag(rng.uniform(0.5, 3, n))
    assert T.disc(D @ M @ D) == pytest.approx(d)  # s(M) is scale free
    assert T.disc(M, method="local") <= d + 1e-9


def test_disc_exact_matches_brute_force():
    rng = np.random.default_rng(4)
    for n in (2, 5, 9):
        G = rng.normal(size=(n, 3))
        M = G @ G.T + 0.1 * np.eye(n)
        assert T.disc(M) == pytest.approx(brute_disc(M))


def test_disc_local_search_beyond_enumeration():
    rng = np.random.default_rng(8)
    n = 40
    G = rng.normal(size=(n, 5))
    M = G @ G.T + 0.5 * np.eye(n)
    d = T.disc(M)  # auto: local search
    s = M / np.sqrt(np.outer(np.diag(M), np.diag(M)))
    assert math.sqrt(n) <= d <= min(n, math.sqrt(n * np.linalg.eigvalsh(s)[-1])) + 1e-9
    v = rng.normal(size=n)
    assert T.disc(np.outer(v, v) + 1e-12 * np.eye(n)) == pytest.approx(n, rel=1e-6)
    with pytest.raises(ValueError):
        T.disc(np.array([[1.0, 2.0], [2.0, 1.0]]))  # not PSD


# ----------------------------------------------------------------------------- Gaussians

@pytest.mark.parametrize("mu,sigma", [(0.3, 1.0), (2.0, 0.5), (-1.5, 3.0), (0.0, 2.0)])
def test_d_tv_gaussian_1d_closed_form(mu, sigma):
    p, q = scipy.stats.norm(0, sigma), scipy.stats.norm(mu, sigma)
    integral, _ = scipy.integrate.quad(lambda x: abs(p.pdf(x) - q.pdf(x)) / 2, -40, 40, points=[mu / 2])
    got = T.d_tv_gaussian([0.0], [mu], [[sigma ** 2]])
    assert got == pytest.approx(integral, abs=1e-7)
    assert got == pytest.approx(2 * scipy.stats.norm.cdf(abs(mu) / sigma / 2) - 1)


def test_d_tv_gaussian_singular_and_mahalanobis():
    rng = np.random.default_rng(2)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    cov = Q @ np.diag([4.0, 1.0, 0.25]) @ Q.T
    mu = rng.normal(size=3)
    d = 0.7 * Q[:, 0] + 0.2 * Q[:, 2]
    delta = math.sqrt(0.7 ** 2 / 4 + 0.2 ** 2 / 0.25)
    assert T.mahalanobis(mu + d, mu, cov) == pytest.approx(delta)
    assert T.d_tv_gaussian(mu, mu + d, cov) == pytest.approx(math.erf(delta / (2 * math.sqrt(2))))
    assert T.mahalanobis(np.array([mu + d, mu]), mu, cov) == pytest.approx([delta, 0.0])
    assert T.mahalanobis([3.0, 4.0], [0.0, 0.0], np.eye(2)) == pytest.approx(5.0)
    # x = A z: singular covariance, supported on range(A)
    A = rng.normal(size=(3, 1))
    cov1 = A @ A.T
    t = 0.8
    assert T.d_tv_gaussian(mu, mu + t * A[:, 0], cov1) == pytest.approx(2 * scipy.stats.norm.cdf(t / 2) - 1)
    assert T.mahalanobis(mu + t * A[:, 0], mu, cov1) == pytest.approx(t)
    off = np.cross(A[:, 0], rng.normal(size=3))  # orthogonal to range(A)
    assert T.d_tv_gaussian(mu, mu + 1e-3 * off, cov1) == 1.0
    assert T.mahalanobis(mu + t * A[:, 0] + off, mu, cov1) == pytest.approx(t)  # pseudo-inverse
    assert T.d_tv_gaussian(mu, mu, cov1) == 0.0



def test_mahalanobis_memo_follows_the_covariance_content_and_cannot_be_written():
    """The range basis is memoized by the covariance's bytes: an equal matrix reuses it, a changed one
    (even the same array written in place) does not."""
    cov = np.diag([4.0, 1.0])
    assert T.mahalanobis([2.0, 0.0], [0.0, 0.0], cov) == pytest.approx(1.0)
    cov[0, 0] = 1.0
    assert T.mahalanobis([2.0, 0.0], [0.0, 0.0], cov) == pytest.approx(2.0)
    assert T.mahalanobis([2.0, 0.0], [0.0, 0.0], np.diag([4.0, 1.0])) == pytest.approx(1.0)
    V, w = T._range_basis(np.diag([4.0, 1.0]), None)
    with pytest.raises(ValueError):
        w[0] = 0.0

# ----------------------------------------------------------------------------- d_ENTRY

def figure_samples(hide):
    """Figure fig:disCompare on an 8x8 grid of the unit square (D1).

    D2 corrupts both coordinates of the upper-left quadrant and one coordinate
    of the lower-left and upper-right ones; D3 the horizontal coordinate of the
    left-most 3/4. Corrupted values leave the support (moved, or hidden).
    """
    g = (np.arange(8) + 0.5) / 8
    D1 = np.array([(x, y) for x in g for y in g])
    x, y = D1[:, 0], D1[:, 1]

    def corrupt(D, rows, col):
        D[rows, col] = np.nan if hide else D[rows, col] + 10.0

    D2 = D1.copy()
    corrupt(D2, (x < .5) & (y > .5), slice(None))
    corrupt(D2, (x < .5) & (y < .5), 0)
    corrupt(D2, (x > .5) & (y > .5), 1)
    D3 = D1.copy()
    corrupt(D3, x < .75, 0)
    return D1, D2, D3


@pytest.mark.parametrize("hide", [False, True])
def test_figure_dentry_vs_dtv(hide):
    D1, D2, D3 = figure_samples(hide)
    perm = np.random.default_rng(0).permutation(len(D1))  # the coupling must be found
    for D, d1, dinf in ((D2, 1 / 2, 1 / 2), (D3, 3 / 8, 3 / 4)):
        assert T.d_tv_empirical(D1, D[perm]) == pytest.approx(3 / 4)
        assert T.d_entry(D1, D[perm], p=1) == pytest.approx(d1)
        assert T.d_entry(D1, D[perm], p="inf") == pytest.approx(dinf, abs=1e-7)
        assert T.d_entry(D1, D[perm], p=np.inf, method="bound") == pytest.approx(dinf)
        assert T.d_entry_bound(D1, D, p=1) == pytest.approx(d1)  # row i of D corrupts row i of D1
        assert T.d_entry_bound(D1, D, p="inf") == pytest.approx(dinf)


def test_dentry_inf_fractional_coupling():
    X = np.array([[0.0, 0.0], [1.0, 1.0]])
    Y = np.array([[0.0, 1.0], [1.0, 0.0]])
    # every permutation changes one column in both rows; the half-half coupling halves it
    assert T.d_entry(X, Y, p="inf", method="exact") == pytest.approx(0.5, abs=1e-7)
    assert T.d_entry(X, Y, p="inf", method="bound") == 1.0
    assert T.d_entry(X, Y, p=1) == 0.5


def test_dentry_exact_against_permutations():
    rng = np.random.default_rng(9)
    for _ in range(15):
        N, n = 5, 3
        X = rng.integers(0, 2, size=(N, n)).astype(float)
        Y = rng.integers(0, 2, size=(N, n)).astype(float)
        Y[rng.random((N, n)) < 0.2] = np.nan
        perms = [Y[list(p)] for p in itertools.permutations(range(N))]
        diff = np.array([((X != P) & ~(np.isnan(X) & np.isnan(P))).mean(axis=0) for P in perms])
        d1, dinf = T.d_entry(X, Y, 1), T.d_entry(X, Y, "inf")
        assert d1 == pytest.approx(diff.mean(axis=1).min())
        assert d1 - 1e-9 <= dinf <= diff.max(axis=1).min() + 1e-9
        assert dinf <= T.d_tv_empirical(X, Y) + 1e-9
        assert T.d_entry(X, Y, "inf", max_lp=1) >= dinf - 1e-9  # auto falls back to a bound


def test_theorem_linear_on_structured_samples():
    """(m_A/n) d_TV <= d_ENTRY <= d_TV for laws supported on range(A); tight for
    shifts along A delta with delta normal to the hyperplane of the non-critical rows."""
    rng = np.random.default_rng(1)
    A = block_diagonal(rng)
    n, m = A.shape[0], T.m_a(A)
    N = 60
    X = rng.normal(size=(N, 8)) @ A.T
    keep = np.setdiff1d(np.arange(n), T.critical_rows(A))
    delta = np.linalg.svd(A[keep])[2][-1]  # A[keep] @ delta = 0
    assert np.count_nonzero(np.abs(A @ delta) > 1e-9) == m
    rows = rng.permutation(N)
    Y = X.copy()
    shift = A @ delta
    shift[keep] = 0.0  # exactly: rounding must not touch the other entries
    Y[rows[:12]] += rng.normal(size=(12, 1)) * shift  # m_A entries changed each
    tight = Y[rng.permutation(N)]
    Y[rows[12:20]] = rng.normal(size=(8, 8)) @ A.T  # fresh draws: all entries change
    loose = Y[rng.permutation(N)]
    for Z, expect in ((tight, (m / n) * 12 / N), (loose, None)):
        tv, d1, dinf = T.d_tv_empirical(X, Z), T.d_entry(X, Z, 1), T.d_entry(X, Z, "inf")
        assert (m / n) * tv - 1e-12 <= d1 <= dinf + 1e-9 <= tv + 2e-9
        if expect is not None:
            assert d1 == pytest.approx(expect)
    assert T.d_entry(X, loose, 1) > (m / n) * T.d_tv_empirical(X, loose)


def test_nan_is_a_value():
    X = np.array([[np.nan, 1.0], [2.0, 3.0]])
    Y = np.array([[np.nan, 1.0], [2.0, np.nan]])
    assert T.d_entry_bound(X, Y, 1) == pytest.approx(1 / 4)
    assert T.d_entry_bound(X, Y, "inf") == pytest.approx(1 / 2)
    assert T.d_tv_empirical(X, Y) == pytest.approx(1 / 2)
    assert T.d_entry(X, X.copy(), "inf") == 0.0 and T.d_tv_empirical(X, X[::-1]) == 0.0
    assert T.d_entry(X, Y, 1) == pytest.approx(1 / 4)
    assert T.d_tv_empirical(np.zeros((2, 1)), -np.zeros((2, 1))) == 0.0
    with pytest.raises(ValueError):
        T.d_entry(X, Y, p=2)
    with pytest.raises(ValueError):
        T.d_entry(X, Y[:1])


# ----------------------------------------------------------------------------- thresholds

def test_thresholds_keys_and_order():
    rng = np.random.default_rng(7)
    keys = {"m_a/2n", "m_a/4n", "rho_learn", "rho_unlearnable", "1/n"}
    assert set(T.THRESHOLD_LABELS) == keys
    assert all(isinstance(v, str) and v for v in T.THRESHOLD_LABELS.values())
    for A in (block_diagonal(rng), np.eye(6), rng.normal(size=(10, 3)), np.ones((5, 1))):
        n, m = A.shape[0], T.m_a(A)
        th = T.thresholds(A)
        assert set(th) == keys
        assert th["m_a/2n"] == pytest.approx(m / (2 * n)) and th["1/n"] == pytest.approx(1 / n)
        assert th["rho_learn"] == pytest.approx((m - 1) / (n + (m - 1) * (m - 2)))
        assert 0 <= th["rho_learn"] <= th["rho_unlearnable"] < 1  # Lemma lm:recovery_rho
        assert 0 < th["m_a/4n"] < th["m_a/2n"] <= 0.5
        assert th["m_a/2n"] >= th["1/n"] / 2
    assert T.thresholds(np.eye(4))["rho_unlearnable"] == 0.0  # m_A = 1: nothing recoverable
