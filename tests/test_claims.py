"""Claims: declared in a suite, validated at load, verdicts from the cube's numbers alone."""
from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from cmbench import verdicts as claims
from cmbench.errors import SuiteError
from cmbench.suite import load_suite
from conftest import cli_inproc_result

BUDGETS = (0.0, 0.1, 0.2, 0.3)
METHODS = {"Mean": ["none", "mean"], "Median": ["none", "cmedian"], "TSM": ["ithsvd", "mean"],
           "TSE": ["exact", "mean"]}


def cube(values: dict, *, datasets=("d1", "d2"), instances=2, thresholds=None) -> xr.Dataset:
    """A cube whose method errors are ``values[method]`` (one per budget) on every data set
    and instance."""
    recs = sorted({p[0] for p in METHODS.values()})
    ests = sorted({p[1] for p in METHODS.values()})
    coords = {"dataset": list(datasets), "instance": np.arange(instances), "adversary": ["adv"],
              "budget": np.asarray(BUDGETS), "recoverer": recs, "estimator": ests}
    dims = tuple(coords)
    shape = tuple(len(v) for v in coords.values())
    l2 = np.full(shape, np.nan)
    for m, (r, e) in METHODS.items():
        if m in values:
            l2[:, :, :, :, recs.index(r), ests.index(e)] = np.asarray(values[m], float)
    status = np.where(np.isfinite(l2), "ok", "undefined").astype(object)
    ds = xr.Dataset({"l2": (dims, l2), "mahalanobis": (dims, l2 * 2), "status": (dims, status)},
                    coords=coords)
    ds.attrs.update(experiment="exp", methods=json.dumps(METHODS), datasets_info=json.dumps(
        {d: {"structure_known": thresholds is not None,
             "thresholds": {k: {"value": v, "label": k} for k, v in (thresholds or {}).items()}}
         for d in datasets}),
        adversaries_info=json.dumps({"adv": {"level": "value", "mode": "missing"}}))
    return ds


def claim(**keys) -> dict:
    """A claim table parsed as the suite loader parses it."""
    table = {"id": "x", **keys}

    def error(key, msg):
        return SuiteError(f"{key}: {msg}")

    return claims.parse_claims([table], error=error, methods=list(METHODS), datasets=["d1", "d2"],
                               metrics=["l2", "mahalanobis"], adversaries=["adv"],
                               threshold_keys=["rho_learn", "m_a/2n"])[0]


BEATS = claim(better=["TSM"], worse=["Mean", "Median"], budgets={"above": 0.0})
GOOD = {"Mean": [0, 1.0, 2.0, 3.0], "Median": [0, 1.2, 2.2, 3.2], "TSM": [0, 0.5, 1.0, 1.5]}


def with_value(values, method, k, v):
    out = {m: list(x) for m, x in values.items()}
    out[method][k] = v
    return out


def test_beats_holds_and_one_number_flips_it():
    v = claims.evaluate(cube(GOOD), BEATS)
    assert v.verdict == "holds" and v.holds is True
    assert v.compared == 6 and v.passed == 6  # 2 data sets x 3 budgets above 0
    assert "smallest ratio Mean/TSM = 2" in v.numbers
    # Two-Step-M's error at the largest budget rises above the median's: holds up to 0.2
    v = claims.evaluate(cube(with_value(GOOD, "TSM", 3, 3.1)), BEATS)
    assert v.verdict == "holds up to rho = 0.2" and v.up_to == pytest.approx(0.2)
    assert v.holds is False and "false at rho = 0.3 (d1, d2)" in v.numbers
    # at the smallest budget of the range: fails
    v = claims.evaluate(cube(with_value(GOOD, "TSM", 1, 1.0)), BEATS)  # a tie is not a win
    assert v.verdict == "fails"


def test_factor_and_peak():
    twice = claim(better=["TSM"], worse=["Mean", "Median"], factor=2.0, budgets={"above": 0.0})
    assert claims.evaluate(cube(GOOD), twice).verdict == "fails"  # Mean / TSM is exactly 2
    v = claims.evaluate(cube(with_value(GOOD, "TSM", 1, 0.49)), twice)
    assert v.verdict == "holds up to rho = 0.1"
    peak = claim(better=["TSM"], worse=["Mean", "Median"], peak=2.0, budgets={"above": 0.0})
    assert claims.evaluate(cube(GOOD), peak).verdict == "holds"
    lower = {**GOOD, "Mean": [0, 0.9, 1.9, 2.9]}  # the best ratio is now 1.9
    v = claims.evaluate(cube(lower), peak)
    assert v.verdict == "fails" and "peak ratio d1 1.93 at rho = 0.3" in v.numbers
    assert "(claimed >= 2)" in v.numbers


def test_per_dataset_ranges():
    c = claim(better=["TSM"], worse=["Mean"], budgets={"d1": {"above": 0.0, "below": 0.25},
                                                        "d2": {"from": 0.1, "to": 0.1}})
    # TSM loses at 0.3 everywhere, but 0.3 is outside both ranges
    v = claims.evaluate(cube(with_value(GOOD, "TSM", 3, 9.0)), c)
    assert v.verdict == "holds" and v.compared == 3


def test_same_with_a_threshold_range():
    same = claim(same=["TSM", "TSE"], rtol=0.05, budgets={"above": 0.0, "below": "rho_learn"})
    values = {"TSM": [0, 1.0, 2.0, 5.0], "TSE": [0, 1.02, 2.03, 3.0]}
    v = claims.evaluate(cube(values, thresholds={"rho_learn": 0.25}), same)
    assert v.verdict == "holds" and v.compared == 4
    assert "rho_learn = 0.25" in v.numbers
    v = claims.evaluate(cube(with_value(values, "TSM", 2, 2.3), thresholds={"rho_learn": 0.25}), same)
    assert v.verdict == "holds up to rho = 0.1"
    # a data set without a known structure has no threshold: nothing to compare
    v = claims.evaluate(cube(values), same)
    assert v.verdict == "no data" and "threshold rho_learn unknown" in v.numbers


def test_cells_without_values_are_skipped():
    ds = cube({**GOOD, "Median": [0, 1.2, np.nan, np.nan]})
    v = claims.evaluate(ds, BEATS)
    assert v.verdict == "holds" and v.compared == 6  # Mean still compares at 0.2, 0.3
    v = claims.evaluate(cube({"Mean": GOOD["Mean"], "TSM": [np.nan] * 4}), BEATS)
    assert v.verdict == "no data"


def test_a_cube_without_claims_has_no_verdicts():
    assert claims.evaluate_cube(cube(GOOD)) == []
    ds = cube(GOOD)
    ds.attrs["claims"] = json.dumps([BEATS])
    (v,) = claims.evaluate_cube(ds)
    assert v.verdict == "holds" and v.experiment == "exp"


# -- suite files ----------------------------------------------------------------------
SUITE = """
name = "s"
seed = 1
[[experiment]]
name = "e"
datasets = [{name = "synthetic-gaussian", N = 60}]
instances = 1
adversaries = ["hide-smallest"]
budgets = [0.0, 0.1, 0.2]
recoverers = ["none", "exact", {name = "ithsvd", max_iter = 20}]
estimators = ["mean", "cmedian"]
metrics = ["l2", "mahalanobis"]
methods = {"Empirical Mean" = ["none", "mean"], "C-Median" = ["none", "cmedian"], "Two-Step-E" = ["exact", "mean"], "Two-Step-M" = ["ithsvd", "mean"]}

[[experiment.claim]]
id = "d"
paper = "supplementary fig:syntheticMahalanobis"
better = ["Two-Step-E"]
worse = ["Empirical Mean", "C-Median"]
factor = 2.0
metric = "mahalanobis"
budgets = { above = 0.0 }

[[experiment.claim]]
id = "e"
paper = "supplementary fig:synthetic"
same = ["Two-Step-M", "Two-Step-E"]
budgets = { above = 0.0, below = "rho_learn" }
"""


def test_suite_claims_parse(write_suite):
    exp = load_suite(write_suite(SUITE)).experiments[0]
    d, e = exp.claims
    assert d["kind"] == "beats" and d["factor"] == 2.0 and d["datasets"] == ["synthetic-gaussian"]
    assert e["kind"] == "same" and e["budgets"]["synthetic-gaussian"] == {"above": 0.0, "below": "rho_learn"}


@pytest.mark.parametrize("change, key, match", [
    (('factor = 2.0', 'factr = 2.0'), r"claim\[0\]\.factr", "unknown key in a claim; did you mean 'factor'"),
    (('worse = ["Empirical Mean", "C-Median"]', 'worse = ["Empirical Mean", "C-Medain"]'),
     r"claim\[0\]\.worse\[1\]", "method 'C-Medain' is not in this experiment; did you mean 'C-Median'"),
    (('factor = 2.0', 'factor = 0.5'), r"claim\[0\]\.factor", "a factor is a number >= 1"),
    (('factor = 2.0', 'same = ["Two-Step-M"]'), r"claim\[0\]'", "either who beats whom"),
    (('below = "rho_learn"', 'below = "rho_lern"'), r"claim\[1\]\.budgets\.below",
     "unknown recovery threshold 'rho_lern'; did you mean 'rho_learn'"),
    (('budgets = { above = 0.0 }', 'budgets = { above = 0.3, below = 0.1 }'), r"claim\[0\]\.budgets'",
     "empty budget range"),
    (('budgets = { above = 0.0 }', 'budgets = { gaussian = { above = 0.0 } }'),
     r"claim\[0\]\.budgets\.gaussian", "nor a data set of this claim"),
    (('metric = "mahalanobis"', 'metric = "linf"'), r"claim\[0\]\.metric", "not among this experiment's metrics"),
    (('id = "e"', 'id = "d"'), r"claim\[1\]\.id", "duplicate claim id 'd'"),
    (('same = ["Two-Step-M", "Two-Step-E"]', 'same = ["Two-Step-M"]'), r"claim\[1\]\.same", "at least 2"),
    (('factor = 2.0', 'rtol = 0.1'), r"claim\[0\]\.rtol", "does not apply"),
    (('factor = 2.0', 'factor = 2.0\nadversaries = ["hide-largets"]'), r"claim\[0\]\.adversaries\[0\]",
     "adversary 'hide-largets' is not in this experiment"),
    (('factor = 2.0', 'factor = 2.0\ndatasets = ["gausian"]'), r"claim\[0\]\.datasets\[0\]",
     "data set 'gausian' is not in this experiment"),
])
def test_claim_mistakes_name_file_and_key(write_suite, change, key, match):
    path = write_suite(SUITE.replace(*change))
    with pytest.raises(SuiteError, match=match) as err:
        load_suite(path)
    assert str(path) in str(err.value)
    assert "key 'experiment[0]." in str(err.value)
    import re
    assert re.search(key, str(err.value)), str(err.value)


def test_run_records_claims_and_convergence_and_the_cli_prints_verdicts(write_suite, tmp_path):
    path = write_suite(SUITE)
    result = cli_inproc_result("suite", path, "--out", tmp_path / "out", "--no-report", "--workers", "1")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Claims:" not in out and "The paper's claims:" in out
    rows = [line for line in out.splitlines() if line.startswith("e (")]
    assert len(rows) == 2 and rows[0].startswith("e (d)") and rows[1].startswith("e (e)")
    assert "supplementary fig:syntheticMahalanobis" in rows[0]
    assert out.count("    measured: ") == 2
    with xr.open_dataset(tmp_path / "out" / "s" / "e.nc") as ds:
        ds = ds.load()
    assert [c["id"] for c in claims.claims_of(ds)] == ["d", "e"]
    info = json.loads(ds.attrs["datasets_info"])["synthetic-gaussian"]
    assert info["m_a"] == 5 and info["m_a_general"] == 9  # the paper's block-diagonal A
    assert info["thresholds"]["rho_learn_general"]["value"] == pytest.approx(8 / 72)
    assert ds["converged"].dims == ("dataset", "instance", "adversary", "budget", "recoverer")
    assert np.isnan(ds["converged"].sel(recoverer="exact")).all()  # exact reports no diagnostics
    it = ds["iterations"].sel(recoverer="ithsvd").values
    assert np.isfinite(it).all() and (it <= 20).all()
    verdicts = claims.evaluate_cube(ds)
    for v in verdicts:  # the terminal shows the cube's verdicts
        assert any(v.verdict in r for r in rows if r.startswith(f"e ({v.claim['id']})"))


def test_report_has_the_claims_page_and_convergence_counts(tmp_path):
    from helpers import drawn_page_texts, make_cube, squash

    ds = make_cube(instances=2)  # Empirical Mean's error is the lowest, Two-Step-E's the highest
    parse = dict(methods=list(json.loads(ds.attrs["methods"])), datasets=["gaussian", "uniform"],
                 metrics=["mahalanobis", "l2"], adversaries=["min-rho"], threshold_keys=["rho_learn"])
    tables = [{"id": "a", "paper": "sec:experiments", "better": ["Empirical Mean"], "worse": ["C-Median"],
               "budgets": {"above": 0.0}},
              {"id": "b", "paper": "fig:synthetic", "better": ["Two-Step-E"], "worse": ["Empirical Mean"]}]
    ds.attrs["claims"] = json.dumps(claims.parse_claims(tables, error=lambda k, m: SuiteError(m), **parse))
    conv = np.zeros(ds["recovered_fraction"].shape)
    conv[..., list(ds["recoverer"].values).index("exact")] = np.nan  # exact reports none
    conv[0, 0, 0, :2, :] = 1.0
    ds["converged"] = (ds["recovered_fraction"].dims, conv)
    ds["iterations"] = (ds["recovered_fraction"].dims, np.where(np.isnan(conv), np.nan, 7.0))
    ds.attrs["components"] = json.dumps({"recoverers": {"none": {"params": {"tol": 1e-6, "max_iter": 100}}}})
    pages = drawn_page_texts([ds], lambda slug: slug.startswith("claims"), tmp_path)  # the page drawn
    assert list(pages)[:1] == ["claims"] and len(pages) <= 2  # the claims page (and a continuation)
    text = squash(" ".join(pages.values()))
    assert pages["claims"].lstrip().startswith("The paper's claims")
    assert "holds" in text and "fails" in text
    assert squash("none: converged in 2 of 16 recoveries") in text
    assert squash("stopping rule: tol = 1e-06, max_iter = 100.") in text


def test_stopping_rule_names_limit_jumps_only_when_on():
    from cmbench.report.content.claims_page import stopping_rule

    assert stopping_rule({"tol": 1e-10, "max_iter": 100, "limit_jumps": False}) == "tol = 1e-10, max_iter = 100"
    assert stopping_rule({"tol": 1e-10, "max_iter": 100, "limit_jumps": True}).startswith(
        "tol = 1e-10, max_iter = 100, limit_jumps on")
    assert stopping_rule({"memory": 5}) == ""
