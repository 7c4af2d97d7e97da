"""Recovery quality, provenance of the environment, and the end-of-suite summary."""
import sys

import numpy as np
import pytest

from cmbench import cube as cubes
from cmbench.report.content.summary import summary_lines
from cmbench.runner.units import RECOVERED_TOLERANCE, recovery_fractions
from conftest import cli_inproc_result
from helpers import drawn_page_texts, squash


@pytest.mark.parametrize("n", [1, 2, 9, 17])
@pytest.mark.parametrize("N", [1, 2, 1000, 70_000])  # 70,000 rows span several row blocks
def test_column_nanstd_is_numpys_nanstd_bit_for_bit(N, n):
    import warnings

    from cmbench.runner.metrics import column_nanstd

    rng = np.random.default_rng(N * 100 + n)
    X = rng.standard_normal((N, n)) * np.exp(rng.uniform(-30, 30, (N, 1))) + rng.uniform(-1e6, 1e6, n)
    if n > 4:
        X[:, 1] = 3.0  # a constant column
        X[0, 2] = np.nan  # a column with a hidden entry
        X[:, 3] = np.nan  # a column with no value
        X[-1, 4] = np.inf
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's: no value in column 3
        want = np.nanstd(X, axis=0)
        got = column_nanstd(X)
    assert got.tobytes() == want.tobytes()


def test_a_fill_is_not_a_recovery():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3)) * [1.0, 10.0, 0.1]
    Xc = X.copy()
    hidden = rng.random(X.shape) < 0.2
    Xc[hidden] = np.nan
    exact = recovery_fractions(X, Xc, X.copy(), "missing")
    assert exact["recovered_fraction"] == 1.0 and exact["recovery_rmse"] == 0.0
    fill = np.where(np.isnan(Xc), np.nanmean(Xc, 0), Xc)  # column-mean fill
    got = recovery_fractions(X, Xc, fill, "missing")
    # a standard normal lies within 0.1 sd of its mean with probability ~ 0.08
    assert 0.02 < got["recovered_fraction"] < 0.2
    sd = X.std(0)
    expected = np.sqrt(np.mean(((fill - X) / 1.0)[hidden] ** 2))
    assert got["recovery_rmse"] == pytest.approx(expected)
    assert got["recovery_rmse"] > 5 * np.mean(sd[:2]) / 10  # dominated by the wide column
    # off by just under / just over the tolerance, column by column
    near = np.where(hidden, X + 0.99 * RECOVERED_TOLERANCE * sd, X)
    far = np.where(hidden, X + 1.01 * RECOVERED_TOLERANCE * sd, X)
    assert recovery_fractions(X, Xc, near, "missing")["recovered_fraction"] == 1.0
    assert recovery_fractions(X, Xc, far, "missing")["recovered_fraction"] == 0.0
    # left NaN: not recovered, not in the RMSE, and its rows are discarded
    partial = np.where(hidden & (np.arange(400) < 200)[:, None], np.nan, X)
    res = recovery_fractions(X, Xc, partial, "missing")
    assert res["recovery_rmse"] == 0.0 and 0.3 < res["recovered_fraction"] < 0.7
    assert res["discarded_fraction"] == pytest.approx(np.isnan(partial).any(1).mean())
    # replace mode: the replaced entries are the ones that differ
    Xr = X.copy()
    Xr[hidden] += 5.0
    assert recovery_fractions(X, Xr, X.copy(), "replace")["recovered_fraction"] == 1.0
    assert recovery_fractions(X, Xr, Xr, "replace")["recovery_rmse"] == pytest.approx(5.0)


def test_cube_records_environment_suite_text_and_recovery(smoke_run, tmp_path):
    ds = cubes.load(smoke_run / "smoke" / "synthetic.nc")
    env = cubes.attr_json(ds, "environment")
    assert env["numpy"] == np.__version__ and env["python"].split()[-1] == sys.version.split()[0]
    import scipy

    assert env["scipy"] == scipy.__version__ and env["blas"] and "logical cores" in env["cpu"]
    from cmbench.suite import load_suite

    suite = load_suite("smoke")
    assert ds.attrs["suite_text"] == suite.path.read_text()
    assert float(ds.attrs["recovered_tolerance"]) == RECOVERED_TOLERANCE
    rmse = ds["recovery_rmse"].sel(adversary="hide-smallest", budget=0.2)
    assert float(rmse.sel(recoverer="exact").max()) < 1e-6  # exact recovery restores the entries
    assert not np.isfinite(rmse.sel(recoverer="none")).any()  # none fills nothing
    frac = ds["recovered_fraction"].sel(adversary="hide-smallest", budget=0.2)
    # exact recovery restores what it fills (rows with too few entries stay NaN, discarded)
    assert float(frac.sel(recoverer="exact").min()) > 0.8 and float(frac.sel(recoverer="none").max()) == 0.0
    # the report's pages that state them: provenance, the suite file, the recovery curves
    pages = drawn_page_texts([smoke_run / "smoke" / "synthetic.nc"],
                             lambda slug: slug in ("provenance", "suite-file") or "recover" in slug, tmp_path)
    assert len(pages) == 4, list(pages)
    text = squash(pages["provenance"] + pages["suite-file"])
    for fragment in ("Environment", "numpy", np.__version__, "blas", "logicalcores", "Suitefile",
                     'name="smoke"'):
        assert squash(fragment) in text, fragment
    all_text = squash(" ".join(pages.values()))
    assert "recoveryRMSE(recoveredvscleanentries)" in all_text
    assert "within0.1standarddeviations" in all_text


def test_summary_ranks_as_the_reports_and_shows_every_method_up_to_twelve(smoke_run, tmp_path):
    ds = cubes.load(smoke_run / "smoke" / "synthetic.nc")
    lines = summary_lines({"synthetic": ds}, top=1)
    head = [ln for ln in lines if ln.strip()[:2].rstrip(".").isdigit()]
    assert lines[0].startswith("synthetic: methods by l2 error, ranked by average rank")
    assert len(head) == 3 and head[0].split()[1] == "Two-Step-E"  # three methods: all shown
    assert lines[-1].strip() == "cells: 32 ok"


def test_suite_prints_the_summary(tmp_path, winsorized_file):
    result = cli_inproc_result("suite", "smoke", "--out", tmp_path / "out", "--plugin", winsorized_file,
                               "--no-report", "--workers", "1")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "synthetic: methods by l2 error, ranked by average rank" in out
    ranked = [ln.split() for ln in out.splitlines() if ln.strip()[:1].isdigit() and ". " in ln]
    assert [r[0] for r in ranked][:3] == ["1.", "2.", "3."]
    plugin = [ln for ln in out.splitlines() if "winsorized-mean" in ln]
    assert plugin and all("--plugin" in ln for ln in plugin)
    assert "cells: " in out and "cubes: " in out
