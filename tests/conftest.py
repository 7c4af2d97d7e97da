"""Fixtures and helpers shared by the test files.

Test files import the plain helpers (``from conftest import cli, ...``); the
test plugins they load are real files under ``tests/plugins/``.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

# One BLAS thread in every test process and the processes it starts: the test run has a
# process per core (pytest-xdist), and BLAS threads spinning beside another test process
# cost more than they give (the default filter on 2000 x 40 rows: 0.09 s on one thread,
# 1-3 s on two beside another test). Set before NumPy loads its BLAS; the runner itself
# limits its units to one thread either way.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from hypothesis import settings  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(1)  # a BLAS loaded before this file (by a pytest plugin) is held to one thread too

# Subprocesses run `python -m cmbench.cli` from the repo root; without this the
# source folder cmbench/ (whose plugins/ ships as cmbench.builtins only once
# installed) would shadow the installed package.
os.environ.setdefault("PYTHONSAFEPATH", "1")

# A test run started in the background by a script (`pytest &`) inherits SIGINT
# ignored, and so would every cmbench it starts; the interrupt tests need the
# default Ctrl-C behaviour, which exec'd children then inherit too.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# CI starts with no example database, so random exploration there would make a
# green run depend on luck; locally, tests keep exploring new examples.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Test plugins, as real files: a test copies the one it needs next to its suite.
PLUGINS = Path(__file__).resolve().parent / "plugins"

# The README's example plugin's source (verbatim: test_docs checks it).
WINSORIZED = (PLUGINS / "winsorized.py").read_text()


@pytest.fixture
def winsorized_file(tmp_path) -> Path:
    """The README's example plugin, saved as a file."""
    path = tmp_path / "winsorized.py"
    path.write_text(WINSORIZED)
    return path


@pytest.fixture
def write_suite(tmp_path):
    """Write a suite TOML (text) into tmp_path and return its path."""
    def write(text: str, name: str = "suite.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path
    return write


def real_data_available() -> bool:
    return bool(os.environ.get("CMBENCH_DATA_DIR"))


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """The smoke suite run once per test process, without its report: its output folder.

    Holds ``smoke/synthetic.nc``; tests that only read it share it, tests that write copy what
    they need to tmp_path. No report: every test process (pytest-xdist) runs this, and the
    report's drawing would be most of its cost; a test of a page draws it (`drawn_page_texts`).
    """
    import cmbench

    out = tmp_path_factory.mktemp("smoke-run")
    cmbench.run_suite("smoke", out=out, report=False)
    return out


# ====================================================================== data, plugins and suites

# The real data's source files: $CMBENCH_DATA_DIR, else ../shared/datasets beside the repository.
SHARED_DATA = Path(os.environ.get("CMBENCH_DATA_DIR")
                   or Path(__file__).resolve().parents[1].parent / "shared" / "datasets")


def copy_plugin(name: str, folder: Path, as_name: str | None = None) -> Path:
    """Copy ``tests/plugins/<name>`` into ``folder`` (as ``as_name``) and return the copy's path."""
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(PLUGINS / name, folder / (as_name or name)))


def write(path: Path, text: str) -> Path:
    """Write ``text`` (dedented) to ``path``, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


# A small valid suite: 1 instance x 2 budgets x 2 recoverers x 2 estimators, in a second.
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
    """``GOOD`` with its first ``old`` replaced by ``new``, written as ``tmp_path/name``."""
    assert old in GOOD, old
    return write(tmp_path / name, GOOD.replace(old, new, 1) if old else GOOD)


def slow_suite(tmp_path: Path, delay: float, instances: int, budgets: str) -> Path:
    """One unit per (instance, budget); slow-mean logs once per unit and sleeps ``delay``."""
    copy_plugin("slow_mean.py", tmp_path, "slowplug.py")
    text = (GOOD.replace('name = "r"\nseed = 3', 'name = "slow"\nseed = 5\nplugins = ["slowplug.py"]')
            .replace("instances = 1", f"instances = {instances}")
            .replace("budgets = [0.0, 0.2]", f"budgets = {budgets}")
            .replace('recoverers = ["none", "exact"]', 'recoverers = ["none"]')
            .replace('"cmedian"]', f'{{name = "slow-mean", delay = {delay}}}]'))
    return write(tmp_path / "slow.toml", text)


def unit_files(out: Path, suite: str = "slow") -> list[Path]:
    """The cache's unit documents (one per corruption, holding its stages' records)."""
    cache = out / suite / ".cache" / "units"
    return sorted(cache.glob("*.json")) if cache.exists() else []


def computed(log: Path) -> int:
    """Units computed since the log was last cleared (slow-mean runs once per unit)."""
    return log.read_text().split().count("estimate") if log.exists() else 0


@pytest.fixture
def log(tmp_path, monkeypatch) -> Path:
    """``$CMBENCH_TEST_LOG``, where the logging test plugins write a line per call."""
    path = tmp_path / "calls.log"
    monkeypatch.setenv("CMBENCH_TEST_LOG", str(path))
    return path


# ====================================================================== the command line

def cli(*args, env=None, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    """The real command line, in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "cmbench.cli", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout)


def cli_inproc_result(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The click command in-process, shaped as `cli` returns it (returncode, stdout, stderr).

    What the command line does, without the interpreter start and imports a subprocess costs:
    for tests of a command's behaviour, not of the process boundary (`cli` keeps that).
    ``cwd`` is the working folder during the call (restored after); an escaping exception fails.
    """
    from cmbench.cli import main

    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # an unhandled exception would be a traceback on the real CLI
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


def cli_inproc(*args) -> tuple[int, str]:
    """`cli_inproc_result`'s (exit code, stderr)."""
    result = cli_inproc_result(*args)
    return result.returncode, result.stderr


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


# ====================================================================== cubes

def values(ds: xr.Dataset) -> dict:
    """Every variable but the timings, for bit-for-bit comparison."""
    return {v: ds[v].values for v in ds.data_vars if v != "seconds"}


def assert_same_cube(a: xr.Dataset, b: xr.Dataset) -> None:
    va, vb = values(a), values(b)
    assert va.keys() == vb.keys()
    for k in va:
        np.testing.assert_array_equal(va[k], vb[k], err_msg=k)


def open_cube(path: Path) -> xr.Dataset:
    """The cube at ``path``, loaded into memory (the file is closed)."""
    with xr.open_dataset(path) as ds:
        return ds.load()


# ------------------------------------------------------------- processes that outlive a parent
def alive(pid: int) -> bool:
    """``pid`` runs (exists and is not a zombie: an orphan's zombie is init's to reap)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def survivors(pids, within: float) -> list[int]:
    """Those of ``pids`` still running after waiting up to ``within`` seconds for all to end;
    they are killed (no stray process is left behind, even when a test fails)."""
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    return left
