"""Metrics as plugins, parameter grids, declared choices and ranges, params from the signature."""
import textwrap

import numpy as np
import pytest
import xarray as xr

import cmbench
from cmbench.errors import PluginError, SuiteError
from cmbench.plugins import load_plugins
from cmbench.runner import run_suite
from cmbench.options import RunOptions
from cmbench.runner.seeds import rng_for
from cmbench.suite import load_suite
from conftest import PLUGINS

METRIC_PLUGIN = (PLUGINS / "metrics.py").read_text()

EXPERIMENT = '''
name = "s"
plugins = ["metric.py"]
[[experiment]]
name = "e"
datasets = [{{name = "synthetic-gaussian", N = 60}}]
adversaries = ["hide-smallest"]
budgets = [0.0, 0.1]
recoverers = {recoverers}
estimators = {estimators}
metrics = {metrics}
'''


@pytest.fixture
def suite_file(tmp_path):
    (tmp_path / "metric.py").write_text(METRIC_PLUGIN)

    def write(recoverers='["none"]', estimators='["mean"]', metrics='["l2"]'):
        path = tmp_path / "s.toml"
        path.write_text(EXPERIMENT.format(recoverers=recoverers, estimators=estimators, metrics=metrics))
        return path
    return write


# ------------------------------------------------------------------ metrics

def test_builtin_metrics_are_registered_through_the_hook():
    registry = cmbench.load_plugins()
    assert {"l2", "mahalanobis"} <= set(registry.metrics)
    assert registry.source("metrics", "l2").plugin == "cmbench.metrics"
    data = cmbench.Data(X=np.zeros((3, 2)), mean=np.array([1.0, 2.0]), cov=np.diag([4.0, 1.0]))
    mu = np.array([3.0, 2.0])
    assert registry.metrics["l2"].fn(mu, data) == pytest.approx(2.0)
    assert registry.metrics["mahalanobis"].fn(mu, data) == pytest.approx(1.0)
    assert np.isnan(registry.metrics["mahalanobis"].fn(mu, cmbench.Data(X=data.X, mean=data.mean)))


def test_a_plugin_metric_gets_a_cube_variable_and_a_report_page(tmp_path, suite_file):
    from helpers import drawn_page_texts

    path = suite_file(estimators='["mean", "cmedian"]',
                      metrics='["relative-l2", {name = "worst-coordinate", label = "worst-sq", power = 2.0}]')
    cubes = cmbench.run_suite(path, out=tmp_path / "out")
    ds = cubes["e"]
    assert {"relative-l2", "worst-sq", "l2", "mahalanobis"} <= set(ds.data_vars)
    assert (ds["status"] == "ok").all()
    truth = load_suite(path).experiments[0].datasets[0].decl.fn(
        instance=0, rng=rng_for(0, "load", "synthetic-gaussian", 0), N=60).mean
    expected = ds["l2"] / np.linalg.norm(truth)
    np.testing.assert_allclose(ds["relative-l2"].values, expected.values, rtol=1e-12)
    assert (ds["worst-sq"] <= ds["l2"] ** 2 + 1e-12).all()
    with xr.open_dataset(tmp_path / "out" / "s" / "e.nc") as saved:
        assert "relative-l2" in saved.data_vars and '"worst-sq"' in saved.attrs["metrics"]
    # the report's curve pages of the two metrics, drawn from the saved cube as the report step draws them
    pages = drawn_page_texts([tmp_path / "out" / "s" / "e.nc"],
                             lambda slug: slug.endswith(("-relative-l2", "-worst-sq")), tmp_path)
    text = "\n".join(pages.values())
    assert len(pages) == 2 and "relative-l2 versus" in text and "worst-sq versus" in text


def test_a_failing_metric_fails_its_cells_with_its_name(tmp_path, suite_file):
    ds = run_suite(suite_file(metrics='["broken-metric", "l2"]'), RunOptions(out=tmp_path / "out"))["e"]
    assert (ds["status"] == "failed").all()
    error = str(ds["error"].values.ravel()[0])
    assert error.startswith("metric 'broken-metric'") and "RuntimeError: no luck" in error


def test_unknown_metric_is_refused_at_load_with_a_close_match(suite_file):
    with pytest.raises(SuiteError, match=r"metrics\[0\]'.*unknown metric 'relative-l3'; "
                                         r"did you mean 'relative-l2'"):
        load_suite(suite_file(metrics='["relative-l3"]'))


def test_metric_named_like_a_cube_variable_is_refused(tmp_path):
    plug = tmp_path / "m.py"
    plug.write_text(textwrap.dedent('''
        import cmbench
        @cmbench.hookimpl
        def register_metrics():
            return [cmbench.Metric("seconds", lambda mu_hat, data: 0.0)]
    '''))
    with pytest.raises(PluginError, match="'seconds' is a cube variable already"):
        load_plugins([str(plug)])


# ------------------------------------------------------------------ grids

def test_a_list_valued_parameter_is_a_grid_of_labelled_entries(suite_file):
    exp = load_suite(suite_file(
        recoverers='["none", {name = "ithsvd", rank = [2, 4]}]',
        estimators='["mean", {name = "trimmed-mean", proportion = [0.05, 0.1, 0.2]}]')).experiments[0]
    assert [e.label for e in exp.estimators] == [
        "mean", "trimmed-mean.proportion_0.05", "trimmed-mean.proportion_0.1", "trimmed-mean.proportion_0.2"]
    assert [e.params["proportion"] for e in exp.estimators[1:]] == [0.05, 0.1, 0.2]
    assert [e.label for e in exp.recoverers] == ["none", "ithsvd.rank_2", "ithsvd.rank_4"]
    assert exp.recoverers[2].params["rank"] == 4


def test_two_lists_give_the_product_and_a_label_names_the_base(suite_file):
    exp = load_suite(suite_file(
        estimators='[{name = "filter", label = "f", eps = [0.1, 0.2], C = [2, 3]}]')).experiments[0]
    assert [e.label for e in exp.estimators] == ["f.eps_0.1.C_2", "f.eps_0.1.C_3", "f.eps_0.2.C_2", "f.eps_0.2.C_3"]
    assert {(e.params["eps"], e.params["C"]) for e in exp.estimators} == {(0.1, 2), (0.1, 3), (0.2, 2), (0.2, 3)}


def test_a_list_for_a_list_valued_default_is_one_value(suite_file, tmp_path):
    path = suite_file()
    text = path.read_text().replace('{name = "synthetic-gaussian", N = 60}',
                                    '{name = "wearable-sensor", exclude = ["d1p01M", "d1p02M"]}')
    path.write_text(text)
    exp = load_suite(path).experiments[0]
    assert [d.label for d in exp.datasets] == ["wearable-sensor"]
    assert exp.datasets[0].params["exclude"] == ["d1p01M", "d1p02M"]


@pytest.mark.parametrize("estimators, message", [
    ('[{name = "trimmed-mean", proportion = []}]', r"proportion'.*empty list"),
    ('[{name = "trimmed-mean", proportion = [0.1, "x"]}]', r"proportion'.*expected a number"),
    ('[{name = "trimmed-mean", proportion = [0.1, 0.5]}]', r"proportion'.*0.5 is outside \[0.0, 0.5\)"),
    ('[{name = "trimmed-mean", proportion = [0.1, 0.1]}]', r"duplicate label 'trimmed-mean.proportion_0.1'"),
])
def test_grid_values_are_checked_at_load(suite_file, estimators, message):
    with pytest.raises(SuiteError, match=message):
        load_suite(suite_file(estimators=estimators))


# ------------------------------------------------------------------ choices and ranges

def test_a_choice_outside_the_declared_ones_is_refused_at_load(suite_file):
    with pytest.raises(SuiteError) as err:
        load_suite(suite_file(recoverers='[{name = "exact", rule = "ma"}]'))
    msg = str(err.value)
    assert "recoverers[0].rule'" in msg and "recoverer 'exact': 'ma' is not one of 'rank', 'm_a'" in msg
    assert "did you mean 'm_a'?" in msg


def test_a_grid_of_choices_checks_every_value(suite_file):
    exp = load_suite(suite_file(recoverers='[{name = "exact", rule = ["rank", "m_a"]}]')).experiments[0]
    assert [r.label for r in exp.recoverers] == ["exact.rule_rank", "exact.rule_m_a"]
    with pytest.raises(SuiteError, match="'rnak' is not one of"):
        load_suite(suite_file(recoverers='[{name = "exact", rule = ["rank", "rnak"]}]'))


def test_a_value_out_of_range_is_refused_at_load(suite_file):
    with pytest.raises(SuiteError, match=r"estimators\[0\].eps'.*0.7 is outside \(0.0, 0.5\)"):
        load_suite(suite_file(estimators='[{name = "filter", eps = 0.7}]'))


# ------------------------------------------------------------------ declarations

def test_params_default_to_the_signature():
    def est(X, *, rng, limit=0.05, mode="a"):
        return X.mean(axis=0)

    assert cmbench.Estimator("e", est).params == {"limit": 0.05, "mode": "a"}
    assert cmbench.Estimator("e", est, params={"limit": 0.1}).params == {"limit": 0.1}  # explicit still wins

    def rec(X, *, rng, structure, rank, tol=1e-3):
        return X

    assert cmbench.Recoverer("r", rec).params == {"tol": 1e-3}  # rank is the contract's, not a param

    def adv(X, budget, *, rng, structure, pipeline=None, side="auto"):
        return X

    assert cmbench.Adversary("a", adv).params == {"side": "auto"}


def test_builtin_declarations_state_their_choices():
    registry = cmbench.load_plugins()
    assert registry.recoverers["exact"].choices["rule"] == ("rank", "m_a")
    assert registry.recoverers["exact"].params == {"rule": "rank", "rcond": 1e-10, "unrecovered": "keep"}
    assert registry.adversaries["hide-samples"].choices["side"] == ("auto", "positive", "negative")
    assert registry.estimators["trimmed-mean"].ranges["proportion"] == (0.0, 0.5, "[)")


@pytest.mark.parametrize("kwargs, message", [
    (dict(choices={"lmit": ("a",)}), "choices names 'lmit', which is not one of its params"),
    (dict(choices={"limit": (0.1, 0.2)}), "the default of 'limit' is outside its declared domain"),
    (dict(ranges={"limit": (0.1, 1.0)}), r"0.05 is outside \[0.1, 1.0\]"),
    (dict(ranges={"limit": (0.0, 1.0, "{}")}), "closure one of"),
])
def test_bad_declared_domains_are_plugin_errors(tmp_path, kwargs, message):
    plug = tmp_path / "p.py"
    plug.write_text(textwrap.dedent(f'''
        import cmbench
        def est(X, *, rng, limit=0.05):
            return X.mean(axis=0)
        @cmbench.hookimpl
        def register_estimators():
            return [cmbench.Estimator("est", est, **{kwargs!r})]
    '''))
    with pytest.raises(PluginError, match=message):
        load_plugins([str(plug)])
