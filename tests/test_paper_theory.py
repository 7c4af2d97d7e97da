"""The paper's theory as the report draws it: Lemma lm:recovery_rho's bound at
m_A = n - r + 1, and Figure fig:disCompare."""
from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.linalg

from cmbench import theory as T


def paper_a(seed=0):
    rng = np.random.default_rng(seed)
    return scipy.linalg.block_diag(*(rng.normal(size=(8, 4)) for _ in range(2)))


def test_general_position_m_a_bounds_m_a():
    A = paper_a()
    assert T.m_a(A) == 5 and T.general_position_m_a(A) == 9  # n - r + 1 = 16 - 8 + 1
    assert T.rho_learn(16, 9) == pytest.approx(8 / 72)  # 0.111, the figure
    assert T.rho_learn(16, 5) == pytest.approx(T.thresholds(A)["rho_learn"])
    rng = np.random.default_rng(1)
    for A in (rng.normal(size=(10, 3)), np.eye(5), paper_a(2), rng.normal(size=(6, 2)) @ np.ones((2, 3))):
        assert T.m_a(A) <= T.general_position_m_a(A)  # n - r + 1 is the largest m_A
    G = rng.normal(size=(10, 3))  # generic rows: every 3 independent, m_A = n - r + 1
    assert T.m_a(G) == T.general_position_m_a(G) == 8


def test_the_report_draws_the_general_position_bound_with_its_legend():
    from test_report import THRESHOLDS, make_cube

    from cmbench.report.figures import thresholds_for
    from cmbench.report.load import load_cube

    ds = make_cube(datasets=("gaussian",))
    info = json.loads(ds.attrs["datasets_info"])
    info["gaussian"]["thresholds"] = dict(THRESHOLDS, rho_learn_general={
        "value": T.rho_learn(16, 9), "label": T.general_position_label(9, 5),
        "levels": ["value"], "modes": ["missing"]})
    ds.attrs["datasets_info"] = json.dumps(info)
    drawn = thresholds_for(load_cube(ds), "gaussian", "min-rho")
    labels = dict((round(v, 6), lb) for lb, v in drawn)
    assert round(8 / 72, 6) in labels and round(4 / 28, 6) in labels
    assert "n-r+1 = 9" in labels[round(8 / 72, 6)] and "m_A = 5" in labels[round(8 / 72, 6)]
