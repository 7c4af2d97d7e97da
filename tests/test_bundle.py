"""A suite packed on the client and rebuilt where the client's files cannot be read."""
from __future__ import annotations

import dataclasses
import inspect
import os
import pickle
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest

from cmbench import bundle
from cmbench.suite import load_suite
from conftest import PLUGINS, WINSORIZED

SUITE = """
    name = "shipped"
    seed = 1
    plugins = ["winsorized.py"]

    [[experiment]]
    name = "e"
    datasets = [{ name = "csv", label = "sales", path = "tables/sales.csv" }]
    adversaries = ["hide-smallest"]
    budgets = [0.0, 0.1]
    recoverers = ["none"]
    estimators = ["mean", "winsorized-mean", "boom"]
"""

BOOM = (PLUGINS / "boom.py").read_text()


@pytest.fixture
def client(tmp_path, monkeypatch) -> Path:
    """A client folder: a suite, its plugin file, a csv table, and a --plugin file."""
    folder = tmp_path / "client"
    (folder / "tables").mkdir(parents=True)
    (folder / "winsorized.py").write_text(WINSORIZED)
    (folder / "boom.py").write_text(BOOM)
    rng = np.random.default_rng(0)
    np.savetxt(folder / "tables" / "sales.csv", rng.normal(size=(30, 3)), delimiter=",",
               header="a,b,c", comments="")
    (folder / "suite.toml").write_text(textwrap.dedent(SUITE))
    monkeypatch.chdir(folder)
    return folder


def hide(folder: Path) -> None:
    """The client's folder goes away, as it is on a worker that cannot see it."""
    folder.rename(folder.with_name("gone"))


def entries(suite):
    return [(e.label, e.source, e.fingerprint) for exp in suite.experiments
            for kind in ("datasets", "adversaries", "recoverers", "estimators") for e in getattr(exp, kind)]


def test_a_relative_plugin_spec_is_resolved_on_the_client(client):
    suite = load_suite("suite.toml", plugins=["boom.py"])
    assert suite.plugins == (str(client / "boom.py"),)


def test_the_rebuilt_suite_is_the_clients_without_its_files(client, tmp_path, monkeypatch):
    suite = load_suite("suite.toml", plugins=["boom.py"])
    packed = pickle.loads(pickle.dumps(bundle.bundle_suite(suite)))
    assert dict(packed.files).keys() == {str(client / f) for f in ("winsorized.py", "boom.py",
                                                                    "tables/sales.csv")}
    hide(client)
    monkeypatch.chdir(tmp_path)
    rebuilt = bundle.install(packed)
    assert bundle.install(packed) is rebuilt  # once per process
    assert rebuilt.path == suite.path and rebuilt.hash == suite.hash
    assert entries(rebuilt) == entries(suite)  # same plugin names, same code and data digests
    assert [s.plugin for s in rebuilt.registry.plugins] == [s.plugin for s in suite.registry.plugins]

    old, new = suite.experiments[0].estimators[1].decl.fn, rebuilt.experiments[0].estimators[1].decl.fn
    assert old is not new
    X = np.random.default_rng(2).normal(size=(50, 3))
    np.testing.assert_array_equal(old(X, rng=None), new(X, rng=None))
    assert inspect.getsource(new) == inspect.getsource(old)

    local = Path(rebuilt.experiments[0].datasets[0].params["path"])
    assert local.read_bytes() == dict(packed.files)[str(client / "tables" / "sales.csv")]
    entry = rebuilt.experiments[0].datasets[0]
    data = entry.decl.fn(instance=0, rng=None, **entry.params)
    assert data.X.shape == (30, 3)


def test_a_shipped_plugins_error_names_the_clients_file(client):
    suite = load_suite("suite.toml", plugins=["boom.py"])
    packed = bundle.bundle_suite(suite)
    hide(client)
    fn = bundle.install(packed).experiments[0].estimators[2].decl.fn
    with pytest.raises(ValueError) as info:
        fn(np.zeros((2, 2)), rng=None)
    frame = traceback.extract_tb(info.tb)[-1]
    raise_line = next(i for i, line in enumerate(BOOM.splitlines(), 1) if "raise ValueError" in line)
    assert (frame.filename, frame.lineno) == (str(client / "boom.py"), raise_line)


def test_a_data_file_beyond_the_limit_must_be_on_the_worker(client):
    suite = load_suite("suite.toml", plugins=["boom.py"])
    packed = bundle.bundle_suite(suite, limit=10)
    csv = str(client / "tables" / "sales.csv")
    assert packed.data == () and [p for p, _ in packed.unshipped] == [csv]
    assert bundle.check(packed) == ""  # still readable here: a shared file system
    hide(client)
    packed = dataclasses.replace(packed, digest="other")
    with pytest.raises(bundle.WorkerSetupError, match="beyond the 10 bytes .* this worker cannot read it"):
        bundle.install(packed)


def test_a_module_plugin_missing_on_the_worker_says_install_it(client, monkeypatch):
    (client / "winsorized_module.py").write_text(WINSORIZED.replace("winsorized-mean", "winsorized-mod"))
    monkeypatch.syspath_prepend(str(client))
    suite = load_suite("suite.toml", plugins=["boom.py", "winsorized_module"])
    packed = bundle.bundle_suite(suite)
    assert ("winsorized_module", "") in packed.installed
    monkeypatch.delitem(sys.modules, "winsorized_module")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(client)])
    message = bundle.check(packed)
    assert "winsorized_module" in message and "installed on every worker" in message


def test_another_version_of_an_installed_plugin_is_named(client):
    suite = load_suite("suite.toml", plugins=["boom.py"])
    packed = bundle.bundle_suite(suite)
    plugin, version = packed.installed[0]
    changed = dataclasses.replace(packed, digest="v", installed=((plugin, version + ".post1"),))
    with pytest.raises(bundle.WorkerSetupError, match=f"plugin {plugin} is version {version}.post1 on the client"):
        bundle.install(changed)


def test_the_clients_size_limits_hold_on_the_worker(client, monkeypatch):
    suite = load_suite("suite.toml", plugins=["boom.py"])
    packed = bundle.bundle_suite(suite)
    monkeypatch.setenv("CMBENCH_MAX_CELLS", "1")  # the worker's own environment does not decide
    assert bundle.install(packed).name == "shipped"


KILLED_WORKER = """
import os, pickle, signal, sys
from cmbench import bundle
suite = bundle.install(pickle.loads(open(sys.argv[1], "rb").read()))
print(suite.experiments[0].datasets[0].params["path"], flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no atexit, no cleanup
"""


def test_a_killed_workers_data_folder_is_removed_by_the_next_one(client, tmp_path, monkeypatch):
    """Shipped data go to a folder named after the process; a later process deletes the
    folders of processes that have ended, so a SIGKILLed worker leaves nothing behind for long."""
    import subprocess
    import tempfile

    suite = load_suite("suite.toml", plugins=["boom.py"])
    packed = bundle.bundle_suite(suite)
    (tmp_path / "bundle.pkl").write_bytes(pickle.dumps(packed))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "cmbench-data-notapid-x").mkdir()  # not ours: kept
    killed = subprocess.run([sys.executable, "-c", KILLED_WORKER, str(tmp_path / "bundle.pkl")],
                            capture_output=True, text=True, env={**os.environ, "TMPDIR": str(scratch)})
    assert killed.returncode == -9, killed.stderr
    left = Path(killed.stdout.strip()).parents[1]
    assert left.parent == scratch and left.is_dir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    rebuilt = bundle.install(dataclasses.replace(packed, digest="next"))
    mine = Path(rebuilt.experiments[0].datasets[0].params["path"]).parents[1]
    assert not left.exists()
    assert sorted(p.name for p in scratch.iterdir()) == sorted(["cmbench-data-notapid-x", mine.name])
    assert mine.name.startswith(f"cmbench-data-{os.getpid()}-")
