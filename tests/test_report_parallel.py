"""The report step in helper processes: the same reports as drawn in one process, the page cache
kept and reused, and a helper's failure reported without a half-written report."""
from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from cmbench.errors import UserError
from cmbench.report import helpers
from cmbench.report.helpers import HelperError
from cmbench.report.outputs import write_suite_reports

from conftest import alive, survivors
from test_report import make_cube, pdf_pages_text

ADVERSARIES = ("min-rho", "random-rho")


def _run(tmp_path: Path, name: str, ds, workers: int, cache: Path | None = None,
         memory: bool = False) -> SimpleNamespace:
    """A finished run's outputs (as the runner gives them) for ``ds``, its reports written;
    ``memory``: the outputs hold the cube in memory too, as the runner's do (and the file is
    overwritten with junk, to show that it is not read)."""
    from cmbench.cube import save
    from cmbench.runner.outputs import content_digest

    folder = tmp_path / name
    cube = save(ds, folder / "smoke" / "synthetic.nc")
    outputs = SimpleNamespace(cubes=(cube,), digests=(content_digest(ds),), report=folder / "smoke",
                              cache=cache or folder / "smoke" / ".cache", datasets=(ds,) if memory else ())
    if memory:
        cube.write_bytes(b"not a cube")
    write_suite_reports(outputs, workers=workers)
    return outputs


def _texts(path: Path) -> list[str]:
    """The pages' text, without when and where (folder) the report was written."""
    folder = str(path.parent)
    return [re.sub(r"Report written \S+", "", t).replace(folder, "") for t in pdf_pages_text(path)]


def _html(path: Path) -> str:
    """The page, without when and where it was written and the SVG's random clip-path ids."""
    text = re.sub(r"Written \S+ by|<dc:date>[^<]*</dc:date>", "", path.read_text(encoding="utf-8"))
    return re.sub(r'(#|id=")p[0-9a-f]{10}\b', r"\1p", text).replace(str(path.parent), "")


def _index(cache: Path) -> dict:
    return json.loads((cache / "pages" / "index.json").read_text())["pages"]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_helpers_write_the_reports_that_one_process_writes(tmp_path, monkeypatch, method):
    monkeypatch.setenv(helpers.START_ENV, method)
    ds = make_cube(adversaries=ADVERSARIES)
    serial = _run(tmp_path, "serial", ds, workers=1)
    parallel = _run(tmp_path, "parallel", ds, workers=2)
    a, b = (Path(f"{o.report}.pdf") for o in (serial, parallel))
    assert len(pdf_pages_text(b)) == len(pdf_pages_text(a)) > 8
    assert _texts(b) == _texts(a)  # the same pages, in the same order
    assert _html(Path(f"{parallel.report}.html")) == _html(Path(f"{serial.report}.html"))
    assert not list(b.parent.glob("*.part"))
    docs = {loc[0] for loc in _index(parallel.cache).values()}
    # Each helper that drew a page drew it into its own document, which the cache keeps. Helpers
    # take pages as they come free: one still importing (spawned) or building the HTML page while
    # the other draws every page of this small cube is a correct run (it failed 1 run in 3 at == 2).
    assert 1 <= len(docs) <= 2
    assert {p.stem for p in (parallel.cache / "pages").glob("*.pdf")} == docs


def test_the_report_drawn_from_the_cubes_in_memory_is_that_of_their_files(tmp_path, monkeypatch):
    """A suite's report is drawn from the cubes the runner holds, not from the files read back:
    the same pages and HTML, and the same page records (a rerun that reads the files finds them)."""
    monkeypatch.setenv(helpers.START_ENV, "fork")
    ds = make_cube(adversaries=ADVERSARIES)
    files = _run(tmp_path, "a", ds, workers=2, cache=tmp_path / "files")
    texts, html = _texts(Path(f"{files.report}.pdf")), _html(Path(f"{files.report}.html"))
    memory = _run(tmp_path, "a", ds, workers=2, cache=tmp_path / "memory", memory=True)
    assert _texts(Path(f"{memory.report}.pdf")) == texts and len(texts) > 8
    assert _html(Path(f"{memory.report}.html")) == html
    # the same page records (digests), but for the first page's: it holds the time of writing
    same = set(_index(memory.cache)) & set(_index(files.cache))
    assert len(same) == len(_index(files.cache)) - 1 == len(_index(memory.cache)) - 1


def test_a_rerun_takes_the_helpers_pages_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(helpers.START_ENV, "fork")
    ds = make_cube(adversaries=ADVERSARIES)
    first = _run(tmp_path, "a", ds, workers=2)
    before = _index(first.cache)
    changed = ds.copy(deep=True)  # one method's l2 error under one adversary
    sel = dict(adversary="random-rho", recoverer="none", estimator="mean")
    changed["l2"].loc[sel] = changed["l2"].loc[sel] * 3
    second = _run(tmp_path, "a", changed, workers=2, cache=first.cache)
    after = _index(second.cache)
    kept = {d for d in after if d in before and after[d] == before[d]}
    assert kept and len(kept) >= len(after) - 4  # only the pages whose data changed were drawn again
    fresh = _run(tmp_path, "fresh", changed, workers=1)
    assert _texts(Path(f"{second.report}.pdf")) == _texts(Path(f"{fresh.report}.pdf"))


def _explode(record):
    raise ValueError("this page cannot be drawn")


def _vanish(record):
    os._exit(9)


@pytest.mark.parametrize("draw, message", [(_explode, "ValueError: this page cannot be drawn"),
                                            (_vanish, "ended with exit code 9")])
def test_a_failing_helper_is_named_and_no_report_is_written(tmp_path, monkeypatch, draw, message):
    from cmbench.report import figures

    monkeypatch.setenv(helpers.START_ENV, "fork")  # the helpers see the broken drawing function
    monkeypatch.setattr(figures, "draw_runtime", draw)
    with pytest.raises(HelperError, match=re.escape(message)) as info:
        _run(tmp_path, "broken", make_cube(), workers=2)
    assert "no report was written" in str(info.value)
    if draw is _explode:
        assert "synthetic-runtime" in str(info.value)  # the page it was drawing
    folder = tmp_path / "broken"
    assert not list(folder.glob("smoke.*")) and not list(folder.rglob("*.part"))


def test_helpers_are_forked_only_where_that_is_safe(monkeypatch):
    monkeypatch.delenv(helpers.START_ENV, raising=False)
    if not (os.uname().sysname == "Linux"):
        pytest.skip("fork is used on Linux only")
    if threading.active_count() == 1:  # an earlier test may have left a thread behind
        assert helpers.start_method() == "fork"
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:  # another thread may hold a lock that a fork would copy held
        assert helpers.start_method() == "spawn"
    finally:
        stop.set()
        thread.join()
    monkeypatch.setenv(helpers.START_ENV, "thread")
    with pytest.raises(UserError, match=helpers.START_ENV):
        helpers.start_method()


_MEETING = None  # a barrier the forked helpers inherit: both must hold a page at once to pass it


def _draw_at_the_meeting(record):
    from matplotlib.figure import Figure

    _MEETING.wait(timeout=60)  # a helper holding this page cannot take the other one
    fig = Figure()
    fig.text(0.5, 0.5, record)
    return fig


def test_two_helpers_draw_two_pages_at_once_into_their_own_documents():
    """Deterministic: each page waits for the other at a barrier, so the two helpers must have
    taken one each (a single helper would wait alone and fail the barrier)."""
    import multiprocessing as mp

    from cmbench.report.layout import Page

    global _MEETING
    _MEETING = mp.get_context("fork").Barrier(2)
    with helpers.Helpers(2, method="fork") as team:
        for i in range(2):
            team.draw(i, Page(f"page-{i}", f"page {i}", _draw_at_the_meeting))
        docs = team.finish()
    assert sorted(len(indices) for indices, _ in docs) == [1, 1]
    assert sorted(i for indices, _ in docs for i in indices) == [0, 1]


ORPHAN_PARENT = """
import sys, time
from cmbench.report.helpers import Helpers
h = Helpers(2, method=sys.argv[1])
print(" ".join(str(p.pid) for p in h.procs), flush=True)
time.sleep(120)  # killed by the test meanwhile: Helpers.close never runs
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds processes in /proc")
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_helpers_do_not_outlive_a_sigkilled_parent(method):
    """A helper waits for tasks from its parent; killed, the parent sends none, ever."""
    import signal
    import subprocess
    import sys
    import time

    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_PARENT, method], stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in parent.stdout.readline().split()]
    try:
        assert len(pids) == 2
        time.sleep(1.0)  # both helpers waiting for their first task
        assert all(alive(p) for p in pids), "a helper ended before its parent"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    finally:
        if parent.poll() is None:
            parent.kill()
        left = survivors(pids, within=20)
    assert not left, f"report helpers {left} outlived their killed parent"


HELD = {}  # the path a forked helper must not hold open (set before the fork)


def _draw_unless_holding(record):
    """A page that fails when this process holds a descriptor open on ``HELD["path"]``."""
    from matplotlib.figure import Figure

    held = [fd for fd in os.listdir("/proc/self/fd")
            if os.path.realpath(f"/proc/self/fd/{fd}") == HELD["path"]]
    if held:
        raise RuntimeError(f"holds {HELD['path']} open (descriptors {held})")
    return Figure()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc/self/fd")
@pytest.mark.parametrize("close", [True, False])
def test_forked_helpers_close_the_descriptors_they_are_told_to(tmp_path, close):
    """A suite's report is drawn while its run holds the folder's lock; a forked helper
    must not keep a copy of that descriptor (with filelock 3.x a fork does)."""
    lock = tmp_path / ".lock"
    lock.write_text("")
    HELD["path"] = os.path.realpath(lock)
    fd = os.open(lock, os.O_RDONLY)
    try:
        with helpers.Helpers(1, method="fork", inherited=(str(lock),) if close else ()) as h:
            h.draw(0, SimpleNamespace(slug="probe", record=None, draw=_draw_unless_holding))
            if close:
                assert len(h.finish()) == 1
            else:  # the probe sees the copy: it would have seen a lock left open
                with pytest.raises(HelperError, match="holds .*lock open"):
                    h.finish()
    finally:
        os.close(fd)
