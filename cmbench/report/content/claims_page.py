"""The claims page ("The paper's claims") and the recoverers' convergence notes.

Claims are declared in the suite file and recorded in each cube's ``claims``
attribute; their verdicts are computed here from the cube alone by
`cmbench.verdicts.evaluate` (the same function the terminal summary uses).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ... import verdicts as claims_mod
from ...cube import attr_json
from ..load import Cube
from ..layout import Col, Section, TextPages, fitted_widths, fmt_num, text_pages

#: parameters of a recoverer that make its stopping rule, when it has them
STOP_PARAMS = ("tol", "max_iter")


def verdicts(cubes: Sequence[Cube]) -> list[claims_mod.Verdict]:
    """Every claim of every cube, evaluated on its cube."""
    return [v for c in cubes for v in claims_mod.evaluate_cube(c.ds)]


def claims_pages(cubes: Sequence[Cube]) -> "TextPages | None":
    """One row per claim: its place in the paper, the claim, the measured numbers, the
    verdict. No page when no cube declares claims."""
    found = verdicts(cubes)
    if not found:
        return None
    tp = TextPages(claims_mod.title(found))
    tp.para("Each claim is declared in the suite file and checked on the results cube alone. "
            "A method's error in a cell (data set, adversary, budget) is its mean over the "
            "instances that ran; cells where a method has no value are skipped. Verdicts: "
            "'holds' (true in every cell of the claim's range), 'holds up to rho = x' (true at "
            "every budget up to x, false at the next one), 'fails' (false at the smallest "
            "budget, or its peak factor is not reached), 'no data'. A failed claim is a "
            "finding about the methods as run here, not an error of the run.", style="italic")
    for exp in dict.fromkeys(v.experiment for v in found):
        mine = [v for v in found if v.experiment == exp]
        tp.heading(f"Experiment {exp}")
        heads = ("claim", "in the paper", "statement", "measured", "verdict")
        # the id column holds the longest id on one line (an id cut into pieces cannot be searched),
        # and its header (one-letter ids left "claim" running into the next header)
        widths = fitted_widths([heads[0]] + [v.claim["id"] for v in mine], [1.75, 2.2, 3.6, 1.0], fontsize=tp.fs)
        tp.table([Col(h, w) for h, w in zip(heads, widths)],
                 [[v.claim["id"], v.claim.get("paper", "") or "–",
                   v.claim.get("text", "") or claims_mod.describe(v.claim), v.numbers, v.verdict]
                  for v in mine])
        cube = next(c for c in cubes if c.experiment == exp)
        for line in convergence_lines(cube):
            tp.para(line)
    held = sum(v.holds is True for v in found)
    tp.para(f"{held} of {len(found)} claims hold in full.")
    return tp


def convergence_lines(cube: Cube) -> list[str]:
    """Per recoverer that reports convergence: how many of its recoveries converged,
    the iterations they took, and its stopping rule from the cube's attributes."""
    if "converged" not in cube.ds:
        return []
    params = (attr_json(cube.attrs, "components", {}, cube.source) or {}).get("recoverers", {})
    out = []
    for rec in cube.ds["recoverer"].values:
        rec = str(rec)
        conv = cube.ds["converged"].sel(recoverer=rec).values
        reported = np.isfinite(conv)
        if not reported.any():
            continue
        n_conv = int((conv[reported] > 0.5).sum())
        line = f"{rec}: converged in {n_conv} of {int(reported.sum())} recoveries"
        if "iterations" in cube.ds:
            it = cube.ds["iterations"].sel(recoverer=rec).values
            it = it[np.isfinite(it)]
            if it.size:
                line += f" (iterations: median {fmt_num(float(np.median(it)))}, max {fmt_num(float(it.max()))})"
        rule = stopping_rule(params.get(rec, {}).get("params", {}))
        if rule:
            line += f"; stopping rule: {rule}"
        out.append(line + ".")
    return out


def stopping_rule(params: dict) -> str:
    """"tol = 1e-06, max_iter = 100" from a recoverer's parameters (empty if it has none).

    ``ithsvd``'s ``limit_jumps`` changes where the iteration stops (a certified
    fixed point of the plain map), so the rule names it when it is on.
    """
    parts = [f"{k} = {_value(params[k])}" for k in STOP_PARAMS if k in params]
    if parts and params.get("limit_jumps"):
        parts.append("limit_jumps on (kept only at a certified fixed point of the plain iteration)")
    return ", ".join(parts)


def _value(v) -> str:
    if isinstance(v, float) and not v.is_integer():
        return f"{v:g}"
    if isinstance(v, float) and math.isfinite(v):
        return f"{int(v)}"
    return str(v)


def claims_sections(ctx) -> list[Section]:
    """The claims section (none when no cube states a claim)."""
    found = claims_pages(ctx.cubes)
    return [] if found is None else [Section("claims", found.title, text_pages(found, "claims"))]
