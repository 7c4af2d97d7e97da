"""The notebook-first Python API: `cmbench.run_suite` with suites as dicts or text and plugins as
objects (shipped to workers by value), `to_frame` of what a run returns, `cmbench.claims`."""
import dataclasses
import importlib
import inspect
import os
import subprocess
import sys
import textwrap
import threading
import types

import numpy as np
import pytest

import cmbench
import cmbench.runner
from cmbench.options import RunOptions


def shrunk_mean(X, *, rng, shrink=0.5):
    """The column means pulled towards zero: a deliberately biased estimator."""
    return (1.0 - shrink) * np.nanmean(X, axis=0)


class ShrinkPlugin:
    """A plugin as an object of this test module: a method named like the hook, no marker."""

    def register_estimators(self):
        return [cmbench.Estimator("shrunk-mean", shrunk_mean, ranges={"shrink": (0.0, 1.0)})]


def grid_suite(**experiment) -> dict:
    exp = {"name": "e", "datasets": [{"name": "synthetic-gaussian", "N": [60, 120]}], "instances": 1,
           "adversaries": ["hide-smallest"], "budgets": [0.0, 0.2], "recoverers": ["none"],
           "estimators": ["mean", {"name": "shrunk-mean", "shrink": 0.25}]}
    exp.update(experiment)
    return {"name": "api", "seed": 7, "experiment": [exp]}


def test_a_dict_suite_with_a_grid_over_N_and_an_object_plugin_runs_with_two_workers(tmp_path):
    cubes = cmbench.run_suite(grid_suite(), out=tmp_path / "out", workers=2, plugins=[ShrinkPlugin()])
    ds = cubes["e"]
    assert (ds["status"].values == "ok").all(), set(ds["error"].values.ravel())
    df = cmbench.to_frame(cubes)
    assert sorted(set(df["p_dataset_N"])) == [60.0, 120.0]
    assert (df["p_dataset_N"] == df["dataset"].str.split("_").str[-1].astype(float)).all()
    shrunk = df[df["estimator"] == "shrunk-mean"]
    assert set(shrunk["p_estimator_shrink"]) == {0.25} and df[df.estimator == "mean"]["p_estimator_shrink"].isna().all()
    # the object's estimator computed what it says: 0.75 times the mean's estimate, at budget 0
    clean = ds.sel(budget=0.0, recoverer="none", adversary="hide-smallest", instance=0)
    assert not np.allclose(clean["l2"].sel(estimator="shrunk-mean"), clean["l2"].sel(estimator="mean"))
    assert (tmp_path / "out" / "api" / "e.nc").is_file()
    assert not (tmp_path / "out" / "api.pdf").exists()  # report=False is the API's default


def test_a_notebook_main_module_estimator_is_shipped_by_value_to_spawned_workers(tmp_path):
    """As in a Jupyter kernel: the estimator lives in ``__main__`` only, and the workers are
    fresh processes whose own ``__main__`` does not have it. Given as a plugin object, then by
    the module's name, in one interpreter: the second run's workers are the first's, still
    without it (each job carries the estimator it runs)."""
    code = textwrap.dedent(f"""
        import types, numpy as np, cmbench
        def halved(X, *, rng):
            return 0.5 * np.nanmean(X, axis=0)
        @cmbench.hookimpl
        def register_estimators():
            return [cmbench.Estimator("halved", halved)]
        plugin = types.SimpleNamespace(register_estimators=register_estimators)
        suite = {{"name": "nb", "experiment": [{{"name": "e", "datasets": [{{"name": "synthetic-gaussian", "N": 60}}],
                  "adversaries": ["hide-smallest"], "budgets": [0.1, 0.2], "recoverers": ["none"],
                  "estimators": ["mean"]}}]}}
        for k, given in enumerate(([plugin], ["__main__"])):
            ds = cmbench.run_suite(suite, out={str(tmp_path)!r} + f"/out{{k}}", workers=2, plugins=given)["e"]
            print(sorted(set(ds["status"].values.ravel().tolist())), ds["estimator"].values.tolist())
    """)
    env = dict(os.environ, CMBENCH_WORKER_START="spawn")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["['ok'] ['mean', 'halved']"] * 2


def test_an_edited_plugin_object_recomputes_its_cells(tmp_path):
    suite = grid_suite(estimators=["mean"])

    def plugin(scale):
        fn = lambda X, *, rng: scale * np.nanmean(X, axis=0)  # noqa: E731
        return types.SimpleNamespace(register_estimators=lambda: [cmbench.Estimator("scaled", fn)])

    first = cmbench.run_suite(suite, out=tmp_path / "out", plugins=[plugin(0.5)])["e"]
    second = cmbench.run_suite(suite, out=tmp_path / "out", plugins=[plugin(0.9)])["e"]
    a, b = (c["l2"].sel(estimator="scaled").values for c in (first, second))
    assert not np.allclose(a, b)  # never the cached cells of the old code
    np.testing.assert_array_equal(first["l2"].sel(estimator="mean"), second["l2"].sel(estimator="mean"))


def test_a_suite_as_toml_text_or_a_suite_object(tmp_path):
    text = textwrap.dedent("""
        name = "text"
        [[experiment]]
        name = "e"
        datasets = [{ name = "synthetic-gaussian", N = 60 }]
        adversaries = ["hide-smallest"]
        budgets = [0.1]
        recoverers = ["none"]
        estimators = ["mean", "cmedian"]
        methods = { "Empirical Mean" = ["none", "mean"] }
    """)
    from_text = cmbench.run_suite(text, out=tmp_path / "a")["e"]
    assert from_text.attrs["suite_text"] == text  # the text as run, in the cube
    suite = cmbench.load_suite(text)
    from_object = cmbench.run_suite(suite, out=tmp_path / "b")["e"]
    np.testing.assert_array_equal(from_text["l2"].values, from_object["l2"].values)
    df = cmbench.to_frame(tmp_path / "b" / "text")  # a suite folder
    assert set(df["method"]) == {"Empirical Mean", "none+cmedian"}


def test_a_dict_suite_error_names_the_dict_and_the_key(tmp_path):
    bad = grid_suite(estimators=["mean", "trimed-mean"])
    with pytest.raises(cmbench.SuiteError, match=r"<dict>: key 'experiment\[0\].estimators\[1\]': unknown "
                                                 r"estimator 'trimed-mean'; did you mean 'trimmed-mean'\?"):
        cmbench.run_suite(bad, out=tmp_path / "out")
    with pytest.raises(cmbench.SuiteError, match=r"<dict>: key 'experiment\[0\].budgets\[1\]': None"):
        cmbench.run_suite(grid_suite(budgets=[0.1, None]), out=tmp_path / "out")
    with pytest.raises(cmbench.SuiteError, match="got int"):
        cmbench.run_suite(3, out=tmp_path / "out")


def test_a_plugin_object_that_cannot_be_pickled_is_one_line_naming_it(tmp_path):
    plugin = types.SimpleNamespace(lock=threading.Lock(),
                                   register_estimators=lambda: [cmbench.Estimator("locked", shrunk_mean)])
    with pytest.raises(cmbench.PluginError) as err:
        cmbench.run_suite(grid_suite(estimators=["mean"]), out=tmp_path / "out", plugins=[plugin])
    assert "plugin object namespace cannot be shipped to worker processes" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_module_object_is_a_plugin(tmp_path):
    module = types.ModuleType("my_notebook_plugin")
    exec(textwrap.dedent("""
        import numpy as np, cmbench
        def doubled(X, *, rng):
            return 2 * np.nanmean(X, axis=0)
        @cmbench.hookimpl
        def register_estimators():
            return [cmbench.Estimator("doubled", doubled)]
    """), module.__dict__)
    registry = cmbench.load_plugins([module])
    assert "doubled" in registry.estimators
    ds = cmbench.run_suite(grid_suite(estimators=["mean", "doubled"]), out=tmp_path / "out",
                           plugins=[module], workers=2)["e"]
    assert (ds["status"].values == "ok").all()


def test_claims_and_to_frame_take_what_run_suite_returns(tmp_path):
    claim = [{"id": "a", "text": "the mean beats the shrunk mean", "better": ["none+mean"],
              "worse": ["none+shrunk-mean"]}]
    cubes = cmbench.run_suite(grid_suite(claim=claim), out=tmp_path / "out", plugins=[ShrinkPlugin()])
    verdicts = cmbench.claims(cubes)
    assert list(verdicts.columns[:4]) == ["experiment", "id", "verdict", "holds"]
    assert verdicts.loc[0, "id"] == "a" and verdicts.loc[0, "verdict"].startswith(("holds", "fails"))
    assert verdicts.loc[0, "holds"] in (True, False) and verdicts.loc[0, "compared"] > 0
    assert verdicts.loc[0, "claim"] == "the mean beats the shrunk mean"
    assert cmbench.claims(tmp_path / "out" / "api" / "e.nc").equals(verdicts)
    assert len(cmbench.to_frame(cubes)) == len(cmbench.to_frame(tmp_path / "out" / "api"))
    importlib.import_module("cmbench.verdicts")  # the module that evaluates claims: cmbench.claims stays the function
    assert callable(cmbench.claims) and cmbench.claims(cubes).equals(verdicts)


def test_every_exception_run_suite_raises_is_importable_from_cmbench():
    for name in ("UserError", "SuiteError", "PluginError", "DataError", "WorkerSetupError",
                 "StoppedAtFailure", "Interrupted"):
        assert issubclass(getattr(cmbench, name), Exception), name
        assert name in cmbench.__all__
    assert issubclass(cmbench.SuiteError, cmbench.UserError)
    assert issubclass(cmbench.WorkerSetupError, cmbench.UserError)
    assert cmbench.StoppedAtFailure is cmbench.runner.StoppedAtFailure


def test_run_suite_has_a_typed_signature_with_every_runner_option():
    api = inspect.signature(cmbench.run_suite).parameters
    assert not any(p.kind is p.VAR_KEYWORD for p in api.values())
    assert api["report"].default is False and api["progress"].default is None
    runner = {f.name for f in dataclasses.fields(RunOptions)}  # the options the runner takes
    assert runner <= set(api)
    assert all(p.annotation is not inspect.Parameter.empty for name, p in api.items())


def test_progress_is_on_by_default_in_a_notebook(monkeypatch):
    assert not cmbench.runner.in_notebook()
    monkeypatch.setitem(sys.modules, "ipykernel.zmqshell", types.ModuleType("ipykernel.zmqshell"))
    assert cmbench.runner.in_notebook()


def test_several_plugin_objects_load_and_one_given_twice_counts_once():
    first = types.SimpleNamespace(register_estimators=lambda: [cmbench.Estimator("first", shrunk_mean)])
    second = types.SimpleNamespace(register_estimators=lambda: [cmbench.Estimator("second", shrunk_mean)])
    registry = cmbench.load_plugins([first, second, first, ShrinkPlugin()])  # namespaces do not hash
    assert {"first", "second", "shrunk-mean"} <= set(registry.estimators)
    names = [s.plugin for s in registry.plugins if s.digest]
    assert len(names) == 3 and names[0].startswith("<namespace ") and "<test_api.ShrinkPlugin " in names[2]


# ------------------------------------------------------------------ failures speak up
def broken_mean(X, *, rng):
    raise ValueError("this estimator always fails")


class BrokenPlugin:
    def register_estimators(self):
        return [cmbench.Estimator("broken-mean", broken_mean)]


def test_a_run_with_failed_cells_warns_with_the_count_and_the_first_error(tmp_path):
    suite = grid_suite(estimators=["broken-mean"])
    with pytest.warns(cmbench.CellsFailedWarning, match=r"4 of 4 cells failed or timed out") as caught:
        cubes = cmbench.run_suite(suite, out=tmp_path / "out", plugins=[BrokenPlugin()], progress=False)
    assert "this estimator always fails" in str(caught[0].message)
    assert caught[0].filename == __file__  # points at the caller's line, not into cmbench
    assert (cubes["e"]["status"] == "failed").all()


def test_errors_raise_raises_with_the_cubes_and_errors_ignore_is_silent(tmp_path, recwarn):
    suite = grid_suite(estimators=["mean", "broken-mean"])
    with pytest.raises(cmbench.CellsFailed, match=r"4 of 8 cells") as info:
        cmbench.run_suite(suite, out=tmp_path / "out", plugins=[BrokenPlugin()], progress=False, errors="raise")
    assert (info.value.cubes["e"]["status"].sel(estimator="mean") == "ok").all()
    cmbench.run_suite(suite, out=tmp_path / "out", plugins=[BrokenPlugin()], progress=False, errors="ignore")
    assert not [w for w in recwarn if issubclass(w.category, cmbench.CellsFailedWarning)]
    with pytest.raises(cmbench.UserError, match="errors must be"):
        cmbench.run_suite(suite, out=tmp_path / "out", errors="loud")


def test_a_run_whose_cells_are_ok_does_not_warn(tmp_path, recwarn):
    cmbench.run_suite(grid_suite(estimators=["mean"]), out=tmp_path / "out", progress=False)
    assert not [w for w in recwarn if issubclass(w.category, cmbench.CellsFailedWarning)]


def test_run_suite_caps_workers_as_the_command_line_does(tmp_path):
    from cmbench.options import MAX_WORKERS_PER_CORE, usable_cores

    with pytest.raises(cmbench.UserError, match=r"workers 10000 is more than 4 per usable core"):
        cmbench.run_suite(grid_suite(), out=tmp_path / "out", workers=10000)
    assert not (tmp_path / "out").exists()  # refused before anything starts
    assert MAX_WORKERS_PER_CORE * usable_cores() < 10000


def test_run_suite_has_a_default_timeout_that_none_disables(tmp_path):
    from cmbench.options import SUITE_TIMEOUT

    assert inspect.signature(cmbench.run_suite).parameters["timeout"].default == SUITE_TIMEOUT
    with pytest.raises(cmbench.UserError, match="at most 1e\\+06|longest"):
        cmbench.run_suite(grid_suite(), out=tmp_path / "out", timeout=1e10)
    cubes = cmbench.run_suite(grid_suite(estimators=["mean"]), out=tmp_path / "out", timeout="none",
                              progress=False)
    assert (cubes["e"]["status"] == "ok").all()
