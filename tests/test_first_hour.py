"""What a new user meets in the first hour, and results that looked fine and were not.

Each test holds one defect found by trying cmbench as a newcomer would: a
summary that said "0 cached" for a run served mostly from the cache, paths
printed that do not exist, parameters accepted that fail every cell, output
files written through links, adversaries whose broken output was blamed on a
recoverer, a plugin that declares nothing taken silently, and error messages
that named the wrong thing.
"""
from __future__ import annotations

import ast
import math
import os
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

import cmbench
from cmbench.cli import main
from cmbench.errors import DataError, PluginError, SuiteError, UserError
from cmbench.plugins import describe_params, load_plugins
from cmbench.suite import load_suite
from conftest import GOOD, assert_user_error, cli_inproc, good_suite, open_cube, write

TESTS = Path(__file__).resolve().parent


def run(*args, env=None) -> "click.testing.Result":  # noqa: F821
    """The click command in-process, stdout and stderr apart; an escaping exception fails the test."""
    result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


# ------------------------------------------------------------------ the summary and what it prints

def test_the_summary_counts_cells_from_the_cache_and_gives_the_elapsed_time(tmp_path):
    suite, out = good_suite(tmp_path), tmp_path / "out"
    first = run("suite", suite, "--out", out, "--no-report", "--workers", "1")
    assert first.exit_code == 0, first.stderr
    assert "8 cells (0 from the cache; 2 units, 0 wholly cached) in " in first.stdout, first.stdout
    # a new estimator: every unit has work, but the 8 cells of the others come from the cache
    write(suite, GOOD.replace('estimators = ["mean", "cmedian"]', 'estimators = ["mean", "cmedian", "sanitize"]'))
    second = run("suite", suite, "--out", out, "--no-report", "--workers", "1")
    assert second.exit_code == 0, second.stderr
    line = next(x for x in second.stdout.splitlines() if x.startswith("12 cells"))
    assert line.startswith("12 cells (8 from the cache; 2 units, 0 wholly cached) in "), line
    assert " s: 12 ok" in line or " min " in line, line


def test_a_selection_of_the_whole_suite_prints_the_paths_it_wrote(tmp_path):
    out = tmp_path / "out"
    result = run("suite", good_suite(tmp_path), "--out", out, "--no-report", "--workers", "1", "-k", "*")
    assert result.exit_code == 0, result.stderr
    cubes = next(x for x in result.stdout.splitlines() if x.startswith("cubes: "))
    folder = Path(cubes.split(": ", 1)[1])
    assert folder == out / "r" and (folder / "e.nc").is_file() and not (out / "r" / "slice").exists()


def test_report_help_and_dry_run_name_the_pdf_and_the_html(tmp_path):
    helped = run("suite", "--help").stdout
    assert "SUITE.pdf and OUT/SUITE.html" in " ".join(helped.split())
    planned = run("suite", good_suite(tmp_path), "--out", tmp_path / "o", "--dry-run")
    assert planned.exit_code == 0, planned.stderr
    assert f"report {tmp_path / 'o' / 'r'}.pdf and {tmp_path / 'o' / 'r'}.html" in planned.stdout


def test_python_dash_m_cmbench_is_the_command():
    done = subprocess.run([sys.executable, "-m", "cmbench", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("cmbench, version "), done.stderr


# ------------------------------------------------------------------ parameters of the built-ins

#: built-in parameters that take free text or a structure: no choices or range to declare
FREE = {("datasets", "csv", "path"), ("datasets", "csv", "sep"), ("datasets", "csv", "columns"),
        ("datasets", "gaussian", "mean")}


def test_every_builtin_string_has_choices_and_every_number_a_range():
    registry = load_plugins()
    undeclared = []
    for kind in ("datasets", "adversaries", "recoverers", "estimators", "metrics"):
        for name, decl in registry.kind(kind).items():
            if not str(registry.source(kind, name).plugin).startswith("cmbench."):
                continue
            for key, default in decl.params.items():
                if (kind, name, key) in FREE or isinstance(default, (bool, list, tuple, dict)):
                    continue
                if isinstance(default, str) and key not in decl.choices:
                    undeclared.append(f"{name}.{key} (choices)")
                if isinstance(default, (int, float)) and key not in decl.ranges and key not in decl.choices:
                    undeclared.append(f"{name}.{key} (range)")
    assert not undeclared, undeclared


@pytest.mark.parametrize("item, needles", [
    ('{name = "ithsvd", svd = "exactt"}', ["svd'", "'exactt' is not one of", "did you mean 'exact'?"]),
    ('{name = "ithsvd", init = "mdian"}', ["init'", "did you mean 'median'?"]),
    ('{name = "ithsvd", tol = nan}', ["tol'", "nan is not a number"]),
    ('{name = "ithsvd", max_iter = -1}', ["max_iter'", "-1 is outside [0, inf)"]),
])
def test_a_bad_recoverer_parameter_is_refused_by_the_dry_run(tmp_path, item, needles):
    suite = good_suite(tmp_path, 'recoverers = ["none", "exact"]', f'recoverers = ["none", {item}]')
    code, err = cli_inproc("suite", suite, "--dry-run")
    assert_user_error(code, err, str(suite), *needles)


@pytest.mark.parametrize("kind, item, needle", [
    ("datasets", '{name = "gaussian", sd = inf}', "inf is not a finite number"),
    ("datasets", '{name = "gaussian", samples_per_dim = inf}', "inf is not a finite number"),
    ("datasets", '{name = "gaussian", sd = -1.0}', "-1.0 is outside (0.0, inf)"),
    ("estimators", '{name = "filter", C = inf}', "inf is not a finite number"),
    ("estimators", '{name = "filter", tau = nan}', "nan is not a number"),
    ("estimators", '{name = "geometric-median", tol = -1e-3}', "-0.001 is outside [0.0, inf)"),
])
def test_nan_inf_and_negative_numbers_are_refused_when_the_suite_loads(tmp_path, kind, item, needle):
    old = {"datasets": 'datasets = [{name = "synthetic-gaussian", N = 60}]',
           "estimators": 'estimators = ["mean", "cmedian"]'}[kind]
    suite = good_suite(tmp_path, old, f"{kind} = [{item}]")
    with pytest.raises(SuiteError, match=None) as caught:
        load_suite(suite)
    assert needle in str(caught.value), caught.value


def test_rank_is_a_parameter_only_of_recoverers_that_read_it(tmp_path):
    registry = load_plugins()
    assert "rank" not in [p["name"] for p in describe_params(registry.recoverers["none"])]
    assert "rank" in [p["name"] for p in describe_params(registry.recoverers["ithsvd"])]
    listed = run("plugins", "--params").stdout
    row = next(x for x in listed.splitlines() if x.split()[:2] == ["recoverer", "none"])
    assert row.rstrip().endswith("-") and "rank" not in row
    suite = good_suite(tmp_path, 'recoverers = ["none", "exact"]', 'recoverers = [{name = "none", rank = 3}]')
    with pytest.raises(SuiteError, match="recoverer 'none' has no parameter 'rank'"):
        load_suite(suite)


def test_integer_parameters_stay_integers_in_the_cube_and_the_table(tmp_path):
    cubes = cmbench.run_suite(good_suite(tmp_path), out=tmp_path / "out")
    ds = cubes["e"]
    assert ds["dataset_N"].dtype == np.int64 and ds["dataset_N"].values.tolist() == [60]
    table = cmbench.to_frame(ds)
    column = next(c for c in table.columns if c.endswith("dataset_N"))
    assert table[column].dtype.kind == "i" and set(table[column]) == {60}
    assert open_cube(tmp_path / "out" / "r" / "e.nc")["dataset_N"].dtype == np.int64


# ------------------------------------------------------------------ cmbench check

BAD_PARAMS = '''
import numpy as np, cmbench

def good(X, *, rng):
    return np.nanmean(X, axis=0)

def bad(X, *, rng, scale=1.0):
    return np.nanmean(X, axis=0)

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("bad-one", bad, params={"scael": 2.0}),
            cmbench.Estimator("bad-two", bad, params={"scale": 2.0}, ranges={"scale": (3.0, None)}),
            cmbench.Estimator("good-one", good)]
'''


def test_check_reports_every_bad_params_declaration_and_checks_the_rest(tmp_path):
    plugin = write(tmp_path / "mixed.py", BAD_PARAMS)
    result = run("check", "--plugin", plugin)
    lines = result.stdout.splitlines()
    assert result.exit_code == 1, result.output
    assert any(x.startswith("FAIL estimator bad-one: params") and "scael" in x for x in lines), lines
    assert any(x.startswith("FAIL estimator bad-two: params") and "outside" in x for x in lines), lines
    assert [x for x in lines if x.startswith("PASS estimator good-one")], lines
    assert "3 components" in lines[-1], lines[-1]
    with pytest.raises(PluginError, match="bad-one"):  # a suite still refuses the plugin
        load_plugins([str(plugin)])


def test_check_with_a_negative_seed_is_one_line(tmp_path):
    code, err = cli_inproc("check", "--seed", "-1", "mean")
    assert_user_error(code, err, "--seed", "-1")


EXITS = '''
import sys, time
import numpy as np, cmbench

def exits(X, *, rng):
    sys.exit(3)

def slow(X, *, rng):
    time.sleep(30)
    return np.nanmean(X, axis=0)

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("exits", exits), cmbench.Estimator("slow", slow)]
'''


def test_check_never_passes_a_check_it_could_not_run(tmp_path):
    plugin = write(tmp_path / "exits.py", EXITS)
    result = run("check", "--plugin", plugin, "--timeout", "0.5")
    lines = result.stdout.splitlines()
    for name in ("exits", "slow"):
        mine = [x for x in lines if x.split()[1:3] == ["estimator", f"{name}:"]]
        assert mine[0].startswith("FAIL"), mine
        # same-rng could not be judged on an output that never came: not PASS (whether the input
        # was modified is seen on the call that was made, even one that raised)
        judged = [x for x in mine[1:] if "same result for the same rng" in x]
        assert judged and all(x.startswith("SKIP") and "not run" in x for x in judged), mine


# ------------------------------------------------------------------ plugins that declare nothing

UNMARKED = '''
import numpy as np, cmbench

def register_estimators():  # no @cmbench.hookimpl
    return [cmbench.Estimator("m", lambda X, *, rng: np.nanmean(X, 0))]
'''


def test_a_plugin_file_that_declares_nothing_is_an_error_in_suite_plugins_and_run_suite(tmp_path):
    plugin = write(tmp_path / "unmarked.py", UNMARKED)
    code, err = cli_inproc("plugins", "--plugin", plugin)
    assert_user_error(code, err, str(plugin), "declares no component", "register_estimators",
                      "@cmbench.hookimpl")
    code, err = cli_inproc("suite", good_suite(tmp_path), "--plugin", plugin, "--dry-run")
    assert_user_error(code, err, "declares no component")
    suite = good_suite(tmp_path, 'seed = 3', 'seed = 3\nplugins = ["unmarked.py"]', name="with.toml")
    with pytest.raises(PluginError, match="declares no component"):
        cmbench.run_suite(suite, out=tmp_path / "out")


@pytest.mark.parametrize("plugin", [None, 42, lambda: None, textwrap])
def test_a_plugin_object_that_declares_nothing_is_an_error(tmp_path, plugin):
    with pytest.raises(PluginError, match="declares no component"):
        load_suite(good_suite(tmp_path), plugins=[plugin])


def test_plugins_given_as_one_string_are_refused_with_the_list_to_write(tmp_path):
    with pytest.raises(PluginError, match=r"got the string 'x.py'; write plugins=\['x.py'\]"):
        cmbench.run_suite(good_suite(tmp_path), out=tmp_path / "out", plugins="x.py")


# ------------------------------------------------------------------ suite files and dict suites

def test_a_dict_suite_is_named_dict_not_after_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = {"name": "d", "experiment": [{"name": "e", "datasets": ["synthetic-gaussian"], "budgets": [1.5],
                                        "adversaries": ["hide-smallest"], "recoverers": ["none"],
                                        "estimators": ["mean"]}]}
    with pytest.raises(SuiteError) as caught:
        load_suite(doc)
    assert str(caught.value).startswith("<dict>: key 'experiment[0].budgets[0]'"), caught.value
    assert str(tmp_path) not in str(caught.value)


def test_a_dict_suite_that_contains_itself_is_one_line():
    doc = {"name": "d", "experiment": []}
    doc["experiment"].append(doc)
    with pytest.raises(SuiteError, match=r"<dict>: key 'experiment\[0\]': contains itself"):
        load_suite(doc)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes (POSIX)")
def test_a_fifo_a_device_or_a_folder_is_named_as_what_it_is(tmp_path):
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    (tmp_path / "folder.toml").mkdir()
    for path, what in ((fifo, "is a FIFO (named pipe), not a file"),
                       (tmp_path / "folder.toml", "is a folder, not a file"),
                       (Path(os.devnull), "is a character device, not a file")):
        code, err = cli_inproc("suite", path, "--dry-run")
        assert_user_error(code, err, str(path), what)
    (tmp_path / "plug.py").mkdir()
    suite = good_suite(tmp_path, 'seed = 3', 'seed = 3\nplugins = ["plug.py"]')
    code, err = cli_inproc("suite", suite, "--dry-run")
    assert_user_error(code, err, "plugins[0]", "plug.py is a folder, not a .py file")


def test_a_folder_named_like_a_shipped_suite_does_not_hide_it(tmp_path, monkeypatch):
    """`cmbench suite paper` from a folder holding a ``paper/`` (a researcher's LaTeX sources,
    or the run's own output folder) runs the shipped suite; a bare name that is a folder and
    no shipped suite is still named as a folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "paper").mkdir()
    (tmp_path / "notes").mkdir()
    code, out = cli_inproc("suite", "paper", "--dry-run")
    assert code == 0, out
    code, err = cli_inproc("suite", "notes", "--dry-run")
    assert_user_error(code, err, "notes", "is a folder, not a file")


# ------------------------------------------------------------------ --dry-run checks what the run checks

def test_dry_run_refuses_what_the_run_refuses(tmp_path, monkeypatch):
    suite = good_suite(tmp_path)
    out = tmp_path / "out"
    (out / "r.html").mkdir(parents=True)  # a folder where the report goes
    code, err = cli_inproc("suite", suite, "--out", out, "--dry-run")
    assert_user_error(code, err, str(out / "r.html"), "a folder")
    code, err = cli_inproc("suite", suite, "--out", out, "--dry-run", "--no-report")
    assert code == 0, err
    monkeypatch.setenv("CMBENCH_MAX_FILE_GB", "-1")
    code, err = cli_inproc("suite", suite, "--out", tmp_path / "o2", "--dry-run")
    assert_user_error(code, err, "CMBENCH_MAX_FILE_GB")
    monkeypatch.delenv("CMBENCH_MAX_FILE_GB")
    (tmp_path / "file").write_text("x")
    code, err = cli_inproc("suite", suite, "--out", tmp_path / "file" / "o", "--dry-run")
    assert_user_error(code, err, "is a file, not a folder")
    assert not (tmp_path / "o2").exists()


def test_dry_run_refuses_an_output_folder_on_a_read_only_file_system(tmp_path):
    from test_safety import _read_only_folder

    readonly = _read_only_folder()
    if readonly is None:
        pytest.skip("no read-only file system to write into")
    out = readonly / "cmbench-out"
    code, err = cli_inproc("suite", good_suite(tmp_path), "--out", out, "--no-report")
    assert_user_error(code, err, str(out))  # the run refuses it ...
    code, err = cli_inproc("suite", good_suite(tmp_path), "--out", out, "--dry-run")
    assert_user_error(code, err, f"cannot write the output folder {out}")  # ... and so does the dry run


def test_a_tiny_file_size_limit_is_said_in_bytes(tmp_path, monkeypatch):
    from cmbench.data import open_user_file

    data = tmp_path / "x.csv"
    data.write_bytes(b"a,b\n" * 25)
    monkeypatch.setenv("CMBENCH_MAX_FILE_GB", "1e-10")
    with pytest.raises(DataError) as caught:
        open_user_file(data, "data set csv")
    assert "is 100 B, above the limit of 0 B" in str(caught.value), caught.value


def test_datasets_derive_with_an_unknown_name_makes_no_folder(tmp_path):
    out = tmp_path / "derived"
    code, err = cli_inproc("datasets", "derive", "no-such-set", "--out", out)
    assert_user_error(code, err, "no-such-set")
    assert not out.exists()


# ------------------------------------------------------------------ writing files

def test_tables_never_write_through_a_link_in_their_folder(smoke_run, tmp_path):
    cube = shutil.copy(smoke_run / "smoke" / "synthetic.nc", tmp_path / "cube.nc")
    tables = tmp_path / "tables"
    result = run("report", cube, "-o", tmp_path / "r.html", "--tables", tables)
    assert result.exit_code == 0, result.stderr
    names = sorted(p.name for p in tables.iterdir())
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.csv"
    victim.write_text("a,b\n1,2\n")
    # a hard link: replaced by a new file, the one outside is untouched
    hard = tables / names[0]
    hard.unlink()
    os.link(victim, hard)
    result = run("report", cube, "-o", tmp_path / "r.html", "--tables", tables)
    assert result.exit_code == 0, result.stderr
    assert victim.read_text() == "a,b\n1,2\n" and not os.path.samefile(victim, hard)
    # a symbolic link: refused, naming it
    sym = tables / names[1]
    sym.unlink()
    sym.symlink_to(victim)
    code, err = cli_inproc("report", cube, "-o", tmp_path / "r.html", "--tables", tables)
    assert_user_error(code, err, str(sym), "symbolic link")
    assert victim.read_text() == "a,b\n1,2\n"


def test_experiments_whose_names_give_one_file_name_write_apart(smoke_run, tmp_path):
    from cmbench.report.content.paper_tables import write_tables

    cubes = []
    for name in ("a+b", "a-b", "A-B"):
        with xr.open_dataset(smoke_run / "smoke" / "synthetic.nc") as ds:
            ds = ds.load()
        ds.attrs["experiment"] = name
        path = tmp_path / f"{len(cubes)}.nc"
        ds.to_netcdf(path)
        cubes.append(path)
    written = write_tables(cubes, tmp_path / "tables")
    assert len(written) == len({p.name.casefold() for p in written}) == len(list((tmp_path / "tables").iterdir()))


FSIZE_SCRIPT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
from cmbench.cli import run
sys.argv = ["cmbench", "suite", {suite!r}, "--out", {out!r}, "--no-report", "--workers", "1"]
run()
"""


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="needs RLIMIT_FSIZE (POSIX)")
def test_a_file_size_limit_during_the_run_is_one_line(tmp_path):
    suite, out = good_suite(tmp_path), tmp_path / "out"
    script = FSIZE_SCRIPT.format(limit=2000, suite=str(suite), out=str(out))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert_user_error(done.returncode, done.stderr, "file size limit (ulimit -f)")
    assert not list(out.rglob("*.tmp")), list(out.rglob("*"))  # nothing half-written is left


# ------------------------------------------------------------------ adversaries, ranks, estimators

def test_a_replace_mode_adversary_may_not_hide_nor_put_inf(tmp_path):
    from cmbench.runner.contracts import check_corruption
    from cmbench.suite import Entry

    adv = Entry("x", load_plugins().adversaries["replace-values"], {})
    X = np.arange(20.0).reshape(10, 2)
    for bad, needle in ((np.nan, "hid an entry"), (np.inf, "put inf")):
        Y = X.copy()
        Y[0, 0] = bad
        with pytest.raises(ValueError, match=needle):
            check_corruption(Y, X, adv, 0.5)


def test_a_mixture_adversary_that_hides_fails_its_own_cells_not_the_recoverers(tmp_path):
    suite = good_suite(tmp_path, 'adversaries = ["hide-smallest"]',
                       'adversaries = [{name = "replace-mixture", components = '
                       '[{kind = "cauchy", weight = 1.0, shift = 0.0, scale = nan}]}]')
    write(suite, suite.read_text().replace('recoverers = ["none", "exact"]', 'recoverers = ["none"]'))
    ds = cmbench.run_suite(suite, out=tmp_path / "out")["e"]
    hit = ds.sel(budget=0.2)
    assert set(hit["status"].values.ravel()) == {"failed"}, hit["status"].values
    assert all("replace-mode adversary but hid an entry" in e for e in hit["error"].values.ravel())
    assert set(ds.sel(budget=0.0)["status"].values.ravel()) == {"ok"}


def test_rank_gives_no_rank_to_a_method_without_values(tmp_path):
    suite = good_suite(tmp_path, 'adversaries = ["hide-smallest"]', 'adversaries = ["replace-values"]')
    write(suite, suite.read_text().replace('recoverers = ["none", "exact"]', 'recoverers = ["none", "ithsvd"]'))
    cube = cmbench.run_suite(suite, out=tmp_path / "out")["e"]  # ithsvd handles no replace mode
    ranked = cmbench.rank(cube)
    without = ranked[ranked["cells"] == 0]
    assert len(without) == 2 and without["rank"].isna().all(), ranked
    assert ranked.loc[ranked["cells"] > 0, "rank"].tolist() == [1, 2]


def test_median_of_means_names_itself_on_inf():
    from cmbench.builtins.sample_estimators import median_of_means

    X = np.ones((40, 3))
    X[::2, 1] = np.inf
    with pytest.raises(cmbench.Undefined, match="^median-of-means: "):
        median_of_means(X, rng=np.random.default_rng(0), median="geometric")


@pytest.mark.parametrize("name", ["lrv", "filter", "median-of-means"])
def test_estimators_on_data_near_1e300_rescale_instead_of_failing(name):
    decl = load_plugins().estimators[name]
    X = np.random.default_rng(1).standard_normal((300, 6)) + 2.0
    small = decl.fn(X, rng=np.random.default_rng(2), **decl.params)
    huge = decl.fn(X * 2.0 ** 990, rng=np.random.default_rng(2), **decl.params)  # about 1e298
    assert np.isfinite(huge).all()
    np.testing.assert_allclose(huge / 2.0 ** 990, small, rtol=1e-12)


# ------------------------------------------------------------------ cmbench info, pytest's skips

def test_info_shows_the_users_part_of_a_docstring():
    from cmbench.plugins import user_doc

    result = run("info", "estimator:filter")
    assert result.exit_code == 0, result.stderr
    assert "Parameters" in result.stdout and "eps :" in result.stdout
    assert "Notes\n" not in result.stdout and "Measured on" not in result.stdout
    doc = "Summary.\n\nParameters\n----------\na : x.\n\nNotes\n-----\nHistory.\n\nReferences\n----------\nR."
    assert user_doc(doc) == "Summary.\n\nParameters\n----------\na : x.\n\nReferences\n----------\nR."


def _skip_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "skip" and not node.args and not node.keywords:
                yield node, "pytest.skip() without a reason"
            if node.func.attr == "skipif" and not any(k.arg == "reason" for k in node.keywords):
                yield node, "skipif without reason="


def test_every_skip_says_why_and_pytest_prints_it():
    import tomllib

    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-rs" in config["addopts"].split()  # the summary lists each skip's reason
    trees = {path: ast.parse(path.read_text()) for path in sorted(TESTS.glob("test_*.py"))}  # parsed once
    bare = [f"{path.name}:{node.lineno}: {what}" for path, tree in trees.items()
            for node, what in _skip_calls(tree)]
    assert not bare, bare
    reasons = [node.value for tree in trees.values()
               for call in ast.walk(tree) if isinstance(call, ast.Call)
               for node in [*call.args, *(k.value for k in call.keywords if k.arg == "reason")]
               if isinstance(node, ast.Constant) and isinstance(node.value, str)
               and isinstance(call.func, ast.Attribute) and call.func.attr in ("skip", "skipif")]
    needs_data = [r for r in reasons if "real data" in r or "CMBENCH_DATA_DIR" in r]
    assert needs_data and all("CMBENCH_DATA_DIR" in r for r in needs_data), needs_data
