"""The sample-level suites (dkk17, gao19 and their quick variants) and the
`bound` claim they use."""
from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

import cmbench
from cmbench import verdicts as claims
from cmbench.errors import SuiteError
from cmbench.suite import load_suite

from test_claims import METHODS, cube

SUITES = Path(__file__).parent.parent / "suites"
NAMES = ("dkk17", "dkk17-quick", "gao19", "gao19-quick")


def bound(**keys) -> dict:
    table = {"id": "b", **keys}
    return claims.parse_claims([table], error=lambda key, msg: SuiteError(f"{key}: {msg}"),
                               methods=list(METHODS), datasets=["d1", "d2"], metrics=["l2"],
                               adversaries=["adv"], threshold_keys=[])[0]


# ------------------------------------------------------------------ bound


def test_bound_holds_below_and_fails_at_the_bound():
    c = bound(methods=["TSM", "Mean"], below=2.0, budgets={"above": 0.0})
    values = {"Mean": [0, 1.0, 1.5, 1.9], "TSM": [0, 0.5, 1.0, 1.5]}
    v = claims.evaluate(cube(values), c)
    assert v.verdict == "holds" and v.passed == v.compared == 6
    assert "largest error Mean 1.9" in v.numbers
    values["Mean"][3] = 2.0  # at the bound is not below it
    v = claims.evaluate(cube(values), c)
    assert v.verdict == "holds up to rho = 0.2" and not v.holds
    values["TSM"][1] = 2.5
    assert claims.evaluate(cube(values), c).verdict == "fails"
    assert claims.describe(c) == "TSM and Mean below 2 on d1, d2"


def test_bound_no_data_without_values():
    v = claims.evaluate(cube({"Mean": [np.nan] * 4}), bound(methods=["Mean"], below=1.0))
    assert v.verdict == "no data"


@pytest.mark.parametrize("keys, match", [
    ({"methods": ["Mean"]}, "needs 'below'"),
    ({"below": 1.0}, "missing key 'methods'"),
    ({"methods": ["Mean"], "below": 1.0, "factor": 2}, "does not apply to a bound"),
    ({"methods": ["Mean"], "below": 1.0, "better": ["TSM"]}, "either who beats whom"),
    ({"methods": ["Nope"], "below": 1.0}, "not in this experiment"),
    ({"methods": ["Mean"], "below": float("inf")}, "finite"),
])
def test_bound_errors_name_the_key(keys, match):
    with pytest.raises(SuiteError, match=match):
        bound(**keys)


# ------------------------------------------------------------------ suites


def _load(name):
    """The suite, or a skip naming the contract of another helper it still waits for."""
    try:
        return load_suite(SUITES / f"{name}.toml")
    except SuiteError as e:
        msg = str(e)
        if "report" in msg or "@budget" in msg:
            pytest.skip(f"waits for [experiment.report] / \"@budget\" (helpers api, runner): {msg}")
        raise


@pytest.mark.parametrize("name", NAMES)
def test_suites_load_with_their_claims(name):
    suite = _load(name)
    for exp in suite.experiments:
        assert all(d.decl.name == "gaussian" for d in exp.datasets)
        assert exp.claims or name.startswith("gao19") or exp.name == "figure1-right"


@pytest.mark.parametrize("name", NAMES)
def test_suites_are_valid_apart_from_the_pending_contracts(name, tmp_path):
    # The rest of each file (components, grids, methods, claims) checked now.
    text = (SUITES / f"{name}.toml").read_text()
    text = text.replace('[experiment.report]\nx = "dataset.d"\n', "")
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace('"@budget"', "0.1"))
    suite = load_suite(path)
    labels = {d.label for exp in suite.experiments for d in exp.datasets}
    assert labels
    if name == "dkk17":
        assert {f"dkk17.d_{d}" for d in range(100, 401, 50)} == labels
        kinds = {c["kind"] for c in suite.experiments[0].claims}
        assert kinds == {"beats", "bound", "same"}


def shrunk(name: str, dims: list[int], samples_per_dim: int) -> dict:
    """The shipped suite ``name`` as a dict, its experiments shrunk: the dimensions ``dims`` in place
    of the file's (the claims' data-set labels renamed with them), ``samples_per_dim`` rows per
    dimension, one instance; every estimator, adversary, budget, metric and claim kept."""
    suite = tomllib.loads((SUITES / f"{name}.toml").read_text())
    for exp in suite["experiment"]:
        (data,) = exp["datasets"]
        renamed = {f"{data['label']}.d_{a}": f"{data['label']}.d_{b}" for a, b in zip(data["d"], dims)}
        assert len(renamed) == len(data["d"]), "one new dimension per dimension of the file"
        data.update(d=dims, samples_per_dim=samples_per_dim)
        exp["instances"] = 1
        for claim in exp.get("claim", []):
            if "datasets" in claim:
                claim["datasets"] = [renamed[label] for label in claim["datasets"]]
    return suite


@pytest.mark.parametrize("name, dims", [("dkk17-quick", [10, 20, 30, 40]), ("gao19-quick", [10, 20])])
def test_quick_suite_at_small_size_runs_evaluates_its_claims_and_builds_its_pages(name, dims, tmp_path):
    """The quick suite's file, shrunk: the run records what its claims and pages need, every claim
    gets a verdict from cells with values (whether it holds at this size is the slow test's), and
    the report's model has the curves against d and every claim on its claims page."""
    from cmbench.report.load import load_cubes
    from cmbench.report.model import build_report

    _load(name)
    cubes = cmbench.run_suite(shrunk(name, dims, samples_per_dim=50), out=tmp_path, progress=False)
    suite_claims = [c for exp in tomllib.loads((SUITES / f"{name}.toml").read_text())["experiment"]
                    for c in exp.get("claim", [])]
    verdicts = []
    for exp, ds in cubes.items():
        assert (ds["status"] == "ok").all(), (exp, np.unique(ds["error"].values))
        assert "inlier_l2" in ds, "the runner records the untouched rows' error"
        assert np.isfinite(ds["inlier_l2"]).all()
        assert ds.attrs.get("report_x") == "dataset.d"
        assert [int(v) for v in ds["dataset_d"].values] == dims
        verdicts += claims.evaluate_cube(ds)
    assert [v.claim["id"] for v in verdicts] == [c["id"] for c in suite_claims]
    for v in verdicts:
        assert v.compared > 0 and v.verdict != "no data", (v.claim["id"], v.verdict)
    sections = build_report(load_cubes(list(cubes.values())), title=name)
    titles = {s.title: s for s in sections}
    for exp in cubes:
        curves = titles[f"{exp}: error versus d"]
        assert curves.pages and all(type(p.record).__name__ == "CurvePage" for p in curves.pages), exp
    (claims_section,) = [s for s in sections if s.kind == "claims"]
    lines = [op[3] for p in claims_section.pages for op in p.record.ops if op[0] == "text"]
    for v in verdicts:  # each claim, whole on a line, with its verdict
        assert any(v.claim["id"] in line for line in lines), v.claim["id"]
        assert any(v.verdict.split()[0] in line for line in lines), v.verdict  # a long one wraps


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dkk17-quick", "gao19-quick"])
def test_quick_suite_runs_and_its_claims_hold(name, tmp_path):
    _load(name)
    cubes = cmbench.run_suite(name, out=tmp_path, report=False)
    for exp, ds in cubes.items():
        assert "inlier_l2" in ds, "the runner records the untouched rows' error"
        assert ds.attrs.get("report_x") == "dataset.d"
        for v in claims.evaluate_cube(ds):
            assert v.holds, (exp, v.claim["id"], v.verdict, v.numbers)


def test_full_size_data_sets_are_described_from_their_parameters(monkeypatch):
    # dkk17 at d = 400 is 1.28 GB: the client describes each data set from its
    # parameters (gaussian's shape callable) and never draws one before the sweep.
    from cmbench.runner import dataset_loading, memo

    def no_load(job):
        raise AssertionError(f"data set {job.dataset} was loaded in the client")

    monkeypatch.setattr(memo, "load_data", no_load)
    suite = load_suite("dkk17")
    found = dataset_loading.load_datasets(suite)
    shapes = {label: tuple(l.info["shape"]) for (_, label), l in found.items()}
    assert shapes == {f"dkk17.d_{d}": (1000 * d, d) for d in range(100, 401, 50)}
