"""Property-based checks of the component contract over EVERY registered built-in
adversary and estimator (nothing lost, nothing confusing).

The contract checks are `cmbench.check`'s probes, the ones `cmbench check` runs
on a third party's plugin; these tests feed them random inputs instead of its
fixed cases, and add properties of the built-ins beyond the contract (an
estimate inside the visible range). Every built-in also passes `cmbench check`
itself.

Hypothesis draws random shapes (including N < n and n = 1), budgets, value
patterns (ties, low rank x = A z, wide scales) and NaN patterns (scattered,
whole rows, whole columns, no complete row, everything missing) and checks what
`cmbench.components` promises:

- adversaries: same shape, float, the budget at the declared level (A1 rows,
  A2 entries per column, A3 entries), missing mode only hides, replace mode
  writes finite values and never hides, input never modified, deterministic
  under a seed, and the runner's own contract check accepts the output (a
  built-in must never be recorded as a failed cell);
- estimators: an (n,) finite vector or `cmbench.Undefined`, never Undefined on
  complete data, inside the per-coordinate range of the visible entries (never
  a wild number), input never modified, deterministic under a seed (with the
  global random state disturbed between calls), accepted by the runner's check;
- the two composed as the runner composes them (adversary on clean data, then
  an estimator on the corruption).

Adaptive adversaries (``decl.adaptive``) need a pipeline and are skipped by
the random tests; `cmbench check` gives them one (slow test).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cmbench
from cmbench.check import CHECKS, FAIL, Probe, assert_ok, check_component, probe_adversary, probe_estimator

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


# Estimators allowed to leave the visible range (tukey projects onto the data's affine
# hull, see test_estimate_of_a_constant_column_is_that_constant). lrv adds the trimmed
# mean of the bottom eigenspace to its recursion's estimate on the top one: each part
# lies within its projection of the data, their sum need not lie within each
# coordinate's range (found by hypothesis on a 3 x 2 sample: -0.762 for [-0.556, 0.287]).
OUTSIDE_RANGE_KNOWN: set = {"lrv"}


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


def corrupt(name: str, X: np.ndarray, budget: float, seed: int, A) -> Probe:
    """The shared contract checks of `cmbench check` on one input (raises on a violation)."""
    return assert_ok(probe_adversary(REGISTRY.adversaries[name], X, budget, seed, structure=A), name)


def estimate(name: str, X: np.ndarray, seed: int) -> Probe:
    return assert_ok(probe_estimator(REGISTRY.estimators[name], X, seed), name)


def assert_in_visible_range(name: str, X: np.ndarray, mu) -> None:
    """Beyond the contract, a property of the built-in location estimators."""
    visible = ~np.isnan(X)
    lo = np.where(visible, X, np.inf).min(axis=0)
    hi = np.where(visible, X, -np.inf).max(axis=0)
    tol = 1e-7 * (1.0 + np.abs(np.where(np.isfinite(lo), lo, 0)) + np.abs(np.where(np.isfinite(hi), hi, 0)))
    ok = ~np.isfinite(lo) | ((mu >= lo - tol) & (mu <= hi + tol))
    assert name in OUTSIDE_RANGE_KNOWN or ok.all(), \
        f"{name}: estimate {mu[~ok]} outside the visible range [{lo[~ok]}, {hi[~ok]}]"


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
    corrupt(name, X, budget, seed, A if known else None)


@pytest.mark.parametrize("name", ADVERSARIES)
@SETTINGS
@given(data=samples(nan=False), seed=seeds)
def test_adversary_budget_zero_changes_nothing(name, data, seed):
    X, A = data
    probe = corrupt(name, X, 0.0, seed, A)
    assert probe.value is None or np.array_equal(probe.value, X, equal_nan=True)


# ------------------------------------------------------------------ estimators

@pytest.mark.parametrize("name", ESTIMATORS)
@SETTINGS
@given(data=samples(), seed=seeds)
def test_estimator_contract_on_random_inputs(name, data, seed):
    X, _ = data
    probe = estimate(name, X, seed)
    if probe.value is not None:
        assert_in_visible_range(name, X, probe.value)


# ------------------------------------------------------------------ composed

@SETTINGS
@given(adversary=st.sampled_from(ADVERSARIES), estimator=st.sampled_from(ESTIMATORS),
       data=samples(nan=False), budget=budgets, seed=seeds, known=st.booleans())
def test_estimator_on_adversary_output(adversary, estimator, data, budget, seed, known):
    """As the runner composes them: clean data (no NaN, as the runner guarantees),
    then a corruption, then an estimate: finite (n,) or Undefined, never NaN."""
    X, A = data
    Xc = corrupt(adversary, X, budget, seed, A if known else None).value
    if Xc is None:
        return
    probe = estimate(estimator, Xc, seed)
    if probe.value is not None:
        assert_in_visible_range(estimator, Xc, probe.value)


# ------------------------------------------------------------------ every built-in, as `cmbench check` sees it

def _components(adaptive: bool) -> list:
    return [pytest.param(kind, name, id=f"{kind}:{name}")
            for kind in ("adversaries", "recoverers", "estimators", "datasets", "metrics")
            for name, decl in REGISTRY.kind(kind).items()
            if REGISTRY.source(kind, name).plugin.startswith("cmbench.")
            and getattr(decl, "adaptive", False) == adaptive]


def _check_builtin(kind: str, name: str) -> None:
    results = check_component(kind, REGISTRY.kind(kind)[name])
    failed = [r.line() for r in results if r.status == FAIL]
    assert not failed, "\n".join(failed)
    assert len(results) == len(CHECKS[kind])


@pytest.mark.parametrize("kind, name", _components(adaptive=False))
def test_builtin_passes_cmbench_check(kind, name):
    _check_builtin(kind, name)


@pytest.mark.slow
@pytest.mark.parametrize("kind, name", _components(adaptive=True))
def test_adaptive_builtin_passes_cmbench_check(kind, name):
    _check_builtin(kind, name)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("N", [3, 200])
def test_estimate_of_a_constant_column_is_that_constant(name, N):
    """Data with a constant coordinate (the paper's x = A z is degenerate the same way):
    every visible value of column 1 is 1.5, so any location estimate must say 1.5
    (the exact Tukey median lies in the affine hull of the data, where depth > 0)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(N, 3))
    X[:, 1] = 1.5
    mu = estimate(name, X, seed=0).value
    assert abs(mu[1] - 1.5) <= 1e-9, f"{name}: {mu[1]!r} for a column that is 1.5 everywhere"


@pytest.mark.parametrize("name", ESTIMATORS)
def test_an_estimator_on_no_rows_is_undefined_not_a_broken_contract(name):
    """A deleting adversary at budget 1 leaves no row: nothing to estimate from, so Undefined
    is the contract's answer there, as where entries are missing."""
    probe = probe_estimator(REGISTRY.estimators[name], np.zeros((0, 3)), 0)
    assert not probe.problems, probe.problems
