"""Dask workers that share nothing with the client.

A real ``dask scheduler`` and two ``dask worker`` processes run in a private
mount namespace where a tmpfs hides the client's folder (plugin files, suite
files, csv tables) and the data folders, in another working directory, with
another ``HOME`` and without ``CMBENCH_DATA_DIR``. A job must carry everything
the workers need, and the cube must equal the serial run's.

Needs root (to mount) and ``unshare``; skipped otherwise.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from conftest import WINSORIZED, assert_same_cube, cli_inproc_result, open_cube

pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[1]
DASK = Path(sys.executable).parent / "dask"

# Starts the scheduler and the workers inside the namespace, once the folders
# given as arguments are covered by empty tmpfs mounts.
NAMESPACE_SCRIPT = r"""
set -e
for d in "$@"; do mount -t tmpfs -o size=64k,mode=0755 cmbench-hidden "$d"; done
cd "$CMB_WORKDIR"
"$CMB_DASK" scheduler --host 127.0.0.1 --port "$CMB_PORT" --no-dashboard >scheduler.log 2>&1 &
for w in 1 2; do
    "$CMB_DASK" worker "tcp://127.0.0.1:$CMB_PORT" --host 127.0.0.1 --nworkers 1 --nthreads 1 \
        --no-dashboard --memory-limit 0 --death-timeout 60 --name "w$w" \
        --local-directory "$CMB_WORKDIR/w$w" >"worker$w.log" 2>&1 &
done
# Outlive neither the test run (even killed) nor one another: end the whole group then.
while kill -0 "$CMB_PARENT" 2>/dev/null; do sleep 1; done
kill -TERM 0
"""


@dataclass
class IsolatedCluster:
    address: str
    client_dir: Path  # the client's folder: hidden from the workers
    worker_dir: Path  # the workers' working directory; HOME is worker_dir / "home"
    hidden: tuple


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _why_not_isolated() -> str:
    """Why this machine cannot run the isolated cluster, or '' when it can."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root to mount a tmpfs in a private mount namespace"
    if shutil.which("unshare") is None:
        return "needs the unshare command (util-linux)"
    if not DASK.exists():
        return f"needs the dask command next to {sys.executable} (package distributed)"
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare --mount is refused here: {probe.stderr.strip()}"
    return ""


def _data_folders() -> list[Path]:
    """Where the client finds data: every one of them is hidden from the workers."""
    from cmbench import data

    folders = [*data.data_dirs(), REPO.parent / "shared" / "datasets"]
    return [p.resolve() for p in folders if p.is_dir()]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = _why_not_isolated()
    if why:
        pytest.skip(f"isolated Dask cluster: {why}")
    from distributed import Client

    client_dir = tmp_path_factory.mktemp("client")
    worker_dir = tmp_path_factory.mktemp("worker")
    (worker_dir / "home").mkdir()
    hidden = tuple(dict.fromkeys([client_dir.resolve(), *_data_folders()]))
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("CMBENCH_DATA_DIR", "CMBENCH_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    (worker_dir / "tmp").mkdir()
    env.update(HOME=str(worker_dir / "home"), TMPDIR=str(worker_dir / "tmp"), CMB_WORKDIR=str(worker_dir),
               CMB_PORT=str(port),
               CMB_DASK=str(DASK), CMB_PARENT=str(os.getpid()), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    proc = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE_SCRIPT, "sh",
         *map(str, hidden)],
        cwd=worker_dir, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    address = f"tcp://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the namespace script ended ({proc.returncode}): {proc.stderr.read().decode()}"
                            + _logs(worker_dir))
            try:
                with Client(address, timeout="5s") as client:
                    client.wait_for_workers(2, timeout=max(deadline - time.monotonic(), 1))
                break
            except (OSError, TimeoutError) as exc:
                if time.monotonic() > deadline:
                    pytest.fail(f"no scheduler with two workers at {address}: {exc}" + _logs(worker_dir))
                time.sleep(0.5)
        yield IsolatedCluster(address, client_dir, worker_dir, hidden)
    finally:
        _stop(proc)


def _logs(worker_dir: Path) -> str:
    return "".join(f"\n--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(worker_dir.glob("*.log")))


def _stop(proc: subprocess.Popen) -> None:
    """End the namespace's process group (the scheduler, the nannies and their workers)."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


# ------------------------------------------------------------------------ tests

def test_workers_see_none_of_the_clients_folders(cluster):
    from distributed import Client

    def worker_view(hidden: list) -> dict:  # nested: Dask ships it by value
        import os

        return {"cwd": os.getcwd(), "home": os.environ.get("HOME"),
                "data_dir": os.environ.get("CMBENCH_DATA_DIR"),
                "hidden": {str(p): os.listdir(p) for p in hidden}}

    (cluster.client_dir / "marker.txt").write_text("the client's")
    with Client(cluster.address, timeout="10s") as client:
        views = client.run(worker_view, list(cluster.hidden))
    assert len(views) == 2
    for view in views.values():
        assert view["cwd"] == str(cluster.worker_dir)
        assert view["home"] == str(cluster.worker_dir / "home")
        assert view["data_dir"] is None
        assert all(files == [] for files in view["hidden"].values()), view["hidden"]


def test_smoke_with_a_plugin_file_given_relative_to_the_client(cluster):
    """The issue's command: --plugin winsorized.py, resolved and shipped by the client."""
    from cmbench import run_suite

    folder = cluster.client_dir / "smoke"
    folder.mkdir()
    (folder / "winsorized.py").write_text(WINSORIZED)
    done = cli_inproc_result("suite", "smoke", "--scheduler", cluster.address, "--plugin", "winsorized.py",
                             "--out", "out", "--no-report", cwd=folder)
    assert done.returncode == 0, done.stderr + done.stdout
    remote = open_cube(folder / "out" / "smoke" / "synthetic.nc")
    serial = run_suite("smoke", out=folder / "serial", plugins=[str(folder / "winsorized.py")],
                       report=False)["synthetic"]
    assert "winsorized-mean" in remote["estimator"].values
    assert set(np.unique(remote["status"].values)) == {"ok"}
    assert_same_cube(remote, serial)


SALES_SUITE = """
    name = "mine"
    seed = 4
    plugins = ["winsorized.py"]

    [[experiment]]
    name = "e"
    datasets = [{ name = "csv", label = "sales", path = "tables/sales.csv", rank = 2 }]
    instances = 1
    adversaries = ["hide-smallest", "replace-values"]
    budgets = [0.0, 0.1]
    recoverers = ["none", { name = "ithsvd", rank = 2 }]
    estimators = ["mean", "cmedian", "winsorized-mean"]
    metrics = ["l2"]
"""


def remote_and_serial(cluster, folder: Path, suite: str) -> tuple:
    from cmbench import run_suite

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "winsorized.py").write_text(WINSORIZED)
    (folder / "suite.toml").write_text(textwrap.dedent(suite))
    remote = run_suite(folder / "suite.toml", out=folder / "remote", scheduler=cluster.address,
                       report=False)["e"]
    serial = run_suite(folder / "suite.toml", out=folder / "serial", report=False)["e"]
    return remote, serial


def failures(ds: xr.Dataset, **where) -> np.ndarray:
    part = ds.sel(**where)
    return part["error"].values[part["status"].values == "failed"]


def test_a_csv_table_next_to_the_suite_travels_with_the_jobs(cluster):
    folder = cluster.client_dir / "tables"
    (folder / "tables").mkdir(parents=True)
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(120, 2))
    table = np.c_[Z @ rng.normal(size=(2, 5)), rng.normal(size=120)]
    np.savetxt(folder / "tables" / "sales.csv", table, delimiter=",", header="a,b,c,d,e,f", comments="")
    remote, serial = remote_and_serial(cluster, folder, SALES_SUITE)
    assert set(np.unique(remote["status"].sel(dataset="sales").values)) == {"ok", "not-applicable"}
    assert_same_cube(remote, serial)
    # Each worker wrote the table into its Dask space (which Dask deletes when the worker
    # closes, or purges once it finds it stale), not into the temporary folder.
    copies = sorted(cluster.worker_dir.glob("w[12]/**/cmbench-data-*/0/sales.csv"))
    assert len(copies) == 2 and not list((cluster.worker_dir / "tmp").glob("cmbench-data-*")), copies
    # A user's unusable table is a user error found on the client, before any job is sent.
    (folder / "tables" / "typo.csv").write_text("a,b\n1,2\n3,x\n5,6\n")
    typo = folder / "typo.toml"
    typo.write_text(textwrap.dedent(SALES_SUITE).replace(
        'sales.csv", rank = 2 }', 'sales.csv", rank = 2 }, { name = "csv", label = "typo", path = "tables/typo.csv" }'))
    import re

    from cmbench import run_suite
    from cmbench.errors import UserError

    with pytest.raises(UserError, match=re.escape(f"csv ({folder / 'tables' / 'typo.csv'}): column 'b'")):
        run_suite(typo, out=folder / "typo-out", report=False)


def test_a_real_data_set_on_workers_without_a_data_folder(cluster):
    """The paper's data sets ship inside the package: a worker needs no data folder.

    The client reads the source files where ``CMBENCH_DATA_DIR`` points (when
    set), the workers the package's tables: the cubes are the same.
    """
    remote, serial = remote_and_serial(cluster, cluster.client_dir / "real", SALES_SUITE.replace(
        '{ name = "csv", label = "sales", path = "tables/sales.csv", rank = 2 }', '"blood-transfusion"'))
    assert len(failures(remote)) == 0, failures(remote)[:3]
    assert (remote["status"].values == "ok").sum() > 0
    assert_same_cube(remote, serial)


def test_a_plugin_added_to_a_cached_run_gets_the_cached_stages_shipped(cluster):
    """The rerun computes the new estimator on recoveries from the client's cache, which workers cannot read."""
    from cmbench import run_suite

    folder = cluster.client_dir / "warm"
    folder.mkdir()
    (folder / "winsorized.py").write_text(WINSORIZED)
    run_suite("smoke", out=folder / "remote", scheduler=cluster.address, report=False)
    remote = run_suite("smoke", out=folder / "remote", scheduler=cluster.address,
                       plugins=[str(folder / "winsorized.py")], report=False)["synthetic"]
    serial = run_suite("smoke", out=folder / "serial", plugins=[str(folder / "winsorized.py")],
                       report=False)["synthetic"]
    assert "winsorized-mean" in remote["estimator"].values
    assert set(np.unique(remote["status"].values)) == {"ok"}
    assert_same_cube(remote, serial)


def test_a_module_plugin_missing_on_the_workers_is_named(cluster, monkeypatch):
    """A dotted-module plugin is not shipped: the error names it and says to install it."""
    from cmbench import run_suite
    from cmbench.errors import UserError

    folder = cluster.client_dir / "module"
    folder.mkdir()
    (folder / "winsorized_mod.py").write_text(WINSORIZED)
    monkeypatch.syspath_prepend(str(folder))
    with pytest.raises(UserError) as info:
        run_suite("smoke", out=folder / "out", scheduler=cluster.address, plugins=["winsorized_mod"],
                  report=False)
    message = str(info.value)
    assert message.startswith("Dask worker tcp://127.0.0.1:"), message
    assert "'winsorized_mod' not found" in message and "installed on every worker" in message, message
    assert not (folder / "out" / "smoke" / "synthetic.nc").exists()
