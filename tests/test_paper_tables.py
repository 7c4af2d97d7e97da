"""Ranking and mean-error tables for papers: CSV and LaTeX (booktabs), best marked."""
import pandas as pd

from cmbench.report.load import load_cube
from cmbench.report.content.paper_tables import mean_error_table, write_tables
from helpers import make_cube, set_cells

METHODS = {"Empirical Mean": ["none", "mean"], "C-Median": ["none", "coord-median"],
           "Two_Step&E": ["exact", "mean"]}  # error grows with k + 1: Empirical Mean is best


def test_best_marked_and_a_method_with_gaps_cannot_win(tmp_path):
    ds = make_cube(methods=METHODS, datasets=("gaussian", "uniform"))
    # Empirical Mean is undefined at the largest budget on gaussian: its mean there skips
    # the hardest budget, is lower than it would be, and must not be marked best
    set_cells(ds, "undefined", "all samples filtered", dataset="gaussian", budget=0.3,
              recoverer="none", estimator="mean")
    cube = load_cube(ds)
    means, complete = mean_error_table(cube, "l2")
    assert list(means.columns) == ["gaussian", "uniform"]
    assert not complete.loc["Empirical Mean", "gaussian"] and complete.loc["Empirical Mean", "uniform"]
    files = write_tables([cube], tmp_path)
    assert sorted(f.name for f in files) == sorted(
        f"synthetic-{t}-{m}.{x}" for t in ("ranking", "mean-error") for m in ("mahalanobis", "l2")
        for x in ("csv", "tex"))
    # the CSV is for programs: one row per method and cell, numbers as numbers, best in a column
    csv = pd.read_csv(tmp_path / "synthetic-mean-error-l2.csv")
    assert list(csv.columns) == ["method", "dataset", "adversary", "budget", "mean", "sd", "instances", "best"]
    for col in ("budget", "mean", "sd"):
        assert csv[col].dtype == float, col
    assert csv["instances"].dtype.kind == "i" and csv["best"].dtype == bool
    assert len(csv) == 3 * 2 * 4 - 1  # the undefined cell has no row: nothing is averaged over it
    at = csv.set_index(["method", "dataset", "budget"])
    assert at.loc[("C-Median", "gaussian", 0.1), "mean"] == float(
        cube.ok_values("l2").sel({"method": "C-Median", "dataset": "gaussian", "budget": 0.1}).mean())
    assert at.loc[("Empirical Mean", "uniform", 0.1), "best"]  # error grows with the method's place
    assert not at.loc[("C-Median", "uniform", 0.1), "best"]
    assert ("Empirical Mean", "gaussian", 0.3) not in at.index
    assert at.loc[("C-Median", "gaussian", 0.3), "best"]  # lowest of the methods with a value
    tex = (tmp_path / "synthetic-mean-error-l2.tex").read_text()
    for rule in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lrr}"):
        assert rule in tex
    row = next(line for line in tex.splitlines() if line.startswith("C-Median"))
    assert row.count(r"\textbf{") == 1 and r"\textbf{" in row.split("&")[1]
    assert r"Two\_Step\&E &" in tex  # LaTeX specials escaped
    rank = pd.read_csv(tmp_path / "synthetic-ranking-l2.csv")
    assert rank["mean_error"].dtype == float and rank["mean_rank"].dtype == float
    assert rank["cells"].dtype.kind == "i" and rank["best_mean_rank"].dtype == bool
    rank = rank.set_index("method")
    # the gap already costs Empirical Mean in rank (it ranks last there), so it keeps the best
    # rank; its mean error skips a cell and cannot be best
    assert rank.index[0] == "Empirical Mean" and rank.loc["Empirical Mean", "cells"] == 7
    assert rank.loc["Empirical Mean", "total_cells"] == 8
    assert rank.loc["Empirical Mean", "best_mean_rank"] and not rank.loc["C-Median", "best_mean_rank"]
    assert not rank.loc["Empirical Mean", "complete"] and not rank.loc["Empirical Mean", "best_mean_error"]
    assert rank.loc["C-Median", "best_mean_error"] and rank["best_mean_error"].sum() == 1


def test_two_cubes_of_one_experiment_name_write_their_tables_apart(tmp_path):
    from cmbench.report.content.paper_tables import write_tables

    written = write_tables([make_cube(), make_cube(seed=4)], tmp_path)
    assert len(written) == len({p.name for p in written}) == len(list(tmp_path.iterdir())) == 16
