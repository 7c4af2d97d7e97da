"""Built-in recoverers (plugins/recoverers.py) and the scikit-learn peers (plugins/peers.py).

Properties from the paper: exact recovery with known A below m_A missing entries
(Theorem metaAlgThm's proof), unrecoverable rows where the rank is lost, matrix
completion matching it on the paper's synthetic data, and exact recovery from a
few replaced entries by Algorithm alg:approx, basis pursuit and OMP.
"""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import cmbench
from cmbench import theory
from cmbench.builtins import peers
from cmbench.builtins import batched
from cmbench.builtins import recoverers as rec
from cmbench.plugins import check_signature

# The benchmarks' baselines double as the references here: one per-row lstsq
# loop for exact, timed by benchmarks/run.py and checked by these tests.
_spec = importlib.util.spec_from_file_location(
    "cmbench_bench_baselines", Path(__file__).resolve().parents[1] / "benchmarks" / "baselines.py")
baselines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(baselines)
per_row_lstsq = baselines.per_row_lstsq

NEEDS_SKLEARN = " (needs scikit-learn: pip install 'cmbench[sklearn]')"


# --------------------------------------------------------------------------- #
# data
# --------------------------------------------------------------------------- #

def block_structure(seed: int = 0) -> np.ndarray:
    """The paper's synthetic A: block-diagonal, two random 8 x 4 blocks (n=16, r=8)."""
    rng = np.random.default_rng(seed)
    A = np.zeros((16, 8))
    A[:8, :4] = rng.normal(size=(8, 4))
    A[8:, 4:] = rng.normal(size=(8, 4))
    return A


def sample(A: np.ndarray, N: int, seed: int) -> np.ndarray:
    """x = A z with Gaussian z (mean 1, so the data are not centred): (N, n)."""
    rng = np.random.default_rng(seed)
    return (1.0 + rng.normal(size=(N, A.shape[1]))) @ A.T


def hide_smallest(X: np.ndarray, frac: float) -> np.ndarray:
    """The paper's corruption: hide the floor(frac N) smallest values of each column."""
    out = X.copy()
    idx = np.argsort(X, axis=0)[: int(np.floor(frac * len(X)))]
    np.put_along_axis(out, idx, np.nan, axis=0)
    return out


def hide_random(X: np.ndarray, counts: np.ndarray, rng) -> np.ndarray:
    """Hide counts[i] uniformly chosen entries of row i."""
    order = np.argsort(rng.random(X.shape), axis=1)
    hidden = np.zeros(X.shape, bool)
    np.put_along_axis(hidden, order, np.arange(X.shape[1]) < counts[:, None], axis=1)
    return np.where(hidden, np.nan, X)


def replace_entries(X: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Add N(0, 5^2) to k uniformly chosen entries of each row."""
    rng = np.random.default_rng(seed)
    cols = np.argsort(rng.random(X.shape), axis=1)[:, :k]
    out = X.copy()
    np.put_along_axis(out, cols, np.take_along_axis(X, cols, 1) + rng.normal(0, 5, (len(X), k)), 1)
    return out


def rel_error(Y: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Per-row max-abs error relative to the row's max-abs value."""
    return np.abs(Y - X).max(axis=1) / np.abs(X).max(axis=1)


def call(name, X, *, structure=None, rank=None, seed=0, **params):
    """Call a built-in recoverer as the runner does; drop an info dict."""
    out = getattr(rec, name)(X, rng=np.random.default_rng(seed), structure=structure,
                             rank=rank, **params)
    return out[0] if isinstance(out, tuple) else out


# --------------------------------------------------------------------------- #
# registration
# --------------------------------------------------------------------------- #

def test_declarations_fit_the_contract():
    decls = {d.name: d for d in rec.register_recoverers()}
    assert set(decls) == {"none", "exact", "ithsvd", "randomized", "basis-pursuit", "omp"}
    assert decls["ithsvd"].params == {"tol": 1e-6, "max_iter": 100, "svd": "exact", "init": "median",
                                      "limit_jumps": False}
    assert decls["none"].modes == ("missing", "replace", "delete") and not decls["none"].needs_structure
    assert decls["exact"].modes == ("missing",) and decls["exact"].needs_structure
    assert decls["ithsvd"].modes == ("missing",) and not decls["ithsvd"].needs_structure
    for name in ("randomized", "basis-pursuit", "omp"):
        assert decls[name].modes == ("replace",) and decls[name].needs_structure
    for d in [*decls.values(), *peers.register_recoverers()]:
        assert d.description
        check_signature("recoverers", d, d.params, d.name)


@pytest.mark.parametrize("name", ["exact", "randomized", "basis-pursuit", "omp"])
def test_structure_required(name):
    with pytest.raises(cmbench.NotApplicable):
        call(name.replace("-", "_"), np.ones((3, 4)))


# --------------------------------------------------------------------------- #
# exact (Two-Step-E)
# --------------------------------------------------------------------------- #

def test_exact_recovers_rows_with_fewer_than_m_a_missing():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(10, 3))
    m_a = theory.m_a(A)  # n - r + 1 = 8 for a generic A
    X = sample(A, 400, seed=2)
    Xm = hide_random(X, rng.integers(0, m_a, len(X)), rng)
    Y = call("exact", Xm, structure=A)
    assert not np.isnan(Y).any()
    assert rel_error(Y, X).max() < 1e-9
    visible = ~np.isnan(Xm)
    assert np.array_equal(Y[visible], Xm[visible])  # kept as they are, bit for bit


def test_exact_leaves_nan_where_the_rank_is_lost():
    A = block_structure()
    X = sample(A, 50, seed=3)
    Xm = X.copy()
    Xm[:10, theory.critical_rows(A)] = np.nan  # m_A rows whose loss lowers the rank
    Xm[10:20, :5] = np.nan  # 5 = m_A entries of the first block: rank 7 < 8
    Xm[20:30, [0, 1, 2, 3, 8, 9, 10, 11]] = np.nan  # 4 per block, each block keeps rank 4
    Y = call("exact", Xm, structure=A)
    assert np.array_equal(np.isnan(Y[:20]), np.isnan(Xm[:20]))
    assert not np.isnan(Y[20:]).any() and rel_error(Y[20:], X[20:]).max() < 1e-9
    dropped = call("exact", Xm, structure=A, unrecovered="drop")
    assert np.isnan(dropped[:20]).all() and np.array_equal(dropped[20:], Y[20:])


def test_exact_rule_m_a_discards_rows_with_m_a_or_more_missing():
    A = block_structure()
    m_a = theory.m_a(A)
    assert m_a == 5
    X = sample(A, 40, seed=4)
    Xm = X.copy()
    Xm[:20, [0, 1, 2, 8, 9, 10]] = np.nan  # 6 >= m_A missing, but each block keeps rank 4
    Xm[20:, [0, 1, 8, 9]] = np.nan  # 4 < m_A
    by_rank = call("exact", Xm, structure=A, rule="rank")
    by_m_a = call("exact", Xm, structure=A, rule="m_a")
    assert rel_error(by_rank, X).max() < 1e-9
    assert np.array_equal(np.isnan(by_m_a[:20]), np.isnan(Xm[:20]))
    assert np.array_equal(by_m_a[20:], by_rank[20:])


def test_exact_pattern_batching_equals_per_row_lstsq():
    rng = np.random.default_rng(5)
    A = block_structure(seed=1)
    X = sample(A, 600, seed=6) + 0.1 * rng.normal(size=(600, 16))  # off the subspace: LS is not trivial
    Xm = hide_random(X, rng.integers(0, 9, 600), rng)
    Y = call("exact", Xm, structure=A)
    ref = per_row_lstsq(Xm, A)
    assert np.array_equal(np.isnan(Y), np.isnan(ref))
    assert np.isnan(Y).any() and not np.isnan(Y).all()
    np.testing.assert_allclose(Y, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("frac", [0.1, 0.3])
def test_exact_on_random_masks_equals_per_row_lstsq(frac):
    # Random (MCAR) masks: most rows miss fewer entries than the rank and are
    # solved in their missing entries; rows whose visible part of A is nearly
    # rank deficient (4 of a block's 8 entries missing) must fall back to the
    # better-conditioned routes and still give the per-row result.
    rng = np.random.default_rng(int(frac * 100))
    A = block_structure(seed=2)
    X = sample(A, 3000, seed=7)
    Xm = np.where(rng.random(X.shape) < frac, np.nan, X)
    Y = call("exact", Xm, structure=A)
    ref = per_row_lstsq(Xm, A)
    assert np.array_equal(np.isnan(Y), np.isnan(ref))
    done = ~np.isnan(Y).any(axis=1)
    assert rel_error(Y[done], X[done]).max() < 1e-9
    np.testing.assert_allclose(Y, ref, rtol=1e-9, atol=1e-9 * np.abs(X).max())


# --------------------------------------------------------------------------- #
# ithsvd (Two-Step-M, the supplementary's iteration)
# --------------------------------------------------------------------------- #

ithsvd_svd_loop = baselines.ithsvd_svd_loop


def _small_cases():
    """Small data for iterate-by-iterate checks: exactly low rank, noisy, random masks."""
    rng = np.random.default_rng(40)
    A = block_structure(seed=8)
    X = sample(A, 150, seed=41)
    noisy = X + 0.2 * X.std(axis=0) * rng.normal(size=X.shape)
    mcar = np.where(rng.random(X.shape) < 0.15, np.nan, noisy)
    wide = sample(rng.normal(size=(40, 3)), 150, seed=44) + 0.05 * rng.normal(size=(150, 40))
    return [("low-rank", hide_smallest(X, 0.1), 8), ("noisy", hide_smallest(noisy, 0.25), 8),
            ("mcar", mcar, 5), ("wide", hide_smallest(wide, 0.2), 3)]  # n >= 32: top-k eigensolver


@pytest.mark.parametrize("case", _small_cases(), ids=lambda c: c[0])
def test_ithsvd_iterates_are_the_plain_svd_loop(case):
    _, Xm, rank = case
    ref = []
    ithsvd_svd_loop(Xm, rank, tol=0.0, max_iter=40, iterates=ref)
    state = rec._HardImpute(Xm, rank, "exact", np.random.default_rng(0))
    for it, Z in enumerate(ref, 1):
        state.step()
        got = state.result(Xm)
        diff = np.linalg.norm(got - Z) / np.linalg.norm(Z)
        assert diff <= 1e-9, f"iteration {it}: relative difference {diff:.1e}"
    visible = ~np.isnan(Xm)
    assert np.array_equal(got[visible], Xm[visible])


@pytest.mark.parametrize("case", _small_cases(), ids=lambda c: c[0])
def test_ithsvd_stops_where_the_plain_loop_stops(case):
    # The stopping rule: the first iteration whose change over the missing
    # entries is at most tol times their norm before it.
    _, Xm, rank = case
    for tol, max_iter in [(1e-3, 500), (1e-6, 30)]:
        ref, ref_info = ithsvd_svd_loop(Xm, rank, tol=tol, max_iter=max_iter)
        Y, info = rec.ithsvd(Xm, rng=np.random.default_rng(0), rank=rank, tol=tol, max_iter=max_iter)
        assert info == ref_info
        assert np.linalg.norm(Y - ref) <= 1e-9 * np.linalg.norm(ref)


def _fixed_projector_iteration(state, P, iterations):
    """The plain iteration's missing-entry update with the projector P held fixed."""
    for sl, at in state.chunks:
        Zc = state.Z[sl]
        for _ in range(iterations):
            Zc.put(at, (Zc @ P).take(at))


def test_ithsvd_jump_is_the_limit_with_the_projector_held_fixed():
    rng = np.random.default_rng(52)
    X = sample(block_structure(seed=9), 300, seed=53)
    Xm = np.where(rng.random(X.shape) < 0.05, np.nan, X)
    state = rec._HardImpute(Xm, 8, "exact", None)
    for _ in range(5):
        state.step()
    P, start = state.P.copy(), state.Z.copy()
    assert state.identifiable(P, 1e-7)
    moved = state.jump(P)
    jumped = state.Z.copy()
    hidden = np.isnan(Xm[state.rows])
    assert np.isclose(moved, np.linalg.norm(jumped[hidden] - start[hidden]))
    state.Z = start
    _fixed_projector_iteration(state, P, 20000)
    assert np.abs(jumped - state.Z).max() <= 1e-9 * np.abs(state.Z).max()


@pytest.mark.parametrize("frac", [0.03, 0.05])
def test_ithsvd_limit_jumps_reach_the_plain_limit_where_it_is_unique(frac):
    # Exactly low rank, every row identifiable: one fixed point, which the
    # plain loop reaches in a few hundred iterations and the jumps sooner.
    rng = np.random.default_rng(int(frac * 1000))
    X = sample(block_structure(seed=9), 300, seed=51)
    Xm = np.where(rng.random(X.shape) < frac, np.nan, X)
    hidden = np.isnan(Xm)
    ref, info = ithsvd_svd_loop(Xm, 8, tol=1e-12, max_iter=20000)
    Y, info_j = rec.ithsvd(Xm, rng=None, rank=8, tol=1e-12, max_iter=20000, limit_jumps=True)
    assert info["converged"] and info_j["converged"] and info_j["jumps"] > 0
    assert info_j["iterations"] < info["iterations"]
    assert np.linalg.norm(Y[hidden] - ref[hidden]) <= 1e-6 * np.linalg.norm(ref[hidden])
    assert np.abs(Y - X).max() <= 1e-6 * np.abs(X).max()


def test_ithsvd_limit_jumps_are_undone_without_a_certified_fixed_point(monkeypatch):
    # tol = 0 is never met: the jumps that begin at iteration 10 are undone at
    # max_iter and the result is the plain iteration's, bit for bit.
    rng = np.random.default_rng(30)
    X = sample(block_structure(seed=9), 300, seed=51)
    Xm = np.where(rng.random(X.shape) < 0.03, np.nan, X)
    plain, info = rec.ithsvd(Xm, rng=None, rank=8, tol=0.0, max_iter=40)
    calls = []
    original = rec._HardImpute.jump
    monkeypatch.setattr(rec._HardImpute, "jump", lambda self, P: calls.append(1) or original(self, P))
    fast, info_j = rec.ithsvd(Xm, rng=None, rank=8, tol=0.0, max_iter=40, limit_jumps=True)
    assert calls  # it did jump
    assert info_j == {**info, "jumps": 0} and np.array_equal(plain, fast)


def test_ithsvd_limit_jumps_keep_the_plain_iteration_on_noisy_data():
    # Noise leaves the filled matrix far from rank r: the margin (its squared
    # residual) exceeds the rows' gaps, so no jump is tried.
    _, Xm, rank = _small_cases()[1]
    plain, info = rec.ithsvd(Xm, rng=None, rank=rank, tol=1e-8, max_iter=60)
    fast, info_j = rec.ithsvd(Xm, rng=None, rank=rank, tol=1e-8, max_iter=60, limit_jumps=True)
    assert info_j == {**info, "jumps": 0} and np.array_equal(plain, fast)


def test_ithsvd_randomized_svd_follows_the_exact_iteration():
    # A sketch narrower than n (rank 3 + 10 < 40) with power iterations finds
    # the top subspace of a matrix with a clear gap; the iterates agree.
    rng = np.random.default_rng(42)
    A = rng.normal(size=(40, 3))
    X = sample(A, 300, seed=43) + 0.01 * rng.normal(size=(300, 40))
    Xm = hide_smallest(X, 0.1)
    exact_fill, info = rec.ithsvd(Xm, rng=np.random.default_rng(1), rank=3, max_iter=50)
    fast, info_r = rec.ithsvd(Xm, rng=np.random.default_rng(1), rank=3, max_iter=50, svd="randomized")
    again, _ = rec.ithsvd(Xm, rng=np.random.default_rng(1), rank=3, max_iter=50, svd="randomized")
    assert np.array_equal(fast, again)  # seeded from rng
    assert abs(info_r["iterations"] - info["iterations"]) <= 1
    assert np.linalg.norm(fast - exact_fill) <= 1e-6 * np.linalg.norm(exact_fill)


def test_ithsvd_edge_cases():
    A = block_structure()
    X = sample(A, 200, seed=9)
    Xm = hide_smallest(X, 0.05)
    Xm[5] = np.nan  # the plain iteration fills an all-missing row too (the median row's projection)
    Y, info = rec.ithsvd(Xm, rng=None, structure=None, rank=8, max_iter=20)
    assert not np.isnan(Y).any() and info == {"converged": False, "iterations": 20}
    ref, _ = ithsvd_svd_loop(Xm, 8, max_iter=20)
    assert np.linalg.norm(Y - ref) <= 1e-9 * np.linalg.norm(ref)
    Y, info = rec.ithsvd(Xm, rng=None, structure=None, rank=16)  # full rank: the projection is the identity
    assert info == {"converged": True, "iterations": 1}
    Xm[:, 3] = np.nan
    with pytest.raises(cmbench.Undefined, match="column"):
        rec.ithsvd(Xm, rng=None, structure=None, rank=8)
    with pytest.raises(cmbench.NotApplicable, match="rank"):
        rec.ithsvd(Xm, rng=None, structure=None, rank=None)
    for bad in [dict(rank=0), dict(rank=17), dict(rank=8, svd="lanczos"), dict(rank=8, init="zero")]:
        with pytest.raises(ValueError):
            rec.ithsvd(hide_smallest(X, 0.05), rng=None, structure=None, **bad)
    Y, info = rec.ithsvd(X, rng=None, structure=None, rank=8)  # nothing missing
    assert np.array_equal(Y, X) and info == {"converged": True, "iterations": 0}


def assert_no_iteration_gives_the_median_start(recover) -> None:
    """``recover(..., max_iter=0)`` returns its start: hidden entries filled with the column medians."""
    X = sample(block_structure(), 200, seed=9)
    Xm = hide_smallest(X, 0.1)
    Y, info = recover(Xm, rng=None, structure=None, rank=8, max_iter=0)
    assert info == {"converged": False, "iterations": 0}
    np.testing.assert_array_equal(Y, np.where(np.isnan(Xm), np.nanmedian(Xm, axis=0), Xm))


def test_ithsvd_with_no_iteration_returns_the_median_start():
    assert_no_iteration_gives_the_median_start(rec.ithsvd)


def test_ithsvd_chunks_do_not_change_the_iterates(monkeypatch):
    Xm = hide_smallest(sample(block_structure(seed=5), 600, seed=33), 0.3)
    whole, info = rec.ithsvd(Xm, rng=None, structure=None, rank=8, max_iter=30)
    monkeypatch.setattr(batched, "PASS_ELEMENTS", 16 * 37)
    chunked, info2 = rec.ithsvd(Xm, rng=None, structure=None, rank=8, max_iter=30)
    assert info == info2
    assert np.linalg.norm(chunked - whole) <= 1e-9 * np.linalg.norm(whole)


# --------------------------------------------------------------------------- #
# replaced entries: randomized (Algorithm alg:approx), basis pursuit, OMP
# --------------------------------------------------------------------------- #

@pytest.fixture(scope="module")
def replaced():
    """Gaussian 20 x 4 A (m_A = 17), 200 rows, 2 replaced entries in each of rows 20.., rows :20 clean."""
    A = np.random.default_rng(11).normal(size=(20, 4))
    X = sample(A, 200, seed=12)
    Xt = replace_entries(X, 2, seed=13)
    Xt[:20] = X[:20]
    return A, X, Xt


# Measured with these seeds: every corrupted row is recovered to 1e-9 by all
# three. With more replaced entries per row (m_A / 2 = 8.5 is the limit):
# 4 -> 100% for all; 6 -> randomized 99%, BP 94.5%, OMP 98.5%; 8 -> 87.5%,
# 82%, 89.5%. (On the paper's block-diagonal A, m_A = 5, with 2 replaced
# entries: randomized 100%, OMP 78%, BP 47%: BP/OMP have no guarantee there.)
@pytest.mark.parametrize("name,min_rate", [("randomized", 0.95), ("basis_pursuit", 0.95), ("omp", 0.95)])
def test_few_replaced_entries_are_recovered_exactly(replaced, name, min_rate):
    A, X, Xt = replaced
    Y = call(name, Xt, structure=A, seed=3)
    exact_rows = rel_error(Y, X) < 1e-9
    assert exact_rows[20:].mean() >= min_rate
    assert np.array_equal(Y[:20], Xt[:20])  # rows in range(A) are returned as they are


def test_randomized_uses_r_to_the_c_trials(replaced, monkeypatch):
    A, X, Xt = replaced
    draws = []
    original = rec._independent_rows
    monkeypatch.setattr(rec, "_independent_rows", lambda B, rng: draws.append(1) or original(B, rng))
    call("randomized", Xt, structure=A, c=1.5)
    assert len(draws) == int(np.ceil(4 ** 1.5))  # 8
    draws.clear()
    call("randomized", Xt, structure=A, c=3.0, trials=5)
    assert len(draws) == 5


def test_omp_sparsity_cap(replaced):
    A, X, Xt = replaced
    Y = call("omp", Xt, structure=A, max_sparsity=1)  # 2 replaced entries need 2 steps
    assert np.array_equal(Y, Xt)  # unexplained rows are left as they are


# --------------------------------------------------------------------------- #
# every recoverer: input untouched, visible entries kept, deterministic
# --------------------------------------------------------------------------- #

def _missing_case():
    A = block_structure()
    X = sample(A, 300, seed=14)
    return X, hide_smallest(X, 0.1), A


def _cases():
    X, Xm, A = _missing_case()
    Ar = np.random.default_rng(11).normal(size=(20, 4))
    Xt = replace_entries(sample(Ar, 60, seed=15), 2, seed=16)
    return [
        ("none", Xm, A, True), ("exact", Xm, A, True), ("ithsvd", Xm, None, True),
        ("none", Xt, Ar, False), ("randomized", Xt, Ar, False),
        ("basis_pursuit", Xt, Ar, False), ("omp", Xt, Ar, False),
    ]


@pytest.mark.parametrize("name,X,A,missing", _cases(),
                         ids=lambda v: v if isinstance(v, str) else ("missing" if v is True else "replace"
                                                                     if v is False else "-"))
def test_input_untouched_visible_kept_and_deterministic(name, X, A, missing):
    before = X.copy()
    X.setflags(write=False)  # an in-place write raises
    try:
        rank = 8 if name == "ithsvd" else None
        first = call(name, X, structure=A, rank=rank, seed=21)
        second = call(name, X, structure=A, rank=rank, seed=21)
    finally:
        X.setflags(write=True)
    assert np.array_equal(X, before, equal_nan=True)
    assert first.shape == X.shape and first is not X
    assert np.array_equal(first, second, equal_nan=True)
    if missing:
        visible = ~np.isnan(X)
        assert np.array_equal(first[visible], X[visible])


# --------------------------------------------------------------------------- #
# peers (scikit-learn)
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("name", ["iterative-imputer", "knn-imputer"])
def test_peers_fill_missing_entries(name):
    pytest.importorskip("sklearn")
    decl = {d.name: d for d in peers.register_recoverers()}[name]
    assert decl.modes == ("missing",) and not decl.description.endswith(NEEDS_SKLEARN)
    _, Xm, _ = _missing_case()
    Xm = Xm.copy()
    Xm[:, 2] = np.nan  # an all-missing column stays NaN (scikit-learn would drop it)
    before = Xm.copy()
    Y = decl.fn(Xm, rng=np.random.default_rng(0), structure=None, rank=None, **decl.params)
    again = decl.fn(Xm, rng=np.random.default_rng(0), structure=None, rank=None, **decl.params)
    assert np.array_equal(Xm, before, equal_nan=True)
    assert Y.shape == Xm.shape and np.isnan(Y[:, 2]).all()
    assert not np.isnan(np.delete(Y, 2, axis=1)).any()
    visible = ~np.isnan(Xm)
    assert np.array_equal(Y[visible], Xm[visible])
    assert np.array_equal(Y, again, equal_nan=True)


def test_peers_without_scikit_learn(monkeypatch):
    # A None entry in sys.modules makes `import sklearn` (and its submodules) fail.
    for mod in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "sklearn", None)
    decls = peers.register_recoverers()
    assert {d.name for d in decls} == {"iterative-imputer", "knn-imputer"}
    for d in decls:
        assert d.description.endswith(NEEDS_SKLEARN)
        with pytest.raises(cmbench.NotApplicable, match="scikit-learn is not installed"):
            d.fn(np.array([[1.0, np.nan], [2.0, 3.0]]), rng=None, structure=None, rank=None, **d.params)


# --------------------------------------------------------------------------- #
# fast kernels give the simple kernels' results (benchmarks/run.py times them)
# --------------------------------------------------------------------------- #

def _rank_deficient_psd(rng, m: int, R: int, rank: int) -> np.ndarray:
    F = rng.normal(size=(R, m, rank))
    return F @ F.transpose(0, 2, 1)  # (R, m, m), rank <= rank


@pytest.mark.parametrize("m,rank", [(1, 1), (3, 3), (5, 3), (8, 8), (8, 5)])
def test_batched_psd_solve_matches_pinv(m, rank):
    # Cholesky with skipped dependent columns, then the null directions
    # removed, is the pseudo-inverse (minimum-norm) solution.
    rng = np.random.default_rng(m * 10 + rank)
    G = _rank_deficient_psd(rng, m, 200, rank)
    b = np.einsum("rij,rj->ri", G, rng.normal(size=(200, m)))  # consistent right-hand sides
    L, skip = batched.psd_factor(np.ascontiguousarray(G.transpose(1, 2, 0)), 1e-12)
    x = batched.psd_solve(L, skip, np.ascontiguousarray(b.T))
    found = skip.sum(axis=0) == m - rank
    # Unpivoted Cholesky finds the dependent columns unless a leading block is
    # itself ill-conditioned (rare for random factors; ppca-impute sends such
    # rows to its k side).
    assert found.mean() > 0.95
    basis = batched.null_basis(L, skip)
    for q in basis:
        x -= q * np.einsum("kr,kr->r", q, x)
    ref = np.einsum("rij,rj->ri", np.linalg.pinv(G, rcond=1e-10, hermitian=True), b)
    np.testing.assert_allclose(x.T[found], ref[found], atol=1e-7 * np.abs(ref).max())
    for q in basis:  # orthonormal null directions of each system
        norms = np.einsum("kr,kr->r", q, q)  # 0 where a system has fewer null directions
        assert np.allclose(norms[norms > 0.5], 1.0) and np.allclose(norms[norms <= 0.5], 0.0)
        assert np.abs(np.einsum("rkj,jr->kr", G, q)).max() < 1e-6 * np.abs(G).max()


