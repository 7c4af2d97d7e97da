"""The faithful sample-level estimators against the reference MATLAB code's
outputs (run under Octave; tests/fixtures/README.md), to 1e-10."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cmbench

FIXTURE = Path(__file__).parent / "fixtures" / "sample_level_reference.npz"
REF = np.load(FIXTURE)
CASES = sorted({key.split("/")[0] for key in REF.files})
# cmbench's name and parameters of each reference function
FAITHFUL = {
    "filter": ("filter", lambda eps: {"eps": eps, "whiten": False, "rule": "reference", "tau": 0.1, "cher": 2.5}),
    "prune": ("prune", lambda eps: {"eps": eps}),
    "geomedian": ("geometric-median", lambda eps: {"start": "mean", "max_iter": 100, "tol": 0.0}),
    "lrv": ("lrv", lambda eps: {"eps": eps}),
}


@pytest.fixture(scope="module")
def estimators():
    return cmbench.load_plugins().estimators


def test_fixture_cases_are_nontrivial():
    assert len(CASES) == 5
    for case in CASES:
        mean = REF[f"{case}/X"].mean(axis=0)
        for key in FAITHFUL:
            assert np.linalg.norm(REF[f"{case}/{key}"] - mean) > 0.3, (case, key)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("key", sorted(FAITHFUL))
def test_equals_reference(estimators, case, key):
    name, params = FAITHFUL[key]
    decl = estimators[name]
    X = REF[f"{case}/X"]
    got = decl.fn(X.copy(), rng=np.random.default_rng(0),
                  **{**decl.params, **params(float(REF[f"{case}/eps"]))})
    np.testing.assert_allclose(got, REF[f"{case}/{key}"], rtol=0, atol=1e-10)


def test_default_filter_differs_from_the_faithful_one(estimators):
    decl = estimators["filter"]
    X = REF["shifted_d10/X"]
    got = decl.fn(X, rng=None, **{**decl.params, "eps": 0.2})
    assert np.abs(got - REF["shifted_d10/filter"]).max() > 1e-3
