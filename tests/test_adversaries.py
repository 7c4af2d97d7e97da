"""Properties of the built-in adversaries (plugins/adversaries.py).

Budgets follow the paper's adversaries (Section sec:corruptionModels): A1 touches
at most floor(eps N) rows, A2 at most floor(rho N) entries per column, A3 at most
floor(alpha N n) entries in total.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cmbench
from cmbench.builtins import adversaries as adv
from cmbench.plugins import check_signature
from cmbench.theory import budget_count, m_a

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DECLS = {a.name: a for a in adv.register_adversaries()}
NAMES = sorted(DECLS)


# --------------------------------------------------------------------------- data

@st.composite
def structured_data(draw, max_n=8, nan=True):
    """(X, A): x = A z with N in [4, 40], n <= max_n, rank r <= n, optional ties and NaN."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    N = draw(st.integers(4, 40))
    n = draw(st.integers(2, max_n))
    r = draw(st.integers(1, n))
    A = rng.normal(size=(n, r))
    latent = draw(st.sampled_from(["gaussian", "uniform", "exponential", "integer"]))
    if latent == "gaussian":
        Z = rng.normal(size=(N, r))
    elif latent == "uniform":
        Z = rng.uniform(-1, 1, size=(N, r))
    elif latent == "exponential":
        Z = rng.exponential(size=(N, r))
    else:  # few distinct values: many ties
        Z = rng.integers(0, 3, size=(N, r)).astype(float)
        A = rng.integers(-1, 2, size=(n, r)).astype(float)
    X = Z @ A.T
    if nan and draw(st.booleans()):
        X[rng.random(X.shape) < draw(st.floats(0.0, 0.3))] = np.nan
    return X, A


budgets = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5, 1.0]))


def changed(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Entries that differ (a NaN in both is unchanged)."""
    return ~((X == Y) | (np.isnan(X) & np.isnan(Y)))


def corrupt(name, X, budget, seed, structure=None, **params):
    decl = DECLS[name]
    return decl.fn(X, budget, rng=np.random.default_rng(seed), structure=structure,
                   **{**decl.params, **params})


def top_direction(X: np.ndarray) -> np.ndarray:
    """Top principal direction, largest-magnitude entry positive (the module's sign rule)."""
    Xc = X - X.mean(axis=0)
    v = np.linalg.svd(Xc, full_matrices=False)[2][0]
    a = np.abs(v)
    return v if v[np.argmax(a >= a.max() * (1 - 1e-8))] >= 0 else -v


# --------------------------------------------------------------------------- every adversary

def test_registration():
    """Nine declarations, kebab-case unique names, valid level/mode, params fit the signature."""
    assert len(NAMES) == 9
    expected = {
        "hide-smallest": ("value", "missing"), "hide-random": ("value", "missing"),
        "replace-values": ("value", "replace"), "hide-samples": ("sample", "missing"),
        "replace-samples": ("sample", "replace"), "hide-tail": ("coordinate", "missing"),
        "hide-structured": ("coordinate", "missing"), "replace-structured": ("coordinate", "replace"),
        "replace-mixture": ("sample", "replace"),
    }
    for name, (level, mode) in expected.items():
        decl = DECLS[name]
        assert isinstance(decl, cmbench.Adversary)
        assert (decl.level, decl.mode) == (level, mode)
        assert decl.description and decl.fn.__doc__
        check_signature("adversaries", decl, decl.params, name)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=structured_data(), budget=budgets, seed=st.integers(0, 2**32 - 1),
       known=st.booleans())
def test_contract(name, data, budget, seed, known):
    """Budget at the declared level; input untouched; deterministic; NaN/finite rules."""
    X, A = data
    decl = DECLS[name]
    before = X.copy()
    structured = name.endswith("-structured") and known
    if structured and not A.any() and budget_count(budget, X.size):
        with pytest.raises(cmbench.NotApplicable):  # rank 0: m_A is undefined
            corrupt(name, X, budget, seed, structure=A)
        return
    Y = corrupt(name, X, budget, seed, structure=A if known else None)
    assert np.array_equal(X, before, equal_nan=True), "input modified in place"
    assert Y.shape == X.shape and Y.dtype == np.float64 and Y is not X
    Y2 = corrupt(name, X, budget, seed, structure=A if known else None)
    assert np.array_equal(Y, Y2, equal_nan=True), "not deterministic under a seed"

    N, n = X.shape
    diff = changed(X, Y)
    if decl.level == "sample":
        assert diff.any(axis=1).sum() <= budget_count(budget, N)
    elif decl.level == "value":
        assert (diff.sum(axis=0) <= budget_count(budget, N)).all()
    else:
        assert diff.sum() <= budget_count(budget, N * n)

    was_nan, is_nan = np.isnan(X), np.isnan(Y)
    if decl.mode == "missing":
        assert not (diff & ~is_nan).any(), "a missing-mode adversary changed a value"
        assert is_nan[was_nan].all(), "a hidden entry came back"
    else:
        assert not (is_nan & ~was_nan).any(), "a replace-mode adversary hid an entry"
        assert np.isfinite(Y[diff]).all(), "replaced entries must be finite"

    if budget_count(budget, N * n if decl.level == "coordinate" else N) == 0:
        assert not diff.any()


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=structured_data(), seed=st.integers(0, 2**32 - 1))
def test_budget_zero_is_unchanged_copy(name, data, seed):
    X, A = data
    Y = corrupt(name, X, 0.0, seed, structure=A)
    assert Y is not X and not np.shares_memory(X, Y)
    assert np.array_equal(X, Y, equal_nan=True)


def test_integer_input_is_accepted_and_untouched():
    X = np.arange(20).reshape(10, 2)
    Y = adv.hide_smallest(X, 0.2)
    assert Y.dtype == np.float64 and np.isnan(Y[:2]).all() and X.dtype.kind == "i"


# --------------------------------------------------------------------------- A2

@SETTINGS
@given(data=structured_data(), budget=budgets)
def test_hide_smallest_hides_exactly_the_smallest(data, budget):
    """Per column: the min(k, visible) smallest visible values, ties to the lower row index."""
    X, _ = data
    N, n = X.shape
    k = budget_count(budget, N)
    Y = adv.hide_smallest(X, budget)
    for j in range(n):
        rows = [i for i in range(N) if not np.isnan(X[i, j])]
        chosen = sorted(rows, key=lambda i: (X[i, j], i))[:k]
        expected = np.isnan(X[:, j])
        expected[chosen] = True
        assert np.array_equal(np.isnan(Y[:, j]), expected)


def test_hide_smallest_ties_lower_row_first():
    X = np.array([[1.0], [0.0], [0.0], [0.0], [2.0]])
    Y = adv.hide_smallest(X, 0.4)
    assert np.isnan(Y[:, 0]).tolist() == [False, True, True, False, False]


@SETTINGS
@given(data=structured_data(), budget=budgets, seed=st.integers(0, 2**32 - 1))
def test_hide_random_hides_k_per_column(data, budget, seed):
    X, _ = data
    k = budget_count(budget, X.shape[0])
    Y = adv.hide_random(X, budget, rng=np.random.default_rng(seed))
    visible = (~np.isnan(X)).sum(axis=0)
    assert np.array_equal(changed(X, Y).sum(axis=0), np.minimum(k, visible))


def test_hide_random_depends_on_seed_and_is_roughly_uniform():
    X = np.zeros((50, 400))
    masks = [np.isnan(adv.hide_random(X, 0.2, rng=np.random.default_rng(s))) for s in (1, 2)]
    assert not np.array_equal(*masks)
    # each row is hidden with probability 0.2 in each column: 400 Bernoulli trials per row
    freq = masks[0].mean(axis=1)
    assert abs(freq.mean() - 0.2) < 1e-12 and freq.min() > 0.1 and freq.max() < 0.3


@SETTINGS
@given(data=structured_data(nan=False), budget=budgets)
def test_replace_values_shifts_the_largest_up(data, budget):
    """The k largest values of each column move up (when the column varies); the mean rises."""
    X, _ = data
    N, n = X.shape
    k = budget_count(budget, N)
    Y = adv.replace_values(X, budget, shift=2.0)
    diff = changed(X, Y)
    assert (Y[diff] > X[diff]).all()
    for j in range(n):
        top = sorted(range(N), key=lambda i: (-X[i, j], i))[:k]
        assert set(np.flatnonzero(diff[:, j])) <= set(top)
    if k:
        assert (Y.mean(axis=0) >= X.mean(axis=0)).all()


# --------------------------------------------------------------------------- A1

@SETTINGS
@given(data=structured_data(nan=False), budget=budgets)
def test_hide_samples_hides_the_top_projections(data, budget):
    """Exactly floor(eps N) whole rows, those with the largest projection on +v."""
    X, _ = data
    N = X.shape[0]
    k = budget_count(budget, N)
    Y = adv.hide_samples(X, budget, side="positive")
    hidden = np.isnan(Y).any(axis=1)
    assert hidden.sum() == k and np.isnan(Y[hidden]).all()
    sv = np.linalg.svd(X - X.mean(axis=0), compute_uv=False)
    if 0 < k < N and (sv.size == 1 or sv[0] > sv[1] * (1 + 1e-6)):  # v is defined: a spectral gap
        p = (X - X.mean(axis=0)) @ top_direction(X)
        assert p[hidden].min() >= p[~hidden].max() - 1e-9 * (1 + np.abs(p).max())


@SETTINGS
@given(data=structured_data(nan=False), budget=st.floats(0.05, 0.5), seed=st.integers(0, 2**32 - 1))
def test_replace_samples_is_a_structured_cluster_biasing_the_mean(data, budget, seed):
    """floor(eps N) whole rows replaced; fake rows stay in the affine span; mean moves along -v."""
    X, A = data
    N = X.shape[0]
    k = budget_count(budget, N)
    Y = adv.replace_samples(X, budget, rng=np.random.default_rng(seed), side="positive")
    rows = changed(X, Y).any(axis=1)
    assert rows.sum() <= k and np.isfinite(Y).all()
    mu = X.mean(axis=0)
    sv = np.linalg.svd(X - mu, compute_uv=False)
    if k and sv[0] > 1e-6 and (sv.size == 1 or sv[0] > sv[1] * (1 + 1e-6)):
        resid = (Y[rows] - mu) - (Y[rows] - mu) @ np.linalg.pinv(A).T @ A.T
        assert np.abs(resid).max(initial=0) <= 1e-8 * (1 + np.abs(Y).max())
        # the top tail along +v is replaced by a cluster at -shift std: the mean moves along -v
        assert (Y.mean(axis=0) - mu) @ top_direction(X) < 0


# --------------------------------------------------------------------------- A3

@SETTINGS
@given(data=structured_data(), budget=budgets, side=st.sampled_from(["largest", "smallest"]))
def test_hide_tail_spends_on_highest_variance_tails(data, budget, side):
    X, _ = data
    N, n = X.shape
    total = budget_count(budget, N * n)
    Y = adv.hide_tail(X, budget, side=side)
    new = np.isnan(Y) & ~np.isnan(X)
    assert new.sum() == min(total, (~np.isnan(X)).sum())
    for j in range(n):  # hidden values form the chosen tail of their column
        h, vis = X[new[:, j], j], X[~np.isnan(Y[:, j]), j]
        if h.size and vis.size:
            assert (h.min() >= vis.max()) if side == "largest" else (h.max() <= vis.min())


@SETTINGS
@given(data=structured_data(nan=False), extra=st.floats(0.0, 1.0))
def test_hide_tail_hides_a_whole_column_once_alpha_at_least_one_over_n(data, extra):
    X, _ = data
    N, n = X.shape
    alpha = 1 / n + extra * (1 - 1 / n)
    Y = adv.hide_tail(X, alpha)
    var = X.var(axis=0)
    top = np.flatnonzero(var >= var.max() * (1 - 1e-9))  # round-off may reorder near-equal variances
    assert any(np.isnan(Y[:, j]).all() for j in top)
    assert np.isnan(Y).sum() == budget_count(alpha, N * n)


def paper_structure(seed: int) -> np.ndarray:
    """The paper's synthetic A: block diagonal with two random 8 x 4 blocks (m_A = 5)."""
    rng = np.random.default_rng(seed)
    A = np.zeros((16, 8))
    A[:8, :4] = rng.normal(size=(8, 4))
    A[8:, 4:] = rng.normal(size=(8, 4))
    return A


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), budget=st.floats(0.0, 0.35),
       latent=st.sampled_from(["gaussian", "exponential"]))
def test_hide_structured_makes_touched_samples_unrecoverable(seed, budget, latent):
    A = paper_structure(seed)
    assert m_a(A) == 5
    rng = np.random.default_rng(seed + 1)
    N, n = 120, 16
    Z = rng.normal(size=(N, 8)) if latent == "gaussian" else rng.exponential(size=(N, 8))
    X = Z @ A.T
    Y = adv.hide_structured(X, budget, structure=A)
    touched = np.isnan(Y).any(axis=1)
    assert touched.sum() == min(N, math.floor(budget_count(budget, N * n) / 5))
    full = np.linalg.matrix_rank(A)
    for row in np.flatnonzero(touched):
        visible = ~np.isnan(Y[row])
        assert (~visible).sum() == 5
        assert np.linalg.matrix_rank(A[visible]) < full


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), budget=st.floats(0.0, 0.35))
def test_replace_structured_rows_are_structured_but_wrong(seed, budget):
    """Touched rows change in exactly m_A entries and still lie in range(A)."""
    A = paper_structure(seed)
    rng = np.random.default_rng(seed + 1)
    N, n = 120, 16
    X = rng.normal(size=(N, 8)) @ A.T
    Y = adv.replace_structured(X, budget, structure=A)
    diff = changed(X, Y)
    touched = diff.any(axis=1)
    assert touched.sum() == min(N, math.floor(budget_count(budget, N * n) / 5))
    assert (diff[touched].sum(axis=1) == 5).all()
    Yt = Y[touched]
    resid = Yt - Yt @ np.linalg.pinv(A).T @ A.T
    assert np.abs(resid).max(initial=0) <= 1e-8 * (1 + np.abs(Y).max())


def test_hide_structured_estimates_structure_when_unknown():
    """Without A, the structure is the top principal subspace: exact for x = A z data."""
    A = paper_structure(7)
    X = np.random.default_rng(3).normal(size=(200, 8)) @ A.T
    known = adv.hide_structured(X, 0.1, structure=A)
    learnt = adv.hide_structured(X, 0.1, structure=None, rank=8)
    assert np.isnan(learnt).any(axis=1).sum() == np.isnan(known).any(axis=1).sum() == 200 * 16 // 10 // 5
    for row in np.flatnonzero(np.isnan(learnt).any(axis=1)):
        assert np.linalg.matrix_rank(A[~np.isnan(learnt[row])]) < 8
