"""cmbench's worker pools: scripts without a main guard, warm workers, and nothing left behind.

Workers are loky's (`cmbench.pools`): they must run the README's Python API example saved as a
script or in a Jupyter kernel, start once per process, end with their parent whatever signal
ends it and in every phase of a run, and not wait for a thread a plugin leaves running.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cmbench import pools
from conftest import GOOD, alive, survivors, write

ROOT = Path(__file__).resolve().parents[1]
needs_proc = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds processes in /proc")


def readme_api_block() -> str:
    """The README's "Python API" example, as the README has it (its first ``python`` block)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


# A tail appended to the README's block: every cell of every cube must be ok
CHECK_ALL_OK = """
import numpy as _np
for _name, _ds in cubes.items():
    _bad = _ds["status"].values[_ds["status"].values != "ok"]
    assert _bad.size == 0, (_name, set(_bad.tolist()), str(_ds["error"].values.flat[0]))
assert "halved" in cubes["e"]["estimator"].values  # the script's own estimator ran too
print("ALL-OK", sum(_ds["status"].size for _ds in cubes.values()))
"""


def _env(**extra) -> dict:
    return {**os.environ, "MPLBACKEND": "Agg", **extra}


# ------------------------------------------------------------------ the README's example as a script
@pytest.mark.parametrize("workers", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_the_readme_api_example_runs_as_a_script_without_a_main_guard(tmp_path, workers):
    code = readme_api_block()
    assert "workers=2" in code and "plugins=[mine]" in code and "__main__" not in code
    script = tmp_path / "example.py"
    script.write_text(code.replace("workers=2", f"workers={workers}") + CHECK_ALL_OK)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ALL-OK 27" in proc.stdout, proc.stdout  # 3 sizes x 3 budgets x (2 built-ins + the script's own)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


def test_the_readme_api_example_runs_in_a_jupyter_kernel(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(readme_api_block()), nbformat.v4.new_code_cell(CHECK_ALL_OK)]
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    out = "".join(o.get("text", "") for o in nb.cells[1].outputs)
    assert "ALL-OK" in out, nb.cells[1].outputs


# ------------------------------------------------------------------ warm workers
def test_a_second_run_suite_in_one_process_starts_no_new_workers(tmp_path):
    import types

    import numpy as np

    import cmbench

    log = tmp_path / "pids.log"

    def pid_mean(X, *, rng):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        return np.nanmean(X, axis=0)

    mine = types.SimpleNamespace(register_estimators=lambda: [cmbench.Estimator("pid-mean", pid_mean)])
    suite = {"name": "twice", "seed": 1, "experiment": [{
        "name": "e", "datasets": [{"name": "synthetic-gaussian", "N": [60, 80]}], "instances": 2,
        "adversaries": ["hide-smallest"], "budgets": [0.0, 0.1], "recoverers": ["none"],
        "estimators": ["mean"]}]}  # a plugin given to the run adds its estimator
    runs = []
    for _ in range(2):
        log.unlink(missing_ok=True)
        cmbench.run_suite(suite, out=tmp_path / "out", workers=2, plugins=[mine], resume=False, report=False)
        runs.append(set(log.read_text().split()))
    first, second = runs
    assert len(second) >= 1 and str(os.getpid()) not in first | second  # computed in workers
    assert second <= first, f"the second run started workers {second - first}"


# ------------------------------------------------------------------ environment and parents
def _env_of_worker(_):
    return {k: os.environ.get(k) for k in pools.WORKER_ENV}, os.environ.get("PYTHONSAFEPATH")


def test_workers_run_one_blas_thread_and_leave_this_process_environment_alone():
    before = dict(os.environ)
    executor = pools.private(1)
    try:
        env, safepath = executor.submit(_env_of_worker, None).result()
    finally:
        pools.stop(executor)
    assert env == pools.WORKER_ENV
    assert safepath == os.environ.get("PYTHONSAFEPATH")  # the parent's, not the one it started with
    assert dict(os.environ) == before


def _keep(megabytes: int, wait: float) -> int:
    """In a worker: after ``wait`` seconds, hold ``megabytes`` of written memory until the
    next call, as the data memo holds a data set between units; the worker's pid."""
    import types

    import numpy as np

    time.sleep(wait)
    kept = sys.modules.setdefault("_kept_by_test", types.ModuleType("_kept_by_test"))
    kept.block = np.ones(megabytes << 17)  # 8 bytes each
    return os.getpid()


def test_a_worker_that_holds_data_between_tasks_is_not_taken_for_a_leak():
    """With psutil installed, loky ends a worker that grew 300 MB past its size after its first
    task (checked at most once a second) and warns of a memory leak; a worker holding a data
    set, as cmbench's do, must stay."""
    pytest.importorskip("psutil")  # without it loky checks nothing
    executor = pools.private(1)
    try:
        first = executor.submit(_keep, 0, 0.0).result()  # loky measures the worker's size now
        grown = executor.submit(_keep, 400, 1.2).result()  # 400 MB more, past loky's next check
        after = executor.submit(_keep, 0, 0.0).result()
    finally:
        pools.stop(executor)
    assert first == grown == after, "the worker was ended and another started"


def test_a_workers_death_is_told_with_its_signal():
    executor = pools.private(1)
    try:
        with pytest.raises(Exception) as info:
            executor.submit(_kill_self, signal.SIGKILL).result()
    finally:
        pools.stop(executor)
    assert pools.death(info.value) == "killed by signal SIGKILL (out of memory?)"


def _kill_self(sig):
    os.kill(os.getpid(), sig)
    time.sleep(5)


def test_a_call_slot_is_read_back_after_its_writer_is_gone():
    slot = pools.Slot()
    try:
        other = pools.Slot(slot.path)
        other.value = "estimate() of plugin.py".encode()
        other.close()
        assert slot.value == b"estimate() of plugin.py"
        slot.value = b"x" * 5000
        assert len(slot.value) == pools.Slot.SIZE - 1
    finally:
        slot.close()
    assert not os.path.exists(slot.path)


# ------------------------------------------------------------------ a plugin's non-daemon thread
THREADER = """
import threading, time
import numpy as np, cmbench

def threaded_mean(X, *, rng):
    threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: would hold the exit
    return np.nanmean(X, 0)

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("threaded-mean", threaded_mean)]
"""


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_non_daemon_thread_of_a_plugin_does_not_hold_cmbench_at_exit(tmp_path, workers):
    write(tmp_path / "threader.py", THREADER)
    path = write(tmp_path / "t.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["threader.py"]')
                 .replace('"cmedian"]', '"threaded-mean"]'))
    proc = subprocess.run([sys.executable, "-m", "cmbench.cli", "suite", str(path), "--out", str(tmp_path / "out"),
                           "--no-report", "--workers", workers], capture_output=True, text=True,
                          env=_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "out" / "r" / "e.nc").is_file()


# ------------------------------------------------------------------ kill cmbench in every phase
LOOPER = """
import os, time
import numpy as np, cmbench

def spin():
    open(os.environ["LOOP_FLAG"], "a").close()  # the phase is reached: the test may send its signal
    while True:  # pure Python: a loop that never gives up
        pass

if os.environ.get("LOOP_PHASE") == "import":
    spin()

def looping_mean(X, *, rng):
    if os.environ.get("LOOP_PHASE") == "sweep":
        spin()
    return np.nanmean(X, 0)

@cmbench.hookimpl
def register_estimators():
    if os.environ.get("LOOP_PHASE") == "register":
        spin()
    return [cmbench.Estimator("looping-mean", looping_mean)]
"""


def _marked(marker: str) -> list[int]:
    """Every process whose environment holds ``marker``: the run's processes, whatever their parent."""
    found = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker.encode() in env.read_bytes():
                found.append(int(env.parent.name))
        except OSError:
            continue
    return [p for p in found if alive(p)]


def _cmbench_children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return kids


# The parent of a bare pool, without cmbench's run: a script without a main guard, one busy worker.
BARE_POOL = """
import os, time
from cmbench import pools

def busy(_):
    open(os.environ["LOOP_FLAG"], "a").close()
    time.sleep(120)

pools.shared(1).submit(busy, None)
time.sleep(120)
"""


def _open_files(pid: int) -> set[str]:
    out = set()
    for fd in Path(f"/proc/{pid}/fd").glob("*"):
        try:
            out.add(os.path.realpath(os.readlink(fd)))
        except OSError:
            continue
    return out


# every phase of a run and signal, and a bare pool's script SIGKILLed; two of them in the default
# selection (a SIGKILLed parent's pool workers end with it: the sweep's case; SIGTERM's own handling:
# the import's), the rest with -m slow
DEFAULT_KILLS = {("import", signal.SIGTERM), ("sweep", signal.SIGKILL)}
KILLS = [pytest.param(phase, sig, marks=() if (phase, sig) in DEFAULT_KILLS else pytest.mark.slow)
         for phase in ("import", "register", "sweep", "report") for sig in (signal.SIGTERM, signal.SIGKILL)]


@needs_proc
@pytest.mark.parametrize(("phase", "sig"), [*KILLS, pytest.param("import", signal.SIGINT, marks=pytest.mark.slow),
                                            pytest.param("bare-pool", signal.SIGKILL, marks=pytest.mark.slow)],
                         ids=lambda v: v.name if isinstance(v, signal.Signals) else v)
def test_killing_cmbench_in_any_phase_leaves_no_process_of_the_run(tmp_path, phase, sig):
    marker = f"CMBENCH_TEST_RUN_{uuid.uuid4().hex}"
    flag = tmp_path / "reached"
    out = tmp_path / "out"
    env = _env(LOOP_PHASE=phase, LOOP_FLAG=str(flag), **{marker: "1"})
    if phase == "bare-pool":
        command = [sys.executable, str(write(tmp_path / "parent.py", BARE_POOL))]
    else:
        write(tmp_path / "looper.py", LOOPER)
        path = write(tmp_path / "l.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["looper.py"]')
                     .replace('"cmedian"]', '"looping-mean"]').replace("instances = 1", "instances = 4"))
        command = [sys.executable, "-m", "cmbench.cli", "suite", str(path), "--out", str(out), "--workers", "2"]
    proc = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # wait until the phase runs in a child of cmbench (or, for the report, the cube is written)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if phase == "report":
                if (out / "r" / "e.nc").exists():
                    break
            elif flag.exists() and _cmbench_children(proc.pid):
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert len(_marked(marker)) >= 2  # cmbench and at least one child of the phase
        if phase == "sweep":  # no worker holds a copy of the run lock: killed, cmbench leaves the folder free
            lock = os.path.realpath(out / "r" / ".lock")
            assert lock in _open_files(proc.pid), "the run lock is not where this test looks"
            holders = [p for p in _marked(marker) if p != proc.pid and lock in _open_files(p)]
            assert not holders, f"processes {holders} of the run hold the run lock {lock}"
        proc.send_signal(sig)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = survivors(_marked(marker), within=10)
    assert not left, f"processes {left} of the killed run are still running"
    if sig == signal.SIGINT:  # Ctrl-C: a clean stop, said in a line
        stderr = proc.stderr.read().decode()
        assert code != 0 and "Traceback" not in stderr, stderr[-2000:]


@needs_proc
def test_sigterm_stops_a_sweep_started_in_the_background_with_sigint_ignored(tmp_path):
    """A job started with ``&`` by a non-interactive shell (a script, a batch system) ignores
    SIGINT: SIGTERM must still stop cmbench, its workers with it."""
    marker = f"CMBENCH_TEST_RUN_{uuid.uuid4().hex}"
    write(tmp_path / "looper.py", LOOPER)
    path = write(tmp_path / "l.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["looper.py"]')
                 .replace('"cmedian"]', '"looping-mean"]').replace("instances = 1", "instances = 4"))
    flag = tmp_path / "reached"
    proc = subprocess.Popen([sys.executable, "-m", "cmbench.cli", "suite", str(path), "--out", str(tmp_path / "out"),
                             "--workers", "2"], env=_env(LOOP_PHASE="sweep", LOOP_FLAG=str(flag), **{marker: "1"}),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not flag.exists():
            time.sleep(0.05)  # into the sweep: the looping estimator runs in a worker
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code != 0
    left = survivors(_marked(marker), within=10)
    assert not left, f"processes {left} of the stopped run are still running"


# ------------------------------------------------------------------ a plugin that signals its parent
PARENT_KILLER = """
import os, signal, numpy as np, cmbench
SIG = getattr(signal, os.environ["KILL_SIG"])
if os.environ["KILL_WHEN"] == "import":
    os.kill(os.getppid(), SIG)

def parent_killer(X, *, rng):
    if os.environ["KILL_WHEN"] == "sweep":
        os.kill(os.getppid(), SIG)
    return np.nanmean(X, 0)

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("parent-killer", parent_killer)]
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("when", ["import", "sweep"])
def test_a_plugin_that_signals_cmbench_gets_one_line_not_a_traceback(tmp_path, when, sig):
    write(tmp_path / "pk.py", PARENT_KILLER)
    path = write(tmp_path / "k.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["pk.py"]')
                 .replace('"cmedian"]', '"parent-killer"]'))
    proc = subprocess.run([sys.executable, "-m", "cmbench.cli", "suite", str(path), "--out", str(tmp_path / "out"),
                           "--no-report", "--workers", "2"], capture_output=True, text=True,
                          env=_env(KILL_WHEN=when, KILL_SIG=sig), timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode in (2, 130), proc.stderr
    assert len(lines) == 1 and lines[0].startswith("cmbench: "), proc.stderr
    assert "Aborted" not in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------------ progress inside a unit
SLOW_CELLS = """
import time, numpy as np, cmbench

def slow_cell(X, *, rng):
    time.sleep(0.6)
    return np.nanmean(X, 0)

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator(f"slow-cell-{i}", slow_cell) for i in range(4)]
"""


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_progress_bar_moves_inside_a_unit(tmp_path, workers):
    write(tmp_path / "slowcells.py", SLOW_CELLS)
    path = write(tmp_path / "p.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["slowcells.py"]')
                 .replace('recoverers = ["none", "exact"]', 'recoverers = ["none"]')
                 .replace('estimators = ["mean", "cmedian"]',
                          'estimators = ["slow-cell-0", "slow-cell-1", "slow-cell-2", "slow-cell-3"]'))
    proc = subprocess.run([sys.executable, "-m", "cmbench.cli", "suite", str(path), "--out", str(tmp_path / "out"),
                           "--no-report", "--workers", workers, "--progress"], capture_output=True, text=True,
                          env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shown = re.findall(r"\| *(\d+(?:\.\d)?)/2 ", proc.stderr)
    # before the first unit (2.4 s of estimates) finishes, the bar shows a part of it
    assert any(0 < float(n) < 1 for n in shown), shown
