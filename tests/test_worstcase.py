"""Properties of the adaptive worst-case adversaries (plugins/worstcase.py).

The pipeline under attack is built here from the registry's recoverer and
estimator callables, as the runner does: ``pipeline(X_corrupted)`` is the l2
error of the estimate against the true mean, NaN when the estimator is
undefined on the corruption.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cmbench
from cmbench.builtins import adversaries as fixed
from cmbench.builtins import worstcase as wc
from cmbench.theory import d_entry, d_entry_bound, d_tv_empirical

LEVELS = ("sample", "value", "coordinate")
MODES = ("missing", "replace")
NAMES = [f"worst-case-{lv}-{md}" for lv in ("a1", "a2", "a3") for md in ("hide", "replace")]


# --------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def registry():
    return cmbench.load_plugins()


@pytest.fixture(scope="module")
def gaussian(registry):
    """The paper's synthetic data (x = A z, two 8x4 blocks, m_A = 5), N = 400."""
    ds = registry.datasets["synthetic-gaussian"]
    params = dict(ds.params, N=400)
    return ds.fn(instance=0, rng=np.random.default_rng(11), **params)


def make_pipeline(registry, data, recoverer: str, estimator: str):
    """l2 error of (recover, then estimate) against the true mean; NaN when undefined.

    Deterministic: the recoverer's and estimator's rng are re-seeded per call.
    ``pipeline.calls`` counts the calls.
    """
    rec, est = registry.recoverers[recoverer], registry.estimators[estimator]

    def pipeline(Xc):
        pipeline.calls += 1
        out = rec.fn(Xc, rng=np.random.default_rng(1), structure=data.structure,
                     rank=data.rank, **rec.params)
        Xr = out[0] if isinstance(out, tuple) else out
        try:
            mu = est.fn(Xr, rng=np.random.default_rng(2), **est.params)
        except cmbench.Undefined:
            return math.nan
        return float(np.linalg.norm(mu - data.mean))

    pipeline.calls = 0
    return pipeline


def rugged(Xc):
    """A deterministic, rugged score that rewards touching more entries: lets the
    local search accept many moves of every kind."""
    rugged.calls += 1
    return float(np.isnan(Xc).sum() + np.nansum(np.sin(7.3 * Xc)))


rugged.calls = 0


def usage(X, Xc, level):
    """What a corruption spends, counted as the runner does (NaN == NaN)."""
    changed = ~((Xc == X) | (np.isnan(Xc) & np.isnan(X)))
    if level == "sample":
        return int(changed.any(axis=1).sum())
    if level == "value":
        return int(changed.sum(axis=0).max(initial=0))
    return int(changed.sum())


def cap(X, budget, level):
    N, n = X.shape
    return math.floor(budget * (N * n if level == "coordinate" else N) * (1 + 1e-12))


# --------------------------------------------------------------------------- registration

def test_six_adaptive_declarations(registry):
    for name in NAMES:
        decl = registry.adversaries[name]
        assert decl.adaptive
        assert decl.params["evaluations"] == 200
        tag = name.split("-")
        assert decl.level == {"a1": "sample", "a2": "value", "a3": "coordinate"}[tag[2]]
        assert decl.mode == {"hide": "missing", "replace": "replace"}[tag[3]]
    assert not registry.adversaries["hide-smallest"].adaptive


def test_without_pipeline_not_applicable(gaussian):
    with pytest.raises(cmbench.NotApplicable):
        wc.worst_case_a2_hide(gaussian.X, 0.1, rng=np.random.default_rng(0), structure=None)


# --------------------------------------------------------------------------- the properties

BUDGETS = (0.0, 0.05, 0.1, 0.2, 0.3)


def test_a2_hide_at_least_hide_smallest_against_mean(registry, gaussian):
    """hide-smallest is in the portfolio (evaluated first), so against the
    empirical mean the worst case is at least as bad at every budget."""
    X = gaussian.X
    for rho in BUDGETS:
        pipe = make_pipeline(registry, gaussian, "none", "mean")
        base = pipe(fixed.hide_smallest(X, rho))
        worst = pipe(wc.worst_case_a2_hide(X, rho, rng=np.random.default_rng(0), pipeline=pipe,
                                           structure=gaussian.structure, evaluations=20))
        assert worst >= base, (rho, worst, base)


def test_a2_hide_strictly_worse_than_hide_smallest_for_cmedian_and_two_step_e(registry, gaussian):
    """hide-smallest is not the worst A2 attack for C-Median (none + cmedian): a
    median moves by the same quantile whichever tail goes, so the side that
    adds to the sample's own error wins (here the tails along the top principal
    direction). Nor for Two-Step-E (exact + mean): hiding whole rows leaves
    them unrecoverable, where tails of single coordinates are recovered
    exactly; the worst case is then several times hide-smallest."""
    X = gaussian.X
    for rho in BUDGETS[1:]:
        pipe = make_pipeline(registry, gaussian, "none", "cmedian")
        base = pipe(fixed.hide_smallest(X, rho))
        worst = pipe(wc.worst_case_a2_hide(X, rho, rng=np.random.default_rng(0), pipeline=pipe,
                                           structure=gaussian.structure, evaluations=20))
        assert worst > base, ("cmedian", rho, worst, base)
    pipe = make_pipeline(registry, gaussian, "exact", "mean")
    base = pipe(fixed.hide_smallest(X, 0.1))
    worst = pipe(wc.worst_case_a2_hide(X, 0.1, rng=np.random.default_rng(0), pipeline=pipe,
                                       structure=gaussian.structure, evaluations=30))
    assert worst > 2.0 * base, (worst, base)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("mode", MODES)
def test_budget_and_contract_on_paper_data(registry, gaussian, level, mode):
    """Never more than the budget buys, X untouched, missing mode only hides,
    replaced values finite, the runner's d_ENTRY / d_TV within the budget."""
    X = gaussian.X.copy()
    X.setflags(write=False)
    fn = registry.adversaries[f"worst-case-{wc.LEVEL_TAGS[level]}-{wc.MODE_TAGS[mode]}"].fn
    for budget in (0.03, 0.1):
        Xc = fn(X, budget, rng=np.random.default_rng(3), structure=gaussian.structure,
                pipeline=rugged, evaluations=40)
        assert Xc.shape == X.shape
        assert usage(X, Xc, level) <= cap(X, budget, level)
        if mode == "missing":
            assert np.array_equal(np.isnan(Xc) | (Xc == X), np.ones_like(Xc, bool))
        else:
            assert np.isfinite(Xc).all()
        if level == "value":
            assert d_entry_bound(X, Xc, np.inf) <= budget + 1e-12
        elif level == "coordinate":
            assert d_entry_bound(X, Xc, 1) <= budget + 1e-12
        else:
            assert d_tv_empirical(X, Xc) <= budget + 1e-12


@st.composite
def small_case(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    N, n = draw(st.integers(3, 30)), draw(st.integers(1, 6))
    X = rng.normal(size=(N, n)).round(draw(st.sampled_from([0, 3])))  # rounding: ties
    if draw(st.booleans()):
        X[rng.random((N, n)) < 0.15] = np.nan  # entries already missing cost nothing
    return (X, draw(st.sampled_from(LEVELS)), draw(st.sampled_from(MODES)),
            draw(st.floats(0, 1)), draw(st.integers(0, 25)), seed)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_case())
def test_budget_and_evaluations_never_exceeded(case):
    X, level, mode, budget, evaluations, seed = case
    X.setflags(write=False)
    before = X.copy()
    calls = []

    def pipeline(Xc):
        calls.append(1)
        return rugged(Xc)

    Xc = wc.worst_case(X, budget, level=level, mode=mode, rng=np.random.default_rng(seed),
                       pipeline=pipeline, evaluations=evaluations)
    assert len(calls) <= evaluations
    assert usage(X, Xc, level) <= cap(X, budget, level)
    assert np.array_equal(X, before, equal_nan=True)
    assert np.isnan(Xc[np.isnan(X)]).all()  # already hidden stays hidden
    if mode == "missing":
        seen = ~np.isnan(Xc)
        assert np.array_equal(Xc[seen], X[seen])


def test_evaluations_counted_and_zero_budget_free(registry, gaussian):
    X = gaussian.X
    for evaluations in (1, 7, 60):
        pipe = make_pipeline(registry, gaussian, "exact", "mean")
        res = wc.search_worst_case(X, 0.1, level="value", mode="missing", rng=np.random.default_rng(0),
                                   structure=gaussian.structure, pipeline=pipe, evaluations=evaluations)
        assert pipe.calls == res.evaluations <= evaluations
    pipe = make_pipeline(registry, gaussian, "none", "mean")
    out = wc.worst_case_a3_hide(X, 0.0, rng=np.random.default_rng(0), pipeline=pipe)
    assert pipe.calls == 0 and np.array_equal(out, X)
    out = wc.worst_case_a1_replace(X, 0.2, rng=np.random.default_rng(0), pipeline=pipe, evaluations=0)
    assert pipe.calls == 0 and usage(X, out, "sample") == cap(X, 0.2, "sample")


@pytest.mark.parametrize("name", ["worst-case-a2-hide", "worst-case-a3-hide", "worst-case-a1-replace",
                                  "worst-case-a3-replace"])
def test_deterministic_under_seed(registry, gaussian, name):
    fn = registry.adversaries[name].fn
    runs = []
    for _ in range(2):
        pipe = make_pipeline(registry, gaussian, "none", "trimmed-mean")
        runs.append(fn(gaussian.X, 0.05, rng=np.random.default_rng(42), structure=gaussian.structure,
                       pipeline=pipe, evaluations=40))
    assert np.array_equal(runs[0], runs[1], equal_nan=True)


@pytest.mark.parametrize("rho", [0.05, 0.1, 0.25, 0.5])
def test_d_entry_inf_of_hide_smallest_is_rho(rho):
    """Every coordinate loses exactly floor(rho N) of its N entries, and any
    coupling must pair those NaN with numbers: d_ENTRY^inf = d_ENTRY^1 = rho."""
    X = np.random.default_rng(5).normal(size=(60, 4))
    Xc = fixed.hide_smallest(X, rho)
    k = math.floor(rho * 60 + 1e-9) / 60
    assert d_entry(X, Xc, np.inf, method="exact") == pytest.approx(k, abs=1e-9)
    assert d_entry(X, Xc, 1, method="exact") == pytest.approx(k, abs=1e-12)
    big = np.random.default_rng(6).normal(size=(1000, 16))
    assert d_entry(big, fixed.hide_smallest(big, rho), np.inf) == pytest.approx(rho, abs=1e-12)


# --------------------------------------------------------------------------- search behaviour

def test_broken_pipeline_is_maximal_unless_avoided(registry, gaussian):
    """At alpha >= 1/n an A3 adversary can hide a whole coordinate, which leaves
    the empirical mean undefined: the worst case (breaks="max") breaks it;
    breaks="avoid" returns the worst finite error instead."""
    X = gaussian.X
    pipe = make_pipeline(registry, gaussian, "none", "mean")
    res = wc.search_worst_case(X, 0.1, level="coordinate", mode="missing", rng=np.random.default_rng(0),
                               pipeline=pipe, evaluations=50)
    assert math.isinf(res.error) and np.isnan(res.X).all(axis=0).any()
    assert res.evaluations < 50  # nothing beats a break: the search stops
    res = wc.search_worst_case(X, 0.1, level="coordinate", mode="missing", rng=np.random.default_rng(0),
                               pipeline=pipe, evaluations=50, breaks="avoid")
    assert math.isfinite(pipe(res.X)) and pipe(res.X) == res.error


def test_local_search_improves_on_the_portfolio(registry, gaussian):
    """Against the iterative filter (none + filter) no portfolio attack is a
    local optimum: swapping hidden entries raises the error further."""
    pipe = make_pipeline(registry, gaussian, "none", "filter")
    res = wc.search_worst_case(gaussian.X, 0.1, level="value", mode="missing",
                               rng=np.random.default_rng(0), structure=gaussian.structure,
                               pipeline=pipe, evaluations=80)
    assert res.local.improved > 0
    assert res.error > res.start_score[0]
    assert pipe(res.X) == res.error


def test_replacements_stay_in_the_box(registry, gaussian):
    X = gaussian.X
    pipe = make_pipeline(registry, gaussian, "none", "mean")
    prob = wc.Problem.make(X, 0.1, "value", "replace", reach=1.0)
    Xc = wc.worst_case_a2_replace(X, 0.1, rng=np.random.default_rng(0), pipeline=pipe,
                                  evaluations=30, reach=1.0)
    assert ((Xc >= prob.lo) & (Xc <= prob.hi)).all()
    # against the mean the box edge is where the worst case plants
    assert pipe(Xc) > pipe(fixed.replace_values(X, 0.1))


# --------------------------------------------------------------------------- through the runner and the report

STRESS_SUITE = """
name = "mini-stress"
seed = 3
[[experiment]]
name = "stress"
datasets = [{ name = "synthetic-gaussian", N = 150 }]
instances = 1
adversaries = [{ name = "worst-case-a2-hide", evaluations = 6 }, "hide-smallest", "hide-tail"]
budgets = [0.0, 0.1]
recoverers = ["none", "exact"]
estimators = ["mean", "cmedian"]
metrics = ["l2", "mahalanobis"]
"""


def test_runner_cube_and_stress_pages(tmp_path, write_suite):
    import matplotlib

    from cmbench.report import load_cube

    from cmbench.report.content import stress
    from cmbench.report.style import RC
    from cmbench.report.style import MethodStyles

    cubes = cmbench.run_suite(write_suite(STRESS_SUITE), out=tmp_path / "out", report=False,
                              progress=False)
    ds = cubes["stress"]
    ev = ds["evaluations"].sel(adversary="worst-case-a2-hide", budget=0.1)
    assert (ev <= 6).all() and (ev >= 1).all()
    assert np.isnan(ds["evaluations"].sel(adversary="hide-smallest")).all()
    assert float(ds["evaluations"].sel(adversary="worst-case-a2-hide", budget=0.0).max()) == 0
    cube = load_cube(ds)
    assert stress.adaptive_adversaries(cube) == ["worst-case-a2-hide"]
    rows = {r["method"]: r for r in stress.worst_case_summary(cube)}
    # the pipelines are deterministic, and hide-smallest is in the portfolio
    assert rows["none+mean"]["ratio_median"] >= 1.0 and rows["none+mean"]["cells"] == 1
    assert rows["exact+mean"]["worst"] > rows["exact+mean"]["fixed"]
    slugs = [p.slug for p in stress.stress_pages(cube, MethodStyles(cube.methods))]
    assert slugs[0] == "stress-stress-worst-case-a2-hide-synthetic-gaussian"
    assert {"stress-stress-d_entry1-l2", "stress-stress-d_tv-mahalanobis",
            "stress-stress-summary"} <= set(slugs)
    from cmbench.report import build_pages

    with matplotlib.rc_context(RC):
        pages = [p.slug for p in build_pages([cube], title="t")]
    assert set(slugs) <= set(pages)  # the report includes the stress pages
    # a cube without adaptive adversaries gets no stress page
    plain = load_cube(ds.sel(adversary=["hide-smallest", "hide-tail"]))
    assert stress.stress_pages(plain, MethodStyles(plain.methods)) == []
