"""A data set that fails to load: a user's mistake stops the run once, a plugin's fault stays in its cells.

Loading runs under the same containment as the other plugin calls: a
third-party loader that ends its process (``os._exit``, a segfault) or raises
``KeyboardInterrupt``/``SystemExit`` fails that data set's cells, naming the
plugin, while the other data sets' results are kept; a data error (a
`cmbench.data.DataError`, a file above the size limit) is one user error
(exit 2), found by loading the data set once. Each test is named for what it
tries, and checks that nothing is written outside ``--out``.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
import xarray as xr

from conftest import assert_user_error, cli_inproc as cli, copy_plugin, write
from conftest import cli as cli_process

PLUGIN = "faulty_datasets.py"

SUITE = """\
name = "s"
seed = 3
plugins = ["faulty_datasets.py"]
[[experiment]]
name = "e"
datasets = [{{name = "synthetic-gaussian", N = 60}}, {datasets}]
instances = 1
adversaries = ["hide-random"]
budgets = [0.1, 0.2]
recoverers = ["none"]
estimators = ["mean"]
metrics = ["l2"]
"""


def suite(tmp_path: Path, *faults: str, **params) -> Path:
    """The suite beside a copy of the faulty plugin, in ``tmp_path/in``.

    One data set per fault, labelled by it, each with ``params``; two units per data set.
    """
    copy_plugin(PLUGIN, tmp_path / "in")
    common = "".join(f", {k} = {v!r}".replace("'", '"') for k, v in params.items())
    datasets = ", ".join(f'{{name = "faulty", label = "{f}", fault = "{f}"{common}}}' for f in faults)
    return write(tmp_path / "in" / "suite.toml", SUITE.format(datasets=datasets))


def state(root: Path, out: Path, allowed: tuple) -> dict:
    """Every file and folder under ``root`` but ``out`` and ``allowed``, with its modification time."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == out or out in here.parents:
            continue
        for name in dirnames + filenames:
            p = here / name
            if p != out and p not in allowed:
                found[str(p)] = None if p.is_dir() else p.stat().st_mtime_ns
    return found


@contextlib.contextmanager
def nothing_written_outside(root: Path, out: Path, *allowed: Path):
    """Fail if anything under ``root``, outside ``out`` (and the test's own ``allowed`` files), changes."""
    before = state(root, out, allowed)
    yield
    after = state(root, out, allowed)
    assert after == before, f"written outside {out}: {sorted(set(after) ^ set(before))} or changed"


def loads(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


@pytest.fixture
def out(tmp_path) -> Path:
    return tmp_path / "out"


def assert_contained(out: Path, *faults: tuple[str, str]) -> None:
    """Each ``(fault, text)`` data set's cells failed, naming it, its plugin and ``text``; the others are ok."""
    ds = xr.open_dataset(out / "s" / "e.nc").load()
    assert (ds["status"].sel(dataset="synthetic-gaussian") == "ok").all()
    for fault, text in faults:
        assert (ds["status"].sel(dataset=fault) == "failed").all()
        errors = {str(e) for e in ds["error"].sel(dataset=fault).values.flat}
        assert len(errors) == 1, errors
        error = errors.pop()
        assert f"data set {fault!r}" in error and "faulty_datasets.py" in error and text in error, error


# ============================================== a loader that ends its process

def test_data_set_loader_that_ends_its_process_fails_its_cells_and_keeps_the_other_data_sets(tmp_path, out):
    path = suite(tmp_path, "os-exit", "segfault")
    with nothing_written_outside(tmp_path, out):
        proc = cli_process("suite", path, "--out", out, "--no-report")
    assert proc.returncode == 1, (proc.returncode, proc.stderr)  # failed cells: never 0, never a crash
    assert "Traceback" not in proc.stderr, proc.stderr
    assert_contained(out, ("os-exit", "worker process died"), ("segfault", "worker process died"))


def test_data_set_loader_raising_a_base_exception_fails_its_cells_naming_the_plugin(tmp_path, out):
    count = tmp_path / "loads.txt"
    path = suite(tmp_path, "keyboard-interrupt", "system-exit", "base-exception", count=str(count))
    with nothing_written_outside(tmp_path, out, count):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert code == 1, (code, err)  # failed cells; not 130 (interrupted)
    assert_contained(out, ("keyboard-interrupt", "KeyboardInterrupt"), ("system-exit", "SystemExit"),
                     ("base-exception", "Escape"))
    assert loads(count) == 3  # each once, not per unit


# ============================================== a data error in a third-party data set

def test_third_party_data_error_is_one_user_error_and_the_data_set_is_loaded_once(tmp_path, out):
    count = tmp_path / "loads.txt"
    path = suite(tmp_path, "data-error", count=str(count))  # 2 units of that data set
    with nothing_written_outside(tmp_path, out, count):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, "data set 'data-error'", "faulty_datasets.py", "table.csv", "column 'x'")
    assert loads(count) == 1
    assert not (out / "s" / "e.nc").exists()


def test_cmbench_data_error_at_the_top_level_is_the_same_user_error(tmp_path, out):
    import cmbench
    from cmbench import data

    assert cmbench.DataError is data.DataError
    path = suite(tmp_path, "data-error-top")
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, "data set 'data-error-top'", "faulty_datasets.py", "column 'y' is empty")


def test_third_party_data_file_above_the_size_limit_is_one_user_error(tmp_path, out, monkeypatch):
    table = tmp_path / "in" / "big.csv"
    table.parent.mkdir()
    table.write_text("a,b\n" + "1,2\n" * 500)
    path = suite(tmp_path, "size-limit", path=str(table))
    monkeypatch.setenv("CMBENCH_MAX_FILE_GB", "1e-6")  # 1 kB
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, "data set 'size-limit'", str(table), "above the limit", "CMBENCH_MAX_FILE_GB")


def test_third_party_data_error_is_a_user_error_with_two_workers(tmp_path, out):
    count = tmp_path / "loads.txt"
    path = suite(tmp_path, "data-error", count=str(count))
    with nothing_written_outside(tmp_path, out, count):
        code, err = cli("suite", path, "--out", out, "--no-report", "--workers", "2")
    assert_user_error(code, err, "data set 'data-error'", "column 'x'")
    assert loads(count) == 1


# ============================================== a loader's bug

def test_data_set_whose_loader_raises_is_loaded_once_not_per_unit(tmp_path, out):
    count = tmp_path / "loads.txt"
    path = suite(tmp_path, "bug", count=str(count))
    with nothing_written_outside(tmp_path, out, count):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert code == 1, (code, err)
    assert_contained(out, ("bug", "ValueError: a bug in the loader (" + str(tmp_path / "in" / PLUGIN) + ":"))
    assert loads(count) == 1


def test_built_in_data_set_with_a_bad_parameter_is_one_user_error(tmp_path, out):
    path = suite(tmp_path, "none")
    path.write_text(path.read_text().replace("N = 60", "N = 1"))
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    # refused when the suite loads, by the data set's declared range
    assert_user_error(code, err, "datasets[0].N'", "dataset 'synthetic-gaussian'", "1 is outside [2, inf)")


def test_data_set_that_fails_to_load_under_an_adaptive_adversary_names_the_load_failure(tmp_path, out):
    path = suite(tmp_path, "bug")
    path.write_text(path.read_text().replace('{name = "synthetic-gaussian", N = 60}, ', "")
                    .replace('"hide-random"', '"worst-case-a1-hide"'))
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert code == 1, (code, err)
    ds = xr.open_dataset(out / "s" / "e.nc").load()
    assert (ds["status"] == "failed").all()
    assert all("ValueError: a bug in the loader" in str(e) for e in ds["error"].values.flat), ds["error"].values
