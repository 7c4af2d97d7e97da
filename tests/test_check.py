"""`cmbench check`: a plugin's components through the contract, one line per check."""
import subprocess
import sys

import pytest
from click.testing import CliRunner

from cmbench.check import CHECKS, FAIL, PASS, run_checks
from cmbench.cli import main
from conftest import PLUGINS, cli_inproc_result

#: one defect per estimator: the issue's four (wrong shape, mutation, global randomness, params)
BROKEN_ESTIMATORS = (PLUGINS / "broken_estimators.py").read_text()

#: one defect per component of the other kinds
BROKEN_OTHERS = (PLUGINS / "broken_others.py").read_text()

GOOD = (PLUGINS / "winsorized_checked.py").read_text()


@pytest.fixture
def plugin(tmp_path):
    def write(text, name="plug.py"):
        path = tmp_path / name
        path.write_text(text)
        return path
    return write


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def fails(output):
    return [line for line in output.splitlines() if line.startswith("FAIL ")]


def test_broken_components_of_every_other_kind(plugin):
    results = run_checks([str(plugin(BROKEN_OTHERS))])
    failed = {(r.name, r.check): r.reason for r in results if r.status == FAIL}
    adversary = CHECKS["adversaries"]
    assert set(failed) == {
        ("hide-two-per-column", adversary[1]),                   # budget
        ("smoothing", CHECKS["recoverers"][1]),                   # visible entries
        ("lopsided", CHECKS["datasets"][0]),                      # Data
        ("offset-l2", CHECKS["metrics"][0]),                      # 0 at the truth
    }, failed
    assert "exceeded its budget" in failed[("hide-two-per-column", adversary[1])]
    assert "changed" in failed[("smoothing", CHECKS["recoverers"][1])]
    assert "true mean must be a finite (4,) vector" in failed[("lopsided", CHECKS["datasets"][0])]
    assert "at the true mean, expected 0" in failed[("offset-l2", CHECKS["metrics"][0])]


def test_a_correct_plugin_passes_and_exits_0(plugin):
    result = invoke("check", "--plugin", plugin(GOOD))
    assert result.exit_code == 0, result.output
    assert not fails(result.output)
    assert result.output.count("PASS estimator winsorized-mean:") == len(CHECKS["estimators"])


def test_named_components_only(plugin):
    result = invoke("check", "--plugin", plugin(BROKEN_ESTIMATORS), "shrunk-mean", "estimator:short-mean")
    names = {line.split()[2].rstrip(":") for line in result.output.splitlines()
             if line.startswith(("PASS", "FAIL"))}
    assert names == {"shrunk-mean", "short-mean"}
    assert result.exit_code == 1


def test_builtins_by_plugin_name_and_by_component_name():
    result = invoke("check", "--plugin", "cmbench.metrics")
    assert result.exit_code == 0, result.output
    assert "PASS metric l2:" in result.output and "PASS metric mahalanobis:" in result.output
    assert "estimator" not in result.output
    result = invoke("check", "mean", "exact")
    assert result.exit_code == 0, result.output
    assert {line.split()[1] for line in result.output.splitlines() if line.startswith("PASS")} == \
        {"estimator", "recoverer"}


def test_unknown_name_is_a_one_line_user_error(plugin):
    result = cli_inproc_result("check", "--plugin", plugin(BROKEN_ESTIMATORS), "shrunk-men")
    assert result.returncode == 2
    assert result.stderr.startswith("cmbench: error: no component 'shrunk-men'")
    assert "did you mean 'shrunk-mean'?" in result.stderr and "Traceback" not in result.stderr


def test_broken_estimators_one_fail_line_per_defect(plugin):
    # a fresh interpreter: the real entry point's exit code and its warnings filter
    result = subprocess.run([sys.executable, "-m", "cmbench.cli", "check", "--plugin",
                             str(plugin(BROKEN_ESTIMATORS))], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    failed = fails(result.stdout)
    assert len(failed) == 4, result.stdout
    by_name = {line.split()[2].rstrip(":"): line for line in failed}
    assert set(by_name) == {"short-mean", "zero-filled-mean", "jittered-mean", "shrunk-mean"}
    assert "returned shape (4,), expected (5,)" in by_name["short-mean"]
    assert "leaves its input unmodified" in by_name["zero-filled-mean"]
    assert "wrote into its input" in by_name["zero-filled-mean"]
    assert "same result for the same rng" in by_name["jittered-mean"]
    assert "params['weight'] = 0.1 but the signature's default is 0.0" in by_name["shrunk-mean"]
    lines = [line for line in result.stdout.splitlines() if line.startswith(("PASS ", "FAIL "))]
    assert len(lines) == 4 * len(CHECKS["estimators"])  # every check of every estimator, and nothing else
    assert sum(line.startswith(PASS) for line in lines) == 12
    assert "4 components, 16 checks: 12 passed, 4 failed" in result.stdout
    assert "Warning" not in result.stderr  # the components' own warnings do not clutter the lines


def test_the_readme_example_plugin_passes(winsorized_file):
    result = invoke("check", "--plugin", winsorized_file)  # the README's code (test_docs checks it)
    assert result.exit_code == 0, result.output
    assert "1 component, 4 checks: 4 passed, 0 failed" in result.output
