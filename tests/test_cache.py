"""The stage cache: what each kind of change recomputes, eviction, damage, schema, isolation of inputs."""
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cmbench.cli import main
from cmbench.runner import Progress, run_suite
from cmbench.options import RunOptions
from conftest import PLUGINS, assert_same_cube, copy_plugin

EXTRA = (PLUGINS / "extra.py").read_text()


def suite_text(estimators='["est-a", "est-b"]', budgets="[0.0, 0.2]", recoverers='["log-fill", "none"]',
               datasets='[{name = "synthetic-gaussian", N = 80}]', extra=""):
    return textwrap.dedent(f"""
        name = "c"
        seed = 11
        plugins = ["logplug.py"]
        {extra}
        [[experiment]]
        name = "e"
        datasets = {datasets}
        instances = 2
        adversaries = ["log-hide"]
        budgets = {budgets}
        recoverers = {recoverers}
        estimators = {estimators}
        metrics = ["l2", "mahalanobis"]
    """)


@pytest.fixture
def env(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("CMBENCH_TEST_LOG", str(log))
    copy_plugin("stage_log.py", tmp_path, "logplug.py")
    return tmp_path


def write_suite(tmp_path: Path, name: str = "s.toml", **kw) -> Path:
    path = tmp_path / name
    path.write_text(suite_text(**kw))
    return path


def calls(tmp_path: Path) -> dict:
    log = tmp_path / "calls.log"
    lines = log.read_text().split() if log.exists() else []
    log.unlink(missing_ok=True)
    return {k: lines.count(k) for k in set(lines)}


def run(path, out, stats=None, **kw):
    return run_suite(path, RunOptions(out=out, **kw), stats=stats)["e"]


# 2 instances x 2 budgets = 4 units; 2 recoverers (log-fill logs); 2 estimators.

def test_cold_run_computes_each_stage_once(env):
    run(write_suite(env), env / "out")
    assert calls(env) == {"corrupt": 4, "recover": 4, "estimate:a": 8, "estimate:b": 8}


def test_unchanged_rerun_computes_nothing(env):
    path = write_suite(env)
    first = run(path, env / "out")
    calls(env)
    stats = Progress()
    again = run(path, env / "out", stats=stats)
    assert calls(env) == {}
    assert stats.cached == stats.total == 4
    assert_same_cube(first, again)


def test_adding_an_estimator_computes_only_its_cells(env):
    run(write_suite(env), env / "out")
    calls(env)
    grown = run(write_suite(env, estimators='["est-a", "est-b", "flaky"]'), env / "out")
    assert calls(env) == {"estimate:flaky": 8}
    cold = run(write_suite(env, estimators='["est-a", "est-b", "flaky"]'), env / "cold")
    assert_same_cube(grown, cold)


def test_a_cli_plugin_estimator_computes_only_its_cells(env):
    (env / "extra.py").write_text(EXTRA)
    path = write_suite(env)
    run(path, env / "out")
    calls(env)
    warm = run_suite(path, RunOptions(out=env / "out", plugins=[str(env / "extra.py")]))["e"]
    assert calls(env) == {"estimate:extra": 8}
    cold = run_suite(path, RunOptions(out=env / "cold", plugins=[str(env / "extra.py")]))["e"]
    assert_same_cube(warm, cold)


def test_reordering_lists_computes_nothing(env):
    first = run(write_suite(env), env / "out")
    calls(env)
    swapped = run(write_suite(env, estimators='["est-b", "est-a"]', budgets="[0.2, 0.0]",
                              recoverers='["none", "log-fill"]'), env / "out")
    assert calls(env) == {}
    assert_same_cube(first, swapped.sel(estimator=["est-a", "est-b"], budget=[0.0, 0.2],
                                   recoverer=["log-fill", "none"]))


def test_adding_a_budget_or_a_data_set_computes_only_the_new_units(env):
    run(write_suite(env), env / "out")
    calls(env)
    run(write_suite(env, budgets="[0.0, 0.2, 0.3]"), env / "out")
    assert calls(env) == {"corrupt": 2, "recover": 2, "estimate:a": 4, "estimate:b": 4}
    run(write_suite(env, budgets="[0.0, 0.2, 0.3]", datasets='[{name = "synthetic-gaussian", N = 80}, '
                    '{name = "synthetic-uniform", N = 80}]'), env / "out")
    assert calls(env) == {"corrupt": 6, "recover": 6, "estimate:a": 12, "estimate:b": 12}


def test_changing_a_parameter_recomputes_only_that_components_cells(env):
    run(write_suite(env), env / "out")
    calls(env)
    run(write_suite(env, estimators='[{name = "est-a", scale = 2.0}, "est-b"]'), env / "out")
    assert calls(env) == {"estimate:a": 8}
    run(write_suite(env, estimators='[{name = "est-a", scale = 2.0}, "est-b"]',
                    recoverers='[{name = "log-fill", shift = 1.0}, "none"]'), env / "out")
    # the recoverer's own recoveries and every estimate on them; nothing on "none", no corruption
    assert calls(env) == {"recover": 4, "estimate:a": 4, "estimate:b": 4}


def test_editing_a_plugin_file_recomputes_only_its_components_cells(env):
    (env / "extra.py").write_text(EXTRA)
    path = write_suite(env, estimators='["est-a", "extra"]', extra='plugins = ["logplug.py", "extra.py"]')
    path.write_text(path.read_text().replace('plugins = ["logplug.py"]\n', "", 1))
    before = run(path, env / "out")
    calls(env)
    (env / "extra.py").write_text(EXTRA.replace('"limit": 0.05', '"limit": 0.2'))
    # What a new process sees: the edited file imported afresh (no per-process memo).
    import sys
    for name in [k for k, m in sys.modules.items() if getattr(m, "__file__", None) == str((env / "extra.py").resolve())]:
        del sys.modules[name]
    copy = env / "s2.toml"
    copy.write_text(path.read_text())
    after = run(copy, env / "out")
    assert calls(env) == {"estimate:extra": 8}
    assert not np.array_equal(after["l2"].sel(estimator="extra"), before["l2"].sel(estimator="extra"))
    np.testing.assert_array_equal(after["l2"].sel(estimator="est-a"), before["l2"].sel(estimator="est-a"))


def test_failed_cells_are_recomputed_next_run_and_the_ok_cells_around_them_are_not(env):
    (env / "calls.log.fail").write_text("")
    path = write_suite(env, estimators='["est-a", "flaky"]')
    bad = run(path, env / "out")
    assert (bad["status"].sel(estimator="flaky", recoverer="log-fill") == "failed").all()
    assert (bad["status"].sel(estimator="est-a") == "ok").all()
    calls(env)
    (env / "calls.log.fail").unlink()
    good = run(path, env / "out")
    assert calls(env) == {"estimate:flaky": 8}
    assert (good["status"] == "ok").all()
    assert_same_cube(good, run(path, env / "cold"))


def test_evicted_and_torn_matrices_are_recomputed_and_cubes_stay_identical(env):
    path = write_suite(env)
    cold = run(path, env / "cold")
    cache = env / "out" / "c" / ".cache"
    # A cap below everything: the whole cache is evicted after the run; the next run recomputes all.
    assert_same_cube(cold, run(path, env / "out", cache_size="1kB"))
    assert not list(cache.rglob("*.bin")) and not list((cache / "units").glob("*.json"))
    calls(env)
    assert_same_cube(cold, run(path, env / "out", cache_size=0))
    assert calls(env) == {"corrupt": 4, "recover": 4, "estimate:a": 8, "estimate:b": 8}
    # A cap that holds the records but not the matrices: least recently used matrices go first.
    run(path, env / "out")
    records = sum(p.stat().st_size for kind in ("units", "info") for p in (cache / kind).glob("*.json"))
    calls(env)
    assert_same_cube(cold, run(path, env / "out", cache_size=records + 10))
    assert calls(env) == {} and not list(cache.rglob("*.bin")) and list((cache / "units").glob("*.json"))
    grown = write_suite(env, estimators='["est-a", "est-b", "flaky"]')
    evicted = run(grown, env / "out")  # default cap again: new matrices are kept
    assert calls(env) == {"corrupt": 4, "recover": 4, "estimate:flaky": 8}
    assert_same_cube(evicted, run(grown, env / "cold"))
    # torn matrices (half of each file) and damaged ones (one byte flipped, the size kept):
    # detected by their size or their digest, recomputed
    for k, blob in enumerate(sorted(cache.rglob("*.bin"))):
        data = bytearray(blob.read_bytes())
        if k % 2:
            data[len(data) // 2] ^= 0xFF
            blob.write_bytes(bytes(data))
        else:
            blob.write_bytes(bytes(data[: len(data) // 2]))
    calls(env)
    again = run(write_suite(env, estimators='["est-a", "est-b", "flaky", {name = "est-a", label = "a2", '
                                           'scale = 3.0}]'), env / "out")
    assert calls(env) == {"corrupt": 4, "recover": 4, "estimate:a": 8}
    assert_same_cube(again.sel(estimator=["est-a", "est-b", "flaky"]), evicted)


def test_local_workers_read_cached_matrices_themselves_and_recompute_damaged_ones(env):
    # The client sends local workers where a cached matrix lies (`MatrixRef`); one damaged after the
    # client looked (same size, one byte flipped: the client checks only the size) is recomputed
    # by the worker, never used.
    path = write_suite(env)
    cold = run(path, env / "out", workers=2)
    for blob in sorted((env / "out" / "c" / ".cache").rglob("*.bin")):
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0xFF
        blob.write_bytes(bytes(data))
    calls(env)
    stats = Progress()
    grown = run(write_suite(env, estimators='["est-a", "est-b", {name = "est-a", label = "a2", scale = 3.0}]'),
                env / "out", workers=2, stats=stats)
    assert calls(env) == {"corrupt": 4, "recover": 4, "estimate:a": 8}
    assert stats.damaged == 8  # the two recoveries of each unit, found damaged by the workers, are counted
    assert_same_cube(grown.sel(estimator=["est-a", "est-b"]), cold)
    assert (grown["status"] == "ok").all()


def test_a_matrix_reference_reads_back_only_the_bytes_it_names(tmp_path):
    from cmbench.runner.matrices import MatrixRef, matrix_digest

    blob = bytes(range(200))
    path = tmp_path / "m.bin"
    path.write_bytes(blob)
    ref = MatrixRef(str(path), len(blob), matrix_digest(blob))
    assert ref.read() == blob
    path.write_bytes(blob[:100])
    assert ref.read() is None  # torn
    path.write_bytes(bytes([blob[0] ^ 1]) + blob[1:])
    assert ref.read() is None  # damaged, same size
    path.unlink()
    assert ref.read() is None  # evicted


def test_a_well_formed_entry_with_a_malformed_body_is_recomputed(env):
    path = write_suite(env)
    first = run(path, env / "out")
    import hashlib

    from cmbench.runner.store import canonical

    docs = sorted((env / "out" / "c" / ".cache" / "units").glob("*.json"))
    spoils = [
        lambda b: next(iter(b["cells"].values())).update(status="bogus"),
        lambda b: next(iter(b["cells"].values())).update(l2="not a number"),
        lambda b: b["recoveries"].update({"zz": {"status": "ok"}}),
        lambda b: b.update(corruption=[1, 2]),
    ]
    for doc_path, spoil in zip(docs, spoils):
        doc = json.loads(doc_path.read_text())
        spoil(doc["body"])
        doc["checksum"] = hashlib.sha256(canonical(doc["body"]).encode()).hexdigest()  # a valid checksum
        doc_path.write_text(json.dumps(doc))
    calls(env)
    stats = Progress()
    again = run(path, env / "out", stats=stats)
    assert calls(env)["corrupt"] == 4
    assert stats.damaged == 4
    assert_same_cube(first, again)


def test_an_estimator_writing_into_its_input_cannot_change_other_cells(env):
    (env / "vandal.py").write_text(textwrap.dedent('''
        import numpy as np, cmbench

        def vandal(X, *, rng):
            X.setflags(write=True)
            X[:] = 1000
            return np.nanmean(X, 0)

        @cmbench.hookimpl
        def register_estimators():
            return [cmbench.Estimator("vandal", vandal)]
    '''))
    clean = run(write_suite(env, estimators='["mean", "cmedian"]'), env / "clean")
    path = write_suite(env, "v.toml", estimators='["mean", "vandal", "cmedian"]')
    path.write_text(path.read_text().replace('plugins = ["logplug.py"]', 'plugins = ["logplug.py", "vandal.py"]'))
    ds = run(path, env / "out")
    np.testing.assert_array_equal(ds["l2"].sel(estimator="cmedian").values,
                                  clean["l2"].sel(estimator="cmedian").values)
    assert (ds["status"].sel(estimator="cmedian") == "ok").all()
    assert (ds["status"].sel(estimator="vandal") == "failed").all()
    assert "vandal.py" in str(ds["error"].sel(estimator="vandal").values.flat[0])


def test_a_write_around_numpy_is_caught_by_the_digest_check():
    from cmbench.runner.matrices import frozen
    from cmbench.runner.contracts import FAILED, OK, Outcome, _known_digest, untouched

    X = frozen(np.arange(6.0).reshape(3, 2))
    _known_digest(X)
    assert untouched(Outcome(OK), X).status == OK
    import ctypes

    ctypes.memmove(X.ctypes.data, np.full(6, 7.0).ctypes.data, 8)  # what setflags cannot allow
    assert untouched(Outcome(OK), X).status == FAILED


def test_no_resume_and_cache_clear_delete_only_what_cmbench_wrote(env):
    path = write_suite(env)
    out = env / "out"
    run(path, out)
    cache = out / "c" / ".cache"
    mine = cache / "units" / "notes.json"
    mine.write_text("{}")
    beside = cache / "mine.json"
    beside.write_text("{}")
    calls(env)
    run(path, out, resume=False)
    assert calls(env)["corrupt"] == 4
    assert mine.exists() and beside.exists()
    result = CliRunner().invoke(main, ["cache", "info", "--out", str(out)])
    assert result.exit_code == 0 and "c " in result.output, result.output
    result = CliRunner().invoke(main, ["cache", "clear", "c", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert not list((cache / "units").glob("*[0-9a-f].json")) and not list((cache / "matrices").glob("*"))
    assert mine.exists() and beside.exists()
    # a folder without cmbench's marker is never cleared
    (cache / "CMBENCH_CACHE.json").unlink()
    (cache / "units" / ("0" * 64 + ".json")).write_text("{}")
    CliRunner().invoke(main, ["cache", "clear", "--out", str(out)])
    assert (cache / "units" / ("0" * 64 + ".json")).exists()


def test_cache_size_is_checked(env):
    path = write_suite(env, extra='cache_size = "lots"')
    result = CliRunner().invoke(main, ["suite", str(path), "--out", str(env / "out"), "--no-report"])
    assert result.exit_code == 2 and "cache_size" in result.output + result.stderr
    result = CliRunner().invoke(main, ["suite", str(write_suite(env)), "--out", str(env / "out"),
                                       "--no-report", "--cache-size", "-3"])
    assert result.exit_code == 2


def test_matrices_round_trip_bit_for_bit():
    from cmbench.runner.matrices import Damaged, decode, encode

    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 7))
    M = X.copy()
    M[rng.random(X.shape) < 0.3] = np.nan
    M[0, 0] = -0.0 if X[0, 0] == 0 else X[0, 0] + 1e-300
    blob = encode(M, X)
    back = decode(blob, X)
    assert back.tobytes() == M.tobytes()
    with pytest.raises(ValueError):
        back.setflags(write=True)
    with pytest.raises(Damaged):
        decode(blob[: len(blob) // 2], X)


def test_a_rerun_that_computes_nothing_rewrites_nothing_and_cache_clear_deletes_only_the_drawn_pages(env):
    """Then `cmbench cache clear` deletes the drawn pages and the report stamps, and nothing else
    (a file of the user's among them, the reports): on this run's cache, drawn once for both."""
    import cmbench

    path = write_suite(env)
    out = env / "out"
    first = cmbench.run_suite(path, out=out, report=True)["e"]
    cube, pdf, html = out / "c" / "e.nc", out / "c.pdf", out / "c.html"
    stamps = {p: p.stat().st_mtime_ns for p in (cube, pdf, html)}
    again = cmbench.run_suite(path, out=out, report=True)["e"]
    assert {p: p.stat().st_mtime_ns for p in (cube, pdf, html)} == stamps
    assert again.attrs["created"] == first.attrs["created"]
    pdf.unlink()
    cube.write_bytes(b"")  # damaged or deleted outputs are always written anew
    cmbench.run_suite(path, out=out, report=True)
    assert pdf.stat().st_size > 0
    import xarray as xr

    with xr.open_dataset(cube) as ds:
        assert_same_cube(ds.load(), first)

    pages = out / "c" / ".cache" / "pages"
    drawn = sorted(p.name for p in pages.iterdir())
    assert "index.json" in drawn and "reports.json" in drawn and any(n.endswith(".pdf") for n in drawn)
    (pages / "mine.pdf").write_text("not cmbench's")
    result = CliRunner().invoke(main, ["cache", "clear", "c", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in pages.iterdir()) == ["mine.pdf"]
    assert pdf.is_file() and html.is_file()  # reports stay


def test_the_runner_draws_no_report_and_never_imports_the_report_package(env):
    import subprocess
    import sys

    code = ("import sys; from cmbench.runner import run_suite, Progress; from cmbench.options import RunOptions; "
            f"s = Progress(); run_suite({str(write_suite(env))!r}, RunOptions(out={str(env / 'out')!r}), stats=s); "
            "print(sorted(m for m in sys.modules if m.startswith('cmbench.report')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert not (env / "out" / "c.pdf").exists()
    with pytest.raises(TypeError, match="draws no report"):
        run_suite(write_suite(env), RunOptions(out=env / "out", report=True))

