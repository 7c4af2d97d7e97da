"""Bad data: a user's unusable table is a user error; a plugin's bad data fail only their cells.

Also degenerate but valid data (a constant column, fewer rows than columns),
which must give the numbers computed by hand, and data files whose SHA-256 does
not match their declaration. The data set plugins are tests/plugins/awkward_*.py
and tests/plugins/checked_table.py.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import cmbench
from cmbench.errors import UserError
from cmbench.runner import run_suite
from cmbench.options import RunOptions
from conftest import (PLUGINS, SHARED_DATA, GOOD, assert_user_error, cli_inproc, cli_inproc_result, copy_plugin,
                      good_suite, open_cube, write)


# ====================================================== bad data (NaN/inf, constant column, N < n, one row)

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
    """One sweep over every awkward data set, through the command line (in-process)."""
    tmp = tmp_path_factory.mktemp("bad-data")
    for name, text in BAD_CSV.items():
        (tmp / name).write_text(text)
    copy_plugin("awkward_data.py", tmp, "awkward.py")
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
    result = cli_inproc_result("suite", suite, "--out", tmp / "out", "--no-report")
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
        spec = importlib.util.spec_from_file_location("awkward_data", PLUGINS / "awkward_data.py")
        plugin = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(plugin)
        X, mean, cov, _ = plugin.table(label)
    l2, maha = _expected_errors(X, mean, cov)
    cell = ds.sel(dataset=label).squeeze()
    assert str(cell["status"].values) == "ok"
    np.testing.assert_allclose(float(cell["l2"]), l2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(float(cell["mahalanobis"]), maha, rtol=1e-6, atol=1e-9)


def _awkward_suite(tmp_path: Path, dataset: str) -> Path:
    copy_plugin("awkward_moments.py", tmp_path, "moments.py")
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
        ds = run_suite(_awkward_suite(tmp_path, dataset), RunOptions(out=tmp_path / "out"))["e"]
    except UserError as exc:
        assert dataset in str(exc) and "cov" in str(exc)
        return
    assert (ds["status"] == "failed").all()
    assert all(dataset in e and "cov" in e for e in ds["error"].values.ravel())


def test_data_set_with_complex_values_is_refused(tmp_path):
    ds = run_suite(_awkward_suite(tmp_path, "complex-values"), RunOptions(out=tmp_path / "out"))["e"]
    assert not (ds["status"] == "ok").any()
    assert "complex" in str(ds["error"].values.flat[0])


def test_structure_of_rank_zero_does_not_lose_the_sweep(tmp_path):
    ds = run_suite(_awkward_suite(tmp_path, "rank-zero-structure"), RunOptions(out=tmp_path / "out"))["e"]
    assert (ds["status"].sel(recoverer="none") == "ok").all()
    assert (tmp_path / "out" / "awk" / "e.nc").exists()


# ====================================================== a data file whose SHA-256 does not match

def _data_env(tmp_path: Path, data_dir: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMBENCH_")}
    env.update(CMBENCH_DATA_DIR=str(data_dir), CMBENCH_CACHE_DIR=str(tmp_path / "cache"), CMBENCH_OFFLINE="1",
               **extra)
    return env


def test_data_file_with_the_wrong_sha256_exits_2_naming_file_and_digests(tmp_path, monkeypatch):
    declared = b"a,b\n1,2\n3,4\n5,7\n"
    actual = b"a,b\n1,2\n3,4\n5,6\n"  # one byte differs
    table = tmp_path / "data" / "checked" / "table.csv"
    table.parent.mkdir(parents=True)
    table.write_bytes(actual)
    copy_plugin("checked_table.py", tmp_path, "checked.py")
    path = write(tmp_path / "s.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["checked.py"]')
                 .replace('{name = "synthetic-gaussian", N = 60}', '"checked-table"'))
    for key in [k for k in os.environ if k.startswith("CMBENCH_")]:
        monkeypatch.delenv(key)
    env = _data_env(tmp_path, tmp_path / "data", CMBENCH_TEST_DIGEST=hashlib.sha256(declared).hexdigest())
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out")
    assert_user_error(code, err, str(table), hashlib.sha256(declared).hexdigest(),
                      hashlib.sha256(actual).hexdigest())
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert not out.exists() or not any(out.rglob("*")), "something was written for refused data"
    assert not cache.exists() or not any(cache.rglob("*"))


@pytest.mark.skipif(not (SHARED_DATA / "blood_transfusion").is_dir(),
                    reason="the real data are not in $CMBENCH_DATA_DIR (set it to the data folder)")
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
