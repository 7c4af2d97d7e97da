"""Work divided into parts of about equal cost: a large unit's cells among the sweep's
workers (`cmbench.runner.jobs.split`), a report's pages among its drawing workers
(`cmbench.report.render.drawing.split`)."""
from __future__ import annotations

from typing import Sequence

__all__ = ["equal_shares"]


def equal_shares(costs: Sequence[float], n: int) -> list[list[int]]:
    """The indices of ``costs`` in at most ``n`` groups of about equal total cost.

    Longest processing time first: the costliest item goes to the group with
    the least so far (the first such group on a tie), so that equal costs are
    dealt round-robin; the totals then differ by at most the largest cost.

    Parameters
    ----------
    costs : sequence of float
        Each item's cost, >= 0.
    n : int
        The number of groups wanted (at least 1 is made).

    Returns
    -------
    list of list of int
        The non-empty groups, each in index order.
    """
    groups: list[list[int]] = [[] for _ in range(max(1, n))]
    load = [0.0] * len(groups)
    for i in sorted(range(len(costs)), key=lambda i: -costs[i]):  # stable: equal costs in order
        k = load.index(min(load))
        groups[k].append(i)
        load[k] += costs[i]
    return [sorted(g) for g in groups if g]
