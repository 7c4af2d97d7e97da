"""cmbench's own completion, ``ppca-impute`` (plugins/ppca.py).

It goes beyond the paper's Two-Step-M (``ithsvd``); these tests check it
against its textbook form (one eigh per pattern), its exact recovery on the
paper's synthetic data, and the claims of its docstring.
"""
import numpy as np
import pytest

import cmbench
from cmbench.builtins import batched
from cmbench.builtins import ppca
from cmbench.builtins import recoverers as rec

from test_recoverers import (  # the paper's synthetic data
    assert_no_iteration_gives_the_median_start, block_structure, hide_smallest, sample)


def test_declaration():
    (decl,) = ppca.register_recoverers()
    assert decl.name == "ppca-impute" and decl.modes == ("missing",) and not decl.needs_structure
    # the plain iteration by default: the accelerations can land on another fixed point
    assert decl.params["memory"] == 0 and decl.params["coarse"] == 0 and decl.params["shrink"] > 0


def test_ppca_without_the_prior_is_refused():
    Xm = hide_smallest(sample(block_structure(), 100, seed=1), 0.1)
    with pytest.raises(ValueError, match="shrink"):
        ppca.ppca_impute(Xm, rng=None, rank=8, shrink=0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppca_recovers_what_exact_recovers_on_the_synthetic_data(seed):
    A = block_structure(seed)
    X = sample(A, 1000, seed=10 + seed)
    Xm = hide_smallest(X, 0.05)
    known = rec.exact(Xm, rng=None, structure=A)
    rows = ~np.isnan(known).any(axis=1)
    assert rows.mean() > 0.95
    Y, info = ppca.ppca_impute(Xm, rng=np.random.default_rng(0), structure=None, rank=8)
    assert info["converged"] and info["iterations"] > 1
    err = np.linalg.norm(Y[rows] - X[rows]) / np.linalg.norm(X[rows])
    assert err < 1e-6
    assert not np.isnan(Y).any()


def test_ppca_stays_near_the_data_when_only_roughly_low_rank():
    # Noisy low-rank data, 20% hidden per column: regularised completion beats
    # ignoring the missing entries and fills nothing far outside the data.
    rng = np.random.default_rng(7)
    A = block_structure(seed=3)
    X = sample(A, 800, seed=8)
    X = X + 0.3 * X.std(axis=0) * rng.normal(size=X.shape)
    Xm = hide_smallest(X, 0.2)
    Y, info = ppca.ppca_impute(Xm, rng=rng, structure=None, rank=8)
    assert info["converged"]
    mu = X.mean(axis=0)
    assert np.linalg.norm(Y.mean(axis=0) - mu) < 0.5 * np.linalg.norm(np.nanmean(Xm, axis=0) - mu)
    span = X.max(axis=0) - X.min(axis=0)
    assert (np.abs(Y - X.mean(axis=0)) <= span).all()


def test_ppca_edge_cases():
    A = block_structure()
    X = sample(A, 200, seed=9)
    Xm = hide_smallest(X, 0.05)
    Xm[5] = np.nan
    Y, _ = ppca.ppca_impute(Xm, rng=None, structure=None, rank=8)
    assert np.isnan(Y[5]).all() and not np.isnan(np.delete(Y, 5, axis=0)).any()
    Xm[:, 3] = np.nan
    with pytest.raises(cmbench.Undefined, match="column"):
        ppca.ppca_impute(Xm, rng=None, structure=None, rank=8)
    with pytest.raises(cmbench.NotApplicable, match="rank"):
        ppca.ppca_impute(Xm, rng=None, structure=None, rank=None)
    Y, info = ppca.ppca_impute(X, rng=None, structure=None, rank=8)  # nothing missing
    assert np.array_equal(Y, X) and info == {"converged": True, "iterations": 0}



def test_ppca_with_no_pass_returns_the_median_start():
    assert_no_iteration_gives_the_median_start(ppca.ppca_impute)



def _ridge_ops(B, visible, lam, rcond=1e-6):
    """The simple per-pattern operator of the reference ppca-impute (one eigh per pattern)."""
    G = np.matmul((visible[:, :, None] * B[None]).transpose(0, 2, 1), B)
    gamma, Q = np.linalg.eigh(G)
    seen = gamma > (rcond * np.linalg.norm(B, 2)) ** 2
    filt = np.where(seen, 1.0 / np.where(seen, gamma + lam, 1.0), 0.0)
    Qt = Q.transpose(0, 2, 1)
    return np.concatenate([np.matmul(Q * seen[:, None, :], Qt), np.matmul(Q * filt[:, None, :], Qt)], axis=2)


def reference_ppca(X, rank, tol=1e-10, max_iter=1000, shrink=1.0):
    """The textbook form of ppca-impute: per iteration, eigh of the covariance of the
    filled rows, then per missing pattern the k x k ridge of the docstring."""
    mask = np.isnan(X)
    out = X.copy()
    live = ~mask.all(axis=1)
    ref = np.nanmedian(X[live], axis=0)
    partial = live & mask.any(axis=1)
    Yc = X[live & ~partial] - ref
    S0, s0, n_live = Yc.T @ Yc, Yc.sum(axis=0), int(live.sum())
    Mp = mask[partial]
    Y = np.where(Mp, 0.0, X[partial] - ref)
    patterns, inverse = batched.patterns(Mp)
    visible = (~patterns).astype(float)
    k, n = rank, X.shape[1]
    for it in range(1, max_iter + 1):
        m = (s0 + Y.sum(axis=0)) / n_live
        C = (S0 + Y.T @ Y) / n_live - np.outer(m, m)
        evals, V = np.linalg.eigh(C)
        evals, U = evals[::-1], V[:, ::-1][:, :k]
        s2 = max(float(evals[k:].mean()), 0.0) if k < n else 0.0
        ell = np.maximum(evals[:k] - s2, 1e-12 * max(float(evals.clip(min=0).sum()), 1e-300))
        B = U * np.sqrt(ell)
        D = Y - m
        W0 = D @ U / np.sqrt(ell)
        r0 = np.where(Mp, 0.0, D - W0 @ B.T)
        W = batched.apply_per_row(_ridge_ops(B, visible, shrink * s2), inverse,
                               np.hstack([W0, r0 @ B - shrink * s2 * W0]))
        new = m + W @ B.T
        change = np.linalg.norm((new - Y)[Mp])
        Y[Mp] = new[Mp]
        if change <= tol * np.linalg.norm((Y - m)[Mp]):
            break
    out[partial] = np.where(Mp, Y + ref, X[partial])
    return out, it


@pytest.mark.parametrize("frac,noise", [(0.1, 0.0), (0.2, 0.0), (0.25, 0.3)])
def test_ppca_matches_the_textbook_iteration(frac, noise):
    # Same iterates (m-side, k-side and the undetermined directions), so the
    # same iteration count and the same result to rounding.
    rng = np.random.default_rng(31)
    A = block_structure(seed=4)
    X = sample(A, 400, seed=32)
    X = X + noise * X.std(axis=0) * rng.normal(size=X.shape)
    Xm = hide_smallest(X, frac)
    Xm[3] = np.nan  # an all-missing row
    ref, iterations = reference_ppca(Xm, 8, max_iter=300)
    Y, info = ppca.ppca_impute(Xm, rng=None, structure=None, rank=8, max_iter=300)  # memory=0 by default
    # the stop test may flip one pass either way on rounding (summation order)
    assert abs(info["iterations"] - iterations) <= 1
    np.testing.assert_allclose(Y, ref, rtol=0, atol=1e-7 * np.nanmax(np.abs(X)))
    assert np.isnan(Y[3]).all()
    # Anderson-accelerated: here the same fixed point, in fewer passes
    fast, info = ppca.ppca_impute(Xm, rng=None, structure=None, rank=8, max_iter=300, memory=5)
    assert info["converged"] and info["iterations"] < iterations
    np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-6 * np.nanmax(np.abs(X)))


def test_ppca_chunks_and_buckets_do_not_change_the_result(monkeypatch):
    # Many small chunks (each with its own buckets) give the one-chunk result.
    A = block_structure(seed=5)
    Xm = hide_smallest(sample(A, 600, seed=33), 0.3)
    whole, info = ppca.ppca_impute(Xm, rng=None, structure=None, rank=8, max_iter=50)
    monkeypatch.setattr(batched, "PASS_ELEMENTS", 16 * 37)
    chunked, info2 = ppca.ppca_impute(Xm, rng=None, structure=None, rank=8, max_iter=50)
    assert info == info2
    # summation order differs between chunkings: equal to rounding, grown over 50 iterations
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=1e-6 * np.abs(whole).max())


@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_ppca_coarse_start_reaches_the_full_data_fixed_point(noise):
    # The coarse start changes where the full iteration starts, not where it
    # ends; on exactly low-rank data the coarse rows give the subspace, and
    # the full data need a fraction of the passes.
    rng = np.random.default_rng(35)
    X = sample(block_structure(seed=7), 2400, seed=36)
    X = X + noise * X.std(axis=0) * rng.normal(size=X.shape)
    Xm = hide_smallest(X, 0.1)
    plain, info = ppca.ppca_impute(Xm, rng=None, structure=None, rank=8, coarse=0)
    warm, info_w = ppca.ppca_impute(Xm, rng=None, structure=None, rank=8, coarse=400)
    assert "coarse_iterations" not in info and info_w["coarse_iterations"] > 2
    assert info["converged"] and info_w["converged"]
    if noise == 0:
        assert info_w["iterations"] <= info["iterations"] / 3
    np.testing.assert_allclose(warm, plain, rtol=0, atol=1e-6 * np.abs(X).max())
    # too few rows for a coarse level: the plain run
    small, info_s = ppca.ppca_impute(Xm[:1500], rng=None, structure=None, rank=8, coarse=400)
    assert "coarse_iterations" not in info_s


def test_anderson_step_without_information_is_the_plain_step():
    # A repeated residual gives zero differences (found by fuzzing this completion: a
    # singular Gram matrix raised LinAlgError); non-finite ones likewise.
    acc = ppca._Anderson(3)
    x, g = np.ones(4), np.full(4, 2.0)
    assert np.array_equal(acc(x, g), g)
    assert np.array_equal(acc(x, g), g)
    acc = ppca._Anderson(3)
    acc(x, g)
    assert np.array_equal(acc(x, np.full(4, np.inf)), np.full(4, np.inf))


def test_ppca_anderson_acceleration_reaches_the_unique_fixed_point():
    # Exactly low-rank, identifiable rows: one fixed point, which both reach.
    A = block_structure(seed=6)
    X = sample(A, 800, seed=34)
    Xm = hide_smallest(X, 0.05)
    plain, info = ppca.ppca_impute(Xm, rng=None, structure=None, rank=8, memory=0)
    fast, info_aa = ppca.ppca_impute(Xm, rng=None, structure=None, rank=8, memory=3)
    assert info["converged"] and info_aa["converged"]
    np.testing.assert_allclose(fast, plain, rtol=0, atol=1e-6 * np.abs(X).max())
