"""The adversary contract's options for studies like Anderson and Phillips (2025): the truth
(mean, covariance) passed to an adversary that needs it, rows placed last, and deleting
adversaries, checked by the runner and `cmbench check`, cached, and measured."""
import numpy as np
import pytest

import cmbench
from cmbench.check import probe_adversary
from cmbench.errors import UserError
from cmbench.runner.contracts import kept_rows
from cmbench.runner.matrices import Damaged, decode, encode, rows_of
from conftest import write

PLUGIN = '''
import numpy as np
import cmbench

def truthful(X, budget, *, rng, structure, true_mean, true_cov):
    """Replace the last row by the true mean plus the covariance's diagonal."""
    out = np.array(X, copy=True)
    k = int(np.floor(budget * X.shape[0] + 1e-9))
    if k:
        out[-k:] = true_mean + np.diag(true_cov)
    return out

def early(X, budget, *, rng, structure):
    """Promises the last rows, replaces the first."""
    out = np.array(X, copy=True)
    if budget > 0:
        out[0] = 100.0
    return out

def drop_top(X, budget, *, rng, structure):
    """Delete the floor(eps N) rows of largest first coordinate; the rest in reverse order."""
    k = int(np.floor(budget * X.shape[0] + 1e-9))
    order = np.argsort(X[:, 0], kind="stable")
    return X[order[:X.shape[0] - k]][::-1]

def drop_too_many(X, budget, *, rng, structure):
    return X[: X.shape[0] // 2]

def forge(X, budget, *, rng, structure):
    out = X[1:].copy()
    out[0, 0] += 1.0
    return out

@cmbench.hookimpl
def register_adversaries():
    A = cmbench.Adversary
    return [A("truthful", truthful, level="sample", mode="replace", needs_truth=True, placement="last"),
            A("early", early, level="sample", mode="replace", placement="last"),
            A("drop-top", drop_top, level="sample", mode="delete"),
            A("drop-too-many", drop_too_many, level="sample", mode="delete"),
            A("forge", forge, level="sample", mode="delete")]
'''

SUITE = '''
name = "s"
seed = 3
plugins = ["p.py"]
[[experiment]]
name = "e"
datasets = [{{ name = "gaussian", d = 3, N = 40, variances = [4.0, 1.0, 0.25], mean = 2.0 }}]
instances = 2
adversaries = {adversaries}
budgets = [0.0, 0.1, 0.25]
recoverers = ["none"]
estimators = ["mean", "cmedian"]
metrics = ["l2", "excess-l2"]
'''


@pytest.fixture
def run(tmp_path):
    write(tmp_path / "p.py", PLUGIN)

    def run(adversaries, out="out"):
        path = write(tmp_path / "s.toml", SUITE.format(adversaries=adversaries))
        return cmbench.run_suite(path, out=tmp_path / out, report=False)["e"]
    return run


def test_an_adversary_that_needs_the_truth_receives_the_data_sets_mean_and_covariance(run):
    cube = run('["truthful"]')
    # the last 4 rows (eps = 0.1 of 40) are the point (2, 2, 2) + (4, 1, 0.25): the mean moves by 4/40 of it
    ok = cube["status"].sel(recoverer="none", estimator="mean") == "ok"
    assert bool(ok.all())
    excess = cube["excess-l2"].sel(recoverer="none", estimator="mean", budget=0.1)
    assert (excess > 0).all()


def test_rows_placed_last_are_held_to_it(run):
    cube = run('["early"]')
    status = cube["status"].sel(recoverer="none", estimator="mean", budget=0.1).values.ravel()
    error = str(cube["error"].sel(recoverer="none", estimator="mean", budget=0.1).values.ravel()[0])
    assert set(status) == {"failed"} and "places its rows last but corrupted row 0" in error
    decl = cmbench.plugins.load_plugins([]).get("adversaries", "ap25")
    assert decl.placement_for() == "last" and decl.placement_for({"placement": "random"}) == "any"


def test_a_deleting_adversary_runs_is_measured_and_cached(run, tmp_path):
    cube = run('["drop-top"]')
    mean = cube["l2"].sel(recoverer="none", estimator="mean")
    assert cube["d_tv"].sel(budget=0.25).values.ravel() == pytest.approx(0.25)
    assert np.isnan(cube["d_entry1"].sel(budget=0.25)).all()
    # the inliers are the whole clean sample: at budget 0 nothing is deleted and the mean is theirs
    np.testing.assert_allclose(cube["inlier_l2"].sel(budget=0.0).values, mean.sel(budget=0.0).values)
    # deleting the largest first coordinates biases the mean along it: the error grows with eps
    assert (mean.sel(budget=0.25) > mean.sel(budget=0.0)).all()
    stats = cmbench.runner.Progress()
    again = cmbench.run_suite(tmp_path / "s.toml", out=tmp_path / "out", stats=stats, report=False)["e"]
    assert stats.cached == stats.total > 0 and stats.computed == 0
    np.testing.assert_array_equal(again["l2"].values, cube["l2"].values)


def test_a_new_estimator_on_a_cached_deletion_sees_the_same_shorter_matrix(run, tmp_path):
    first = run('["drop-top"]')
    path = tmp_path / "s.toml"
    path.write_text(path.read_text().replace('estimators = ["mean", "cmedian"]',
                                             'estimators = ["mean", "cmedian", "sanitize"]'))
    second = cmbench.run_suite(path, out=tmp_path / "out", report=False)["e"]
    # sanitize (mean of the complete rows) equals the mean on a matrix without NaN
    np.testing.assert_allclose(second["l2"].sel(estimator="sanitize").values,
                               first["l2"].sel(estimator="mean").values, rtol=1e-12)


@pytest.mark.parametrize("name, message", [("drop-too-many", "rows deleted, at most"),
                                           ("forge", "is not a row of the input")])
def test_a_deletion_that_breaks_the_contract_fails_its_cells(run, name, message):
    cube = run(f'["{name}"]')
    error = str(cube["error"].sel(recoverer="none", estimator="mean", budget=0.1).values.ravel()[0])
    assert message in error


@pytest.mark.parametrize("name, ok", [("drop-top", True), ("truthful", True), ("early", False),
                                      ("drop-too-many", False), ("forge", False)])
def test_cmbench_check_applies_the_same_contract(tmp_path, name, ok):
    write(tmp_path / "p.py", PLUGIN)
    decl = cmbench.plugins.load_plugins([str(tmp_path / "p.py")]).get("adversaries", name)
    X = np.random.default_rng(0).standard_normal((40, 3))
    probe = probe_adversary(decl, X, 0.1, seed=0)
    assert (not probe.problems) is ok, probe.problems


def test_kept_rows_matches_equal_rows_in_order_and_refuses_others():
    X = np.array([[1.0, 2.0], [np.nan, 0.0], [1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(kept_rows(X[[2, 0, 1]], X), [0, 2, 1])  # equal rows: first come first
    np.testing.assert_array_equal(kept_rows(X[[3, 1]], X), [3, 1])  # NaN matches the same NaN
    with pytest.raises(ValueError, match="row 2"):
        kept_rows(X[[0, 2, 0]], X)  # a row repeated more often than the input holds it
    with pytest.raises(ValueError, match="not a row"):
        kept_rows(np.array([[-0.0, 0.0]]), np.array([[0.0, 0.0]]))  # bits, not values
    with pytest.raises(ValueError, match="more than"):
        kept_rows(np.vstack([X, X]), X)


def test_kept_rows_survives_a_hash_collision(monkeypatch):
    """Rows are keyed by a hash of their bits; equal keys of different rows fall back to the rows."""
    from cmbench.runner import contracts

    X = np.random.default_rng(3).standard_normal((30, 4))
    rows = np.array([5, 2, 29, 0])
    monkeypatch.setattr(contracts, "_row_keys", lambda M: np.zeros(M.shape[0], dtype=np.uint64))  # all collide
    np.testing.assert_array_equal(kept_rows(X[rows], X), rows)
    with pytest.raises(ValueError, match="row 1 of its result is not a row"):
        kept_rows(np.vstack([X[0], X[0] + 1.0]), X)


def test_a_deletion_is_stored_as_its_rows_and_decodes_to_the_same_bits():
    X = np.random.default_rng(1).standard_normal((1000, 20))
    rows = np.random.default_rng(2).permutation(1000)[:900]
    blob = encode(X[rows], X, rows)
    assert len(blob) < 0.05 * X[rows].nbytes  # rows, not values
    np.testing.assert_array_equal(decode(blob, X), X[rows])
    np.testing.assert_array_equal(rows_of(blob), rows)
    fixed = X[rows].copy()
    fixed[5, 3] = 7.0  # a recovery on the deletion: its rows and the delta
    np.testing.assert_array_equal(decode(encode(fixed, X, rows), X), fixed)
    assert rows_of(encode(X, X)) is None
    with pytest.raises(Damaged):
        decode(blob, X[:100])  # selects rows the data do not have


def test_declarations_that_cannot_hold_are_refused_at_registration(tmp_path):
    bad = PLUGIN.replace('A("drop-top", drop_top, level="sample", mode="delete")',
                         'A("drop-top", drop_top, level="value", mode="delete")')
    write(tmp_path / "p.py", bad)
    with pytest.raises(UserError, match="mode 'delete' removes rows: it needs level 'sample'"):
        cmbench.plugins.load_plugins([str(tmp_path / "p.py")])
    write(tmp_path / "q.py", PLUGIN.replace('mode="replace", placement="last")', 'mode="replace", placement="first")'))
    with pytest.raises(UserError, match="placement 'first' is not one of any, last"):
        cmbench.plugins.load_plugins([str(tmp_path / "q.py")])
