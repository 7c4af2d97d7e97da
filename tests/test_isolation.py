"""What cmbench does not do: unpickle anything from disk, listen beyond loopback, write outside --out."""
from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from cmbench.runner import run_suite
from cmbench.options import RunOptions
from conftest import assert_same_cube, cli, good_suite


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
    # cmbench.shipping unpickles the plugin objects a job carries in memory (bytes the executor
    # itself delivered pickled), and reads no file: it is the one module allowed to
    shipping = next(p for p in sources if p.name == "shipping.py")
    tree = ast.parse(shipping.read_text())
    calls = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
             for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert not calls & {"open", "read_bytes", "read_text", "load", "Path"}, calls
    found = [use for path in sources if path != shipping for use in _unsafe_uses(path)]
    assert not found, f"pickle-capable readers in the package: {found}"


def test_resuming_a_suite_reads_nothing_pickled(tmp_path, monkeypatch):
    import pickle

    import pandas as pd

    suite = good_suite(tmp_path)
    first = run_suite(suite, RunOptions(out=tmp_path / "out"))["e"]

    def refuse(*args, **kwargs):
        raise AssertionError("something was unpickled")

    for owner, name in [(pickle, "load"), (pickle, "loads"), (pickle, "Unpickler"), (np, "load"),
                        (pd, "read_pickle")]:
        monkeypatch.setattr(owner, name, refuse)
    again = run_suite(suite, RunOptions(out=tmp_path / "out"))["e"]
    assert_same_cube(first, again)


# ====================================================== a Dask LocalCluster binds to 127.0.0.1

LOOPBACK = ("127.0.0.1", "::1", "localhost")


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
                sockets = getattr(proc, "net_connections", None) or proc.connections  # psutil < 6
                listening.extend(c.laddr for c in sockets(kind="inet") if c.status == psutil.CONN_LISTEN)
            listening.append(("scheduler", self.scheduler_address))

    monkeypatch.setattr(distributed, "LocalCluster", Spy)
    ds = run_suite(good_suite(tmp_path), RunOptions(out=tmp_path / "out", scheduler="local"))["e"]
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
