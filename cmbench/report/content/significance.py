"""Significance of a ranking: Friedman test, Nemenyi post-hoc test, critical-difference pages
(the result type, `Friedman`, and the diagram are in `plots.cd`).

Following Demšar (2006), "Statistical Comparisons of Classifiers over Multiple
Data Sets", JMLR 7:1-30: methods are ranked within each *block*, the Friedman
test asks whether the average ranks differ more than chance allows, and the
Nemenyi test calls two methods different when their average ranks differ by at
least the critical difference ``CD = q_alpha * sqrt(k (k + 1) / (6 N))`` (k
methods, N blocks, ``q_alpha`` the studentized range quantile over sqrt(2)).

The tests assume independent blocks. The budgets of one curve are not: they
share the data and nested corruptions. A block here is one (data set, instance)
pair: different data sets, and instances drawn with their own seeds, are close
to independent. Within a block, methods are ranked in each (adversary, budget)
cell (a method without a value there ranks below those that have one, as in the
ranking table) and a method's block score is its mean rank over the block's
cells; the Friedman test ranks those scores across blocks.
"""
from __future__ import annotations

import functools
import textwrap

import numpy as np
from scipy import special

from ..load import Cube, metric_name
from ..plots.cd import BLOCK_RANK, CELL_RANK, CdPage, Friedman, draw_cd_page

ALPHA = 0.05
POST_HOC = "Nemenyi"


def nemenyi_cd(k: int, n_blocks: int, alpha: float = ALPHA) -> float:
    """The Nemenyi critical difference for k methods over N blocks (Demšar 2006, eq. 5)."""
    q = range_quantile(1 - alpha, k) / np.sqrt(2)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n_blocks)))


@functools.lru_cache(maxsize=None)
def range_quantile(p: float, k: int) -> float:
    """The ``p`` quantile of the studentized range of k means with infinite degrees of freedom.

    From the shipped table (`range_quantiles`, p = 0.95, k = 2 .. 100)
    where it has the value, else from scipy.stats, imported only then.
    """
    from .range_quantiles import QUANTILES

    table = QUANTILES.get(round(float(p), 12))
    if table is not None and 2 <= k < 2 + len(table):
        return table[k - 2]
    from scipy import stats

    return float(stats.studentized_range.ppf(p, k, np.inf))


def rank_average(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """Ranks of a 2-D array along ``axis`` from 1, ties sharing their average rank.

    pandas' ``DataFrame.rank(method="average")``, the same ranks as
    ``scipy.stats.rankdata(a, axis=axis, method="average")``: pandas is loaded
    with every cube already, while importing scipy.stats costs most of a rerun
    that computes nothing (the CLI's ranking summary; about 0.8 s).
    """
    import pandas as pd

    a = np.asarray(a, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"rank_average ranks a 2-D array, got shape {a.shape}")
    return pd.DataFrame(a).rank(axis=axis % 2, method="average").to_numpy(dtype=float)


def friedman_statistic(avg_ranks: np.ndarray, n_blocks: int) -> tuple[float, float]:
    """Friedman's chi-square and the Iman-Davenport F from average ranks (Demšar 2006,
    eqs. 3 and 4), without a tie correction.

    ``chi2_F = 12 N / (k (k + 1)) * (sum_j R_j^2 - k (k + 1)^2 / 4)`` and
    ``F_F = (N - 1) chi2_F / (N (k - 1) - chi2_F)``.
    """
    avg = np.asarray(avg_ranks, dtype=float)
    k, n = len(avg), n_blocks
    chi2 = 12.0 * n / (k * (k + 1)) * (np.sum(avg ** 2) - k * (k + 1) ** 2 / 4.0)
    denom = n * (k - 1) - chi2
    return float(chi2), float((n - 1) * chi2 / denom) if denom > 0 else float("inf")


def friedman(scores: np.ndarray, methods: list[str], alpha: float = ALPHA) -> Friedman:
    """Friedman and Nemenyi tests on a (blocks, methods) score array, lower is better.

    Parameters
    ----------
    scores : (N, k) finite values; each row is ranked on its own (ties share
        the average rank).
    methods : the k labels.
    alpha : significance level of both tests.

    Raises
    ------
    ValueError
        Fewer than 2 methods or 2 blocks, or a non-finite score.
    """
    scores = np.asarray(scores, dtype=float)
    n, k = scores.shape
    if k < 2 or n < 2:
        raise ValueError(f"a Friedman test needs at least 2 methods and 2 blocks, got {k} and {n}")
    if not np.isfinite(scores).all():
        raise ValueError("block scores must be finite")
    ranks = rank_average(scores, axis=1)
    avg = ranks.mean(axis=0)
    chi2, _ = friedman_statistic(avg, n)
    ties = sum(float(np.sum(c ** 3 - c)) for c in
               (np.unique(row, return_counts=True)[1] for row in ranks))
    correction = 1.0 - ties / (n * k * (k * k - 1))
    chi2 = chi2 / correction if correction > 0 else 0.0
    p = float(special.chdtrc(k - 1, chi2))  # scipy.stats.chi2.sf
    denom = n * (k - 1) - chi2
    f_stat = (n - 1) * chi2 / denom if denom > 0 else np.inf
    f_p = float(special.fdtrc(k - 1, (k - 1) * (n - 1), f_stat)) if np.isfinite(f_stat) else 0.0  # f.sf
    cd = nemenyi_cd(k, n, alpha)
    different = np.abs(avg[:, None] - avg[None, :]) >= cd
    return Friedman(list(methods), avg, n, float(chi2), p, float(f_stat), f_p, cd, alpha, different)


def block_scores(cube: Cube, metric: str) -> tuple[np.ndarray, list[str], list[tuple[str, int]]]:
    """Each method's mean within-cell rank per (data set, instance) block.

    Returns
    -------
    ``(scores, methods, blocks)``: scores (N, k); the methods that have a value
    somewhere (a method never defined cannot be compared); the blocks with at
    least one ranked cell.
    """
    vals = cube.ok_values(metric).transpose("method", "dataset", "instance", "adversary", "budget")
    arr = vals.values  # (k, D, I, A, B)
    has_any = np.isfinite(arr).reshape(arr.shape[0], -1).any(axis=1)
    methods = [m for m, h in zip(vals["method"].values.tolist(), has_any) if h]
    arr = arr[has_any]
    k, n_d, n_i = arr.shape[:3]
    if k == 0:  # no method has a finite value anywhere (every cell failed, undefined, NaN or inf)
        return np.empty((0, 0)), methods, []
    cells = arr.reshape(k, n_d, n_i, -1)
    scores, blocks = [], []
    for d in range(n_d):
        for i in range(n_i):
            block = cells[:, d, i, :]
            keep = np.isfinite(block).any(axis=0)
            if not keep.any() or k == 0:
                continue
            ranks = rank_average(np.where(np.isfinite(block[:, keep]), block[:, keep], np.inf), axis=0)
            scores.append(ranks.mean(axis=1))
            blocks.append((str(vals["dataset"].values[d]), int(vals["instance"].values[i])))
    return np.array(scores).reshape(len(scores), k), methods, blocks


def run_tests(cube: Cube, metric: str, alpha: float = ALPHA) -> tuple[Friedman | None, list, str]:
    """The tests on one cube and metric; ``None`` and the reason when they cannot run."""
    scores, methods, blocks = block_scores(cube, metric)
    if len(methods) < 2:
        return None, blocks, "fewer than 2 methods have a value"
    if len(blocks) < 2:
        return None, blocks, (f"only {len(blocks)} block (data set x instance); the test needs at "
                              f"least 2: add data sets or instances")
    return friedman(scores, methods, alpha), blocks, ""


def cd_pages(cube: Cube, alpha: float = ALPHA) -> list:
    """One page per metric with the critical-difference diagram and the test's numbers."""
    from ..layout import Page

    pages = []
    for metric in cube.metrics:
        result, blocks, reason = run_tests(cube, metric, alpha)
        if result is None:
            continue
        what = metric_name(metric, math=False)
        caption = textwrap.fill(
            f"Friedman p = {result.p_value:.3g} over N = {result.n_blocks} "
            f"(data set, instance) blocks, k = {len(result.methods)} methods; {POST_HOC} "
            f"CD = {result.cd:.3g} at alpha = {alpha:g}. The numbers are each method's {BLOCK_RANK}, "
            f"1 = best: the test's ranks of the methods' scores per (data set, instance) block; a bar "
            f"joins methods not significantly different. The ranking table's {CELL_RANK} is another "
            f"quantity: the rank of the instance means in each (data set, adversary, budget) cell.", 150)
        pages.append(Page(f"{cube.experiment}-cd-{metric}",
                          CdPage(f"{cube.experiment}: critical-difference diagram ({what})", caption, result),
                          draw_cd_page))
    return pages


def describe(result: Friedman | None, blocks: list, reason: str, metric: str) -> list[str]:
    """The paragraphs the ranking page prints about the tests."""
    what = metric_name(metric, math=False)
    datasets = sorted({d for d, _ in blocks})
    head = (f"Significance ({what}). Blocks are (data set, instance) pairs: different data sets and "
            f"instances drawn with their own seeds are close to independent, which the tests assume; "
            f"the budgets of one curve are not (they share data and nested corruptions), so they are "
            f"not blocks. Within a block each method is ranked in every (adversary, budget) cell "
            f"(no value ranks last) and its block score is its mean rank there.")
    if result is None:
        return [head, f"Not tested: {reason}."]
    k = len(result.methods)
    verdict = (f"the methods' average ranks differ (p < {result.alpha:g})" if result.significant
               else f"no difference among the methods is shown at level {result.alpha:g}")
    n_diff = int(np.triu(result.different, 1).sum())
    return [head,
            f"Friedman test over N = {result.n_blocks} blocks ({len(datasets)} data set(s)) and "
            f"k = {k} methods: chi2_F = {result.chi2:.3g}, p = {result.p_value:.3g} "
            f"(Iman-Davenport F = {result.f_stat:.3g}, p = {result.f_p_value:.3g}): {verdict}.",
            f"Post-hoc test: {POST_HOC} (all pairs), critical difference CD = {result.cd:.3g} "
            f"average ranks at alpha = {result.alpha:g}; {n_diff} of {k * (k - 1) // 2} pairs differ "
            f"significantly. In the diagram, a bar joins methods whose average ranks differ by less "
            f"than CD." + ("" if result.significant else
                           " (With the Friedman test not significant, the post-hoc comparison is "
                           "shown for information only.)")]
