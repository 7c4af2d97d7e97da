"""Anderson and Phillips' (2025) corruption schemes (`ap25`, `ap25-subtractive`) against the
original code's outputs: the summaries in fixtures/ap25_schemes (row counts, placement, cluster
centres, radii and angles, the subtractive order), written by that folder's generate.py from
the original repository."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from cmbench.builtins.ap25_schemes import ap25, ap25_subtractive

FIXTURES = Path(__file__).parent / "fixtures" / "ap25_schemes"
sys.path.insert(0, str(FIXTURES))
import summary  # noqa: E402

SPEC = json.loads((FIXTURES / "schemes.json").read_text())
N, ETA, MEAN = SPEC["n"], SPEC["eta"], SPEC["mean"]
CASES = [c for c in SPEC["cases"] if c["seed"] == 0 or c["scheme"] == "subtractive"]


def _truth(d: int, scheme: str):
    diag = np.linspace(*SPEC["diag"], d) if scheme.endswith("-diag") else np.ones(d)
    mu = np.zeros(d) if scheme == "mixture" else np.full(d, MEAN)
    return mu, np.diag(diag), diag


def _ours(case: dict):
    scheme, d, std = case["scheme"], case["d"], case["std"]
    mu, cov, diag = _truth(d, scheme)
    rng = np.random.default_rng(100 + case["seed"])
    X = mu + rng.standard_normal((N, d)) * np.sqrt(diag)
    if scheme == "subtractive":
        kept = ap25_subtractive(X, ETA, rng=7, true_mean=mu, true_cov=cov, scheme=scheme)
        g = np.random.default_rng(7).standard_normal(d)  # the direction it drew from rng = 7
        return X, kept, summary.subtractive(X, kept, mu, g / np.linalg.norm(g))
    Y = ap25(X, ETA, rng=7, true_mean=mu, true_cov=cov, scheme=scheme, std=std)
    k = math.floor(ETA * N)
    split = k - k // 2 if scheme == "dkk" else round(0.7 * k)
    return X, Y, summary.additive(scheme, Y, k, mu, std, split, diag if scheme.endswith("-diag") else None)


def _close(ours, theirs, d, path=""):
    """Equal structure: same keys, same integers and lists, floats within the sampling noise."""
    if isinstance(theirs, dict):
        assert set(ours) == set(theirs), path
        for key in theirs:
            _close(ours[key], theirs[key], d, f"{path}.{key}")
    elif isinstance(theirs, list) and path.endswith("clusters"):
        assert len(ours) == len(theirs), path
        for a, b in zip(ours, theirs):
            _close(a, b, d, path)
    elif path.endswith(("point_head", "values", "point_tail")):
        assert set(ours) <= {-3.0, -1.0, 0.0, 11.0} and set(theirs) <= {-3.0, -1.0, 0.0, 11.0}, path
        assert len(ours) == len(theirs), path
    elif path.endswith("support"):  # a random direction moves most coordinates; an axis one or two
        assert ours == theirs if theirs <= 2 else (ours > d / 2 and theirs > d / 2), path
    elif isinstance(theirs, (bool, int, list)):
        assert ours == theirs, path
    elif path.endswith(("radius", "centre", "middle")):
        assert ours == pytest.approx(theirs, rel=0.03), path
    elif path.endswith("angle"):
        assert ours == pytest.approx(theirs, abs=1.0), path
    elif path.endswith(("spread",)):
        assert ours == pytest.approx(theirs, rel=0.1), path
    elif path.endswith("low_share"):
        assert ours == pytest.approx(theirs, abs=0.03), path
    elif path.endswith(("low", "high")):
        assert ours == pytest.approx(theirs, abs=0.01), path
    elif path.endswith("offset_error"):
        assert ours < 0.5 and theirs < 0.5, path
    else:
        raise AssertionError(f"no rule for {path}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['scheme']}-std{c['std']:g}-d{c['d']}-s{c['seed']}")
def test_scheme_has_the_originals_structure(case):
    X, Y, ours = _ours(case)
    _close(ours, case["summary"], case["d"])
    if case["scheme"] != "subtractive":  # placed last: the first N - k rows are the clean ones
        k = math.floor(ETA * N)
        assert np.array_equal(Y[:N - k], X[:N - k]) and not (Y[N - k:] == X[N - k:]).all(1).any()


@pytest.mark.parametrize("case", SPEC["subtractive_diag"], ids=lambda c: f"seed{c['seed']}")
def test_subtractive_diag_keeps_the_originals_rows_in_its_order(case):
    d = 5
    diag = np.linspace(*SPEC["diag"], d)
    X = MEAN + np.random.default_rng(case["seed"]).standard_normal((40, d)) * np.sqrt(diag)
    kept = ap25_subtractive(X, ETA, rng=0, true_mean=np.full(d, MEAN), true_cov=np.diag(diag),
                            scheme="subtractive-diag")
    assert np.array_equal(kept, X[case["order"]])


def test_random_placement_and_exact_counts():
    """floor(eps N) rows, also where the original's round-half-to-even appends one more or fewer."""
    X = np.random.default_rng(0).standard_normal((50, 4))
    for eta, k in ((0.05, 2), (0.13, 6), (0.45, 22)):
        Y = ap25(X, eta, rng=1, true_mean=np.zeros(4), scheme="dkk")
        assert int((Y != X).any(1).sum()) == k and (Y[:50 - k] == X[:50 - k]).all()
        R = ap25(X, eta, rng=1, true_mean=np.zeros(4), scheme="gaus-two", placement="random")
        assert int((R != X).any(1).sum()) == k
        assert ap25_subtractive(X, eta, rng=1, true_mean=np.zeros(4)).shape == (50 - k, 4)
    R = ap25(X, 0.3, rng=3, true_mean=np.zeros(4), scheme="gaus-one", placement="random")
    assert (R[:35] != X[:35]).any()  # not all among the last rows


def test_schemes_refuse_what_they_cannot_do():
    import cmbench

    X = np.random.default_rng(0).standard_normal((20, 3))
    with pytest.raises(cmbench.NotApplicable, match="diagonal"):
        ap25(X, 0.1, rng=0, true_mean=np.zeros(3), true_cov=None, scheme="gaus-one-diag")
    with pytest.raises(ValueError, match="ap25-subtractive"):
        ap25(X, 0.1, rng=0, true_mean=np.zeros(3), scheme="subtractive")
