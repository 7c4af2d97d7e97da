"""`cmbench info NAME`, `cmbench plugins --params`, and unknown hook names as errors."""
import textwrap

import pytest
from click.testing import CliRunner

import cmbench
from cmbench.cli import main
from cmbench.plugins import describe_params, find_components, format_range, load_plugins

TWO_KINDS = '''
import numpy as np, cmbench

def twin(X, *, rng, weight=1.0):
    """A twin estimator: the column means, weighted."""
    return weight * np.nanmean(X, axis=0)

def twin_metric(mu_hat, data):
    return float(np.abs(mu_hat - data.mean).max())

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("twin", twin, description="the estimator twin")]

@cmbench.hookimpl
def register_metrics():
    return [cmbench.Metric("twin", twin_metric, description="the metric twin")]
'''

TYPO = '''
import numpy as np, cmbench

def est(X, *, rng):
    return np.nanmean(X, axis=0)

@cmbench.hookimpl
def register_estimator():
    return [cmbench.Estimator("typo-est", est)]
'''


def invoke(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_info_lists_parameters_defaults_ranges_and_the_docstring():
    result = invoke("info", "trimmed-mean")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("estimator trimmed-mean: ")
    assert "  plugin: cmbench.estimators" in result.output
    row = next(line for line in lines if line.strip().startswith("proportion"))
    assert row.split() == ["proportion", "0.1", "-", "[0,", "0.5)"]
    assert "Coordinate-wise trimmed mean" in result.output  # the function's docstring


def test_info_shows_choices_and_kind_fields():
    registry = load_plugins()
    decl = next(d for d in registry.recoverers.values() if d.choices)
    key = next(iter(decl.choices))
    result = invoke("info", f"recoverer:{decl.name}")
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.strip().startswith(key + " "))
    assert repr(decl.choices[key][0]) in row
    assert "  modes: " in result.output and "rank" in result.output  # every recoverer takes the rank hint
    adversary = invoke("info", "hide-smallest").output
    assert "  level: value" in adversary and "  mode: missing" in adversary


def test_info_of_a_data_set_whose_shape_follows_its_parameters():
    result = invoke("info", "dataset:gaussian")  # its shape is a callable: the defaults' size is shown
    assert result.exit_code == 0, result.output
    assert "  shape: 1000 x 10 by default" in result.output


def test_a_name_in_two_kinds_shows_both_and_kind_name_picks_one(tmp_path):
    plugin = tmp_path / "twins.py"
    plugin.write_text(TWO_KINDS)
    both = invoke("info", "--plugin", plugin, "twin")
    assert both.exit_code == 0, both.output
    assert "estimator twin: the estimator twin" in both.output and "metric twin: the metric twin" in both.output
    assert "2 kinds have a component 'twin'; `cmbench info KIND:twin` shows one" in both.output
    one = invoke("info", "--plugin", plugin, "metric:twin")
    assert "metric twin" in one.output and "estimator twin" not in one.output
    assert "weight" in invoke("info", "--plugin", plugin, "estimators:twin").output


def test_an_unknown_name_is_one_line_with_the_close_match():
    result = invoke("info", "trimed-mean")
    assert result.exit_code == 2
    assert result.output.startswith("cmbench: error: unknown component 'trimed-mean'; did you mean 'trimmed-mean'?")
    assert result.output.count("\n") == 1
    assert "unknown kind 'estimater'" in invoke("info", "estimater:mean").output


def test_plugins_params_lists_each_components_parameters():
    result = invoke("plugins", "--params")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].split()[:4] == ["kind", "name", "plugin", "parameters"]
    row = next(line for line in result.output.splitlines() if line.split()[:2] == ["estimator", "trimmed-mean"])
    assert row.endswith("proportion=0.1 cut='symmetric'")


def test_describe_params_and_ranges():
    assert format_range((0.0, 0.5, "[)")) == "[0, 0.5)"
    assert format_range((None, 1)) == "(-inf, 1]"  # a missing bound is open: the value is finite
    assert format_range((0, None)) == "[0, inf)"
    decl = load_plugins().estimators["trimmed-mean"]
    assert describe_params(decl) == [{"name": "proportion", "default": "0.1", "choices": "",
                                      "range": "[0, 0.5)"},
                                     {"name": "cut", "default": "'symmetric'",
                                      "choices": "'symmetric', 'floor-ceil'", "range": ""}]
    assert [k for k, _ in find_components(load_plugins(), "l2")] == ["metrics"]


def test_a_misspelt_hook_is_an_error_in_check_and_when_a_suite_loads_it(tmp_path, write_suite):
    plugin = tmp_path / "typo.py"
    plugin.write_text(TYPO)
    message = (f"plugin {plugin}: unknown hook 'register_estimator' (did you mean 'register_estimators'?); "
               "cmbench's hooks: register_adversaries, ")
    checked = invoke("check", "--plugin", plugin)
    assert checked.exit_code == 2 and message in checked.output, checked.output
    suite = write_suite(textwrap.dedent("""
        name = "t"
        plugins = ["typo.py"]
        [[experiment]]
        name = "e"
        datasets = ["synthetic-gaussian"]
        adversaries = ["hide-smallest"]
        budgets = [0.1]
        recoverers = ["none"]
        estimators = ["mean"]
    """))
    ran = invoke("suite", suite, "--out", tmp_path / "out", "--no-report")
    assert ran.exit_code == 2 and f"{suite}: {message}" in ran.output, ran.output
    assert not (tmp_path / "out").exists()


def test_an_object_with_a_misspelt_hook_method_is_refused():
    class Mine:
        def register_estimator(self):
            return []

    with pytest.raises(cmbench.PluginError, match=r"plugin <test_info.Mine [0-9a-f]{8}>: unknown hook "
                                                  r"'register_estimator' \(did you mean 'register_estimators'\?\)"):
        cmbench.load_plugins([Mine()])
