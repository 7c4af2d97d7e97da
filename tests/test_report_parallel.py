"""The report step with a process pool (`cmbench.report.render.drawing.Pool`): the same reports as drawn in
one process, the page cache kept and reused, a failing page reported without a half-written
report, and no worker left behind by a killed parent."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from cmbench.report.render import drawing
from cmbench.report.layout import Page
from cmbench.report.suite_step import write_suite_reports

from conftest import alive, survivors
from helpers import make_cube, pdf_pages_text

ADVERSARIES = ("min-rho", "random-rho")


def _run(tmp_path: Path, name: str, ds, workers: int, cache: Path | None = None) -> SimpleNamespace:
    """A finished run's outputs (as the runner gives them) for ``ds``, its reports written."""
    from cmbench.cube import save
    from cmbench.stamps import content_digest

    folder = tmp_path / name
    cube = save(ds, folder / "smoke" / "synthetic.nc")
    outputs = SimpleNamespace(cubes=(cube,), digests=(content_digest(ds),), report=folder / "smoke",
                              cache=cache or folder / "smoke" / ".cache")
    write_suite_reports(outputs, workers=workers)
    return outputs


def _texts(path: Path) -> list[str]:
    """The pages' text, without when and where (folder) the report was written."""
    return [re.sub(r"Report written \S+|\(read from [^)]*\)", "", t) for t in pdf_pages_text(path)]


def _index(cache: Path) -> dict:
    return json.loads((cache / "pages" / "index.json").read_text())["pages"]


@pytest.fixture
def pool_always(monkeypatch):
    """A `drawing.Pool` that draws even a small report in its processes."""
    monkeypatch.setattr(drawing, "POOL_COST", 0.0)


@pytest.fixture(scope="module")
def pool_drawn(tmp_path_factory):
    """The example cube's reports drawn by a pool of two processes, once for this file's tests:
    they read it, or copy its page cache before drawing into it."""
    folder = tmp_path_factory.mktemp("pool-drawn")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(drawing, "POOL_COST", 0.0)  # the pool draws even this small report
        return _run(folder, "parallel", make_cube(adversaries=ADVERSARIES), workers=2)


def test_a_pool_writes_the_reports_that_one_process_writes(tmp_path, pool_drawn):
    serial = _run(tmp_path, "serial", make_cube(adversaries=ADVERSARIES), workers=1)
    a, b = (Path(f"{o.report}.pdf") for o in (serial, pool_drawn))
    assert len(pdf_pages_text(b)) == len(pdf_pages_text(a)) > 8
    assert _texts(b) == _texts(a)  # the same pages, in the same order
    docs = {loc[0] for loc in _index(pool_drawn.cache).values()}
    assert len(docs) == 2  # one document per worker, kept by the cache
    assert {p.stem for p in (pool_drawn.cache / "pages").glob("*.pdf")} == docs
    assert not [p for p in b.parent.iterdir() if p.name.startswith(".")]


def test_a_rerun_takes_the_pools_pages_from_the_cache(tmp_path, pool_always, pool_drawn):
    cache = shutil.copytree(pool_drawn.cache, tmp_path / "cache")  # the first run's, drawn by the pool
    before = _index(cache)
    changed = make_cube(adversaries=ADVERSARIES)  # one method's l2 error under one adversary
    sel = dict(adversary="random-rho", recoverer="none", estimator="mean")
    changed["l2"].loc[sel] = changed["l2"].loc[sel] * 3
    second = _run(tmp_path, "a", changed, workers=2, cache=cache)
    after = _index(second.cache)
    kept = {d for d in after if d in before and after[d] == before[d]}
    assert kept and len(kept) >= len(after) - 4  # only the pages whose data changed were drawn again
    fresh = _run(tmp_path, "fresh", changed, workers=1)
    assert _texts(Path(f"{second.report}.pdf")) == _texts(Path(f"{fresh.report}.pdf"))


def _explode(record):
    raise ValueError("this page cannot be drawn")


def _blank(record):
    from matplotlib.figure import Figure

    return Figure()


def test_a_page_that_fails_in_a_worker_raises_its_error_here(pool_always):
    pages = [(0, Page("boom", 1, _explode, cost=2.0)), (1, Page("ok", 2, _blank))]
    with drawing.Pool(2) as pool, pytest.raises(ValueError, match="this page cannot be drawn"):
        pool(pages, {})


def test_a_failed_drawing_writes_no_report(tmp_path, monkeypatch):
    from cmbench.report import write_report

    def broken(pages, meta, svg=()):
        raise ValueError("this page cannot be drawn")

    with pytest.raises(ValueError):
        write_report([make_cube()], tmp_path / "r.pdf", draw=broken)
    assert not list(tmp_path.iterdir())


ORPHAN_PARENT = """
import os, sys, time
from cmbench.report.render.drawing import Pool
pool = Pool(2)
ex = pool._executor()
pids = set()
while len(pids) < 2:
    pids |= {f.result() for f in [ex.submit(os.getpid) for _ in range(8)]}
print(" ".join(map(str, pids)), flush=True)
time.sleep(120)  # killed by the test meanwhile: the pool is never shut down
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds processes in /proc")
def test_pool_workers_do_not_outlive_a_sigkilled_parent():
    import signal

    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_PARENT], stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in parent.stdout.readline().split()]
    try:
        assert len(pids) == 2 and all(alive(p) for p in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    finally:
        if parent.poll() is None:
            parent.kill()
        left = survivors(pids, within=20)
    assert not left, f"report workers {left} outlived their killed parent"


def test_pages_a_running_pool_can_draw_are_drawn_there_however_few(monkeypatch):
    """Once the run's sweep has started the shared pool, even cheap pages are drawn by its
    workers, not in this process: side by side, a document each, as soon as there are several
    (after the sweep the workers are idle, and the report's wall time is what is left)."""
    from cmbench import pools
    from cmbench.report.layout import TextPages, text_pages

    pools.shared(2)  # the sweep's pool, as a run leaves it
    pages = []
    for k in range(2):
        text = TextPages(f"page {k}")
        text.para("a cheap page")
        pages += text_pages(text, f"p{k}")
    assert sum(p.cost for p in pages) < drawing.POOL_COST

    def here(*args):
        raise AssertionError("drawn in this process")

    monkeypatch.setattr(drawing, "draw_here", here)
    with drawing.Pool(2) as pool:
        drawn = pool(list(enumerate(pages)), {"Title": "t"})
        one = pool(list(enumerate(pages[:1])), {"Title": "t"})
    assert sorted(indices for indices, _, _ in drawn) == [[0], [1]]  # a document per worker
    assert [indices for indices, _, _ in one] == [[0]]  # a lone page: one document


WARM_ONE = """
import os, sys, time
from pathlib import Path
from cmbench import pools
from cmbench.report.layout import TextPages, text_pages
from cmbench.report.render.drawing import POOL_COST, Pool

def census(folder, n):
    # every worker takes one: each waits until all have checked in
    Path(folder, str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(os.listdir(folder)) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return os.getpid(), "matplotlib" in sys.modules

def each_worker(folder):
    os.makedirs(folder)
    ex = pools.shared(2)
    return dict(f.result() for f in [ex.submit(census, folder, 2) for _ in range(2)])

folder = sys.argv[1]
started = each_worker(folder + "/before")  # the sweep's workers, as a run leaves them
text = TextPages("page")
text.para("a cheap page")
pages = text_pages(text, "p")
assert sum(p.cost for p in pages) < POOL_COST
with Pool(2) as pool:
    if sys.argv[2] == "warm":
        pool.warm()
    drawn = pool(list(enumerate(pages)), {"Title": "t"})
after = each_worker(folder + "/after")
print(sorted(started.values()), sorted(after.values()), len(drawn), drawn[0][1][:5], sep="|")
"""


@pytest.mark.parametrize("warm", [False, True])
def test_a_small_report_imports_matplotlib_only_in_the_worker_that_draws_it(tmp_path, warm):
    """A lone page is drawn by one worker: unless the pool was warmed (as the report step warms
    it before every report it draws there), the other worker never imports matplotlib."""
    proc = subprocess.run([sys.executable, "-c", WARM_ONE, str(tmp_path), "warm" if warm else "cold"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    started, after, documents, head = proc.stdout.strip().split("|")
    assert started == "[False, False]"  # neither worker had it before the report
    assert documents == "1" and head == "b'%PDF-'"
    assert after == ("[True, True]" if warm else "[False, True]")  # unwarmed, the other imported nothing

