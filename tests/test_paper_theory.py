"""The paper's theory as the report draws it: Lemma lm:recovery_rho's bound at
m_A = n - r + 1, and Figure fig:disCompare."""
from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.linalg

from cmbench import theory as T
from conftest import good_suite


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
    from helpers import THRESHOLDS, make_cube

    from cmbench.report.content.figures import thresholds_for
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


# -- Figure fig:disCompare -------------------------------------------------------------
def test_dis_compare_example_gives_the_papers_distances():
    s = T.dis_compare_example(16, seed=3)
    X, Y2, Y3 = s["D1"], s["D2"], s["D3"]
    assert X.shape == (256, 2) and ((X >= 0) & (X < 1)).all()
    # the corrupted coordinates leave [0, 1]; the others are untouched
    assert ((Y2 == X) | (Y2 < 0) | (Y2 > 1)).all() and ((Y3 == X) | (Y3 < 0)).all()
    for name, Y in (("D2", Y2), ("D3", Y3)):
        paper = T.DIS_COMPARE_PAPER[name]
        assert T.d_tv_empirical(X, Y) == pytest.approx(paper["d_tv"])
        assert T.d_entry(X, Y, p=1, method="exact") == pytest.approx(paper["d_entry1"])
    assert T.d_entry(X, Y2, p="inf", method="exact") == pytest.approx(0.5)
    assert T.d_entry(X, Y3, p="inf", method="exact") == pytest.approx(0.75)
    # d_ENTRY^1 <= d_ENTRY^inf <= d_TV (Definition def:dentry)
    assert T.d_entry(X, Y3, p=1) <= T.d_entry(X, Y3, p="inf") <= T.d_tv_empirical(X, Y3)


def test_dis_compare_page_in_a_report_that_names_it(tmp_path):
    from helpers import drawn_page_texts, make_cube, squash

    from cmbench.report import build_pages
    from cmbench.report.load import load_cube, load_cubes

    ds = make_cube(instances=2, datasets=("gaussian",), metrics=("l2",))  # a short report around the figure
    ds.attrs["theory_figures"] = json.dumps(["fig:disCompare"])
    both = [ds, ds.assign_attrs(experiment="other")]
    slugs = [p.slug for p in build_pages(load_cubes(both), title="t")]
    assert [s for s in slugs if "disCompare" in s] == ["theory-fig-disCompare"]  # once, though both cubes name it
    (text,) = drawn_page_texts(both, lambda slug: "disCompare" in slug, tmp_path).values()  # the page drawn
    assert squash("Figure fig:disCompare") in squash(text)
    assert squash("0.375 / 0.375") in squash(text) and squash("0.75 / 0.75") in squash(text)
    # a cube that names no figure: no such page among the pages the PDF draws (read from the
    # report's model, `build_pages`)
    slugs = [p.slug for p in build_pages([load_cube(ds)], title="t")]
    assert "theory-fig-disCompare" in slugs
    ds.attrs.pop("theory_figures")
    slugs = [p.slug for p in build_pages([load_cube(ds)], title="t")]
    assert not any("disCompare" in s for s in slugs) and "synthetic-cells" in slugs


def test_suite_names_theory_figures(tmp_path):
    from cmbench.errors import SuiteError
    from cmbench.suite import load_suite

    def suite(figure: str):
        return good_suite(tmp_path, "seed = 3", f'seed = 3\ntheory_figures = ["{figure}"]')

    assert load_suite(suite("fig:disCompare")).theory_figures == ("fig:disCompare",)
    path = suite("fig:disCompar")
    with pytest.raises(SuiteError, match=r"key 'theory_figures\[0\]': unknown figure 'fig:disCompar'; "
                                         r"did you mean 'fig:disCompare'") as err:
        load_suite(path)
    assert str(path) in str(err.value)
