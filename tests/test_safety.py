"""Hostile but realistic input: nothing escapes ``--out``, nothing floods the machine, no traceback.

One section per defect found by probing cmbench as a careless or hostile user
would; each test is named for what it tries. Tests that run cmbench check that
nothing was written outside ``--out``: every file under the test's folder,
outside ``--out``, is listed before and after (`nothing_written_outside`).
"""
from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import xarray as xr
import pytest
from click.testing import CliRunner

from cmbench.cli import main
from cmbench.errors import SuiteError
from cmbench.runner import run_suite
from cmbench.options import RunOptions
from cmbench.suite import load_suite
import conftest
from conftest import PLUGINS, assert_user_error, write
from conftest import cli_inproc as cli


# ====================================================================== helpers

# conftest's small suite, named "s", with one recoverer and one metric (the cell counts below rely on it).
GOOD = (conftest.GOOD.replace('name = "r"', 'name = "s"')
        .replace('recoverers = ["none", "exact"]', 'recoverers = ["none"]')
        .replace('metrics = ["l2", "mahalanobis"]', 'metrics = ["l2"]'))


def suite_file(tmp_path: Path, old: str = "", new: str = "", name: str = "suite.toml") -> Path:
    assert old in GOOD, old
    return write(tmp_path / "in" / name, GOOD.replace(old, new, 1))


def listing(root: Path, skip: Path | None = None) -> set[str]:
    """Every path under ``root`` (files and folders), except ``skip`` and what is below it."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if skip is not None and (here == skip or skip in here.parents):
            continue
        out.update(str(here / n) for n in dirnames + filenames
                   if skip is None or here / n != skip)
    return out


@contextlib.contextmanager
def nothing_written_outside(root: Path, out: Path):
    """Fail if anything under ``root``, outside ``out``, appears, vanishes or changes."""
    def state():
        return {p: os.stat(p).st_mtime_ns for p in listing(root, out) if not Path(p).is_dir()} | \
            {p: None for p in listing(root, out) if Path(p).is_dir()}

    before = state()
    yield
    after = state()
    assert after == before, (f"written outside {out}: added {sorted(set(after) - set(before))}, "
                             f"removed {sorted(set(before) - set(after))}, changed "
                             f"{sorted(p for p in before.keys() & after.keys() if before[p] != after[p])}")


def cli_process(*args, memory_gb: float = 3.0, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real command line in a fresh interpreter whose address space is capped.

    The cap turns a runaway allocation (the defect these tests guard against)
    into a quick failure instead of a machine brought to its knees.
    """
    limit = int(memory_gb * 2**30)
    return subprocess.run([sys.executable, "-m", "cmbench.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))


@pytest.fixture
def out(tmp_path) -> Path:
    """``--out``, two levels below the test folder so that an escape by ``../..`` stays visible."""
    (tmp_path / "work" / "deep").mkdir(parents=True)
    return tmp_path / "work" / "deep" / "out"


# ============================================ names are labels, never paths

def test_experiment_named_dot_dot_escape_is_refused_and_nothing_is_written_outside_out(tmp_path, out):
    path = suite_file(tmp_path, 'name = "e"', 'name = "../../escape"')
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, str(path), "experiment[0].name", "../../escape")


def test_suite_named_by_an_absolute_path_is_refused(tmp_path, out):
    target = tmp_path / "elsewhere"
    (target / ".cache").mkdir(parents=True)
    precious = target / ".cache" / "precious.json"
    precious.write_text("{}")
    path = suite_file(tmp_path, 'name = "s"', f'name = "{target}"')
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report", "--no-resume")
    assert_user_error(code, err, "'name'", "suite name")
    assert precious.exists()


@pytest.mark.parametrize("old, new, key", [
    ('name = "e"', 'name = "./e"', "experiment[0].name"),
    ('name = "e"', 'name = ".."', "experiment[0].name"),
    ('name = "e"', 'name = "a\\\\b"', "experiment[0].name"),
    ('name = "s"', 'name = ".hidden"', "'name'"),
    ('name = "s"', 'name = ""', "'name'"),
    ('recoverers = ["none"]', 'recoverers = [{name = "none", label = "x/y"}]', "recoverers[0].label"),
    ('estimators = ["mean", "cmedian"]', 'estimators = ["mean", {name = "cmedian", label = ".."}]',
     "estimators[1].label"),
])
def test_labels_with_separators_or_leading_dots_are_refused_at_load(tmp_path, old, new, key):
    with pytest.raises(SuiteError, match="plain label|must be a string") as info:
        load_suite(suite_file(tmp_path, old, new))
    assert key in str(info.value)


def test_two_experiments_that_write_one_file_are_refused(tmp_path, out):
    second = GOOD[GOOD.index("[[experiment]]"):]
    path = write(tmp_path / "in" / "twins.toml", GOOD + second.replace('name = "e"', 'name = "./e"'))
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, "experiment[1].name")
    path = write(tmp_path / "in" / "case.toml", GOOD + second.replace('name = "e"', 'name = "E"'))
    with pytest.raises(SuiteError, match="duplicate experiment.name .*ignoring case"):
        load_suite(path)


def test_name_longer_than_the_file_system_allows_exits_2(tmp_path, out):
    path = suite_file(tmp_path, 'name = "e"', f'name = "{"e" * 300}"')
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, "experiment[0].name", "300 characters")


def test_out_folder_name_longer_than_the_file_system_allows_exits_2(tmp_path):
    out, path = tmp_path / ("o" * 300), suite_file(tmp_path)
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, "file name too long")


# ================================================ size guard before allocation

def test_a_billion_instances_is_refused_before_allocation(tmp_path, out):
    path = suite_file(tmp_path, "instances = 1", "instances = 1000000000")
    with nothing_written_outside(tmp_path, out):
        proc = cli_process("suite", path, "--out", out, "--no-report")
    assert_user_error(proc.returncode, proc.stderr, "1,000,000,000 instances", "CMBENCH_MAX_CELLS")


def test_budget_range_with_a_tiny_step_is_refused_before_it_grows(tmp_path, out):
    path = suite_file(tmp_path, "budgets = [0.0, 0.2]", "budgets = {start = 0, stop = 1, step = 1e-12}")
    with nothing_written_outside(tmp_path, out):
        proc = cli_process("suite", path, "--out", out, "--no-report")
    assert_user_error(proc.returncode, proc.stderr, "budgets.step", "1,000,000,000,001 budgets",
                      "CMBENCH_MAX_CELLS")


def test_grid_above_the_cell_limit_says_how_big_and_how_to_raise_the_limit(tmp_path, out, monkeypatch):
    path = suite_file(tmp_path, "instances = 1", "instances = 3")  # 1 x 3 x 1 x 2 x 1 x 2 = 12 cells
    monkeypatch.setenv("CMBENCH_MAX_CELLS", "11")
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, "12 cells", "limit of 11", "1 x 3 x 1 x 2 x 1 x 2", "CMBENCH_MAX_CELLS")
    assert not out.exists()
    monkeypatch.setenv("CMBENCH_MAX_CELLS", "12")
    assert load_suite(path).experiments[0].instances == (0, 1, 2)


def test_data_set_too_large_for_memory_is_refused_at_load(tmp_path, out):
    path = suite_file(tmp_path, "N = 60", "N = 1000000000")
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, "1,000,000,000 x 16", "GB", "CMBENCH_MAX_GB")


# ===================================== file-system and number errors: one line, exit 2

def test_out_where_the_suite_folder_is_a_file_exits_2(tmp_path, out):
    out.mkdir(parents=True)
    (out / "s").write_text("not a folder")
    path = suite_file(tmp_path)
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, str(out / "s"), "is a file")


def test_out_under_a_file_exits_2(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    out = blocker / "out"
    path = suite_file(tmp_path)
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, str(blocker), "is a file")


def _read_only_folder() -> Path | None:
    """A folder on a file system this process cannot write (sysfs), if there is one."""
    for candidate in (Path("/sys/fs"), Path("/proc/sys")):
        try:
            (candidate / "cmbench-probe").mkdir()
        except OSError:
            if candidate.is_dir():
                return candidate
        else:  # pragma: no cover - writable after all
            (candidate / "cmbench-probe").rmdir()
    return None


@pytest.mark.skipif(_read_only_folder() is None, reason="no read-only file system to write into")
def test_out_on_a_read_only_file_system_exits_2(tmp_path):
    out = _read_only_folder() / "cmbench-out"
    code, err = cli("suite", suite_file(tmp_path), "--out", out, "--no-report")
    assert_user_error(code, err, str(out))
    assert not out.exists()


@pytest.mark.parametrize("budgets, key", [
    ("{start = nan, stop = 0.5, step = 0.1}", "budgets.start"),
    ("{start = 0.0, stop = inf, step = 0.1}", "budgets.stop"),
    ("{start = 0.0, stop = 0.5, step = inf}", "budgets.step"),
    ("{start = 0.0, stop = 0.5, step = nan}", "budgets.step"),
    ("[0.0, nan]", "budgets[1]"),
])
def test_budget_range_with_nan_or_inf_exits_2(tmp_path, out, budgets, key):
    path = suite_file(tmp_path, "budgets = [0.0, 0.2]", f"budgets = {budgets}")
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, key)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_timeout_that_is_not_a_finite_number_exits_2(tmp_path, out, value):
    path = suite_file(tmp_path)
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report", "--timeout", value)
    assert_user_error(code, err, "--timeout", value)


# ============================================================== report outputs

@pytest.fixture(scope="module")
def cube(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cube")
    run_suite(suite_file(folder), RunOptions(out=folder / "out"))
    return folder / "out" / "s" / "e.nc"


def test_report_over_its_input_cube_is_refused(cube):
    before = cube.read_bytes()
    code, err = cli("report", cube, "-o", cube)
    assert_user_error(code, err, str(cube), "input")
    assert cube.read_bytes() == before


def test_report_over_its_baseline_through_another_path_is_refused(cube, tmp_path):
    link = tmp_path / "link.nc"
    link.symlink_to(cube)
    before = cube.read_bytes()
    code, err = cli("report", cube, "--baseline", link, "-o", cube.parent / ".." / "s" / "e.nc")
    assert_user_error(code, err, "input")
    assert cube.read_bytes() == before


def test_report_output_under_a_file_exits_2(cube, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    with nothing_written_outside(tmp_path, tmp_path / "none"):
        code, err = cli("report", cube, "-o", blocker / "r.pdf")
    assert_user_error(code, err, str(blocker), "is a file")


# ================================================= a plugin that ends the process

ENDER = (PLUGINS / "ender.py").read_text()


def ender_suite(tmp_path: Path, estimators: str) -> Path:
    write(tmp_path / "in" / "ender.py", ENDER)
    return write(tmp_path / "in" / "ender.toml", GOOD.replace('seed = 3', 'seed = 3\nplugins = ["ender.py"]')
                 .replace('estimators = ["mean", "cmedian"]', f"estimators = {estimators}")
                 .replace("budgets = [0.0, 0.2]", "budgets = [0.2]"))


def test_plugin_calling_os_exit_0_in_serial_mode_fails_its_unit_and_never_exits_0(tmp_path, out):
    path = ender_suite(tmp_path, '["mean", "bye"]')
    with nothing_written_outside(tmp_path, out):
        proc = cli_process("suite", path, "--out", out, "--no-report")
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    ds = xr.open_dataset(out / "s" / "e.nc").load()
    assert (ds["status"].sel(estimator="bye") == "failed").all()
    error = str(ds["error"].sel(estimator="bye").values.flat[0])
    assert "bye()" in error and str(tmp_path / "in" / "ender.py") in error and "os._exit" in error


@pytest.mark.parametrize("estimator, raised", [("ctrl-c", "KeyboardInterrupt"), ("escape", "Escape")])
def test_plugin_raising_a_base_exception_fails_its_cell_naming_the_plugin(tmp_path, out, estimator, raised):
    path = ender_suite(tmp_path, f'["mean", "{estimator}"]')
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert code == 1, (code, err)  # failed cells; not 130 (interrupted)
    assert raised in err and "ender.py" in err
    ds = xr.open_dataset(out / "s" / "e.nc").load()
    assert (ds["status"].sel(estimator=estimator) == "failed").all()
    assert (ds["status"].sel(estimator="mean") == "ok").all()


def test_keyboard_interrupt_raised_by_a_plugin_is_a_failed_call_not_a_ctrl_c():
    from cmbench.runner.guard import Context
    from cmbench.runner.units import FAILED, call

    def plugin(X):
        raise KeyboardInterrupt

    try:
        outcome = call(plugin, Context(), np.zeros(2))
    except KeyboardInterrupt:  # escaping, it would also stop pytest
        pytest.fail("a plugin's KeyboardInterrupt escaped call() as if Ctrl-C had been pressed")
    assert outcome.status == FAILED and "KeyboardInterrupt" in outcome.error and "not a Ctrl-C" in outcome.error


def test_a_real_sigint_during_a_plugin_call_still_stops():
    import signal

    from cmbench.runner.guard import Context
    from cmbench.runner.units import call

    def plugin():
        signal.raise_signal(signal.SIGINT)
        return 1

    with pytest.raises(KeyboardInterrupt):
        call(plugin, Context())


# ============================================================ --scheduler

def test_scheduler_with_an_unknown_scheme_exits_2_naming_it(tmp_path, out):
    path = suite_file(tmp_path)
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report", "--scheduler", "http://127.0.0.1:1")
    assert_user_error(code, err, "http://127.0.0.1:1", "'http'", "tcp")


def test_scheduler_that_never_answers_exits_2_naming_the_address(tmp_path, out, monkeypatch):
    import socket

    path = suite_file(tmp_path)
    monkeypatch.setenv("CMBENCH_SCHEDULER_TIMEOUT", "1")
    with socket.socket() as listener:  # accepts connections (the kernel does) and never says a word
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
        with nothing_written_outside(tmp_path, out):
            code, err = cli("suite", path, "--out", out, "--no-report", "--scheduler", address)
    assert_user_error(code, err, address, "no answer")


# ================================================ workers do not outlive cmbench
# (a SIGKILLed cmbench leaves no worker running and none holding the run lock:
# test_pools.py::test_killing_cmbench_in_any_phase_leaves_no_process_of_the_run)


# ============================================================ user data files

CSV_SUITE = """\
name = "s"
seed = 3
[[experiment]]
name = "e"
datasets = [{name = "csv", label = "table", path = "table.csv"}]
instances = 2
adversaries = ["hide-random"]
budgets = [0.0, 0.1, 0.2, 0.3, 0.4]
recoverers = ["none"]
estimators = ["mean"]
metrics = ["l2"]
"""

ROWS = "".join(f"{i},{2 * i + 1},{i % 3},{i * i % 7}\n" for i in range(40))


@pytest.fixture
def count_csv_reads(monkeypatch) -> list:
    """Every pandas.read_csv call in this process, recorded."""
    import pandas as pd

    calls, real = [], pd.read_csv

    def counting(*args, **kwargs):
        calls.append(args[0] if args else kwargs.get("filepath_or_buffer"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pd, "read_csv", counting)
    return calls


def test_csv_header_with_one_field_fewer_than_its_rows_is_refused_naming_file_and_line(tmp_path, out):
    table = write(tmp_path / "in" / "table.csv", "b,c,d\n" + ROWS)  # 3 names, 4 fields a row
    path = write(tmp_path / "in" / "csv.toml", CSV_SUITE)
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, f"{table}:2", "4 fields", "3 columns", "'table'")


def test_csv_row_shorter_than_its_header_is_refused_naming_the_line(tmp_path, out):
    lines = ("a,b,c,d\n" + ROWS).splitlines(keepends=True)
    lines[7] = "1,2,3\n"
    table = write(tmp_path / "in" / "table.csv", "".join(lines))
    path = write(tmp_path / "in" / "csv.toml", CSV_SUITE)
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, f"{table}:8", "3 fields", "4 columns")


def test_bad_data_file_is_one_user_error_parsed_once_not_a_failure_per_unit(tmp_path, out, count_csv_reads):
    write(tmp_path / "in" / "table.csv", "a,b,c,d\n" + ROWS.replace("5,11", "5,eleven", 1))  # a text value
    path = write(tmp_path / "in" / "csv.toml", CSV_SUITE)  # 2 instances x 5 budgets = 10 units
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, "'eleven'", "column 'b'")
    assert len(count_csv_reads) == 1, count_csv_reads


def test_data_file_above_the_size_limit_is_refused_before_it_is_read(tmp_path, out, monkeypatch,
                                                                      count_csv_reads):
    table = write(tmp_path / "in" / "table.csv", "a,b,c,d\n" + ROWS * 20)
    path = write(tmp_path / "in" / "csv.toml", CSV_SUITE)
    monkeypatch.setenv("CMBENCH_MAX_FILE_GB", "1e-6")  # 1 kB
    with nothing_written_outside(tmp_path, out):
        code, err = cli("suite", path, "--out", out, "--no-report")
    assert_user_error(code, err, str(table), "above the limit of 1.0 kB", "CMBENCH_MAX_FILE_GB")
    assert count_csv_reads == []


def test_csv_with_a_header_for_every_field_still_loads(tmp_path, out):
    write(tmp_path / "in" / "table.csv", "a,b,c,d\n" + ROWS)
    path = write(tmp_path / "in" / "csv.toml", CSV_SUITE)
    ds = run_suite(path, RunOptions(out=out))["e"]
    assert (ds["status"] == "ok").all()


# ==================================================== small items: modes, listing

def test_output_files_follow_the_umask(cube, tmp_path):
    from cmbench import cube as cubes

    old = os.umask(0o022)
    try:
        saved = cubes.save(xr.open_dataset(cube).load(), tmp_path / "copy.nc")
        # the HTML: written by the PDF's writer (`render.writing.write_bytes`), at a tenth of its cost
        code, err = cli("report", cube, "-o", tmp_path / "r.html")
    finally:
        os.umask(old)
    assert code == 0, err
    assert oct(saved.stat().st_mode & 0o777) == oct(0o644)
    assert oct((tmp_path / "r.html").stat().st_mode & 0o777) == oct(0o644)


def test_data_file_failing_its_checksum_is_listed_as_such_not_absent(tmp_path, monkeypatch):
    from cmbench.plugins import load_plugins

    leaf = load_plugins().datasets["leaf"]
    for f in leaf.files:
        write(tmp_path / "data" / leaf.folder / f.path, "1,2,3\n")  # the right names, the wrong bytes
    monkeypatch.setenv("CMBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(main, ["datasets"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("leaf "))
    assert "damaged" in row and "absent" not in row, row
