"""Tables of a report: provenance, ranking, cells that did not run, baseline
differences, each as `layout.TextPage` records (`layout.TextPages` flows them
over as many pages as needed).

Table text is drawn with mathtext off, so error messages holding ``$`` print as
they are, and every cell stays searchable text in the PDF.
"""
from __future__ import annotations

import datetime as _dt
from typing import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from . import significance
from ...cube import FAILURES, GAPS, STATUSES
from ..load import Cube, environment_attr, metric_name, summarize
from ..layout import MESSAGE_CHARS, Col, Section, TextPages, fmt_list, fmt_num, shorten, text_pages

MAX_GROUP_ROWS = 80  # rows of the cells-not-run list before it is cut with a count


# -- computations ----------------------------------------------------------------
def ranking(cube: Cube, metric: str) -> pd.DataFrame:
    """Each method's mean error and average rank, best first.

    A *cell* is one (data set, adversary, budget); a method's value there is its
    mean over the instances that are ok. In each cell with at least one value,
    methods are ranked by that value (1 = lowest error, ties share the average
    rank); a method without a value there (undefined, not applicable, failed)
    shares the ranks below all methods that have one, so being undefined where
    the task is hard does not help a method. ``mean_error`` is the mean of the
    method's own values over the cells where it has one (``cells`` counts them).

    Returns
    -------
    DataFrame with columns method, recoverer, estimator, mean_error, mean_rank,
    cells, total_cells; sorted by mean_rank then mean_error.
    """
    mean = summarize(cube.ok_values(metric)).mean  # (method, dataset, adversary, budget)
    vals = mean.values.reshape(mean.sizes["method"], -1)
    keep = np.isfinite(vals).any(axis=0)
    vals = vals[:, keep]
    n_cells = vals.shape[1]
    if n_cells:
        ranks = significance.rank_average(np.where(np.isfinite(vals), vals, np.inf), axis=0)
        mean_rank = ranks.mean(axis=1)
    else:
        mean_rank = np.full(vals.shape[0], np.nan)
    has = np.isfinite(vals)
    mean_error = finite_mean(vals)
    labels = list(cube.methods)
    df = pd.DataFrame({
        "method": labels,
        "recoverer": [cube.methods[m][0] for m in labels],
        "estimator": [cube.methods[m][1] for m in labels],
        "mean_error": mean_error,
        "mean_rank": mean_rank,
        "cells": has.sum(axis=1),
        "total_cells": n_cells,
    })
    return df.sort_values(["mean_rank", "mean_error"], na_position="last",
                          kind="stable").reset_index(drop=True)


def finite_mean(vals: np.ndarray) -> np.ndarray:
    """Mean of each row over its finite values; NaN for a row without one (and no warning)."""
    has = np.isfinite(vals)
    return np.where(has.any(axis=1), np.where(has, vals, 0.0).sum(axis=1) / np.maximum(has.sum(axis=1), 1),
                    np.nan)


def cells_with_status(cube: Cube, statuses: Sequence[str]) -> pd.DataFrame:
    """Cells whose status is in ``statuses``, grouped into exact blocks: each row
    is every combination of its estimators x budgets x instances x data sets, for
    one status, message, recoverer and adversary. (A recoverer that fails fails
    each estimator after it: one row, not one per estimator.)

    Returns
    -------
    DataFrame with columns status, recoverer, estimators (list), method (the
    suite's labels of those pairs, comma-joined, or ""), datasets (list), adversary,
    budgets (sorted floats), instances (sorted ints), cells, error; ordered by
    status, then by size.
    """
    st = cube.ds["status"]
    hit = np.isin(st.values, list(statuses))
    cols = ["status", "recoverer", "estimators", "method", "datasets", "adversary",
            "budgets", "instances", "cells", "error"]
    if not hit.any():
        return pd.DataFrame(columns=cols)
    idx = np.nonzero(hit)
    flat = pd.DataFrame({d: np.asarray(cube.ds[d].values)[i] for d, i in zip(st.dims, idx)})
    flat["status"] = st.values[idx]
    flat["error"] = cube.ds["error"].values[idx].astype(str)
    flat["budget"] = flat["budget"].astype(float)
    flat["instance"] = flat["instance"].astype(int)
    base = ["status", "error", "recoverer", "dataset", "adversary"]
    # instances per budget, then budgets sharing an instance set, then estimators
    # sharing both: every row stays an exact cross product
    step = flat
    for col, others in (("instance", ["estimator", "budget"]), ("budget", ["estimator", "instance"]),
                        ("estimator", ["budget", "instance"])):
        step = step.groupby(base + others, sort=False)[col].agg(lambda v: tuple(sorted(set(v)))).reset_index()
    rest = [k for k in base if k != "dataset"] + ["budget", "instance", "estimator"]
    step = step.groupby(rest, sort=False)["dataset"].agg(lambda v: list(dict.fromkeys(v))) \
               .reset_index()
    labels: dict[tuple[str, str], list[str]] = {}
    for label, pair in cube.methods.items():
        labels.setdefault(pair, []).append(label)
    out = pd.DataFrame({
        "status": step["status"], "recoverer": step["recoverer"],
        "estimators": step["estimator"].map(list),
        "method": [", ".join(lb for e in ests for lb in labels.get((r, e), []))
                   for r, ests in zip(step["recoverer"], step["estimator"])],
        "datasets": step["dataset"], "adversary": step["adversary"],
        "budgets": step["budget"].map(list), "instances": step["instance"].map(list),
        "cells": [len(e) * len(b) * len(i) * len(d) for e, b, i, d in
                  zip(step["estimator"], step["budget"], step["instance"], step["dataset"])],
        "error": step["error"],
    }, columns=cols)
    order = {s: i for i, s in enumerate(STATUSES)}
    out["_o"] = out["status"].map(lambda s: order.get(s, len(order)))
    return out.sort_values(["_o", "cells"], ascending=[True, False], kind="stable") \
              .drop(columns="_o").reset_index(drop=True)


def brief_error(message: str, limit: int = MESSAGE_CHARS) -> str:
    """A message for a table: a traceback becomes its last line (the exception)
    and the innermost place it was raised; other text is shortened."""
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    if len(lines) > 1 and any(ln.startswith("Traceback") for ln in lines):
        exc = lines[-1]
        where = [ln for ln in lines if ln.startswith("File ")]
        return shorten(exc + (f" ({where[-1]})" if where else ""), limit)
    return shorten(message, limit)


def baseline_difference(cube: Cube, base: Cube, metric: str) -> tuple[xr.DataArray, xr.DataArray,
                                                                     xr.DataArray, xr.DataArray]:
    """This run minus the baseline, per shared method (by label) and cell.

    Differences are paired by instance: the runner seeds each cell from the suite
    seed and its coordinates, so a baseline of the same suite saw the same data
    and pairing removes the data's own noise from the band. Only instances ok in
    both cubes count.

    Returns
    -------
    ``(diff, half, mean, base_mean)``, dims (method, dataset, adversary, budget)
    over the coordinates both cubes hold: the mean paired difference, the
    half-width of its 95% t-interval, and the two means over the same instances.
    """
    shared = [m for m in cube.methods if m in base.methods]
    a = cube.ok_values(metric).sel({"method": shared})
    b = base.ok_values(metric).sel({"method": shared})
    a, b = xr.align(a, b, join="inner")
    both = a.notnull() & b.notnull()
    a, b = a.where(both), b.where(both)
    d = summarize(a - b)
    return d.mean, d.half, summarize(a).mean, summarize(b).mean


def comparable(cube: Cube, base: Cube) -> bool:
    """Whether the cubes share a method label and a (data set, adversary, budget)."""
    if not set(cube.methods) & set(base.methods):
        return False
    return all(bool(set(np.asarray(cube.ds[d].values).tolist())
                    & set(np.asarray(base.ds[d].values).tolist()))
               for d in ("dataset", "adversary", "budget"))


# -- pages ------------------------------------------------------------------------
def _name(path) -> str:
    """A file's name without the folders of the machine that wrote it (a report holds no absolute
    path; the suite file's and the cubes' digests identify them)."""
    from pathlib import PurePath

    return PurePath(str(path)).name or str(path)


def provenance_pages(cubes: Sequence[Cube], title: str, version: str,
                     baseline: Cube | None = None) -> "TextPages | None":
    """Suite, seed, versions, data sets with shapes, when and where each cube was
    made, and how many cells failed."""
    tp = TextPages(title)
    suites = sorted({str(c.attrs.get("suite", "?")) for c in cubes})
    counts = [c.status_counts() for c in cubes]
    n_fail = sum(n.get(s, 0) for n in counts for s in FAILURES)
    now = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    tp.para(f"Suite: {', '.join(suites)}.  Report written {now} by cmbench {version} "
            f"from {len(cubes)} results cube(s); nothing was rerun.")
    tp.para(f"{n_fail} cell(s) failed or timed out; they are listed per experiment on the "
            f"page 'cells that did not run'." if n_fail else "No cell failed or timed out.",
            color="#B00000" if n_fail else "black")

    tp.heading("Runs and cells by status")
    tp.table([Col("experiment", 1.2), Col("suite file (hash)", 1.7), Col("seed", 0.5, "right"),
              Col("created", 2.2), Col("cmbench", 0.7)]
             + [Col(s.replace("-", " "), 0.9, "right") for s in STATUSES],
             [[c.experiment,
               f"{_name(c.attrs.get('suite_file', '?'))} ({str(c.attrs.get('suite_hash', '?'))[:12]})",
               str(c.attrs.get("seed", "?")), str(c.attrs.get("created", "?")),
               str(c.attrs.get("cmbench_version", "?"))]
              + [str(n.get(s, 0)) for s in STATUSES] for c, n in zip(cubes, counts)])
    for c in cubes:
        descr = str(c.attrs.get("description", "")).strip()
        tp.para(f"{c.experiment}: {descr + '  ' if descr else ''}(read from {_name(c.source)})")

    plugins = dict.fromkeys(f"{p.get('plugin', p.get('name', '?'))} {p.get('version', '?')}"
                            for c in cubes for p in c.plugins)
    tp.para("Plugins: " + (", ".join(plugins) if plugins
                           else "not recorded in the cube(s) (older run)."))

    envs = {c.experiment: environment_attr(c.attrs) for c in cubes}
    envs = {k: v for k, v in envs.items() if isinstance(v, dict) and v}
    if envs:
        tp.heading("Environment")
        same = len({str(sorted(v.items())) for v in envs.values()}) == 1
        shown = {"all experiments": next(iter(envs.values()))} if same else envs
        tp.table([Col("experiment", 1.2), Col("what", 0.9), Col("value", 6.0)],
                 [[exp, key, str(value)] for exp, env in shown.items() for key, value in env.items()])
    else:
        tp.para("Environment (Python, numpy, scipy, BLAS, CPU): not recorded in the cube(s) (older run).")

    tp.heading("Data sets")
    rows = []
    for c in cubes:
        for d in c.datasets:
            info = c.datasets_info.get(d, {})
            shape = info.get("shape")
            rows.append([c.experiment, d, str(info.get("name", "?")),
                         f"{shape[0]} x {shape[1]}" if shape else "?",
                         str(info["rank"]) if info.get("rank") is not None else "–",
                         "yes" if info.get("structure_known") else "no",
                         str(info["m_a"]) if info.get("m_a") is not None else "–",
                         str(len(c.ds["instance"]))])
    tp.table([Col("experiment", 1.4), Col("label", 1.6), Col("component", 1.6),
              Col("N x n", 1.0, "right"), Col("rank", 0.6, "right"), Col("structure", 0.8),
              Col("m_A", 0.6, "right"), Col("instances", 0.8, "right")], rows)

    tp.heading("Adversaries and methods")
    rows = []
    for c in cubes:
        for a in c.adversaries:
            info = c.adversaries_info.get(a, {})
            rows.append([c.experiment, a, str(info.get("name", "?")), str(info.get("level", "?")),
                         str(info.get("mode", "?")), fmt_list(c.budgets.tolist(), limit=8)])
    tp.table([Col("experiment", 1.4), Col("adversary", 1.6), Col("component", 1.6),
              Col("level", 0.9), Col("mode", 0.8), Col("budgets", 3.0)], rows)
    for c in cubes:
        tp.para(f"Methods of {c.experiment}: " + "; ".join(
            f"{m} = {r} + {e}" for m, (r, e) in c.methods.items()) + ".")
    if baseline is not None:
        tp.para(f"Baseline: {_name(baseline.source)}, experiment {baseline.experiment}, suite "
                f"{baseline.attrs.get('suite', '?')}, cmbench "
                f"{baseline.attrs.get('cmbench_version', '?')}, created "
                f"{baseline.attrs.get('created', '?')}.")
    return tp


def suite_text_pages(cubes: Sequence[Cube]) -> list[TextPages]:
    """The suite file as run, once per distinct text (recorded in each cube)."""
    texts = {}
    for c in cubes:
        text = str(c.attrs.get("suite_text") or "")
        if text:
            texts.setdefault(text, []).append(c)
    pages = []
    for text, group in texts.items():
        c = group[0]
        tp = TextPages(f"Suite file: {_name(c.attrs.get('suite_file', '?'))}")
        tp.para(f"As run (sha256 {str(c.attrs.get('suite_hash', '?'))[:16]}…), recorded in the cube(s) of "
                f"{', '.join(g.experiment for g in group)}.", style="italic")
        for line in text.splitlines():
            tp.para(line or " ", style="normal")
        pages.append(tp)
    return pages


def ranking_pages(cube: Cube) -> "TextPages | None":
    """One table per metric: mean error and average rank per method, best first."""
    tp = TextPages(f"{cube.experiment}: ranking of methods")
    tp.para("A cell is one (data set, adversary, budget); a method's value there is its mean "
            "over the instances that are ok. Ranks are taken per cell (1 = lowest error); a "
            "method without a value in a cell shares the ranks below those that have one. "
            "Mean error is over the cells where the method has a value.", style="italic")
    for metric in cube.metrics:
        df = ranking(cube, metric)
        tp.heading(f"By {metric_name(metric, math=False)}")
        if not np.isfinite(df["mean_rank"]).any():
            tp.para(f"No method has a {metric} value in this experiment.", style="italic")
            continue
        tp.table([Col("#", 0.4, "right"), Col("method", 2.4), Col("recoverer + estimator", 2.6),
                  Col("mean error", 1.1, "right"), Col(significance.CELL_RANK, 1.1, "right"),
                  Col("cells with a value", 1.4, "right")],
                 [[str(i + 1), r.method, f"{r.recoverer} + {r.estimator}", fmt_num(r.mean_error),
                   fmt_num(r.mean_rank, 3), f"{r.cells} / {r.total_cells}"]
                  for i, r in enumerate(df.itertuples())])
        result, blocks, reason = significance.run_tests(cube, metric)
        for text in significance.describe(result, blocks, reason, metric):
            tp.para(text)
    return tp


def cells_pages(cube: Cube) -> "TextPages | None":
    """Failed and timed-out cells with their messages; then the gaps (undefined,
    not applicable), which are not failures."""
    tp = TextPages(f"{cube.experiment}: cells that did not run")
    n_inst = len(cube.ds["instance"])
    n_budget = len(cube.ds["budget"])
    for statuses, head, empty in (
            (FAILURES, "Failed and timed-out cells", "No cell failed or timed out."),
            (GAPS, "Gaps: undefined and not-applicable cells (not failures)",
             "Every method is defined and applicable on every cell.")):
        df = cells_with_status(cube, statuses)
        tp.heading(head + (f"  ({int(df['cells'].sum())} cells)" if len(df) else ""))
        if df.empty:
            tp.para(empty, style="italic")
            continue
        shown = df.head(MAX_GROUP_ROWS)
        tp.table([Col("status", 0.9), Col("method", 1.3), Col("recoverer + estimator", 1.7),
                  Col("data set", 1.1), Col("adversary", 1.0), Col("budgets", 1.1),
                  Col("instances", 0.8), Col("message", 4.0)],
                 [[r.status, r.method or "–", f"{r.recoverer} + {', '.join(r.estimators)}",
                   ", ".join(r.datasets), r.adversary, fmt_list(r.budgets, n_budget),
                   fmt_list(r.instances, n_inst), brief_error(r.error) or "(no message)"]
                  for r in shown.itertuples()])
        if len(df) > len(shown):
            rest = df.iloc[len(shown):]
            tp.para(f"… and {len(rest)} more groups ({int(rest['cells'].sum())} cells); "
                    f"the cube's 'status' and 'error' variables hold them all.", style="italic")
    return tp


def baseline_table_pages(cube: Cube, base: Cube) -> "TextPages | None":
    """Per metric: each shared method's mean error here and in the baseline,
    their difference and the relative change."""
    tp = TextPages(f"{cube.experiment}: difference against the baseline")
    tp.para(f"Baseline: {_name(base.source)} (experiment {base.experiment}, cmbench "
            f"{base.attrs.get('cmbench_version', '?')}, created {base.attrs.get('created', '?')}). "
            "Difference = this run minus the baseline, paired by instance and averaged over "
            "the (data set, adversary, budget) cells where both have a value; negative means "
            "this run's error is lower.", style="italic")
    for metric in cube.metrics:
        if metric not in base.ds:
            continue
        diff, _, mean, bmean = baseline_difference(cube, base, metric)
        tp.heading(f"By {metric_name(metric, math=False)}")
        rows = []
        for m in diff["method"].values:
            d = diff.sel({"method": m}).values.ravel()
            ok = np.isfinite(d)
            if not ok.any():
                rows.append([str(m), "–", "–", "–", "–", f"0 / {d.size}"])
                continue
            cur = float(mean.sel({"method": m}).values.ravel()[ok].mean())
            ref = float(bmean.sel({"method": m}).values.ravel()[ok].mean())
            rel = (cur - ref) / ref * 100 if ref > 0 else np.nan
            rows.append([str(m), fmt_num(cur), fmt_num(ref), fmt_num(float(d[ok].mean())),
                         f"{rel:+.1f} %" if np.isfinite(rel) else "–",
                         f"{int(ok.sum())} / {d.size}"])
        if rows:
            tp.table([Col("method", 2.4), Col("this run", 1.2, "right"),
                      Col("baseline", 1.2, "right"), Col("difference", 1.2, "right"),
                      Col("relative", 1.0, "right"), Col("cells compared", 1.3, "right")], rows)
        else:
            tp.para("No method label in common.", style="italic")
    return tp


# -- sections (registered in `cmbench.report.pages`) -------------------------------------------
def provenance_sections(ctx) -> list[Section]:
    """The provenance section: what was run, where, by which versions."""
    return [Section("provenance", "Provenance",
                    text_pages(provenance_pages(ctx.cubes, ctx.title, ctx.version, ctx.baseline), "provenance"))]


def suite_file_sections(ctx) -> list[Section]:
    """One section per suite file the cubes were run from, the file as written."""
    return [Section(f"suite-file-{k + 1}" if k else "suite-file", tp.title, text_pages(tp, "suite-file"))
            for k, tp in enumerate(suite_text_pages(ctx.cubes))]


def ranking_sections(cube: Cube, ctx) -> list[Section]:
    """A cube's ranking of methods, then its significance tests and critical-difference diagrams."""
    e = cube.experiment
    return [Section(f"{e}-ranking", f"{e}: ranking of methods",
                    text_pages(ranking_pages(cube), f"{e}-ranking") + significance.cd_pages(cube))]


def cells_sections(cube: Cube, ctx) -> list[Section]:
    """A cube's cells that did not run, grouped by status and error."""
    e = cube.experiment
    return [Section(f"{e}-cells", f"{e}: cells that did not run", text_pages(cells_pages(cube), f"{e}-cells"))]
