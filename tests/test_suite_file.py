"""Suite files: every mistake names the file, the key and the valid choices."""
from pathlib import Path

import pytest

from cmbench.errors import PluginError, SuiteError
from cmbench.suite import load_suite, shipped_suites

GOOD = """
name = "s"
seed = 3
[[experiment]]
name = "e"
datasets = [{name = "synthetic-gaussian", N = 60}]
instances = 2
adversaries = ["hide-smallest"]
budgets = {start = 0.0, stop = 0.2, step = 0.1}
recoverers = ["none", "exact"]
estimators = ["mean", "cmedian"]
metrics = ["l2", "mahalanobis"]
methods = {"Two-Step-E" = ["exact", "mean"]}
"""


def test_shipped_suites():
    assert {"smoke", "paper"} <= set(shipped_suites())
    for name in shipped_suites():
        suite = load_suite(name)
        assert suite.experiments and suite.name == name


def test_good_suite(write_suite):
    suite = load_suite(write_suite(GOOD))
    exp = suite.experiments[0]
    assert exp.budgets == (0.0, 0.1, 0.2)
    assert exp.instances == (0, 1)
    assert exp.methods == {"Two-Step-E": ("exact", "mean")}
    assert exp.datasets[0].params["N"] == 60
    assert suite.seed == 3 and len(suite.hash) == 64


@pytest.mark.parametrize("change, match", [
    (('budgets = {start = 0.0, stop = 0.2, step = 0.1}', 'budgets = [0.1, 1.5]'),
     r"key 'experiment\[0\]\.budgets\[1\]': budget 1.5 is outside \[0, 1\]"),
    (('budgets = {start = 0.0, stop = 0.2, step = 0.1}', 'budgets = []'), "empty budget grid"),
    (('budgets = {start = 0.0, stop = 0.2, step = 0.1}', 'budgets = [0.1, 0.1]'), "duplicate budget 0.1"),
    (('estimators = ["mean", "cmedian"]', 'estimators = ["mean", "cmedain"]'),
     r"unknown estimator 'cmedain'; did you mean 'cmedian'\? valid: cmedian"),
    (('estimators = ["mean", "cmedian"]', 'estimators = ["mean", {name = "mean"}]'), "duplicate label 'mean'"),
    (('estimators = ["mean", "cmedian"]', 'estimators = []'), "empty list"),
    (('instances = 2', 'instancs = 2'), r"key 'experiment\[0\]\.instancs': unknown key.*did you mean 'instances'"),
    (('instances = 2', 'instances = "two"'), r"instances': expected an integer or an array"),
    (('name = "e"', 'nme = "e"'), "unknown key"),
    (('metrics = ["l2", "mahalanobis"]', 'metrics = ["l3"]'), r"unknown metric 'l3'; did you mean 'l2'"),
    (('recoverers = ["none", "exact"]', 'recoverers = ["none", {name = "exact", rul = "m_a"}]'),
     r"has no parameter 'rul'.*did you mean 'rule'"),
    (('methods = {"Two-Step-E" = ["exact", "mean"]}', 'methods = {"X" = ["ithsvd", "mean"]}'),
     "recoverer 'ithsvd' is not in this experiment's recoverers"),
])
def test_suite_mistakes(write_suite, change, match):
    path = write_suite(GOOD.replace(*change))
    with pytest.raises(SuiteError, match=match) as err:
        load_suite(path)
    assert str(path) in str(err.value)


def test_unknown_suite_lists_shipped_ones():
    with pytest.raises(SuiteError, match=r"unknown suite 'papr'; did you mean 'paper'\?.*smoke"):
        load_suite("papr")


def test_missing_suite_plugin_file(write_suite):
    path = write_suite('plugins = ["nope.py"]\n' + GOOD)
    with pytest.raises(SuiteError, match=r"plugins\[0\]': plugin file .*nope\.py does not exist"):
        load_suite(path)


def test_cli_plugin_contenders_join_every_experiment(write_suite, winsorized_file):
    suite = load_suite(write_suite(GOOD), [str(winsorized_file)])
    exp = suite.experiments[0]
    assert "winsorized-mean" in [e.label for e in exp.estimators]
    assert exp.methods["winsorized-mean"] == ("none", "winsorized-mean")
    assert exp.methods["exact+winsorized-mean"] == ("exact", "winsorized-mean")


def test_plugin_error_in_suite_names_the_suite(write_suite, tmp_path):
    (tmp_path / "bad.py").write_text("def f(:\n")
    path = write_suite('plugins = ["bad.py"]\n' + GOOD)
    with pytest.raises(PluginError, match=r"suite\.toml: plugin file .*bad\.py:1: syntax error"):
        load_suite(path)
