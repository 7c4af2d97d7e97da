"""Suite-file mistakes through the command line: exit 2 and one line naming the file, the key and the fix.

The first test runs the real CLI in a subprocess (``python -m cmbench.cli``: its
exit code and stderr); the others run the same click command in-process
(``CliRunner``), which is much cheaper than a new interpreter per case. The
parser's messages themselves are tested in test_suite_file.py.
"""
from __future__ import annotations

import re

import pytest

import cmbench
from conftest import GOOD, assert_user_error, cli, cli_inproc, good_suite, write


# ====================================================== suite file that is not valid TOML

def test_invalid_toml_exits_2_naming_file_line_and_column(tmp_path):
    """At the end of the document tomllib gives no line: cmbench finds it anyway."""
    path = tmp_path / "broken.toml"
    path.write_text('name = "s"\nseed = 1\ndescription = "unterminated')
    result = cli("suite", path, "--out", tmp_path / "out")
    msg = assert_user_error(result.returncode, result.stderr, str(path), "invalid TOML")
    assert re.search(re.escape(str(path)) + r":3:\d+: ", msg), f"no line:column after the file name: {msg}"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, lines", [
    pytest.param('name = "s"\nseed = 1\n[[experiment]\n', {3}, id="mid-document"),
    pytest.param('name = "s"\nname = "t"\n', {2}, id="duplicate-key"),
    pytest.param('name = "s"\nseed = \n', {2}, id="missing-value"),
    pytest.param('name = "s"\nbudgets = [0.1,\n\n', {2, 3}, id="unclosed-array-before-blank-lines"),
    pytest.param('name = "s"\r\nseed = 1 2\r\n', {2}, id="crlf-line-endings"),
])
def test_invalid_toml_variants_name_the_line(tmp_path, text, lines):
    path = tmp_path / "broken.toml"
    path.write_bytes(text.encode())
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out")
    msg = assert_user_error(code, err, "invalid TOML")
    where = re.search(re.escape(str(path)) + r":(\d+):(\d+): ", msg)
    assert where and int(where.group(1)) in lines, msg
    assert not (tmp_path / "out").exists()


def test_suite_file_that_is_not_utf8_names_line_and_column(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "s"\nseed = 1\ndescription = "caf\u00e9"\n'.encode("latin-1"))
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out")
    assert_user_error(code, err, f"{path}:3:")


# ====================================================== suite key missing, misspelt, wrong type

KEY_MISTAKES = [
    pytest.param('budgets = [0.0, 0.2]\n', '', ["experiment[0]", "missing required key 'budgets'"],
                 id="missing-experiment-key"),
    pytest.param('name = "r"\n', '', ["missing required key 'name'", "the suite"], id="missing-suite-key"),
    pytest.param('instances = 1', 'instancs = 1', ["'experiment[0].instancs'", "did you mean 'instances'"],
                 id="misspelt-experiment-key"),
    pytest.param('seed = 3', 'sede = 3', ["'sede'", "did you mean 'seed'"], id="misspelt-suite-key"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = {start = 0.0, stop = 0.2, steps = 0.1}',
                 ["budgets.steps", "did you mean 'step'"], id="misspelt-budget-range-key"),
    pytest.param('N = 60', 'structure_sed = 7', ["structure_sed", "did you mean 'structure_seed'"],
                 id="misspelt-component-parameter"),
    pytest.param('seed = 3', 'seed = "three"', ["'seed'", "expected an integer", "'three'"],
                 id="wrong-type-string-for-integer"),
    pytest.param('instances = 1', 'instances = true', ["instances", "expected an integer"],
                 id="wrong-type-boolean-for-integer"),
    pytest.param('adversaries = ["hide-smallest"]', 'adversaries = "hide-smallest"',
                 ["experiment[0].adversaries", "expected an array", "'hide-smallest'"],
                 id="wrong-type-string-for-array"),
    pytest.param('[[experiment]]', '[experiment]', ["'experiment'", "expected an array"],
                 id="wrong-type-table-for-array-of-tables"),
]


def assert_refused(tmp_path, old: str, new: str, *needles: str) -> str:
    """``GOOD`` with ``old`` replaced by ``new`` is refused naming the file and every needle; nothing is written."""
    path, out = good_suite(tmp_path, old, new), tmp_path / "out"
    code, err = cli_inproc("suite", path, "--out", out)
    msg = assert_user_error(code, err, str(path), *needles)
    assert not out.exists()
    return msg


def test_suite_key_mistake_exits_2_saying_unknown_key(tmp_path):
    assert_refused(tmp_path, "instances = 1", "instancs = 1", "'experiment[0].instancs'", "unknown key",
                   "did you mean 'instances'")


@pytest.mark.parametrize("old, new, needles", KEY_MISTAKES)
def test_suite_key_mistakes_name_the_key_what_was_expected_and_the_close_match(tmp_path, old, new, needles):
    assert_refused(tmp_path, old, new, *needles)


def test_component_parameter_of_the_wrong_type_exits_2(tmp_path):
    path = good_suite(tmp_path, "N = 60", 'N = "many"')
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out", "--no-report")
    assert_user_error(code, err, "datasets[0].N'", "integer", "'many'")


def test_negative_seed_exits_2(tmp_path):
    path = good_suite(tmp_path, "seed = 3", "seed = -3")
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out", "--no-report")
    assert_user_error(code, err, "'seed'", "-3")


# ====================================================== unknown component name

UNKNOWN = [
    pytest.param("datasets", '{name = "synthetic-gaussian", N = 60}', '"synthetic-gausian"', "synthetic-gaussian",
                 id="dataset"),
    pytest.param("adversaries", '"hide-smallest"', '"hide-smalest"', "hide-smallest", id="adversary"),
    pytest.param("recoverers", '"exact"', '"exakt"', "exact", id="recoverer"),
    pytest.param("estimators", '"cmedian"', '"cmedain"', "cmedian", id="estimator"),
]


SINGULAR = {"datasets": "dataset", "adversaries": "adversary", "recoverers": "recoverer",
            "estimators": "estimator"}


def _check_unknown(msg: str, kind: str, right: str) -> None:
    valid = sorted(cmbench.load_plugins().kind(kind))
    listed = msg.split("valid: ", 1)[1].split(", ")
    listed[-1] = listed[-1].split(" ")[0].rstrip(";")  # the message may go on after the list
    assert listed[0] == right, f"the close match should come first: {msg}"
    assert set(valid) <= set(listed), f"valid {kind} missing from: {msg}"


def test_unknown_component_exits_2_naming_its_place_in_the_file(tmp_path):
    msg = assert_refused(tmp_path, '"cmedian"', '"cmedain"', "experiment[0].estimators[1]",
                         "unknown estimator 'cmedain'", "did you mean 'cmedian'?")
    _check_unknown(msg, "estimators", "cmedian")


@pytest.mark.parametrize("kind, old, new, right", UNKNOWN)
def test_unknown_component_lists_the_valid_names_close_match_first(tmp_path, kind, old, new, right):
    path = good_suite(tmp_path, old, new)
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out")
    name = new.strip('"')
    msg = assert_user_error(code, err, f"unknown {SINGULAR[kind]} {name!r}", f"did you mean {right!r}?")
    _check_unknown(msg, kind, right)


# ====================================================== budget outside [0, 1], empty grid, duplicate labels

GRID_MISTAKES = [
    pytest.param('budgets = [0.0, 0.2]', 'budgets = [0.1, 1.5]', ["1.5", "outside [0, 1]"], id="above-one"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = [-0.1]', ["-0.1", "outside [0, 1]"], id="negative"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = [nan]', ["nan", "outside [0, 1]"], id="nan"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = [inf]', ["inf", "outside [0, 1]"], id="inf"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = {start = 0.5, stop = 1.5, step = 0.5}', ["1.5", "outside"],
                 id="range-beyond-one"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = {start = 0.0, stop = 0.2, step = 0.0}', ["step", "0.0"],
                 id="range-zero-step"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = {start = "a", stop = 0.2, step = 0.1}',
                 ["budgets.start", "finite number", "'a'"], id="range-end-not-a-number"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = []', ["budgets", "empty budget grid"], id="empty-grid"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = {start = 0.5, stop = 0.1, step = 0.1}',
                 ["budgets", "empty budget grid"], id="empty-range"),
    pytest.param('budgets = [0.0, 0.2]', 'budgets = [0.1, 0.1]', ["duplicate budget 0.1"], id="duplicate-budget"),
    pytest.param('"cmedian"', '{name = "mean"}', ["estimators", "duplicate label 'mean'"],
                 id="duplicate-implicit-label"),
    pytest.param('recoverers = ["none", "exact"]',
                 'recoverers = [{name = "none", label = "x"}, {name = "exact", label = "x"}]',
                 ["recoverers", "duplicate label 'x'"], id="duplicate-explicit-label"),
    pytest.param('instances = 1', 'instances = [0, 0]', ["instances", "duplicate instance 0"],
                 id="duplicate-instance"),
    pytest.param('estimators = ["mean", "cmedian"]', 'estimators = []', ["estimators", "empty list"],
                 id="empty-component-list"),
]


def test_budget_outside_unit_interval_exits_2(tmp_path):
    assert_refused(tmp_path, 'budgets = [0.0, 0.2]', 'budgets = [0.1, 1.5]', "budgets", "1.5", "outside [0, 1]")


@pytest.mark.parametrize("old, new, needles", GRID_MISTAKES)
def test_grid_mistakes_name_the_offending_value(tmp_path, old, new, needles):
    assert_refused(tmp_path, old, new, *needles)


def test_duplicate_experiment_names_exit_2(tmp_path):
    path = write(tmp_path / "suite.toml", GOOD + GOOD[GOOD.index("[[experiment]]"):])
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out")
    assert_user_error(code, err, "duplicate experiment.name 'e'")


@pytest.mark.parametrize("option, value", [("--workers", "0"), ("--timeout", "-1")])
def test_bad_run_options_exit_2(tmp_path, option, value):
    path = good_suite(tmp_path)
    code, err = cli_inproc("suite", path, "--out", tmp_path / "out", option, value)
    assert_user_error(code, err, option, value)
