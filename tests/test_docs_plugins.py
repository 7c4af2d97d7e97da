"""The worked plugins of docs/plugins.md run as the page shows them: each Python block,
saved under the name its first line gives, passes `cmbench check`, does what its text says,
and the page's suite runs all three to the end.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import cmbench
from conftest import cli_inproc_result

PAGE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
FILES = ("student_t.py", "hide_largest.py", "linf.py")


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", PAGE.read_text(), flags=re.S | re.M)


@pytest.fixture
def saved(tmp_path) -> Path:
    """Each Python block of the page saved as the file its first line names, and the suite."""
    names = []
    for code in blocks("python"):
        name = code.splitlines()[0].removeprefix("# ").strip()
        (tmp_path / name).write_text(code)
        names.append(name)
    assert tuple(names) == FILES, names
    (suite,) = blocks("toml")
    (tmp_path / "worked.toml").write_text(suite)
    return tmp_path


def module(folder: Path, name: str):
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), folder / name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_each_worked_plugin_is_one_file_with_one_hook(saved):
    hooks = {name: [h for h in dir(module(saved, name)) if h.startswith("register_")] for name in FILES}
    assert hooks == {"student_t.py": ["register_datasets"], "hide_largest.py": ["register_adversaries"],
                     "linf.py": ["register_metrics"]}


def test_the_worked_plugins_pass_cmbench_check(saved):
    """The command the page gives, as a user types it in the plugins' folder."""
    run = cli_inproc_result("check", *(f"--plugin={f}" for f in FILES), cwd=saved)
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"3 components, (\d+) checks: \1 passed, 0 failed", run.stdout), run.stdout
    for name in ("dataset heavy-t", "adversary hide-largest", "metric linf"):
        assert f"PASS {name}:" in run.stdout, name


def test_hide_largest_hides_the_largest_values_of_each_column(saved):
    hide = module(saved, "hide_largest.py").hide_largest
    X = np.random.default_rng(0).normal(size=(50, 4))
    X[3, 1] = np.nan                                        # already missing: never picked again
    out = hide(X, 0.1, rng=np.random.default_rng(1), structure=None)
    assert np.isnan(X).sum() == 1, "the input is left as it was"
    for j in range(4):
        visible = X[~np.isnan(X[:, j]), j]
        hidden = np.isnan(out[:, j]) & ~np.isnan(X[:, j])
        assert hidden.sum() == 5                             # floor(0.1 * 50)
        assert X[hidden, j].min() >= np.sort(visible)[-5]    # and they are the 5 largest
    assert np.array_equal(hide(X, 0.0, rng=None, structure=None), X, equal_nan=True)


def test_student_t_has_the_mean_and_covariance_it_declares(saved):
    load = module(saved, "student_t.py").load_student_t
    data = load(instance=0, rng=np.random.default_rng(2), N=200_000, n=3, df=5.0, mu=1.5)
    assert data.X.shape == (200_000, 3)
    np.testing.assert_allclose(data.X.mean(axis=0), data.mean, atol=0.02)
    np.testing.assert_allclose(np.cov(data.X.T), data.cov, atol=0.05)  # df / (df - 2) = 5/3 on the diagonal
    with pytest.raises(cmbench.DataError, match="df = 2"):
        load(instance=0, rng=np.random.default_rng(2), df=2)


def test_linf_is_the_largest_coordinate_error(saved):
    linf = module(saved, "linf.py").linf
    data = cmbench.Data(X=np.zeros((2, 3)), mean=np.array([1.0, 2.0, 3.0]))
    assert linf(np.array([1.5, 2.0, 1.0]), data) == 2.0


def test_the_pages_suite_runs_all_three(saved):
    cubes = cmbench.run_suite(saved / "worked.toml", out=saved / "reports", workers=1)
    frame = cmbench.to_frame(cubes)
    assert len(frame) == 2 * 3 * 2 * 3 * 3 and (frame["status"] == "ok").all(), frame["error"].unique()[:3]
    assert sorted(frame["p_dataset_df"].unique()) == [3.0, 30.0]
    n = 10  # the data set's default width
    assert (frame["linf"] <= frame["l2"] + 1e-12).all() and (frame["linf"] >= frame["l2"] / np.sqrt(n) - 1e-12).all()
    # hiding the largest values pulls the mean down: its error grows with the budget
    mean = frame[(frame["adversary"] == "hide-largest") & (frame["estimator"] == "mean")]
    by_budget = mean.groupby("budget")["l2"].mean()
    assert by_budget[0.0] < by_budget[0.1] < by_budget[0.2], by_budget
