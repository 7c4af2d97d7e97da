"""A slice of a suite (--experiment, -k), --dry-run, --fail-fast, --pdb, and full tracebacks in the cube."""
import textwrap

import pytest
import xarray as xr
from click.testing import CliRunner

from cmbench.cli import main
from cmbench.errors import UserError
from cmbench.runner import StoppedAtFailure, run_suite
from cmbench.options import RunOptions
from cmbench.selection import matches
from conftest import PLUGINS

PLUGIN = (PLUGINS / "fragile.py").read_text()

SUITE = textwrap.dedent('''
    name = "sl"
    plugins = ["fragile.py"]

    [[experiment]]
    name = "first"
    datasets = [{name = "synthetic-gaussian", label = "gauss", N = 60}]
    adversaries = ["hide-smallest", "hide-random"]
    budgets = [0.0, 0.1, 0.2]
    recoverers = ["none"]
    estimators = ["mean", "cmedian", "fragile-mean"]

    [[experiment]]
    name = "second"
    datasets = [{name = "synthetic-uniform", label = "unif", N = 60}]
    adversaries = ["hide-smallest"]
    budgets = [0.0, 0.1]
    recoverers = ["none"]
    estimators = ["mean", "trimmed-mean"]
''')


@pytest.fixture
def suite_path(tmp_path):
    (tmp_path / "fragile.py").write_text(PLUGIN)
    path = tmp_path / "sl.toml"
    path.write_text(SUITE)
    return path


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_pattern_matching():
    labels = ("gauss", "hide-smallest", "none", "trimmed-mean")
    assert matches("trimmed", labels) and matches("smallest/none", labels)
    assert matches("trim*", labels) and matches("gauss/*/none/*", labels)
    assert not matches("gauss/*/exact/*", labels) and not matches("cmedian", labels)


def test_failed_cells_keep_their_full_traceback(tmp_path, suite_path):
    ds = run_suite(suite_path, RunOptions(out=tmp_path / "out"))["first"]
    failed = ds.sel(estimator="fragile-mean", adversary="hide-smallest", budget=0.2)
    assert (failed["status"] == "failed").all()
    error = str(failed["error"].values.ravel()[0])
    tb = str(failed["traceback"].values.ravel()[0])
    assert "ValueError: the helper gave up" in error and "\n" not in error
    assert tb.startswith("Traceback (most recent call last):")
    assert "in fragile_mean" in tb and "in _deep_helper" in tb and tb.rstrip().endswith("the helper gave up")
    assert (ds["traceback"].where(ds["status"] == "ok", "") == "").all()  # nothing where a cell succeeded
    with xr.open_dataset(tmp_path / "out" / "sl" / "first.nc") as saved:
        assert "in _deep_helper" in str(saved["traceback"].sel(estimator="fragile-mean").values.ravel()[-1])


def test_experiment_option_runs_one_experiment_into_the_slice_folder(tmp_path, suite_path):
    result = invoke("suite", suite_path, "--out", tmp_path / "out", "--experiment", "second", "--no-report")
    assert result.exit_code == 0, result.output
    assert "cubes: " + str(tmp_path / "out" / "sl" / "slice") + "/" in result.output
    assert sorted(p.name for p in (tmp_path / "out" / "sl" / "slice").glob("*.nc")) == ["second.nc"]
    assert not (tmp_path / "out" / "sl" / "second.nc").exists()  # the whole suite's cubes are never replaced


def test_unknown_experiment_is_a_user_error_with_a_hint(tmp_path, suite_path):
    result = invoke("suite", suite_path, "--out", tmp_path / "out", "--experiment", "secnd")
    assert result.exit_code == 2
    assert "--experiment 'secnd'" in result.stderr and "did you mean 'second'?" in result.stderr
    assert not (tmp_path / "out").exists()


def test_k_narrows_every_experiment_to_the_matching_labels(tmp_path, suite_path):
    cubes = run_suite(suite_path, RunOptions(out=tmp_path / "out", select=["cmedian", "trimmed-*"]))
    assert list(cubes["first"]["estimator"].values) == ["cmedian"]
    assert list(cubes["second"]["estimator"].values) == ["trimmed-mean"]
    assert (cubes["first"]["status"] == "ok").all()
    cubes = run_suite(suite_path, RunOptions(out=tmp_path / "out", select=["gauss/hide-random/*/mean"]))
    assert list(cubes) == ["first"]
    ds = cubes["first"]
    assert list(ds["adversary"].values) == ["hide-random"] and list(ds["estimator"].values) == ["mean"]
    with pytest.raises(UserError, match="selects no cell"):
        run_suite(suite_path, RunOptions(out=tmp_path / "out", select=["nothing-like-this"]))


def test_a_slice_computes_what_the_whole_suite_would_and_shares_its_cache(tmp_path, suite_path):
    part = run_suite(suite_path, RunOptions(out=tmp_path / "out", select=["cmedian"]))["first"]
    result = invoke("suite", suite_path, "--out", tmp_path / "out", "--no-report")
    assert result.exit_code == 1  # fragile-mean fails some cells
    whole = xr.open_dataset(tmp_path / "out" / "sl" / "first.nc")
    xr.testing.assert_equal(part["l2"], whole["l2"].sel(estimator=["cmedian"]))
    whole.close()


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, suite_path):
    out = tmp_path / "out"
    result = invoke("suite", suite_path, "--out", out, "--dry-run")
    assert result.exit_code == 0, result.output
    assert not out.exists()
    lines = result.output.splitlines()
    first = next(line for line in lines if line.startswith("first "))
    assert first.split()[:5] == ["first", "18", "0", "6", "0"]  # 2 adversaries x 3 budgets x 3 estimators
    assert "22 cells, 0 cached, 22 to compute" in result.output
    assert "gauss: 60 x 16" in result.output and "from its parameters" in result.output  # N = 60, not the nominal 1000
    run_suite(suite_path, RunOptions(out=out, experiments=["second"]))
    result = invoke("suite", suite_path, "--out", out, "--dry-run", "--experiment", "second")
    assert "4 cells, 4 cached, 0 to compute" in result.output
    assert "unif: 60 x 16" in result.output and "as last loaded" in result.output
    assert "(a slice)" in result.output and "slice" in result.output.splitlines()[-1]


def test_fail_fast_stops_at_the_first_failure_and_prints_its_traceback(tmp_path, suite_path):
    out = tmp_path / "out"
    result = invoke("suite", suite_path, "--out", out, "--fail-fast", "--no-report")
    assert result.exit_code == 1
    err = result.stderr
    assert "--fail-fast: stopped at the first failed cell" in err and "estimator 'fragile-mean'" in err
    assert "Traceback (most recent call last):" in err and "in _deep_helper" in err
    assert not list(out.rglob("*.nc"))  # no cube from a stopped sweep
    with pytest.raises(StoppedAtFailure) as stop:
        run_suite(suite_path, RunOptions(out=out, fail_fast=True))
    assert stop.value.cell["estimator"] == "fragile-mean" and stop.value.status == "failed"


def test_pdb_opens_the_debugger_at_the_failure(tmp_path, suite_path, monkeypatch):
    import pdb

    seen = []
    monkeypatch.setattr(pdb, "post_mortem", lambda tb: seen.append(tb))
    run_suite(suite_path, RunOptions(out=tmp_path / "out", select=["fragile"], post_mortem=True))
    assert seen, "post_mortem was not called"
    frames = []
    tb = seen[0]
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert frames[-1] == "_deep_helper"
    seen.clear()  # the next run of the same process, without post_mortem, debugs nothing
    run_suite(suite_path, RunOptions(out=tmp_path / "again", select=["fragile"]))
    assert not seen


def test_pdb_refuses_other_processes(tmp_path, suite_path):
    result = invoke("suite", suite_path, "--out", tmp_path / "out", "--pdb", "--workers", "2")
    assert result.exit_code == 2
    assert "--pdb debugs in this process" in result.stderr
