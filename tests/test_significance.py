"""Friedman and Nemenyi tests on examples with known answers; the CD diagram page."""

import numpy as np
import pytest
from scipy import stats

from cmbench.report.load import load_cube
from cmbench.report.content.range_quantiles import QUANTILES
from cmbench.report.content.significance import (block_scores, friedman, friedman_statistic, nemenyi_cd,
                                                 range_quantile, rank_average, run_tests)
from cmbench.report.plots.cd import BLOCK_RANK, cd_diagram
from helpers import drawn_page_texts, make_cube, set_cells, squash


def test_demsar_worked_example():
    # Demšar (2006), section 3.2.2: four classifiers on 14 data sets with average ranks
    # 3.143, 2.000, 2.893, 1.964 give chi2_F = 9.28 and F_F = 3.69; Nemenyi's CD at
    # alpha = 0.05 is 2.569 * sqrt(4 * 5 / (6 * 14)) = 1.25, q_0.05 from his Table 5.
    chi2, f = friedman_statistic([3.143, 2.000, 2.893, 1.964], 14)
    assert chi2 == pytest.approx(9.28, abs=0.01) and f == pytest.approx(3.69, abs=0.01)
    assert nemenyi_cd(4, 14) == pytest.approx(1.25, abs=0.005)
    for k, q in ((2, 1.960), (3, 2.343), (5, 2.728), (10, 3.164)):  # Table 5(a)
        assert nemenyi_cd(k, 6) == pytest.approx(q * np.sqrt(k * (k + 1) / 36), abs=2e-3)


@pytest.mark.parametrize("p", sorted(QUANTILES))
def test_shipped_range_quantiles_are_scipys(p):
    table = QUANTILES[p]
    assert len(table) == 99  # k = 2 .. 100
    want = [stats.studentized_range.ppf(p, k, np.inf) for k in range(2, 101)]
    np.testing.assert_allclose(table, want, rtol=1e-9)
    assert all(range_quantile(p, k) == table[k - 2] for k in range(2, 101))
    assert range_quantile(1 - round(1 - p, 2), 7) == table[5]  # 1 - alpha, as nemenyi_cd asks


def test_range_quantiles_beyond_the_table_come_from_scipy():
    for p, k in ((0.95, 101), (0.95, 150), (0.99, 5)):
        assert range_quantile(p, k) == pytest.approx(stats.studentized_range.ppf(p, k, np.inf), rel=1e-12)


def test_same_order_in_every_block():
    # k = 3 methods in the same order in N = 10 blocks: ranks 1, 2, 3 everywhere, so
    # chi2_F = N (k - 1) = 20 and, with 2 degrees of freedom, p = exp(-20 / 2).
    scores = np.array([[0.1, 0.5, 0.9]]) + np.arange(10)[:, None]
    res = friedman(scores, ["a", "b", "c"])
    assert res.chi2 == pytest.approx(20) and res.p_value == pytest.approx(np.exp(-10), rel=1e-9)
    assert res.significant and list(res.avg_ranks) == [1, 2, 3]
    # CD = 2.343 * sqrt(12 / 60) = 1.048: a-c (2 apart) differ, neighbours (1 apart) do not
    assert res.cd == pytest.approx(1.048, abs=1e-3)
    assert res.different[0, 2] and not res.different[0, 1] and not res.different[1, 2]
    assert res.cliques() == [(0, 1), (1, 2)]


def test_ties_match_scipy():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 3, size=(12, 4)).astype(float)  # many ties
    res = friedman(scores, list("abcd"))
    ref = stats.friedmanchisquare(*scores.T)
    assert res.chi2 == pytest.approx(ref.statistic) and res.p_value == pytest.approx(ref.pvalue)


def test_no_difference_when_orders_cancel():
    # each of the 3! orders twice: every average rank is 2, chi2_F = 0, p = 1, one clique
    import itertools
    scores = np.array([p for p in itertools.permutations([1.0, 2.0, 3.0])] * 2)
    res = friedman(scores, ["a", "b", "c"])
    assert res.chi2 == pytest.approx(0) and res.p_value == pytest.approx(1)
    assert not res.different.any() and res.cliques() == [(0, 2)]


def test_blocks_are_dataset_by_instance_and_gaps_rank_last():
    ds = make_cube(datasets=("gaussian", "uniform"), instances=3)  # errors in the methods' order
    cube = load_cube(ds)
    scores, methods, blocks = block_scores(cube, "l2")
    assert blocks == [(d, i) for d in ("gaussian", "uniform") for i in range(3)]
    assert methods == ["Empirical Mean", "C-Median", "Two-Step-E"]
    assert np.allclose(scores, [1, 2, 3])
    res, _, _ = run_tests(cube, "l2")
    assert res.chi2 == pytest.approx(6 * 2) and res.p_value == pytest.approx(np.exp(-6))
    # the best method undefined at every budget but the first of one block: it ranks last there
    set_cells(ds, "undefined", "no samples left", dataset="gaussian", instance=0,
              budget=[0.1, 0.2, 0.3], recoverer="none", estimator="mean")
    scores, _, _ = block_scores(load_cube(ds), "l2")
    assert scores[0, 0] == pytest.approx((1 + 3 + 3 + 3) / 4)
    one = load_cube(make_cube(datasets=("gaussian",), instances=1))
    assert run_tests(one, "l2")[0] is None and "only 1 block" in run_tests(one, "l2")[2]


def test_report_states_the_tests_and_draws_the_diagram(tmp_path):
    # the ranking and diagram pages, drawn as the PDF draws them (the report's PNG of the diagram:
    # test_report's smoke report)
    pages = drawn_page_texts([make_cube(instances=3, metrics=("l2",))],
                             lambda slug: slug in ("synthetic-ranking", "synthetic-cd-l2"), tmp_path)
    assert list(pages) == ["synthetic-ranking", "synthetic-cd-l2"]
    text = squash(" ".join(pages.values()))
    for fragment in ("Friedmantest", "Post-hoctest:Nemenyi", "(dataset,instance)pairs",
                     "closetoindependent", "critical-differencediagram"):
        assert fragment in text, fragment


def test_the_diagram_starts_below_its_pages_caption():
    """A three-line caption (every CD page's) ended where the diagram's top began: its last line
    touched the "CD = ..." label of the scale bar."""
    import matplotlib

    matplotlib.use("Agg")
    from cmbench.report.content.significance import cd_pages
    from cmbench.report.plots.cd import draw_cd_page
    from cmbench.report.style import RC

    (page,) = [p for p in cd_pages(load_cube(make_cube(instances=3, metrics=("l2",))))]
    assert page.record.caption.count("\n") == 2
    with matplotlib.rc_context(RC):
        fig = draw_cd_page(page.record)
        fig.canvas.draw()
        caption = next(t for t in fig.texts if t.get_text() == page.record.caption).get_window_extent()
        scale = next(t for t in fig.axes[0].texts if t.get_text().startswith("CD = ")).get_window_extent()
        axis = next(t for t in fig.axes[0].texts if t.get_text().startswith(BLOCK_RANK)).get_window_extent()
    assert scale.y1 < caption.y0 and axis.y1 < caption.y0, (scale, axis, caption)


def test_a_critical_difference_wider_than_the_axis_keeps_its_label_clear_of_the_axis_caption():
    """Two blocks give a CD longer than the rank axis (ap25-quick's: 5.05 over ranks 1-4): the
    scale bar's label, centred on the bar, ran into the axis's caption at the same height."""
    import matplotlib

    matplotlib.use("Agg")
    from cmbench.report.style import RC

    res = friedman(np.array([[1.0, 2.0, 3.0, 4.0], [1.5, 1.0, 3.5, 3.0]]), ["a", "b", "c", "d"])
    assert res.cd > 3  # wider than the axis (ranks 1 to 4)
    with matplotlib.rc_context(RC):
        fig = cd_diagram(res)
        fig.canvas.draw()
        texts = {t.get_text(): t.get_window_extent() for t in fig.axes[0].texts}
    scale = next(box for text, box in texts.items() if text.startswith("CD = "))
    axis = next(box for text, box in texts.items() if text.startswith(BLOCK_RANK))
    assert not scale.overlaps(axis), (scale, axis)


def test_diagram_for_many_methods():
    rng = np.random.default_rng(0)
    k = 35
    scores = np.arange(k)[None, :] * 0.2 + rng.standard_normal((20, k))
    res = friedman(scores, [f"method-{j}" for j in range(k)])
    fig = cd_diagram(res)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert sum(t.startswith("method-") or ") method-" in t for t in labels) == k


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_rank_average_equals_scipy_rankdata_with_ties_and_infinities(axis):
    from scipy import stats

    rng = np.random.default_rng(4)
    a = rng.integers(0, 4, size=(7, 9)).astype(float)  # many ties
    a[rng.random(a.shape) < 0.2] = np.inf  # gaps rank last, tied
    got = rank_average(a, axis=axis)
    assert np.array_equal(got, stats.rankdata(a, axis=axis, method="average"))
