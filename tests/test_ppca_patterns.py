"""ppca-impute's per-pattern pass computes the same iteration as its row-by-row pass.

`ppca_impute` (plugins/ppca.py) runs each pass per missing pattern where many
rows share each pattern (`_PatternCompletion`, wearable-sensor in the paper
suite) and row by row elsewhere (`_Completion`, the implementation it had
before). These tests build cells of ``suites/paper.toml`` as the runner does
and check that the two give the same passes (moments, change and scale of the
filled entries) to rounding, and the same result under the suite's settings.
Over many passes, rounding differences grow with the iteration's own
sensitivity (the row-by-row pass moves as much when its input is perturbed by
1e-15), hence the looser tolerance on whole runs.
"""
from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from cmbench.builtins import batched, ppca
from cmbench.runner.seeds import rng_for
from cmbench.suite import load_suite


def _cell(experiment: str, dataset: str, instance: int, budget: float):
    """(data, corrupted matrix, ppca-impute's parameters) of a paper-suite cell, as the runner builds it."""
    suite = load_suite("paper")
    exp = {e.name: e for e in suite.experiments}[experiment]
    (ds,) = [d for d in exp.datasets if d.label == dataset]
    (adv,) = exp.adversaries
    (rec,) = [r for r in exp.recoverers if r.decl.name == "ppca-impute"]
    data = ds.decl.fn(instance=instance, rng=rng_for(suite.seed, "load", dataset, instance), **ds.params)
    rng = rng_for(suite.seed, "corrupt", dataset, instance, adv.label, budget)
    Xc = adv.decl.fn(np.asarray(data.X, dtype=float), budget, rng=rng, structure=data.structure, **adv.params)
    return data, np.asarray(Xc, dtype=float), {**rec.decl.params, **rec.params}


def _run(Xc: np.ndarray, rank: int, params: dict, per_pattern: bool):
    with mock.patch.object(ppca._PatternCompletion, "worth_it", staticmethod(lambda pats, inverse: per_pattern)):
        return ppca.ppca_impute(Xc, rng=None, structure=None, rank=rank, **params)


# m-side and k-side buckets, rows the m side hands to the k side, and rows the
# k side cuts (synthetic data past the threshold are exactly low rank).
PASS_CELLS = [("realworld", "wearable-sensor", 0, 0.3), ("realworld", "blood-transfusion", 0, 0.4),
              ("realworld", "leaf", 0, 0.2), ("realworld", "breast-cancer", 0, 0.5),
              ("synthetic", "synthetic-gaussian", 0, 0.05), ("synthetic", "synthetic-exponential", 1, 0.3)]


@pytest.mark.parametrize("cell", PASS_CELLS, ids=lambda c: f"{c[1]}-{c[3]}")
def test_a_pass_per_pattern_equals_a_pass_row_by_row(cell):
    data, Xc, params = _cell(*cell)
    k = data.rank
    rows = ppca._Completion(Xc, Xc.copy(), k, params["shrink"], params["center"], params["rcond"])
    pats, inverse = batched.patterns(np.isnan(Xc))
    per = ppca._PatternCompletion(Xc, Xc.copy(), k, params["shrink"], params["center"], params["rcond"],
                                  pats, inverse)
    theta_r, theta_p = rows.start(), per.start()
    np.testing.assert_allclose(theta_p, theta_r, rtol=1e-12, atol=1e-12 * np.abs(theta_r).max())
    theta = theta_r
    for _ in range(4):  # the same model into both: each pass compared on its own
        new_r, change_r, scale_r = rows.apply(theta)
        new_p, change_p, scale_p = per.apply(theta)
        np.testing.assert_allclose(new_p, new_r, rtol=1e-10, atol=1e-10 * np.abs(new_r).max())
        assert change_p == pytest.approx(change_r, rel=1e-8, abs=1e-12 * scale_r)
        assert scale_p == pytest.approx(scale_r, rel=1e-10)
        theta = new_r
    per.finish()
    hidden = np.isnan(Xc) & ~np.isnan(rows.out)
    assert np.array_equal(np.isnan(per.out), np.isnan(rows.out))
    scale = np.abs(rows.out[hidden]).max()
    assert np.abs(per.out[hidden] - rows.out[hidden]).max() <= 1e-10 * scale
    assert np.array_equal(per.out[~np.isnan(Xc)], Xc[~np.isnan(Xc)])  # visible entries untouched


RUN_CELLS = [("realworld", "wearable-sensor", 0, 0.1), ("realworld", "blood-transfusion", 0, 0.4),
             ("realworld", "leaf", 0, 0.3), ("synthetic", "synthetic-gaussian", 0, 0.1)]


@pytest.mark.parametrize("cell", RUN_CELLS, ids=lambda c: f"{c[1]}-{c[3]}")
def test_a_run_per_pattern_gives_the_row_by_row_result(cell):
    data, Xc, params = _cell(*cell)
    Y_r, info_r = _run(Xc, data.rank, params, per_pattern=False)
    Y_p, info_p = _run(Xc, data.rank, params, per_pattern=True)
    assert info_p["converged"] == info_r["converged"]
    assert abs(info_p["iterations"] - info_r["iterations"]) <= 1
    hidden = np.isnan(Xc) & ~np.isnan(Y_r)
    assert np.array_equal(np.isnan(Y_p), np.isnan(Y_r))
    assert np.abs(Y_p[hidden] - Y_r[hidden]).max() <= 1e-5 * np.abs(Y_r[hidden]).max()
    err_r = np.linalg.norm(np.nanmean(Y_r, axis=0) - data.mean)
    err_p = np.linalg.norm(np.nanmean(Y_p, axis=0) - data.mean)
    assert err_p == pytest.approx(err_r, rel=1e-6)


@pytest.mark.parametrize("cell, per_pattern", [
    (("realworld", "wearable-sensor", 0, 0.3), True),    # 52,081 rows, a few hundred patterns
    (("synthetic", "synthetic-gaussian", 0, 0.3), False),  # 1,000 rows, about one pattern per two rows
    (("realworld", "mice-protein", 0, 0.3), False),    # about one pattern per row
])
def test_the_pass_is_per_pattern_where_many_rows_share_each(cell, per_pattern):
    _, Xc, _ = _cell(*cell)
    assert ppca._PatternCompletion.worth_it(*batched.patterns(np.isnan(Xc))) == per_pattern
