"""One ranking everywhere: `cmbench.rank`, the terminal summary, the PDF and HTML ranking tables and
the LaTeX/CSV tables list the methods in the same order, under the criterion stated once."""
from __future__ import annotations

import re

import cmbench
from cmbench.ranking import CRITERION
from cmbench.report.render.html import write_html
from cmbench.report.content.paper_tables import write_tables
from cmbench.report.content.summary import summary_lines

from helpers import make_cube

METHODS = {f"method {k:02d}": ("none", e) for k, e in enumerate(
    ["mean", "coord-median", "sanitize", "trimmed", "mom", "a", "b", "c", "d", "e", "f"])}


def test_terminal_reports_tables_and_rank_share_one_order(tmp_path):
    ds = make_cube(methods=METHODS, datasets=("gaussian",), instances=2, metrics=("l2", "mahalanobis"))
    # method 03 is worst by far at the largest budget and best everywhere else: its mean error is
    # the highest, its average rank the best
    ds["l2"].loc[dict(recoverer="none", estimator="trimmed")] = 1e-3
    ds["l2"].loc[dict(recoverer="none", estimator="trimmed", budget=0.3)] = 100.0
    ranked = cmbench.rank(ds, "l2")
    order = list(ranked["method"])
    assert list(ranked["rank"]) == list(range(1, 12))
    assert order.index("method 03") < order.index("method 04")  # by rank, not by its mean error
    lines = summary_lines([ds])
    assert CRITERION in lines[0]
    shown = [re.match(r"\s+\d+\. (method \d\d)", ln).group(1) for ln in lines if re.match(r"\s+\d+\. ", ln)]
    assert shown == order  # eleven methods: every one shown, in the same order
    page = write_html([ds], tmp_path / "r.html").read_text()
    html_rows = re.findall(r"<tr><td class=\"num\">\d+</td><td>(method \d\d)</td>", page)
    assert html_rows[:11] == order  # the first metric's table
    csv = next(p for p in write_tables([ds], tmp_path / "t") if p.name.endswith("ranking-l2.csv"))
    assert [ln.split(",")[0] for ln in csv.read_text().splitlines()[1:]] == order
