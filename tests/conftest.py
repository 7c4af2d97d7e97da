import os
import signal
import textwrap
from pathlib import Path

import pytest
from hypothesis import settings

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

WINSORIZED = textwrap.dedent('''
    import numpy as np, cmbench

    def winsorized_mean(X, *, rng, limit=0.05):
        lo, hi = np.nanquantile(X, [limit, 1 - limit], axis=0)
        return np.nanmean(np.clip(X, lo, hi), axis=0)

    @cmbench.hookimpl
    def register_estimators():
        return [cmbench.Estimator("winsorized-mean", winsorized_mean, params={"limit": 0.05})]
''')


@pytest.fixture
def winsorized_file(tmp_path) -> Path:
    """The DESIGN.md example plugin, saved as a file."""
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
    """The smoke suite run once per test session (a few seconds): its output folder.

    Holds ``smoke/synthetic.nc``, ``smoke.pdf`` and ``smoke.html``; tests that
    only read it share it, tests that write copy what they need to tmp_path.
    """
    import cmbench

    out = tmp_path_factory.mktemp("smoke-run")
    cmbench.run_suite("smoke", out=out)
    return out
