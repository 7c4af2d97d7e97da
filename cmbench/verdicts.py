"""A suite's quantitative claims: declared in the suite file, checked on the cube.

An experiment may declare claims, each an ``[[experiment.claim]]`` table saying
who beats whom, on which data sets, over which budgets and by what factor (or
that two methods give the same error). `parse_claims` validates them when the
suite loads; the runner stores them in the cube's ``claims`` attribute and
`evaluate` computes each verdict from the cube's numbers alone:

* ``holds``: the claim is true at every cell it speaks about;
* ``holds up to rho = x``: true at every budget up to x, false at the next
  budget of its range (the symbol follows the adversary's level);
* ``fails``: false at its smallest budget, or its peak factor is not reached;
* ``no data``: no cell it speaks about has values for the methods compared.

A claim table's keys:

``id`` (required)
    a short name, unique in the experiment (``"a"``).
``paper``
    where the claim is made (section, figure), e.g. ``"sec:experiments, fig:realworld"``.
``text``
    the claim in words.
``better`` and ``worse`` (one form)
    method labels: each method of ``better`` has a lower error than each of
    ``worse``, by ``factor``: ``factor * error(better) < error(worse)``.
``same`` (the other form)
    method labels whose errors agree within ``rtol``:
    ``|e1 - e2| <= rtol * max(|e1|, |e2|)``.
``datasets``
    data set labels (default: all of the experiment).
``budgets``
    the budget range: ``{above|from = x, below|to = y}`` (``above`` and
    ``below`` exclude their end, ``from`` and ``to`` include it). An end is a
    number or the key of a recovery threshold that the runner records for
    data sets with a known structure (``"rho_learn"``: see
    `cmbench.theory.thresholds`). A table keyed by data set labels gives one
    range per data set. Default: every budget.
``metric``
    error variable (default: the experiment's first metric).
``adversaries``
    adversary labels (default: all of the experiment).
``factor``
    for ``better``/``worse``, at least 1 (default 1: strictly lower error).
``peak``
    for ``better``/``worse``: on each data set, at some budget of the range,
    every method of ``worse`` has at least ``peak`` times the error of every
    method of ``better`` ("as much as 2x lower": ``peak = 2``).
``rtol``
    for ``same`` (default 0.05).
``methods`` and ``below`` (the third form, a bound)
    method labels whose errors all stay strictly below the absolute bound
    ``below`` ("the filter stays within 0.06 of the sampling error":
    ``methods = ["Filter"], below = 0.06``).

A method's error in a cell (data set, adversary, budget) is its mean over the
instances whose status is ok, as the report's curves show it. Cells where a
method has no value (undefined, not applicable, failed) are skipped, and the
numbers say how many.

This module imports neither the runner nor the report: the CLI and the report
both call `evaluate` on a cube.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from .cube import OK, attr_json, methods as cube_methods
from .plugins import choices_hint

if TYPE_CHECKING:  # a suite's claims are parsed at load, evaluated on cubes later: xarray only then
    import xarray as xr

CLAIM_KEYS = {
    "id": str, "paper": str, "text": str, "better": list, "worse": list, "same": list,
    "datasets": list, "budgets": dict, "metric": str, "adversaries": list,
    "factor": (int, float), "peak": (int, float), "rtol": (int, float),
    "methods": list, "below": (int, float),
}
RANGE_KEYS = ("above", "from", "below", "to")
#: the keys that do not apply to each kind of claim, and its name in that message
INAPPLICABLE = {"beats": ("rtol",), "same": ("factor", "peak"), "bound": ("factor", "peak", "rtol")}
KIND_NAMES = {"beats": "better/worse claim", "same": "same claim", "bound": "bound claim (methods, below)"}
#: a claim's number keys: default, whether a value is valid, and what it must be (for the message)
NUMBERS = {"factor": (1.0, lambda v: v >= 1.0, "a factor is a number >= 1"),
           "peak": (None, lambda v: v >= 1.0, "a peak factor is a number >= 1"),
           "rtol": (0.05, lambda v: 0.0 <= v < 1.0, "a relative tolerance is in [0, 1)")}
#: budget symbol per adversary level, in plain text (the paper's A1, A2, A3)
LEVEL_SYMBOL = {"sample": "epsilon", "value": "rho", "coordinate": "alpha"}
HOLDS, FAILS, NO_DATA = "holds", "fails", "no data"


# --------------------------------------------------------------------------- #
# Parsing
# --------------------------------------------------------------------------- #

def parse_claims(tables: Any, *, error: Callable[[str, str], Exception], methods: Sequence[str],
                 datasets: Sequence[str], metrics: Sequence[str], adversaries: Sequence[str],
                 threshold_keys: Sequence[str]) -> tuple[dict, ...]:
    """Validate an experiment's claim tables; return them normalized (plain JSON values).

    Parameters
    ----------
    tables : the value of the experiment's ``claim`` key (a list of tables).
    error : ``error(key, message)`` builds the exception to raise, ``key``
        relative to the experiment (``"claim[0].better[1]"``); the suite loader
        makes it name the file.
    methods, datasets, metrics, adversaries : the experiment's labels.
    threshold_keys : names a budget range may use for an end.

    Returns
    -------
    One dict per claim with every key filled in: ``id, paper, text, kind``
    (``"beats"``, ``"same"`` or ``"bound"``), ``better, worse, same, datasets, budgets``
    (data set -> range dict), ``metric, adversaries, factor, peak, rtol``; a
    bound also ``methods`` and ``below``.

    Raises
    ------
    Whatever ``error`` builds: unknown key, wrong type, unknown label, a range
    that is empty or outside [0, 1], a duplicate id.
    """
    if not isinstance(tables, list):
        raise error("claim", "expected an array of tables ([[experiment.claim]])")
    out, ids = [], set()
    for i, table in enumerate(tables):
        where = f"claim[{i}]"
        if not isinstance(table, dict):
            raise error(where, "a claim is a table ([[experiment.claim]])")
        claim = _parse_one(table, where, error, methods, datasets, metrics, adversaries,
                           threshold_keys)
        if claim["id"] in ids:
            raise error(f"{where}.id", f"duplicate claim id {claim['id']!r}")
        ids.add(claim["id"])
        out.append(claim)
    return tuple(out)


def _parse_one(table, where, error, methods, datasets, metrics, adversaries, threshold_keys):
    for key, value in table.items():
        if key not in CLAIM_KEYS:
            raise error(f"{where}.{key}", f"unknown key in a claim; {choices_hint(key, CLAIM_KEYS)}")
        expected = CLAIM_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, expected):
            kind = {str: "a string", list: "an array", dict: "a table"}.get(expected, "a number")
            raise error(f"{where}.{key}", f"expected {kind}, got {type(value).__name__} {value!r}")
    if "id" not in table or not table["id"].strip():
        raise error(where, "a claim needs a non-empty 'id', e.g. id = \"a\"")
    beats = "better" in table or "worse" in table
    bound = "below" in table or "methods" in table
    if beats + ("same" in table) + bound != 1:
        raise error(where, "a claim says either who beats whom (better = [...], worse = [...]), "
                           "which methods agree (same = [...]), or which stay below a bound "
                           "(methods = [...], below = x)")

    SINGULAR_OF = {"methods": "method", "data sets": "data set", "adversaries": "adversary"}

    def labels(key, valid, what, least=1):
        items = table.get(key)
        if items is None:
            raise error(where, f"missing key {key!r}")
        if len(items) < least:
            raise error(f"{where}.{key}", f"name at least {least} {what}")
        for j, item in enumerate(items):
            if not isinstance(item, str) or item not in valid:
                raise error(f"{where}.{key}[{j}]",
                            f"{SINGULAR_OF.get(what, what)} {item!r} is not in this "
                            f"experiment; {choices_hint(str(item), valid)}")
        if len(set(items)) != len(items):
            raise error(f"{where}.{key}", "a label appears twice")
        return list(items)

    kind = "beats" if beats else "bound" if bound else "same"
    for key in INAPPLICABLE[kind]:
        if key in table:
            raise error(f"{where}.{key}", f"{key!r} does not apply to a {KIND_NAMES[kind]}")
    claim = {"id": table["id"].strip(), "paper": table.get("paper", ""), "text": table.get("text", ""),
             "kind": kind, "better": [], "worse": [], "same": []}
    if bound:
        claim["methods"] = labels("methods", methods, "methods")
        if "below" not in table:
            raise error(where, "a bound claim needs 'below', the bound on the error, e.g. below = 0.06")
        if not math.isfinite(table["below"]):
            raise error(f"{where}.below", f"a bound is a finite number, got {table['below']!r}")
        claim["below"] = float(table["below"])
    elif beats:
        claim["better"] = labels("better", methods, "methods")
        claim["worse"] = labels("worse", methods, "methods")
        common = set(claim["better"]) & set(claim["worse"])
        if common:
            raise error(f"{where}.worse", f"method {sorted(common)[0]!r} is on both sides")
    else:
        claim["same"] = labels("same", methods, "methods", least=2)
    claim["datasets"] = labels("datasets", datasets, "data sets") if "datasets" in table else list(datasets)
    claim["adversaries"] = (labels("adversaries", adversaries, "adversaries") if "adversaries" in table
                            else list(adversaries))
    metric = table.get("metric", metrics[0] if metrics else "l2")
    if metric not in metrics:
        raise error(f"{where}.metric", f"metric {metric!r} is not among this experiment's metrics; "
                                       f"{choices_hint(metric, metrics)}")
    claim["metric"] = metric
    for key, (default, valid, what) in NUMBERS.items():
        value = table.get(key, default)
        if value is not None and not (math.isfinite(value) and valid(value)):
            raise error(f"{where}.{key}", f"{what}, got {value!r}")
        claim[key] = None if value is None else float(value)
    claim["budgets"] = _parse_budgets(table.get("budgets", {}), f"{where}.budgets", error,
                                      claim["datasets"], threshold_keys)
    return claim


def _parse_budgets(value: dict, where, error, datasets, threshold_keys) -> dict:
    if value and not any(k in RANGE_KEYS for k in value):  # one range per data set
        out = {}
        for d, rng in value.items():
            if d not in datasets:
                raise error(f"{where}.{d}", f"neither a range key ({', '.join(RANGE_KEYS)}) nor a data "
                                            f"set of this claim; {choices_hint(d, list(datasets))}")
            if not isinstance(rng, dict):
                raise error(f"{where}.{d}", f"expected a range table, e.g. {{above = 0, below = 0.35}}, "
                                            f"got {rng!r}")
            out[d] = _parse_range(rng, f"{where}.{d}", error, threshold_keys)
        for d in datasets:
            out.setdefault(d, {})
        return out
    rng = _parse_range(value, where, error, threshold_keys)
    return {d: dict(rng) for d in datasets}


def _parse_range(value: dict, where, error, threshold_keys) -> dict:
    for key, end in value.items():
        if key not in RANGE_KEYS:
            raise error(f"{where}.{key}", f"unknown key in a budget range; {choices_hint(key, RANGE_KEYS)}")
        if isinstance(end, str):
            if end not in threshold_keys:
                raise error(f"{where}.{key}", f"unknown recovery threshold {end!r}; "
                                              f"{choices_hint(end, list(threshold_keys))}")
        elif isinstance(end, bool) or not isinstance(end, (int, float)) or not 0.0 <= end <= 1.0:
            raise error(f"{where}.{key}", f"a budget in [0, 1] or a threshold name, got {end!r}")
    for a, b in (("above", "from"), ("below", "to")):
        if a in value and b in value:
            raise error(where, f"give {a!r} or {b!r}, not both")
    lo = value.get("above", value.get("from"))
    hi = value.get("below", value.get("to"))
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and (
            lo > hi or (lo == hi and ("above" in value or "below" in value))):
        raise error(where, f"empty budget range {value}")
    return {k: (float(v) if not isinstance(v, str) else v) for k, v in value.items()}


# --------------------------------------------------------------------------- #
# Evaluation
# --------------------------------------------------------------------------- #

@dataclass
class Verdict:
    """A claim's verdict on one cube.

    Attributes
    ----------
    claim : the normalized claim (see `parse_claims`).
    experiment : the cube's experiment.
    verdict : ``"holds"``, ``"holds up to rho = x"``, ``"fails"`` or ``"no data"``.
    numbers : the measured numbers the verdict rests on, in words.
    holds : True, False, or None for no data; "holds up to" counts as False.
    up_to : the largest budget up to which it holds, when it breaks above it.
    compared, passed : cells compared and cells where the claim is true.
    """

    claim: dict
    experiment: str
    verdict: str
    numbers: str
    holds: bool | None
    up_to: float | None = None
    compared: int = 0
    passed: int = 0


def claims_of(ds: xr.Dataset) -> list[dict]:
    """The claims recorded in a cube's attributes (none for an older cube)."""
    return list(attr_json(ds, "claims", []))


def evaluate_cube(ds: xr.Dataset) -> list[Verdict]:
    """Every claim recorded in the cube, evaluated on it."""
    return [evaluate(ds, c) for c in claims_of(ds)]


def method_errors(ds: xr.Dataset, metric: str, methods: Mapping[str, Sequence[str]],
                  labels: Sequence[str]) -> xr.DataArray:
    """Mean error over the ok instances, dims (method, dataset, adversary, budget)."""
    vals = ds[metric].where((ds["status"].astype(str) == OK) & np.isfinite(ds[metric]))
    mean = vals.mean("instance", skipna=True)
    out = [mean.sel(recoverer=methods[m][0], estimator=methods[m][1], drop=True) for m in labels]
    import xarray as xr

    return xr.concat(out, dim="method").assign_coords(method=list(labels)).transpose(
        "method", "dataset", "adversary", "budget")


#: a budget range's ends: key -> (symbol, whether a budget is within it, with a 1e-12 tolerance)
_ENDS = {"above": (">", lambda b, end: b > end + 1e-12), "from": (">=", lambda b, end: b >= end - 1e-12),
         "below": ("<", lambda b, end: b < end - 1e-12), "to": ("<=", lambda b, end: b <= end + 1e-12)}


def _threshold(name: str, info: dict):
    """The value of a recovery threshold the runner recorded for a data set (None if unknown)."""
    entry = (info.get("thresholds") or {}).get(name)
    return entry.get("value") if isinstance(entry, dict) else entry


def _budget_mask(budgets: np.ndarray, rng: dict, info: dict) -> tuple[np.ndarray, str]:
    """Budgets of the range; a note when a threshold end is not known for the data set."""
    mask = np.ones(budgets.shape, bool)
    for key, end in rng.items():
        if isinstance(end, str):
            value = _threshold(end, info)
            if value is None or not np.isfinite(float(value)):
                return np.zeros(budgets.shape, bool), f"threshold {end} unknown"
            end = float(value)
        mask &= _ENDS[key][1](budgets, end)
    return mask, ""


def _range_text(rng: dict, info: dict) -> str:
    parts = []
    for key, (sym, _) in _ENDS.items():
        if key in rng:
            end = rng[key]
            value = _threshold(end, info) if isinstance(end, str) else None
            end = _num(end) if not isinstance(end, str) else f"{end} = {_num(value)}" if value is not None else end
            parts.append(f"{sym} {end}")
    return " and ".join(parts) if parts else "all budgets"


def _num(x) -> str:
    if x is None or not np.isfinite(x):
        return "–" if x is None or np.isnan(x) else "inf"
    return f"{x:.3g}"


def evaluate(ds: xr.Dataset, claim: Mapping) -> Verdict:
    """The verdict of one claim on one cube, from the cube's numbers alone.

    Parameters
    ----------
    ds : a results cube (an experiment's ``xarray.Dataset``).
    claim : a normalized claim (`parse_claims`, or the cube's ``claims`` attribute).

    Returns
    -------
    Verdict
    """
    claim = dict(claim)
    experiment = str(ds.attrs.get("experiment", ""))
    methods = cube_methods(ds, f"cube {experiment!r}")
    infos = attr_json(ds, "datasets_info", {})
    adv_info = attr_json(ds, "adversaries_info", {})
    labels = (claim["better"] + claim["worse"] if claim["kind"] == "beats"
              else claim["methods"] if claim["kind"] == "bound" else claim["same"])
    missing = [m for m in labels if m not in methods]
    if missing or claim["metric"] not in ds:
        what = f"method {missing[0]!r}" if missing else f"metric {claim['metric']!r}"
        return Verdict(claim, experiment, NO_DATA, f"the cube has no {what}", None)
    datasets = [d for d in claim["datasets"] if d in set(ds["dataset"].values.astype(str))]
    adversaries = [a for a in claim["adversaries"] if a in set(ds["adversary"].values.astype(str))]
    errs = method_errors(ds, claim["metric"], methods, labels)
    budgets = np.asarray(ds["budget"].values, float)
    levels = {str(adv_info.get(a, {}).get("level", "")) for a in adversaries}
    symbol = LEVEL_SYMBOL.get(levels.pop(), "budget") if len(levels) == 1 else "budget"

    # Per cell (data set, adversary, budget): compared?, true?, and the figures.
    cells = []  # (dataset, adversary, budget, ok, score, detail)
    notes = []
    values = errs.values  # (method, dataset, adversary, budget), methods in the order of labels
    where_d = {str(d): i for i, d in enumerate(errs["dataset"].values)}
    where_a = {str(a): i for i, a in enumerate(errs["adversary"].values)}
    for d in datasets:
        info = infos.get(d, {})
        mask, note = _budget_mask(budgets, claim["budgets"].get(d, {}), info)
        if note:
            notes.append(f"{d}: {note}")
        for a in adversaries:
            e = values[:, where_d[d], where_a[a], :]
            for k in np.flatnonzero(mask):
                vals = {m: float(e[j, k]) for j, m in enumerate(labels)}
                cell = CELLS[claim["kind"]](claim, vals)
                if cell is not None:
                    cells.append((d, a, float(budgets[k])) + cell)
    if not cells:
        why = "; ".join(notes) if notes else "no cell of the claim's range has values for its methods"
        return Verdict(claim, experiment, NO_DATA, why, None)
    # It holds while its cells, in budget order, hold: ``holds``, ``holds up to`` the last budget
    # before the first false cell, or ``fails`` (also when a peak factor is not reached).
    passed = sum(1 for c in cells if c[3])
    parts, broken_at = PARTS[claim["kind"]](claim, cells, symbol, passed, infos)
    up_to, broke = _prefix(cells)
    if broke:
        parts.append(f"{broken_at} {_false_at(cells, symbol)}")
    more, peak_ok = _peak(claim, cells, symbol, up_to, broke)
    parts += more + notes
    if not peak_ok or (broke and up_to is None):
        verdict, holds, up_to = FAILS, False, None
    elif broke:
        verdict, holds = f"holds up to {symbol} = {_num(up_to)}", False
    else:
        verdict, holds = HOLDS, True
    return Verdict(claim, experiment, verdict, "; ".join(parts), holds, up_to, len(cells), passed)


def _beats_cell(claim, vals):
    """(ok, worst ratio, (better, worse) of the worst pair, values) or None if nothing compares."""
    ratios = [(vals[w] / vals[b] if vals[b] > 0 else (math.inf if vals[w] > 0 else 1.0), (b, w))
              for b in claim["better"] for w in claim["worse"]
              if np.isfinite(vals[b]) and np.isfinite(vals[w])]
    if not ratios:
        return None
    worst, pair = min(ratios, key=lambda r: r[0])  # the first of equal ratios, as the pairs are listed
    # strictly lower by the factor: factor * e_better < e_worse, i.e. ratio > factor
    return worst > claim["factor"], worst, pair, vals


def _same_cell(claim, vals):
    finite = {m: v for m, v in vals.items() if np.isfinite(v)}
    if len(finite) < 2:
        return None
    hi, lo = max(finite.values()), min(finite.values())
    scale = max(abs(hi), abs(lo))
    rel = (hi - lo) / scale if scale > 0 else 0.0
    return rel <= claim["rtol"], rel, None, vals


def _bound_cell(claim, vals):
    """(ok, largest error, its method, values) or None if no method has a value."""
    finite = {m: v for m, v in vals.items() if np.isfinite(v)}
    if not finite:
        return None
    worst = max(finite, key=finite.get)
    return finite[worst] < claim["below"], finite[worst], worst, vals


def _prefix(cells):
    """The largest budget up to which every compared cell is true (None if the first is false)."""
    first_false = min((c[2] for c in cells if not c[3]), default=None)
    if first_false is None:
        return None, False
    return max((c[2] for c in cells if c[2] < first_false), default=None), True


def _where(cell, symbol):
    return f"{cell[0]}, {symbol} = {_num(cell[2])}"


def _false_at(cells, symbol, most: int = 3) -> str:
    """"rho = 0.3 (d1, d2), 0.35 (d1)": the budgets where the claim is false, with data sets."""
    where: dict[float, dict] = {}
    for c in sorted(cells, key=lambda c: c[2]):
        if not c[3]:
            where.setdefault(c[2], {})[c[0]] = None  # data sets in order, once each
    shown = [f"{_num(b)} ({', '.join(ds)})" for b, ds in list(where.items())[:most]]
    more = f", +{len(where) - most} more budgets" if len(where) > most else ""
    return f"{symbol} = " + ", ".join(shown) + more


def _beats_parts(claim, cells, symbol, passed, infos):
    worst = min(cells, key=lambda c: c[4])
    b, w = worst[5]
    factor = claim["factor"]
    return [f"{passed} of {len(cells)} cells true",
            f"smallest ratio {w}/{b} = {_num(worst[4])} ({_where(worst, symbol)}: "
            f"{b} {_num(worst[6][b])}, {w} {_num(worst[6][w])})"
            + (f", claimed > {_num(factor)}" if factor != 1 else "")], "false at"


def _peak(claim, cells, symbol, up_to, broke):
    """The peak of a better/worse claim: per data set, the best budget's worst ratio. The numbers
    give it over the whole range; a "holds up to" verdict needs it reached where it holds."""
    if claim.get("peak") is None:
        return [], True
    peaks, ok = [], True
    for d in dict.fromkeys(c[0] for c in cells):
        mine = [c for c in cells if c[0] == d]
        best = max(mine, key=lambda c: c[4])
        peaks.append(f"{d} {_num(best[4])} at {symbol} = {_num(best[2])}")
        within = [c[4] for c in mine if not broke or (up_to is not None and c[2] <= up_to)]
        ok &= bool(within) and max(within) >= claim["peak"]
    return [f"peak ratio {', '.join(peaks)} (claimed >= {_num(claim['peak'])})"], ok


def _same_parts(claim, cells, symbol, passed, infos):
    worst = max(cells, key=lambda c: c[4])
    ranges = sorted({_range_text(claim["budgets"].get(c[0], {}), infos.get(c[0], {})) for c in cells})
    return [f"{passed} of {len(cells)} cells within {_num(100 * claim['rtol'])}%",
            f"largest relative difference {_num(100 * worst[4])}% ({_where(worst, symbol)}: "
            + ", ".join(f"{m} {_num(v)}" for m, v in worst[6].items()) + ")",
            # a claim without a budget range holds at every budget: say so, not "epsilon all budgets"
            "at every budget" if ranges == ["all budgets"] else f"{symbol} {'; '.join(ranges)}"], "apart at"


def _bound_parts(claim, cells, symbol, passed, infos):
    worst = max(cells, key=lambda c: c[4])
    return [f"{passed} of {len(cells)} cells below {_num(claim['below'])}",
            f"largest error {worst[5]} {_num(worst[4])} ({_where(worst, symbol)})"], "at or above the bound at"


CELLS = {"beats": _beats_cell, "same": _same_cell, "bound": _bound_cell}
#: a claim's numbers in words (a list of parts), and the words before the budgets where it is false
PARTS = {"beats": _beats_parts, "same": _same_parts, "bound": _bound_parts}


def title(verdicts: Sequence[Verdict]) -> str:
    """"The paper's claims" when every claim says where the paper makes it, else "Claims"."""
    return ("The paper's claims" if verdicts and all(v.claim.get("paper") for v in verdicts)
            else "Claims")


def describe(claim: Mapping) -> str:
    """The claim in words, from its keys (used when it has no ``text``)."""
    on = ", ".join(claim["datasets"])
    if claim["kind"] == "bound":
        return f"{' and '.join(claim['methods'])} below {_num(claim['below'])} on {on}"
    if claim["kind"] == "same":
        return f"{' = '.join(claim['same'])} within {_num(100 * claim['rtol'])}% on {on}"
    by = f" by a factor {_num(claim['factor'])}" if claim["factor"] != 1 else ""
    return f"{' and '.join(claim['better'])} beat(s) {' and '.join(claim['worse'])}{by} on {on}"


def verdicts_frame(cube: Any) -> "pd.DataFrame":  # noqa: F821
    """The verdicts of the claims a suite declares, checked on its cubes: a DataFrame (`cmbench.claims`).

    ``cube`` is what `cmbench.to_frame` takes (a cube, a cube file, a suite
    folder, the dict `cmbench.run_suite` returns, or a list of these). One row
    per claim: ``experiment``, ``id``, ``verdict``, ``holds`` (True, False, or
    None for no data), ``up_to`` (NaN unless it holds up to a budget),
    ``compared`` and ``passed`` (cells), ``claim`` (its text, or its keys in
    words), ``paper`` and ``numbers`` (the measured numbers, in words).
    """
    import pandas as pd

    from .cube import load
    from .export import cube_sources

    rows = [{"experiment": v.experiment, "id": v.claim.get("id", ""), "verdict": v.verdict,
             "holds": v.holds, "up_to": math.nan if v.up_to is None else v.up_to,
             "compared": v.compared, "passed": v.passed,
             "claim": v.claim.get("text") or describe(v.claim),
             "paper": v.claim.get("paper", ""), "numbers": v.numbers}
            for src in cube_sources(cube) for v in evaluate_cube(src if hasattr(src, "attrs") else load(src))]
    return pd.DataFrame(rows, columns=["experiment", "id", "verdict", "holds", "up_to", "compared", "passed",
                                       "claim", "paper", "numbers"])
