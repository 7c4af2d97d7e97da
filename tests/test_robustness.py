"""Issue 8: nothing lost, nothing confusing - bad input, faulty plugins and interruption.

One section per row of the issue's table. Most rows run the real CLI in a
subprocess (``python -m cmbench.cli``) and check the exit code and the one-line
message on stderr (never a traceback); the variations of a row run the same
click command in-process (``CliRunner``), which is much cheaper than a new
interpreter per case. Rows already covered elsewhere are referenced, not
duplicated:

- suite mistakes in-process, with the key path: tests/test_suite_file.py;
- plugin loading errors and duplicate names in-process: tests/test_plugins.py;
- SIGKILL at a random moment, then the same command: the resumed cube is
  identical and nothing finished is recomputed:
  tests/test_runner.py::test_sigkill_then_rerun_gives_the_same_cube (slow);
- truncated and tampered cache files: tests/test_runner.py::test_corrupted_cache_file_is_recomputed;
- a tampered *download* caches nothing:
  tests/test_data_fetch.py::test_tampered_download_names_file_and_digests_and_caches_nothing;
- property-based contract checks of every built-in: tests/test_contract_properties.py.

Tests marked ``xfail(strict=True)`` pin behaviour the issue asks for that is
missing; each reason says what is wrong. They turn into failures (XPASS) once
the behaviour is there, so that the mark is removed.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

import cmbench
from cmbench.cli import main
from cmbench.errors import UserError
from cmbench.runner import run_suite

# The real data's source files: $CMBENCH_DATA_DIR, else ../shared/datasets beside the repository.
SHARED_DATA = Path(os.environ.get("CMBENCH_DATA_DIR")
                   or Path(__file__).resolve().parents[1].parent / "shared" / "datasets")


# ====================================================================== helpers

def cli(*args, env=None, cwd=None, timeout=180) -> subprocess.CompletedProcess:
    """The real command line, in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "cmbench.cli", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout)


def cli_inproc(*args):
    """The same click command, in-process: (exit code, stderr)."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # an unhandled exception would be a traceback on the real CLI
    return result.exit_code, result.stderr


def assert_user_error(code: int, stderr: str, *needles: str) -> str:
    """Exit 2, exactly one line 'cmbench: error: ...' on stderr, holding every needle."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert code == 2, f"exit {code}: {stderr}"
    assert len(lines) == 1, f"expected one line, got:\n{stderr}"
    line = lines[0]
    assert line.startswith("cmbench: error: "), line
    for needle in needles:
        assert needle in line, f"{needle!r} not in: {line}"
    return line


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


GOOD = """\
name = "r"
seed = 3
[[experiment]]
name = "e"
datasets = [{name = "synthetic-gaussian", N = 60}]
instances = 1
adversaries = ["hide-smallest"]
budgets = [0.0, 0.2]
recoverers = ["none", "exact"]
estimators = ["mean", "cmedian"]
metrics = ["l2", "mahalanobis"]
"""


def good_suite(tmp_path: Path, old: str = "", new: str = "", name: str = "suite.toml") -> Path:
    assert old in GOOD, old
    return write(tmp_path / name, GOOD.replace(old, new, 1) if old else GOOD)


SLOW_PLUGIN = '''
import os, time
import numpy as np, cmbench

def _log(what):
    path = os.environ.get("CMBENCH_TEST_LOG")
    if path:
        with open(path, "a") as f:
            f.write(what + "\\n")

def slow_mean(X, *, rng, delay=0.0):
    _log("estimate")
    time.sleep(delay)
    return np.nanmean(X, 0)

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("slow-mean", slow_mean, params={"delay": 0.0},
                              description="the mean, after a nap (counts its calls)")]
'''


def slow_suite(tmp_path: Path, delay: float, instances: int, budgets: str) -> Path:
    """One unit per (instance, budget); slow-mean logs once per unit and sleeps ``delay``."""
    write(tmp_path / "slowplug.py", SLOW_PLUGIN)
    return write(tmp_path / "slow.toml", f"""
        name = "slow"
        seed = 5
        plugins = ["slowplug.py"]
        [[experiment]]
        name = "e"
        datasets = [{{name = "synthetic-gaussian", N = 60}}]
        instances = {instances}
        adversaries = ["hide-smallest"]
        budgets = {budgets}
        recoverers = ["none"]
        estimators = ["mean", {{name = "slow-mean", delay = {delay}}}]
        metrics = ["l2", "mahalanobis"]
    """)


def unit_files(out: Path, suite: str = "slow") -> list[Path]:
    """The cache's unit documents (one per corruption, holding its stages' records)."""
    cache = out / suite / ".cache" / "units"
    return sorted(cache.glob("*.json")) if cache.exists() else []


def computed(log: Path) -> int:
    """Units computed since the log was last cleared (slow-mean runs once per unit)."""
    return log.read_text().split().count("estimate") if log.exists() else 0


def values(ds: xr.Dataset) -> dict:
    return {v: ds[v].values for v in ds.data_vars if v != "seconds"}


def assert_same_cube(a: xr.Dataset, b: xr.Dataset) -> None:
    va, vb = values(a), values(b)
    assert va.keys() == vb.keys()
    for k in va:
        np.testing.assert_array_equal(va[k], vb[k], err_msg=k)


def open_cube(path: Path) -> xr.Dataset:
    with xr.open_dataset(path) as ds:
        return ds.load()


@pytest.fixture
def log(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "calls.log"
    monkeypatch.setenv("CMBENCH_TEST_LOG", str(path))
    return path


# ====================================================== row: suite file that is not valid TOML

def test_invalid_toml_exits_2_naming_file_line_and_column(tmp_path):
    """At the end of the document tomllib gives no line: cmbench finds it anyway."""
    path = tmp_path / "broken.toml"
    path.write_text('name = "s"\nseed = 1\ndescription = "unterminated')
    result = cli("suite", path, "--out", tmp_path / "out")
    msg = assert_user_error(result.returncode, result.stderr, str(path), "invalid TOML")
    assert re.search(re.escape(str(path)) + r":3:\d+: ", msg), f"no line:column after the file name: {msg}"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, lines", [
    pytest.param('name = "s"\nseed = 1\n[[experiment]\n', {3}, id="mid-document"),
    pytest.param('name = "s"\nname = "t"\n', {2}, id="duplicate-key"),
    pytest.param('name = "s"\nseed = \n', {2}, id="missing-value"),
    pytest.param('name = "s"\nbudgets = [0.1,\n\n', {2, 3}, id="unclosed-array-before-blank-lines"),
    pytest.param('name = "s"\r\nseed = 1 2\r\n', {2}, id="crlf-line-endings"),
])
def test_invalid_toml_variants_name_the_line(tmp_path, text, lines):
    path = tmp_path / "broken.toml"
    path.write_bytes(text.encode())
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out")
    msg = assert_user_error(code, err, "invalid TOML")
    where = re.search(re.escape(str(path)) + r":(\d+):(\d+): ", msg)
    assert where and int(where.group(1)) in lines, msg
    assert not (tmp_path / "out").exists()


def test_suite_file_that_is_not_utf8_names_line_and_column(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "s"\nseed = 1\ndescription = "caf\u00e9"\n'.encode("latin-1"))
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out")
    assert_user_error(code, err, f"{path}:3:")


# ====================================================== row: suite key missing, misspelt, wrong type

KEY_MISTAKES = [
    pytest.param('budgets = [0.0, 0.2]\n', '', ["experiment[0]", "missing required key 'budgets'"],
                 id="missing-experiment-key"),
    pytest.param('name = "r"\n', '', ["missing required key 'name'", "the suite"], id="missing-suite-key"),
    pytest.param('instances = 1', 'instancs = 1', ["'experiment[0].instancs'", "did you mean 'instances'"],
                 id="misspelt-experiment-key"),
    pytest.param('seed = 3', 'sede = 3', ["'sede'", "did you mean 'seed'"], id="misspelt-suite-key"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = {start = 0.0, stop = 0.2, steps = 0.1}',
                 ["budgets.steps", "did you mean 'step'"], id="misspelt-budget-range-key"),
    pytest.param('N = 60', 'structure_sed = 7', ["structure_sed", "did you mean 'structure_seed'"],
                 id="misspelt-component-parameter"),
    pytest.param('seed = 3', 'seed = "three"', ["'seed'", "expected an integer", "'three'"],
                 id="wrong-type-string-for-integer"),
    pytest.param('instances = 1', 'instances = true', ["instances", "expected an integer"],
                 id="wrong-type-boolean-for-integer"),
    pytest.param('adversaries = ["hide-smallest"]', 'adversaries = "hide-smallest"',
                 ["experiment[0].adversaries", "expected an array", "'hide-smallest'"],
                 id="wrong-type-string-for-array"),
    pytest.param('[[experiment]]', '[experiment]', ["'experiment'", "expected an array"],
                 id="wrong-type-table-for-array-of-tables"),
]


def test_suite_key_mistake_exits_2_through_the_real_cli(tmp_path):
    path = good_suite(tmp_path, "instances = 1", "instancs = 1")
    result = cli("suite", path, "--out", tmp_path / "out")
    assert_user_error(result.returncode, result.stderr, str(path), "'experiment[0].instancs'",
                      "unknown key", "did you mean 'instances'")


@pytest.mark.parametrize("old, new, needles", KEY_MISTAKES)
def test_suite_key_mistakes_name_the_key_what_was_expected_and_the_close_match(tmp_path, old, new, needles):
    path = good_suite(tmp_path, old, new)
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out", "--no-report")
    assert_user_error(code, err, str(path), *needles)
    assert not (tmp_path / "out").exists()


def test_component_parameter_of_the_wrong_type_exits_2(tmp_path):
    path = good_suite(tmp_path, "N = 60", 'N = "many"')
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out", "--no-report")
    assert_user_error(code, err, "datasets[0].N'", "integer", "'many'")


def test_negative_seed_exits_2(tmp_path):
    path = good_suite(tmp_path, "seed = 3", "seed = -3")
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out", "--no-report")
    assert_user_error(code, err, "'seed'", "-3")


# ====================================================== row: unknown component name

UNKNOWN = [
    pytest.param("datasets", '{name = "synthetic-gaussian", N = 60}', '"synthetic-gausian"', "synthetic-gaussian",
                 id="dataset"),
    pytest.param("adversaries", '"hide-smallest"', '"hide-smalest"', "hide-smallest", id="adversary"),
    pytest.param("recoverers", '"exact"', '"exakt"', "exact", id="recoverer"),
    pytest.param("estimators", '"cmedian"', '"cmedain"', "cmedian", id="estimator"),
]


SINGULAR = {"datasets": "dataset", "adversaries": "adversary", "recoverers": "recoverer",
            "estimators": "estimator"}


def _check_unknown(msg: str, kind: str, right: str) -> None:
    valid = sorted(cmbench.load_plugins().kind(kind))
    listed = msg.split("valid: ", 1)[1].split(", ")
    listed[-1] = listed[-1].split(" ")[0].rstrip(";")  # the message may go on after the list
    assert listed[0] == right, f"the close match should come first: {msg}"
    assert set(valid) <= set(listed), f"valid {kind} missing from: {msg}"


def test_unknown_component_exits_2_through_the_real_cli(tmp_path):
    path = good_suite(tmp_path, '"cmedian"', '"cmedain"')
    result = cli("suite", path, "--out", tmp_path / "out")
    msg = assert_user_error(result.returncode, result.stderr, str(path), "unknown estimator 'cmedain'",
                            "did you mean 'cmedian'?")
    _check_unknown(msg, "estimators", "cmedian")


@pytest.mark.parametrize("kind, old, new, right", UNKNOWN)
def test_unknown_component_lists_the_valid_names_close_match_first(tmp_path, kind, old, new, right):
    path = good_suite(tmp_path, old, new)
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out")
    name = new.strip('"')
    msg = assert_user_error(code, err, f"unknown {SINGULAR[kind]} {name!r}", f"did you mean {right!r}?")
    _check_unknown(msg, kind, right)


# ====================================================== row: budget outside [0, 1], empty grid, duplicate labels

GRID_MISTAKES = [
    pytest.param('budgets = [0.0, 0.2]', 'budgets = [0.1, 1.5]', ["1.5", "outside [0, 1]"], id="above-one"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = [-0.1]', ["-0.1", "outside [0, 1]"], id="negative"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = [nan]', ["nan", "outside [0, 1]"], id="nan"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = [inf]', ["inf", "outside [0, 1]"], id="inf"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = {start = 0.5, stop = 1.5, step = 0.5}', ["1.5", "outside"],
                 id="range-beyond-one"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = {start = 0.0, stop = 0.2, step = 0.0}', ["step", "0.0"],
                 id="range-zero-step"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = []', ["budgets", "empty budget grid"], id="empty-grid"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = {start = 0.5, stop = 0.1, step = 0.1}',
                 ["budgets", "empty budget grid"], id="empty-range"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = [0.1, 0.1]', ["duplicate budget 0.1"], id="duplicate-budget"),
    pytest.param('"cmedian"', '{name = "mean"}', ["estimators", "duplicate label 'mean'"],
                 id="duplicate-implicit-label"),
    pytest.param('recoverers = ["none", "exact"]',
                 'recoverers = [{name = "none", label = "x"}, {name = "exact", label = "x"}]',
                 ["recoverers", "duplicate label 'x'"], id="duplicate-explicit-label"),
    pytest.param('instances = 1', 'instances = [0, 0]', ["instances", "duplicate instance 0"],
                 id="duplicate-instance"),
    pytest.param('estimators = ["mean", "cmedian"]', 'estimators = []', ["estimators", "empty list"],
                 id="empty-component-list"),
]


def test_budget_outside_unit_interval_exits_2_through_the_real_cli(tmp_path):
    path = good_suite(tmp_path, 'budgets = [0.0, 0.2]', 'budgets = [0.1, 1.5]')
    result = cli("suite", path, "--out", tmp_path / "out")
    assert_user_error(result.returncode, result.stderr, str(path), "budgets", "1.5", "outside [0, 1]")


@pytest.mark.parametrize("old, new, needles", GRID_MISTAKES)
def test_grid_mistakes_name_the_offending_value(tmp_path, old, new, needles):
    path = good_suite(tmp_path, old, new)
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out", "--no-report")
    assert_user_error(code, err, str(path), *needles)
    assert not (tmp_path / "out").exists()


def test_duplicate_experiment_names_exit_2(tmp_path):
    path = write(tmp_path / "suite.toml", GOOD + GOOD[GOOD.index("[[experiment]]"):])
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out")
    assert_user_error(code, err, "duplicate experiment.name 'e'")


@pytest.mark.parametrize("option, value", [("--workers", "0"), ("--timeout", "-1")])
def test_bad_run_options_exit_2(tmp_path, option, value):
    path = good_suite(tmp_path)
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out", option, value)
    assert_user_error(code, err, option, value)


# ====================================================== row: bad data (NaN/inf, constant column, N < n, one row)

BAD_DATA_PLUGIN = '''
import numpy as np, cmbench

def table(kind):
    """The clean sample each data set returns: (X, mean, cov, columns)."""
    rng = np.random.default_rng(11)
    N, n = (4, 6) if kind == "plug-wide" else (1, 3) if kind == "plug-one-row" else (12, 3)
    X = rng.normal(size=(N, n)) * np.arange(1, n + 1) + 10.0
    columns = ("alpha", "temperature", "pressure", "d", "e", "f")[:n]
    mean = X.mean(axis=0)
    if kind == "plug-nan":
        X[5, 1] = np.nan
    elif kind == "plug-inf":
        X[3, 2] = np.inf
    elif kind == "plug-nan-mean":
        mean = mean.copy()
        mean[2] = np.nan
    elif kind == "plug-constant":
        X[:, 1] = 7.25
        mean = X.mean(axis=0)
    Xc = X - mean
    cov = Xc.T @ Xc / N
    return X, mean, cov, columns

def loader(kind):
    def load(*, instance, rng):
        X, mean, cov, columns = table(kind)
        return cmbench.Data(X=X, mean=mean, cov=cov, columns=columns)
    return load

KINDS = ("plug-nan", "plug-inf", "plug-one-row", "plug-nan-mean", "plug-constant", "plug-wide")

@cmbench.hookimpl
def register_datasets():
    return [cmbench.Dataset(k, loader(k), description="a deliberately awkward table") for k in KINDS]
'''

BAD_CSV = {  # file name -> text; every column is numeric
    "nan.csv": "a,b,c\n1,2,3\n4,,6\n7,8,9\n2,5,1\n3,3,3\n5,1,2\n6,7,4\n8,2,5\n",
    "inf.csv": "a,b,c\n1,2,3\n4,5,inf\n7,8,9\n2,5,1\n3,3,3\n5,1,2\n6,7,4\n8,2,5\n",
    "constant.csv": "a,k,c\n1,4,3\n4,4,6\n7,4,9\n2,4,1\n3,4,3\n5,4,2\n6,4,4\n8,4,5\n",
    "wide.csv": "a,b,c,d,e\n1,2,3,4,5\n5,3,2,1,0\n2,2,1,1,9\n",
    "one_row.csv": "a,b,c\n1,2,3\n",
}

# A user's csv file that cannot be used is a user error found before the sweep (exit 2, one line):
# label -> what the message must name, besides the file.
BAD_CSV_ERRORS = {
    "csv-nan": ["'b'", "missing"],
    "csv-inf": ["'c'", "infinite"],
    "csv-constant": ["'k'", "constant"],
    "csv-wide": ["N = 3", "n = 5"],
    "csv-one-row": ["1 row"],
}

# A plugin's data that break the contract fail their cells only:
# label -> (status, what the error must name); every failing message names the data set
BAD_DATA = {
    "plug-nan": ("failed", ["'temperature'", "NaN"]),
    "plug-inf": ("failed", ["'pressure'", "inf"]),
    "plug-one-row": ("failed", ["1 row"]),
    "plug-nan-mean": ("failed", ["mean"]),
}
BAD_CSV_FILE = {"csv-nan": "nan.csv", "csv-inf": "inf.csv", "csv-constant": "constant.csv",
                "csv-wide": "wide.csv", "csv-one-row": "one_row.csv"}
GOOD_DEGENERATE = ("csv-nan-dropped", "plug-constant", "plug-wide")
BUDGET = 0.25


@pytest.fixture(scope="module")
def bad_data_run(tmp_path_factory):
    """One sweep over every awkward data set, through the real CLI."""
    tmp = tmp_path_factory.mktemp("bad-data")
    for name, text in BAD_CSV.items():
        (tmp / name).write_text(text)
    write(tmp / "awkward.py", BAD_DATA_PLUGIN)
    csv = ['{name = "csv", label = "csv-nan-dropped", path = "nan.csv", missing = "drop-rows"}']
    plug = [f'"{k}"' for k in ("plug-nan", "plug-inf", "plug-one-row", "plug-nan-mean", "plug-constant",
                               "plug-wide")]
    suite = write(tmp / "bad.toml", f"""
        name = "bad"
        plugins = ["awkward.py"]
        [[experiment]]
        name = "e"
        datasets = [{", ".join(csv + plug)}]
        adversaries = ["hide-smallest"]
        budgets = [{BUDGET}]
        recoverers = ["none"]
        estimators = ["mean"]
        metrics = ["l2", "mahalanobis"]
    """)
    result = cli("suite", suite, "--out", tmp / "out", "--no-report")
    cube = tmp / "out" / "bad" / "e.nc"
    return result, (open_cube(cube) if cube.exists() else None), tmp


def test_bad_data_fails_only_its_cells_without_traceback(bad_data_run):
    result, ds, _ = bad_data_run
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr
    assert ds is not None, "the cube of the good data sets must still be written"
    for label in GOOD_DEGENERATE:
        assert (ds["status"].sel(dataset=label) == "ok").all(), label


@pytest.mark.parametrize("label", sorted(BAD_CSV_ERRORS))
def test_bad_csv_file_is_a_user_error_naming_the_file_and_column(bad_data_run, label):
    _, _, tmp = bad_data_run
    suite = write(tmp / f"{label}.toml", f"""
        name = "{label}"
        [[experiment]]
        name = "e"
        datasets = [{{name = "csv", label = "{label}", path = "{BAD_CSV_FILE[label]}"}}]
        adversaries = ["hide-smallest"]
        budgets = [{BUDGET}]
        recoverers = ["none"]
        estimators = ["mean"]
    """)
    code, err = cli_inproc("suite", suite, "--out", tmp / "out", "--no-report")
    assert_user_error(code, err, BAD_CSV_FILE[label], f"'{label}'", *BAD_CSV_ERRORS[label])


@pytest.mark.parametrize("label", sorted(BAD_DATA))
def test_bad_data_is_refused_naming_the_data_set_and_column(bad_data_run, label):
    result, ds, _ = bad_data_run
    status, needles = BAD_DATA[label]
    cells = ds.sel(dataset=label)
    assert (cells["status"] == status).all()
    assert np.isnan(cells["l2"].values).all() and np.isnan(cells["mahalanobis"].values).all(), \
        "never a number from refused data"
    error = str(cells["error"].values.flat[0])
    name = label if label.startswith("plug") else BAD_CSV_FILE[label]
    for needle in [name, *needles]:
        assert needle in error, f"{needle!r} not in the cube's error: {error}"
    summary = [line for line in result.stderr.splitlines() if f"'{label}'" in line]
    assert summary and all(n in summary[0] for n in needles), result.stderr


def _expected_errors(X: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> tuple[float, float]:
    """l2 and Mahalanobis (pseudo-inverse) error of the Empirical Mean after hide-smallest."""
    hide = cmbench.load_plugins().adversaries["hide-smallest"]
    Xc = hide.fn(X, BUDGET, rng=np.random.default_rng(0), structure=None, **hide.params)
    diff = np.nanmean(Xc, axis=0) - mean
    maha = float(np.sqrt(diff @ np.linalg.pinv(cov, rcond=1e-10, hermitian=True) @ diff))
    return float(np.linalg.norm(diff)), maha


@pytest.mark.parametrize("label", GOOD_DEGENERATE)
def test_degenerate_but_valid_data_gives_the_right_numbers(bad_data_run, label):
    """A constant column or N < n from a plugin is a valid sample (a documented
    policy: accepted as is); the csv NaN policy 'drop-rows' keeps complete rows.
    Either way the cube's numbers are the ones computed by hand."""
    _, ds, tmp = bad_data_run
    if label == "csv-nan-dropped":
        import pandas as pd

        X = pd.read_csv(tmp / "nan.csv").dropna().to_numpy(dtype=float)
        X = (X - X.mean(0)) / X.std(0)
        mean = X.mean(0)
        cov = (X - mean).T @ (X - mean) / len(X)
    else:
        ns: dict = {}
        exec(BAD_DATA_PLUGIN, ns)
        X, mean, cov, _ = ns["table"](label)
    l2, maha = _expected_errors(X, mean, cov)
    cell = ds.sel(dataset=label).squeeze()
    assert str(cell["status"].values) == "ok"
    np.testing.assert_allclose(float(cell["l2"]), l2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(float(cell["mahalanobis"]), maha, rtol=1e-6, atol=1e-9)


AWKWARD_MOMENTS = '''
import numpy as np, cmbench

def make(kind):
    def load(*, instance, rng):
        X = np.random.default_rng(0).normal(size=(40, 3))
        mean, cov, A = X.mean(0), np.cov(X.T), None
        if kind == "nan-cov":
            cov = cov.copy(); cov[0, 1] = cov[1, 0] = np.nan
        elif kind == "wrong-shape-cov":
            cov = np.eye(4)
        elif kind == "complex-values":
            X = X + 1j
        elif kind == "rank-zero-structure":
            A = np.zeros((3, 1))
        return cmbench.Data(X=X, mean=mean, cov=cov, structure=A, rank=1, columns=("a", "b", "c"))
    return load

@cmbench.hookimpl
def register_datasets():
    return [cmbench.Dataset(k, make(k)) for k in
            ("nan-cov", "wrong-shape-cov", "complex-values", "rank-zero-structure")]
'''


def _awkward_suite(tmp_path: Path, dataset: str) -> Path:
    write(tmp_path / "moments.py", AWKWARD_MOMENTS)
    return write(tmp_path / f"{dataset}.toml", f"""
        name = "awk"
        plugins = ["moments.py"]
        [[experiment]]
        name = "e"
        datasets = ["{dataset}"]
        adversaries = ["hide-smallest"]
        budgets = [0.1]
        recoverers = ["none", "exact"]
        estimators = ["mean"]
        metrics = ["l2", "mahalanobis"]
    """)


@pytest.mark.parametrize("dataset", ["nan-cov", "wrong-shape-cov"])
def test_data_set_with_a_bad_covariance_is_refused_naming_it(tmp_path, dataset):
    try:
        ds = run_suite(_awkward_suite(tmp_path, dataset), out=tmp_path / "out", report=False)["e"]
    except UserError as exc:
        assert dataset in str(exc) and "cov" in str(exc)
        return
    assert (ds["status"] == "failed").all()
    assert all(dataset in e and "cov" in e for e in ds["error"].values.ravel())


def test_data_set_with_complex_values_is_refused(tmp_path):
    ds = run_suite(_awkward_suite(tmp_path, "complex-values"), out=tmp_path / "out", report=False)["e"]
    assert not (ds["status"] == "ok").any()
    assert "complex" in str(ds["error"].values.flat[0])


def test_structure_of_rank_zero_does_not_lose_the_sweep(tmp_path):
    ds = run_suite(_awkward_suite(tmp_path, "rank-zero-structure"), out=tmp_path / "out", report=False)["e"]
    assert (ds["status"].sel(recoverer="none") == "ok").all()
    assert (tmp_path / "out" / "awk" / "e.nc").exists()


# ====================================================== row: faulty plugins

FAULTY_PLUGIN = '''
import time
import numpy as np, cmbench

def raises(X, *, rng):
    raise RuntimeError("estimator exploded")

def raises_in_library(X, *, rng):
    return np.linalg.cholesky(-np.eye(X.shape[1]))[0]   # LinAlgError raised inside numpy

def wrong_shape(X, *, rng):
    return np.nanmean(X, 0)[:-1]

def returns_nan(X, *, rng):
    return np.full(X.shape[1], np.nan)

def mutates(X, *, rng):
    X[np.isnan(X)] = 0.0                                   # in place: forbidden
    return X.mean(0)

def hangs(X, *, rng):
    time.sleep(120)
    return np.nanmean(X, 0)

def adv_mutates(X, budget, *, rng, structure):
    X[0, 0] = np.nan
    return X

def adv_wrong_shape(X, budget, *, rng, structure):
    return X[:-1].copy()

def rec_wrong_shape(X, *, rng, structure, rank):
    return X[:, :-1]

@cmbench.hookimpl
def register_adversaries():
    return [cmbench.Adversary("adv-mutates", adv_mutates, level="value", mode="missing"),
            cmbench.Adversary("adv-wrong-shape", adv_wrong_shape, level="value", mode="missing")]

@cmbench.hookimpl
def register_recoverers():
    return [cmbench.Recoverer("rec-wrong-shape", rec_wrong_shape, modes=("missing",))]

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator(f.__name__.replace("_", "-"), f) for f in
            (raises, raises_in_library, wrong_shape, returns_nan, mutates, hangs)]
'''

TIMEOUT = 0.5


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faulty")
    write(tmp / "faulty.py", FAULTY_PLUGIN)
    suite = write(tmp / "faulty.toml", """
        name = "faulty"
        seed = 1
        plugins = ["faulty.py"]
        [[experiment]]
        name = "e"
        datasets = [{name = "synthetic-gaussian", N = 60}]
        adversaries = ["hide-smallest", "adv-mutates", "adv-wrong-shape"]
        budgets = [0.1]
        recoverers = ["none", "rec-wrong-shape"]
        estimators = ["mean", "raises", "raises-in-library", "wrong-shape", "returns-nan", "mutates", "hangs"]
    """)
    start = time.monotonic()
    result = cli("suite", suite, "--out", tmp / "out", "--no-report", "--timeout", TIMEOUT, timeout=120)
    elapsed = time.monotonic() - start
    cube = tmp / "out" / "faulty" / "e.nc"
    return result, (open_cube(cube) if cube.exists() else None), elapsed, tmp / "faulty.py"


# (adversary, recoverer, estimator) -> (status, text the cube's error must hold)
FAULTS = {
    "estimator-raises": (("hide-smallest", "none", "raises"), "failed",
                         ["estimator 'raises'", "RuntimeError: estimator exploded"]),
    "estimator-raises-in-library": (("hide-smallest", "none", "raises-in-library"), "failed",
                                    ["estimator 'raises-in-library'", "LinAlgError"]),
    "estimator-wrong-shape": (("hide-smallest", "none", "wrong-shape"), "failed",
                              ["estimator 'wrong-shape'", "shape (15,)", "expected (16,)"]),
    "estimator-returns-nan": (("hide-smallest", "none", "returns-nan"), "failed",
                              ["estimator 'returns-nan'", "NaN"]),
    "estimator-mutates-input": (("hide-smallest", "none", "mutates"), "failed",
                                ["estimator 'mutates'", "modified its input in place"]),
    "estimator-hangs": (("hide-smallest", "none", "hangs"), "timeout", ["estimator 'hangs'", "--timeout"]),
    "adversary-mutates-input": (("adv-mutates", "none", "mean"), "failed",
                                ["adversary 'adv-mutates'", "modified its input in place"]),
    "adversary-wrong-shape": (("adv-wrong-shape", "none", "mean"), "failed",
                              ["adversary 'adv-wrong-shape'", "shape (59, 16)"]),
    "recoverer-wrong-shape": (("hide-smallest", "rec-wrong-shape", "mean"), "failed",
                              ["recoverer 'rec-wrong-shape'", "shape (60, 15)"]),
}


def _cell(ds, adversary, recoverer, estimator):
    return ds.sel(adversary=adversary, recoverer=recoverer, estimator=estimator).squeeze()


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_faulty_plugin_cells_fail_with_the_reason_in_the_cube(faulty_run, fault):
    _, ds, _, _ = faulty_run
    where, status, needles = FAULTS[fault]
    cell = _cell(ds, *where)
    assert str(cell["status"].values) == status
    assert np.isnan(float(cell["l2"]))
    error = str(cell["error"].values)
    for needle in needles:
        assert needle in error, f"{needle!r} not in {error!r}"


def test_faulty_plugins_do_not_stop_the_sweep(faulty_run):
    result, ds, _, _ = faulty_run
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    good = _cell(ds, "hide-smallest", "none", "mean")
    assert str(good["status"].values) == "ok" and np.isfinite(float(good["l2"]))
    # every cell of a failed adversary or recoverer is failed too, none is silently missing
    assert set(np.unique(ds["status"].values)) <= {"ok", "failed", "timeout"}
    assert "cells failed or timed out" in result.stderr


def test_hanging_plugin_is_stopped_by_timeout(faulty_run):
    _, ds, elapsed, _ = faulty_run
    assert str(_cell(ds, "hide-smallest", "none", "hangs")["status"].values) == "timeout"
    assert elapsed < 60, f"the sweep took {elapsed:.0f} s; the hang sleeps 120 s"


def _summary_lines(result, component: str) -> list[str]:
    return [line for line in result.stderr.splitlines() if f"'{component}'" in line]


@pytest.mark.parametrize("component", ["raises", "wrong-shape", "returns-nan", "mutates", "adv-mutates",
                                       "adv-wrong-shape", "rec-wrong-shape"])
def test_failure_summary_names_the_plugin(faulty_run, component):
    result, _, _, plugin = faulty_run
    lines = _summary_lines(result, component)
    assert lines, result.stderr
    assert all(plugin.name in line for line in lines), lines


def test_failure_summary_names_the_plugin_when_the_error_is_raised_inside_a_library(faulty_run):
    result, _, _, plugin = faulty_run
    lines = _summary_lines(result, "raises-in-library")
    assert lines and all(plugin.name in line for line in lines), lines


def test_failure_summary_names_the_plugin_of_a_timed_out_component(faulty_run):
    result, _, _, plugin = faulty_run
    lines = _summary_lines(result, "hangs")
    assert lines and all(plugin.name in line for line in lines), lines


SNEAKY_PLUGIN = '''
import sys, time
import numpy as np, cmbench

def scribble_structure(X, budget, *, rng, structure):
    if structure is not None:
        structure[:] = 0.0          # in place, on the data set's known A
    return np.array(X, dtype=float)

def quits(X, *, rng):
    sys.exit(3)

def stubborn(X, *, rng):
    """Catches everything, as careless plugin code does; gives up after 1.2 s."""
    end = time.monotonic() + 1.2
    while time.monotonic() < end:
        try:
            time.sleep(0.02)
        except Exception:
            pass
    return np.nanmean(X, 0)

def slow_load(*, instance, rng):
    time.sleep(1.2)
    X = np.random.default_rng(instance).normal(size=(30, 3))
    return cmbench.Data(X=X, mean=np.zeros(3), cov=np.eye(3))

@cmbench.hookimpl
def register_adversaries():
    return [cmbench.Adversary("scribble-structure", scribble_structure, level="value", mode="missing")]

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("quits", quits), cmbench.Estimator("stubborn", stubborn)]

@cmbench.hookimpl
def register_datasets():
    return [cmbench.Dataset("slow-load", slow_load)]
'''


def _sneaky_suite(tmp_path: Path, name: str, datasets='[{name = "synthetic-gaussian", N = 60}]',
                  adversaries='["hide-smallest"]', recoverers='["none", "exact"]',
                  estimators='["mean"]') -> Path:
    write(tmp_path / "sneaky.py", SNEAKY_PLUGIN)
    return write(tmp_path / f"{name}.toml", f"""
        name = "{name}"
        seed = 2
        plugins = ["sneaky.py"]
        [[experiment]]
        name = "e"
        datasets = {datasets}
        adversaries = {adversaries}
        budgets = [0.2]
        recoverers = {recoverers}
        estimators = {estimators}
        metrics = ["l2", "mahalanobis"]
    """)


def test_plugin_that_mutates_the_structure_cannot_change_other_cells(tmp_path):
    clean = run_suite(_sneaky_suite(tmp_path, "clean"), out=tmp_path / "a", report=False)["e"]
    path = _sneaky_suite(tmp_path, "dirty", adversaries='["scribble-structure", "hide-smallest"]')
    dirty = run_suite(path, out=tmp_path / "b", report=False)["e"]
    assert (dirty["status"].sel(adversary="scribble-structure") == "failed").all()
    assert "in place" in str(dirty["error"].sel(adversary="scribble-structure").values.flat[0])
    for var in ("l2", "mahalanobis", "status"):
        np.testing.assert_array_equal(dirty[var].sel(adversary="hide-smallest").values,
                                      clean[var].sel(adversary="hide-smallest").values)


def test_plugin_calling_sys_exit_fails_only_its_cells(tmp_path):
    path = _sneaky_suite(tmp_path, "quit", recoverers='["none"]', estimators='["mean", "quits"]')
    try:
        ds = run_suite(path, out=tmp_path / "out", report=False)["e"]
    except SystemExit as exc:
        pytest.fail(f"a plugin's sys.exit({exc.code}) ended the sweep")
    assert (ds["status"].sel(estimator="quits") == "failed").all()
    assert (ds["status"].sel(estimator="mean") == "ok").all()


def test_timeout_is_not_swallowed_by_a_plugins_broad_except(tmp_path):
    path = _sneaky_suite(tmp_path, "stubborn", recoverers='["none"]', estimators='["mean", "stubborn"]')
    ds = run_suite(path, out=tmp_path / "out", report=False, timeout=0.2)["e"]
    assert (ds["status"].sel(estimator="stubborn") == "timeout").all()


def test_hanging_data_set_loader_is_stopped_by_timeout(tmp_path):
    path = _sneaky_suite(tmp_path, "slowload", datasets='["slow-load"]', recoverers='["none"]')
    ds = run_suite(path, out=tmp_path / "out", report=False, timeout=0.2)["e"]
    assert (ds["status"] == "timeout").all()  # the loader sleeps 1.2 s: only the timeout gives this
    assert "stopped after --timeout 0.2 s" in str(ds["error"].values.flat[0])


@pytest.mark.slow
def test_plugin_that_kills_its_worker_process_fails_only_its_cells(tmp_path):
    write(tmp_path / "killer.py", '''
        import os, numpy as np, cmbench
        def crash(X, *, rng):
            os._exit(7)
        @cmbench.hookimpl
        def register_estimators():
            return [cmbench.Estimator("crash", crash)]
    ''')
    path = write(tmp_path / "killer.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["killer.py"]')
                 .replace('"cmedian"]', '"crash"]'))
    result = cli("suite", path, "--out", tmp_path / "out", "--no-report", "--workers", "2")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1
    ds = open_cube(tmp_path / "out" / "r" / "e.nc")
    assert (ds["status"].sel(estimator="crash") == "failed").all()
    assert "worker process died" in str(ds["error"].sel(estimator="crash").values.flat[0])
    # A dead interpreter takes its whole unit down (the unit shares one corruption and
    # recovery across estimators), so the other estimators of those units fail with it:
    # recorded, never lost, and retried by the next run.
    assert set(np.unique(ds["status"].sel(estimator="mean").values)) == {"failed"}


@pytest.mark.slow
def test_after_a_worker_dies_the_rest_of_the_sweep_stays_parallel(tmp_path):
    # One crash (the first call that finds no marker), 16 units. The units in
    # flight when the pool broke are re-run alone (the crashed one succeeds
    # there: the crash is once); the rest must go on 2 at a time, not one
    # unit at a time: calls logged after the crash overlap in time.
    marker, log = tmp_path / "crashed", tmp_path / "calls.log"
    write(tmp_path / "once.py", f'''
        import os, time, numpy as np, cmbench
        def crash_once(X, *, rng):
            start = time.time()
            if not os.path.exists({str(marker)!r}):
                open({str(marker)!r}, "w").close()
                os._exit(7)
            time.sleep(0.3)
            with open({str(log)!r}, "a") as f:
                f.write(f"{{os.getpid()}} {{start}} {{time.time()}}\\n")
            return np.nanmean(X, axis=0)
        @cmbench.hookimpl
        def register_estimators():
            return [cmbench.Estimator("crash-once", crash_once)]
    ''')
    path = write(tmp_path / "once.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["once.py"]')
                 .replace('"cmedian"]', '"crash-once"]').replace("instances = 1", "instances = 8")
                 .replace('recoverers = ["none", "exact"]', 'recoverers = ["none"]'))
    result = cli("suite", path, "--out", tmp_path / "out", "--no-report", "--workers", "2")
    assert result.returncode == 0, result.stderr
    assert marker.exists()
    ds = open_cube(tmp_path / "out" / "r" / "e.nc")
    assert (ds["status"] == "ok").all()
    calls = sorted((float(a), float(b), pid) for pid, a, b in (line.split() for line in log.read_text().splitlines()))
    assert len(calls) == 16
    overlaps = sum(1 for (a0, b0, p0), (a1, b1, p1) in zip(calls, calls[1:]) if a1 < b0 and p0 != p1)
    assert overlaps >= 4, f"{overlaps} overlapping calls after the crash: the sweep went serial"


# ====================================================== row: two plugins registering the same name

def _twins(tmp_path: Path) -> tuple[Path, Path]:
    text = '''
        import numpy as np, cmbench
        @cmbench.hookimpl
        def register_estimators():
            return [cmbench.Estimator("twin-mean", lambda X, *, rng: np.nanmean(X, 0))]
    '''
    return write(tmp_path / "first.py", text), write(tmp_path / "second.py", text)


def test_two_plugins_registering_the_same_name_exit_2_naming_both(tmp_path):
    first, second = _twins(tmp_path)
    result = cli("plugins", "--plugin", first, "--plugin", second)
    assert_user_error(result.returncode, result.stderr, "'twin-mean'", str(first), str(second))


def test_same_name_from_the_command_line_and_the_suite_exits_2_naming_both(tmp_path):
    first, second = _twins(tmp_path)
    path = write(tmp_path / "suite.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["second.py"]'))
    code, err = cli_inproc("suite", path, "--plugin", first, "--out", tmp_path / "out")
    assert_user_error(code, err, "'twin-mean'", str(first), str(second))
    assert not (tmp_path / "out").exists()


# ====================================================== row: SIGINT (Ctrl-C) during a sweep

def _interrupt_when(proc: subprocess.Popen, out: Path, units: int, sig=signal.SIGINT, group=False):
    """Send ``sig`` once ``units`` unit files exist; return (stdout, stderr, seconds to exit)."""
    deadline = time.monotonic() + 90
    try:
        while len(unit_files(out)) < units:
            assert proc.poll() is None, "the sweep ended before it could be interrupted"
            assert time.monotonic() < deadline, "no unit finished in time"
            time.sleep(0.05)
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        sent = time.monotonic()
        stdout, stderr = proc.communicate(timeout=60)
        return stdout, stderr, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _check_interrupted(stderr: str, waited: float, returncode: int, out: Path, total: int) -> int:
    # No tight wall-clock bound (a loaded machine stretches it); `kept < total` below
    # shows the sweep stopped early, this only catches a hang.
    assert waited < 60, f"took {waited:.1f} s to stop"
    assert returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    assert "run the same command again to resume" in stderr, stderr
    kept = len(unit_files(out))
    assert 0 < kept < total
    reported = int(re.search(r"(\d+) of (\d+) units", stderr).group(1))
    assert reported in (kept, kept + 1), stderr  # +1: a unit cut short while its file was being written
    return kept


def test_sigint_stops_within_seconds_keeps_finished_units_and_says_how_to_resume(tmp_path):
    total = 12
    # 0.3 s a unit leaves ~3 s between the 2nd unit and the end: room for a loaded machine
    suite = slow_suite(tmp_path, delay=0.3, instances=2, budgets="[0.0, 0.05, 0.1, 0.15, 0.2, 0.25]")
    out, log = tmp_path / "out", tmp_path / "calls.log"
    env = {**os.environ, "CMBENCH_TEST_LOG": str(log)}
    command = [sys.executable, "-m", "cmbench.cli", "suite", str(suite), "--out", str(out), "--no-report"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, stderr, waited = _interrupt_when(proc, out, units=2)
    kept = _check_interrupted(stderr, waited, proc.returncode, out, total)
    log.unlink()
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert computed(log) == total - kept, "a finished unit was recomputed"
    ds = open_cube(out / "slow" / "e.nc")
    assert (ds["status"] == "ok").all() and ds.sizes["budget"] == 6 and ds.sizes["instance"] == 2


@pytest.mark.slow
def test_sigint_to_the_process_group_with_workers_stops_cleanly(tmp_path):
    """What a terminal does: Ctrl-C reaches the runner and its worker processes."""
    total = 18
    suite = slow_suite(tmp_path, delay=0.4, instances=3, budgets="[0.0, 0.05, 0.1, 0.15, 0.2, 0.25]")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "cmbench.cli", "suite", str(suite), "--out", str(out), "--no-report",
               "--workers", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    _, stderr, waited = _interrupt_when(proc, out, units=3, group=True)
    _check_interrupted(stderr, waited, proc.returncode, out, total)
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr


# ====================================================== row: SIGKILL at any moment, then the same command
# The random-moment kill is tests/test_runner.py::test_sigkill_then_rerun_gives_the_same_cube (slow).
# Here, deterministically, what a kill can leave behind.

def test_leftovers_of_a_killed_run_are_ignored(tmp_path, log):
    suite = slow_suite(tmp_path, delay=0.0, instances=2, budgets="[0.0, 0.1, 0.2]")
    out = tmp_path / "out"
    first = run_suite(suite, out=out, report=False)["e"]
    files = unit_files(out)
    # killed mid-write: temporary files of the atomic writes, and a half-written unit
    # (only possible without atomic writes, but a disk can do it too)
    (files[0].parent / f".{files[0].name}.abc123.tmp").write_text(files[0].read_text()[:50])
    (out / "slow" / ".e.xyz789.nc.tmp").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    files[1].write_text(files[1].read_text()[:-25])
    (out / "slow" / "e.nc").write_bytes(b"")  # the previous cube, truncated
    log.unlink(missing_ok=True)
    again = run_suite(suite, out=out, report=False)["e"]
    assert computed(log) == 1
    assert_same_cube(first, again)
    assert_same_cube(first, open_cube(out / "slow" / "e.nc"))


# ====================================================== row: two runs writing the same folder at once

def test_second_run_on_the_same_out_folder_is_refused_while_the_first_finishes_intact(tmp_path):
    suite = slow_suite(tmp_path, delay=0.2, instances=2, budgets="[0.0, 0.1, 0.2, 0.3, 0.4, 0.5]")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "cmbench.cli", "suite", str(suite), "--out", str(out),
                             "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while not unit_files(out):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        code, err = cli_inproc("suite", suite, "--out", out, "--no-report")
        still_running = proc.poll() is None
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert still_running, "the first run ended before the second tried: nothing was tested"
    assert_user_error(code, err, "another cmbench run is writing", str(out / "slow"))
    assert proc.returncode == 0, stderr
    ds = open_cube(out / "slow" / "e.nc")
    assert (ds["status"] == "ok").all() and ds.sizes["budget"] == 6
    assert len(unit_files(out)) == 12


# ====================================================== row: a corrupted or truncated cache file

def test_damaged_cache_files_are_detected_and_recomputed(tmp_path, log):
    suite = slow_suite(tmp_path, delay=0.0, instances=2, budgets="[0.0, 0.1, 0.2, 0.3]")
    out = tmp_path / "out"
    first = run_suite(suite, out=out, report=False)["e"]
    files = unit_files(out)
    assert len(files) == 8

    def edit(path, change):
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc))

    damage = [
        lambda p: p.write_bytes(b""),                                     # empty (crash before fsync)
        lambda p: p.write_bytes(bytes(range(256))),                       # binary garbage, not UTF-8
        lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]),  # truncated
        lambda p: p.write_text("[1, 2, 3]"),                              # JSON, but not a unit
        lambda p: p.write_text(files[-1].read_text()),                    # another unit's (valid) file
        lambda p: edit(p, lambda d: next(iter(d["body"]["cells"].values())).update(l2=0.0)),  # checksum fails
        lambda p: edit(p, lambda d: d.pop("checksum")),                   # no checksum
    ]
    for path, spoil in zip(files, damage):
        spoil(path)
    log.unlink()
    again = run_suite(suite, out=out, report=False)["e"]
    assert computed(log) == len(damage), "a damaged file was trusted, or a sound one recomputed"
    assert_same_cube(first, again)
    log.unlink()
    run_suite(suite, out=out, report=False)
    assert computed(log) == 0, "the recomputed units were not written back"


# ====================================================== row: cube or cache from an older cmbench version

def _age_cache(out: Path, version: str = "0.0.1") -> None:
    for path in unit_files(out):
        doc = json.loads(path.read_text())
        doc["cmbench_version"] = version  # checksum (of the result) still valid
        path.write_text(json.dumps(doc))


def test_cache_from_another_cmbench_version_is_not_trusted(tmp_path, log):
    suite = slow_suite(tmp_path, delay=0.0, instances=1, budgets="[0.0, 0.2]")
    out = tmp_path / "out"
    first = run_suite(suite, out=out, report=False)["e"]
    _age_cache(out)
    log.unlink()
    again = run_suite(suite, out=out, report=False)["e"]
    assert computed(log) == 2
    assert_same_cube(first, again)


def test_cache_from_another_cmbench_version_is_reported_naming_both_versions(tmp_path, log):
    suite = slow_suite(tmp_path, delay=0.0, instances=1, budgets="[0.0, 0.2]")
    out = tmp_path / "out"
    run_suite(suite, out=out, report=False)
    _age_cache(out)
    result = CliRunner().invoke(main, ["suite", str(suite), "--out", str(out), "--no-report"])
    assert result.exit_code == 0
    assert "0.0.1" in result.stderr and cmbench.__version__ in result.stderr, result.stderr


def _small_cube(tmp_path: Path) -> Path:
    run_suite(good_suite(tmp_path), out=tmp_path / "out", report=False)
    return tmp_path / "out" / "r" / "e.nc"


def test_cube_from_an_older_cmbench_version_is_read(tmp_path):
    from cmbench import cube
    from cmbench.report.load import load_cube

    ds = open_cube(_small_cube(tmp_path))
    old = ds.drop_vars(["recovered_fraction", "discarded_fraction", "d_entry1", "d_entry_inf", "d_tv"])
    old.attrs = {k: v for k, v in ds.attrs.items()
                 if k not in ("metrics", "methods", "datasets_info", "adversaries_info", "components",
                              "cube_format", "d_entry_method")}
    old.attrs["cmbench_version"] = "0.0.1"
    path = tmp_path / "old.nc"
    old.to_netcdf(path)
    loaded = cube.load(path)
    np.testing.assert_array_equal(loaded["l2"].values, ds["l2"].values)
    report_view = load_cube(path)
    np.testing.assert_array_equal(report_view.ds["l2"].values, ds["l2"].values)


def test_cube_from_a_newer_format_is_refused_naming_both_versions(tmp_path):
    from cmbench import cube

    ds = open_cube(_small_cube(tmp_path))
    ds.attrs.update(cube_format=cube.FORMAT + 1, cmbench_version="9.9.9")
    path = tmp_path / "future.nc"
    ds.to_netcdf(path)
    with pytest.raises(UserError) as err:
        cube.load(path)
    assert "9.9.9" in str(err.value) and cmbench.__version__ in str(err.value)


def test_editing_a_plugin_file_invalidates_its_cached_units(tmp_path):
    plugin = write(tmp_path / "shifty.py", '''
        import numpy as np, cmbench
        def shifted(X, *, rng):
            return np.nanmean(X, 0) + 1.0
        @cmbench.hookimpl
        def register_estimators():
            return [cmbench.Estimator("shifted", shifted)]
    ''')
    path = write(tmp_path / "s.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["shifty.py"]')
                 .replace('"cmedian"]', '"shifted"]'))
    before = run_suite(path, out=tmp_path / "out", report=False)["e"]
    plugin.write_text(plugin.read_text().replace("+ 1.0", "+ 0.0"))
    # What the same command in a new process sees: the edited file imported afresh
    # (a copy of the suite file, so that no per-path memo of this process is hit).
    for name in [k for k, m in sys.modules.items() if getattr(m, "__file__", None) == str(plugin.resolve())]:
        del sys.modules[name]
    again = write(tmp_path / "s2.toml", path.read_text())
    after = run_suite(again, out=tmp_path / "out", report=False)["e"]
    np.testing.assert_array_equal(after["l2"].sel(estimator="shifted").values,
                                  after["l2"].sel(estimator="mean").values)
    assert not np.array_equal(after["l2"].sel(estimator="shifted").values,
                              before["l2"].sel(estimator="shifted").values)


def test_editing_the_suite_file_between_in_process_runs_never_gives_stale_numbers(tmp_path):
    path = good_suite(tmp_path, '"cmedian"', '{name = "trimmed-mean", proportion = 0.0}')
    run_suite(path, out=tmp_path / "a", report=False)
    path.write_text(path.read_text().replace("proportion = 0.0", "proportion = 0.3"))
    edited = run_suite(path, out=tmp_path / "a", report=False)["e"]
    fresh = run_suite(good_suite(tmp_path, '"cmedian"', '{name = "trimmed-mean", proportion = 0.3}',
                                 name="fresh.toml"), out=tmp_path / "b", report=False)["e"]
    np.testing.assert_array_equal(edited["l2"].values, fresh["l2"].values)


# ====================================================== row: a data file whose SHA-256 does not match

CHECKED_PLUGIN = '''
import numpy as np, pandas as pd, cmbench
from cmbench import data as cmdata

def load(*, instance, rng):
    X = pd.read_csv(cmdata.require(CHECKED) / "table.csv").to_numpy(dtype=float)
    return cmbench.Data(X=X, mean=X.mean(0))

CHECKED = cmbench.Dataset("checked-table", load, folder="checked",
                          files=(cmbench.DataFile("table.csv", "{digest}", "https://example.invalid/t.csv"),))

@cmbench.hookimpl
def register_datasets():
    return [CHECKED]
'''


def _data_env(tmp_path: Path, data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMBENCH_")}
    env.update(CMBENCH_DATA_DIR=str(data_dir), CMBENCH_CACHE_DIR=str(tmp_path / "cache"), CMBENCH_OFFLINE="1")
    return env


def test_data_file_with_the_wrong_sha256_exits_2_naming_file_and_digests(tmp_path):
    declared = b"a,b\n1,2\n3,4\n5,7\n"
    actual = b"a,b\n1,2\n3,4\n5,6\n"  # one byte differs
    table = tmp_path / "data" / "checked" / "table.csv"
    table.parent.mkdir(parents=True)
    table.write_bytes(actual)
    write(tmp_path / "checked.py", CHECKED_PLUGIN.replace("{digest}", hashlib.sha256(declared).hexdigest()))
    path = write(tmp_path / "s.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["checked.py"]')
                 .replace('{name = "synthetic-gaussian", N = 60}', '"checked-table"'))
    result = cli("suite", path, "--out", tmp_path / "out", env=_data_env(tmp_path, tmp_path / "data"))
    assert_user_error(result.returncode, result.stderr, str(table), hashlib.sha256(declared).hexdigest(),
                      hashlib.sha256(actual).hexdigest())
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert not out.exists() or not any(out.rglob("*")), "something was written for refused data"
    assert not cache.exists() or not any(cache.rglob("*"))


@pytest.mark.skipif(not (SHARED_DATA / "blood_transfusion").is_dir(), reason="real data not present")
def test_builtin_data_set_with_a_tampered_file_exits_2_naming_file_and_digests(tmp_path, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(SHARED_DATA / "blood_transfusion", data / "blood_transfusion")
    target = data / "blood_transfusion" / "transfusion.data"
    target.chmod(0o644)
    original = target.read_bytes()
    target.write_bytes(original[:-1] + (b"1" if original[-1:] == b"0" else b"0"))  # one byte
    assert target.read_bytes() != original
    for key, value in _data_env(tmp_path, data).items():
        monkeypatch.setenv(key, value)
    path = good_suite(tmp_path, '{name = "synthetic-gaussian", N = 60}', '"blood-transfusion"')
    path.write_text(path.read_text().replace('"none", "exact"', '"none"'))
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out")
    assert_user_error(code, err, str(target), hashlib.sha256(original).hexdigest(),
                      hashlib.sha256(target.read_bytes()).hexdigest())
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*"))


# ====================================================== nothing is unpickled from disk

UNSAFE_MODULES = {"pickle", "_pickle", "cPickle", "dill", "cloudpickle", "joblib", "shelve", "marshal"}
UNSAFE_ATTRIBUTES = {"read_pickle", "load_pickle"}


def _sources() -> list[Path]:
    import cmbench.builtins

    roots = [Path(cmbench.__file__).parent, Path(cmbench.builtins.__file__).parent]
    return sorted({p for root in roots for p in root.rglob("*.py")})


def _unsafe_uses(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module.split(".")[0]]
        elif isinstance(node, ast.Name):
            names = [node.id]
        if set(names) & UNSAFE_MODULES:
            found.append(f"{path.name}:{node.lineno}: {', '.join(set(names) & UNSAFE_MODULES)}")
        if isinstance(node, ast.Attribute) and node.attr in UNSAFE_ATTRIBUTES:
            found.append(f"{path.name}:{node.lineno}: .{node.attr}")
        if isinstance(node, ast.keyword) and node.arg == "allow_pickle" and not (
                isinstance(node.value, ast.Constant) and node.value.value is False):
            found.append(f"{path.name}:{node.value.lineno}: allow_pickle")
    return found


def test_nothing_is_unpickled_from_disk():
    sources = _sources()
    assert any(p.name == "store.py" for p in sources) and any(p.name == "estimators.py" for p in sources)
    found = [use for path in sources for use in _unsafe_uses(path)]
    assert not found, f"pickle-capable readers in the package: {found}"


def test_resuming_a_suite_reads_nothing_pickled(tmp_path, monkeypatch):
    import pickle

    import pandas as pd

    suite = good_suite(tmp_path)
    first = run_suite(suite, out=tmp_path / "out", report=False)["e"]

    def refuse(*args, **kwargs):
        raise AssertionError("something was unpickled")

    for owner, name in [(pickle, "load"), (pickle, "loads"), (pickle, "Unpickler"), (np, "load"),
                        (pd, "read_pickle")]:
        monkeypatch.setattr(owner, name, refuse)
    again = run_suite(suite, out=tmp_path / "out", report=False)["e"]
    assert_same_cube(first, again)


# ====================================================== a Dask LocalCluster binds to 127.0.0.1

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def test_dask_local_cluster_is_asked_to_bind_to_loopback(monkeypatch):
    distributed = pytest.importorskip("distributed")
    from cmbench.runner.executors import dask

    seen = {}

    class Stop(Exception):
        pass

    def fake_cluster(*args, **kwargs):
        seen.update(kwargs)
        raise Stop()

    monkeypatch.setattr(distributed, "LocalCluster", fake_cluster)
    with pytest.raises(Stop):
        list(dask([], lambda job: job, "local", 1))
    host = seen.get("host") or seen.get("ip") or (seen.get("scheduler_kwargs") or {}).get("host")
    assert host in LOOPBACK, seen


@pytest.mark.slow
def test_dask_local_cluster_listens_on_loopback_only(tmp_path, monkeypatch):
    """Start the real cluster through `cmbench.run_suite` and list every listening socket."""
    distributed = pytest.importorskip("distributed")
    psutil = pytest.importorskip("psutil")
    listening = []

    class Spy(distributed.LocalCluster):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            me = psutil.Process()
            for proc in [me, *me.children(recursive=True)]:
                listening.extend(c.laddr for c in proc.net_connections(kind="inet")
                                 if c.status == psutil.CONN_LISTEN)
            listening.append(("scheduler", self.scheduler_address))

    monkeypatch.setattr(distributed, "LocalCluster", Spy)
    ds = run_suite(good_suite(tmp_path), out=tmp_path / "out", scheduler="local", report=False)["e"]
    assert (ds["status"] != "failed").all()
    assert listening, "the cluster was not started through distributed.LocalCluster"
    for addr in listening:
        if addr[0] == "scheduler":
            assert addr[1].startswith("tcp://127.0.0.1:"), addr
        else:
            assert addr.ip in LOOPBACK, f"listening on {addr.ip}:{addr.port}"


# ====================================================== results only under --out and the cache folder

def test_results_are_written_only_under_out_and_the_cache_folder(tmp_path):
    import matplotlib

    home, cwd, xdg, tmpdir, mpl = (tmp_path / d for d in ("home", "cwd", "xdg", "tmpdir", "mpl"))
    for d in (home, cwd, xdg, tmpdir, mpl):
        d.mkdir()
    # matplotlib's own font cache is matplotlib's business, not a result: seed it so
    # that it is not rebuilt (slow) and leave its folder out of the check.
    for cached in Path(matplotlib.get_cachedir()).glob("fontlist-*.json"):
        shutil.copy(cached, mpl)
    suite = good_suite(tmp_path / "suites")
    out = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CMBENCH_", "XDG_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(xdg), XDG_CONFIG_HOME=str(home / ".config"),
               TMPDIR=str(tmpdir), MPLCONFIGDIR=str(mpl), CMBENCH_OFFLINE="1")
    before = {p for p in tmp_path.rglob("*")}
    result = cli("suite", suite, "--out", out, cwd=cwd, env=env)
    assert result.returncode == 0, result.stderr
    assert (out / "r" / "e.nc").is_file() and (out / "r.pdf").is_file()
    allowed = (out, xdg / "cmbench", mpl)
    stray = sorted(str(p.relative_to(tmp_path)) for p in set(tmp_path.rglob("*")) - before
                   if not any(p == a or a in p.parents for a in allowed))
    assert not stray, f"written outside --out and the cache folder: {stray}"
