"""Property-based checks of the component contract over EVERY registered built-in
adversary and estimator (issue 8: nothing lost, nothing confusing).

Hypothesis draws random shapes (including N < n and n = 1), budgets, value
patterns (ties, low rank x = A z, wide scales) and NaN patterns (scattered,
whole rows, whole columns, no complete row, everything missing) and checks what
DESIGN.md and `cmbench.components` promise:

- adversaries: same shape, float, the budget at the declared level (A1 rows,
  A2 entries per column, A3 entries), missing mode only hides, replace mode
  writes finite values and never hides, input never modified, deterministic
  under a seed, and the runner's own contract check accepts the output (a
  built-in must never be recorded as a failed cell);
- estimators: an (n,) finite vector or `cmbench.Undefined`, never Undefined on
  complete data, inside the per-coordinate range of the visible entries (never
  a wild number), input never modified, deterministic under a seed, accepted
  by the runner's check;
- the two composed as the runner composes them (adversary on clean data, then
  an estimator on the corruption).

Adaptive adversaries (``decl.adaptive``) need the runner's pipeline and are
skipped; they are exercised by their own tests.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cmbench
from cmbench.runner.units import check_corruption, check_estimate
from cmbench.suite import Entry

REGISTRY = cmbench.load_plugins()


def _builtin(kind: str) -> list[str]:
    table = REGISTRY.kind(kind)
    return sorted(name for name, decl in table.items()
                  if REGISTRY.source(kind, name).plugin.startswith("cmbench.")
                  and not getattr(decl, "adaptive", False))


ADVERSARIES = _builtin("adversaries")
ESTIMATORS = _builtin("estimators")
SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# Estimators allowed to leave the visible range (none: tukey projects onto the
# data's affine hull, see test_estimate_of_a_constant_column_is_that_constant).
OUTSIDE_RANGE_KNOWN: set = set()


def entry(kind: str, name: str) -> Entry:
    decl = REGISTRY.kind(kind)[name]
    return Entry(label=name, decl=decl, params=dict(decl.params), source=str(REGISTRY.source(kind, name)))


def readonly_copy(X: np.ndarray) -> np.ndarray:
    """What the runner hands a plugin: an array whose in-place writes raise."""
    Y = np.array(X, dtype=float)
    Y.setflags(write=False)
    return Y


def changed(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    return ~((X == Y) | (np.isnan(X) & np.isnan(Y)))


# ------------------------------------------------------------------ strategies

@st.composite
def samples(draw, nan: bool = True):
    """(X, A): X (N, n) with N in [2, 25], n in [1, 6], A the known structure or None."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    N = draw(st.integers(2, 25))
    n = draw(st.integers(1, 6))
    kind = draw(st.sampled_from(["gaussian", "low-rank", "ties", "wide-scale", "constant-column"]))
    A = None
    if kind == "low-rank":
        r = draw(st.integers(1, n))
        A = rng.normal(size=(n, r))
        X = rng.normal(size=(N, r)) @ A.T
    elif kind == "ties":
        X = rng.integers(-2, 3, size=(N, n)).astype(float)
    elif kind == "wide-scale":
        X = rng.normal(size=(N, n)) * 10.0 ** rng.integers(-6, 7, size=n) + rng.normal(0, 1e3, size=n)
    else:
        X = rng.normal(loc=rng.normal(0, 5, size=n), size=(N, n))
        if kind == "constant-column":
            X[:, rng.integers(n)] = 1.5
    if nan:
        pattern = draw(st.sampled_from(["none", "scattered", "rows", "columns", "no-complete-row", "all"]))
        if pattern == "scattered":
            X[rng.random(X.shape) < draw(st.floats(0.0, 0.7))] = np.nan
        elif pattern == "rows":
            X[rng.random(N) < 0.4] = np.nan
        elif pattern == "columns":
            X[:, rng.random(n) < 0.4] = np.nan
        elif pattern == "no-complete-row":
            X[np.arange(N), rng.integers(n, size=N)] = np.nan
        elif pattern == "all":
            X[:] = np.nan
    return X, A


budgets = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5, 1.0]))
seeds = st.integers(0, 2**32 - 1)


def corrupt(name: str, X: np.ndarray, budget: float, seed: int, A):
    decl = REGISTRY.adversaries[name]
    return decl.fn(X, budget, rng=np.random.default_rng(seed), structure=A, **decl.params)


def estimate(name: str, X: np.ndarray, seed: int):
    decl = REGISTRY.estimators[name]
    return decl.fn(X, rng=np.random.default_rng(seed), **decl.params)


def assert_adversary_contract(name: str, X: np.ndarray, Y, budget: float) -> None:
    decl = REGISTRY.adversaries[name]
    Y = np.asarray(Y)
    assert Y.shape == X.shape, f"{name}: shape {Y.shape} != {X.shape}"
    assert Y.dtype == np.float64
    N, n = X.shape
    diff = changed(X, Y)
    if decl.level == "sample":
        used, cap = int(diff.any(axis=1).sum()), math.floor(budget * N + 1e-9)
    elif decl.level == "value":
        used, cap = int(diff.sum(axis=0).max(initial=0)), math.floor(budget * N + 1e-9)
    else:
        used, cap = int(diff.sum()), math.floor(budget * N * n + 1e-9)
    assert used <= cap, f"{name} ({decl.level}): {used} corrupted, budget {budget} buys {cap}"
    if decl.mode == "missing":
        assert not (diff & ~np.isnan(Y)).any(), f"{name}: a missing-mode adversary changed a value"
        assert np.isnan(Y[np.isnan(X)]).all(), f"{name}: a missing entry came back"
    else:
        assert not (np.isnan(Y) & ~np.isnan(X)).any(), f"{name}: a replace-mode adversary hid an entry"
        assert np.isfinite(Y[diff]).all(), f"{name}: a replaced entry is not finite"
    # The runner's own check must agree: a built-in is never recorded as a failed cell.
    check_corruption(Y, X, entry("adversaries", name), budget)


def assert_estimator_contract(name: str, X: np.ndarray, mu) -> None:
    n = X.shape[1]
    mu = np.asarray(mu, dtype=float)
    assert mu.shape == (n,), f"{name}: shape {mu.shape}, expected ({n},)"
    assert np.isfinite(mu).all(), f"{name}: a NaN or inf estimate instead of cmbench.Undefined"
    visible = ~np.isnan(X)
    lo = np.where(visible, X, np.inf).min(axis=0)
    hi = np.where(visible, X, -np.inf).max(axis=0)
    tol = 1e-7 * (1.0 + np.abs(np.where(np.isfinite(lo), lo, 0)) + np.abs(np.where(np.isfinite(hi), hi, 0)))
    ok = ~np.isfinite(lo) | ((mu >= lo - tol) & (mu <= hi + tol))
    assert name in OUTSIDE_RANGE_KNOWN or ok.all(), \
        f"{name}: estimate {mu[~ok]} outside the visible range [{lo[~ok]}, {hi[~ok]}]"
    check_estimate(mu, n)


# ------------------------------------------------------------------ adversaries

def test_every_builtin_is_covered():
    """The lists are read from the registry, so a new built-in is covered automatically."""
    assert len(ADVERSARIES) >= 8 and len(ESTIMATORS) >= 7
    assert {"hide-smallest", "replace-values", "hide-samples", "hide-tail"} <= set(ADVERSARIES)
    assert {"mean", "sanitize", "cmedian", "filter"} <= set(ESTIMATORS)


@pytest.mark.parametrize("name", ADVERSARIES)
@SETTINGS
@given(data=samples(), budget=budgets, seed=seeds, known=st.booleans())
def test_adversary_contract_on_random_inputs(name, data, budget, seed, known):
    X, A = data
    A = A if known else None
    before = X.copy()
    Xro = readonly_copy(X)  # an in-place write raises ValueError: read-only
    try:
        Y = corrupt(name, Xro, budget, seed, A)
    except (cmbench.Undefined, cmbench.NotApplicable):
        assert np.array_equal(X, before, equal_nan=True)
        return
    assert np.array_equal(Xro, before, equal_nan=True), f"{name}: input modified"
    assert Y is not Xro
    assert_adversary_contract(name, before, Y, budget)
    again = corrupt(name, readonly_copy(before), budget, seed, A)
    assert np.array_equal(np.asarray(Y), np.asarray(again), equal_nan=True), f"{name}: not deterministic"


@pytest.mark.parametrize("name", ADVERSARIES)
@SETTINGS
@given(data=samples(nan=False), seed=seeds)
def test_adversary_budget_zero_changes_nothing(name, data, seed):
    X, A = data
    try:
        Y = corrupt(name, readonly_copy(X), 0.0, seed, A)
    except (cmbench.Undefined, cmbench.NotApplicable):
        return
    assert np.array_equal(np.asarray(Y), X, equal_nan=True)


# ------------------------------------------------------------------ estimators

@pytest.mark.parametrize("name", ESTIMATORS)
@SETTINGS
@given(data=samples(), seed=seeds)
def test_estimator_contract_on_random_inputs(name, data, seed):
    X, _ = data
    before = X.copy()
    Xro = readonly_copy(X)
    try:
        mu = estimate(name, Xro, seed)
    except cmbench.Undefined:
        assert np.isnan(before).any(), f"{name}: Undefined on complete data"
        return
    assert np.array_equal(Xro, before, equal_nan=True), f"{name}: input modified"
    assert_estimator_contract(name, before, mu)
    again = estimate(name, readonly_copy(before), seed)
    assert np.array_equal(np.asarray(mu, dtype=float), np.asarray(again, dtype=float)), \
        f"{name}: not deterministic under a seed"


# ------------------------------------------------------------------ composed

@SETTINGS
@given(adversary=st.sampled_from(ADVERSARIES), estimator=st.sampled_from(ESTIMATORS),
       data=samples(nan=False), budget=budgets, seed=seeds, known=st.booleans())
def test_estimator_on_adversary_output(adversary, estimator, data, budget, seed, known):
    """As the runner composes them: clean data (no NaN, as the runner guarantees),
    then a corruption, then an estimate: finite (n,) or Undefined, never NaN."""
    X, A = data
    try:
        Xc = corrupt(adversary, readonly_copy(X), budget, seed, A if known else None)
    except (cmbench.Undefined, cmbench.NotApplicable):
        return
    assert_adversary_contract(adversary, X, Xc, budget)
    Xc = readonly_copy(Xc)
    try:
        mu = estimate(estimator, Xc, seed)
    except cmbench.Undefined:
        assert np.isnan(Xc).any(), f"{estimator}: Undefined on a corruption without missing entries"
        return
    assert_estimator_contract(estimator, np.asarray(Xc), mu)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("N", [3, 200])
def test_estimate_of_a_constant_column_is_that_constant(name, N):
    """Data with a constant coordinate (the paper's x = A z is degenerate the same way):
    every visible value of column 1 is 1.5, so any location estimate must say 1.5
    (the exact Tukey median lies in the affine hull of the data, where depth > 0)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(N, 3))
    X[:, 1] = 1.5
    mu = estimate(name, readonly_copy(X), seed=0)
    assert abs(mu[1] - 1.5) <= 1e-9, f"{name}: {mu[1]!r} for a column that is 1.5 everywhere"
