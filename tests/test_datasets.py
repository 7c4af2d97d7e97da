"""The built-in data sets: shapes, checksums, standardization, the synthetic model, csv errors.

Real-data tests read the files from ``$CMBENCH_DATA_DIR``. They are skipped
only when that variable is unset and ``CI`` is not set; in CI they must run.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import cmbench
import cmbench.errors
from cmbench import data as cmdata
from cmbench.builtins import datasets as ds

REAL = {d.name: d for d in ds.REAL}
SYNTHETIC = {d.name: d for d in ds.SYNTHETIC}


# ------------------------------------------------------------------ real data

@pytest.fixture(scope="module")
def real():
    """``load(name, **overrides) -> Data`` from $CMBENCH_DATA_DIR, memoised; never downloads."""
    if not os.environ.get("CMBENCH_DATA_DIR"):
        if os.environ.get("CI"):
            pytest.fail("CI is set but CMBENCH_DATA_DIR is not: the real-data tests must run in CI")
        pytest.skip("CMBENCH_DATA_DIR is not set (these tests always run when CI is set)")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CMBENCH_OFFLINE", "1")  # a missing file fails the test instead of downloading
        mp.delenv("CMBENCH_MIRROR", raising=False)
        mp.setenv("CMBENCH_CACHE_DIR", os.devnull + "-not-a-cache")
        loaded = {}

        def load(name, **overrides):
            key = (name, tuple(sorted((k, str(v)) for k, v in overrides.items())))
            if key not in loaded:
                decl = REAL[name]
                loaded[key] = decl.fn(instance=0, rng=np.random.default_rng(0),
                                      **{**decl.params, **overrides})
            return loaded[key]

        yield load


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_checksums_match_provenance(real, name):
    decl = REAL[name]
    folder = cmdata.locate(decl)
    assert folder is not None, f"{name}: files not found under $CMBENCH_DATA_DIR/{decl.folder}"
    assert folder == Path(os.environ["CMBENCH_DATA_DIR"]) / decl.folder
    provenance = folder / "PROVENANCE.md"
    text = provenance.read_text() if provenance.is_file() else None
    for f in decl.files:
        digest = hashlib.sha256((folder / f.path).read_bytes()).hexdigest()
        assert digest == f.sha256, f.path
        if text is not None:
            assert f.sha256 in text, f"{f.path}: declared digest not in {provenance}"
        assert f.url.startswith("https://archive.ics.uci.edu/"), f.url


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_shape_and_contents(real, name):
    decl, data = REAL[name], real(name)
    assert data.shape == decl.shape
    N, n = data.shape
    assert data.X.dtype == np.float64 and np.isfinite(data.X).all()
    assert data.mean.shape == (n,) and data.cov.shape == (n, n)
    assert data.structure is None and data.rank == decl.rank
    assert len(data.columns) == n and len(set(data.columns)) == n


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_standardized(real, name):
    data = real(name)
    np.testing.assert_array_equal(data.mean, data.X.mean(axis=0))  # the true mean is the clean mean
    np.testing.assert_allclose(data.mean, 0, atol=1e-12)
    np.testing.assert_allclose(data.X.std(axis=0), 1, rtol=1e-12)  # ddof = 0 by default
    np.testing.assert_allclose(np.diag(data.cov), 1, rtol=1e-12)
    np.testing.assert_array_equal(data.cov, data.cov.T)
    np.testing.assert_allclose(data.cov, np.cov(data.X, rowvar=False, ddof=0), atol=1e-12)


def test_real_ddof_one_and_raw(real):
    data = real("leaf", ddof=1)
    np.testing.assert_allclose(data.X.std(axis=0, ddof=1), 1, rtol=1e-12)
    np.testing.assert_allclose(data.cov, np.cov(data.X, rowvar=False), atol=1e-12)
    raw = real("leaf", standardize=False)
    assert raw.X.std(axis=0).min() < 1e-3  # Uniformity's scale, kept when not standardized
    np.testing.assert_allclose(raw.mean, raw.X.mean(axis=0))


def test_blood_transfusion_covariance_rank_4(real):
    data = real("blood-transfusion")
    assert np.linalg.matrix_rank(data.cov) == 4  # Monetary = 250 x Frequency
    assert np.linalg.matrix_rank(data.X - data.mean) == 4
    assert np.linalg.matrix_rank(real("blood-transfusion", include_target=False).cov) == 3
    assert "Monetary (c.c. blood)" in data.columns


def test_breast_cancer_missing_policies(real):
    assert real("breast-cancer").shape == (699, 9)
    assert real("breast-cancer", missing="drop-rows").shape == (683, 9)
    raw = real("breast-cancer", standardize=False)
    j = raw.columns.index("Bare Nuclei")
    dropped = real("breast-cancer", missing="drop-rows", standardize=False)
    assert raw.X[:, j].max() == 10 and dropped.X[:, j].min() == 1
    with pytest.raises(cmdata.DataError, match="Bare Nuclei"):
        real("breast-cancer", missing="error")
    with pytest.raises(cmdata.DataError, match="impute-mean"):
        real("breast-cancer", missing="zero")


def test_mice_protein_missing_policies(real):
    data = real("mice-protein")
    assert data.shape == (1080, 77) and data.columns[0] == "DYRK1A_N" and data.columns[-1] == "CaNA_N"
    assert real("mice-protein", missing="drop-rows").shape == (552, 77)
    with pytest.raises(cmdata.DataError, match=r"1396 values are missing.*BCL2_N"):
        real("mice-protein", missing="error")
    # mean imputation leaves each column's mean at the mean of its observed values
    raw = real("mice-protein", standardize=False)
    j = raw.columns.index("BCL2_N")
    filled = raw.X[:, j] == raw.mean[j]
    assert filled.sum() >= 285


def test_wearable_sensor_rooms_and_speed(real):
    t0 = time.perf_counter()
    assert real("wearable-sensor").shape == (52081, 9)
    assert time.perf_counter() - t0 < 5.0  # one parse of the joined files, ~0.1 s
    assert real("wearable-sensor", exclude=()).shape == (52482, 9)
    assert real("wearable-sensor", room="S2").shape == (22646, 9)
    assert real("wearable-sensor", room="both", exclude=[]).shape == (75128, 9)
    with pytest.raises(cmdata.DataError, match="d1p99M"):
        real("wearable-sensor", exclude=["d1p99M"])
    with pytest.raises(cmdata.DataError, match="room"):
        real("wearable-sensor", room="S3")


# ------------------------------------------------------------------ synthetic

def _synthetic(name, seed=0, **overrides):
    decl = SYNTHETIC[name]
    return decl.fn(instance=0, rng=np.random.default_rng(seed), **{**decl.params, **overrides})


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_analytic_moments_match_large_sample(name):
    N = 200_000
    data = _synthetic(name, seed=11, N=N)
    X = data.X
    xbar = X.mean(axis=0)
    # mean: each coordinate within 5 standard errors of the analytic mean
    z = (xbar - data.mean) / np.sqrt(np.diag(data.cov) / N)
    assert np.abs(z).max() < 5, z
    # covariance: each entry within 6 standard errors, the errors from the sample's fourth moments
    Xc = X - xbar
    S = Xc.T @ Xc / (N - 1)
    sq = Xc ** 2
    se = np.sqrt(np.maximum(sq.T @ sq / N - S ** 2, 0) / N)
    assert (np.abs(S - data.cov) <= 6 * se + 1e-12).all(), np.abs(S - data.cov).max()


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_structure(name):
    data = _synthetic(name)
    A = data.structure
    assert data.shape == (1000, 16) and A.shape == (16, 8) and data.rank == 8
    np.testing.assert_array_equal(A, ds.structure_matrix())  # fixed across families and instances
    np.testing.assert_array_equal(A, _synthetic(name, seed=99).structure)
    assert not A[:8, 4:].any() and not A[8:, :4].any() and A[:8, :4].all() and A[8:, 4:].all()
    # every sample lies in the column space of A, and so does the analytic covariance
    P = A @ np.linalg.pinv(A)
    np.testing.assert_allclose(data.X @ P.T, data.X, atol=1e-10)
    np.testing.assert_allclose(P @ data.cov @ P.T, data.cov, atol=1e-10)
    assert np.linalg.matrix_rank(data.cov) == 8


@pytest.mark.parametrize("name", ["synthetic-uniform", "synthetic-exponential"])
def test_synthetic_independent_latents(name):
    data = _synthetic(name)
    Ap = np.linalg.pinv(data.structure)
    cov_z = Ap @ data.cov @ Ap.T
    np.testing.assert_allclose(cov_z - np.diag(np.diag(cov_z)), 0, atol=1e-10)


def test_synthetic_instances_differ_and_repeat():
    a, b, c = (_synthetic("synthetic-gaussian", seed=s) for s in (1, 1, 2))
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.mean, b.mean)
    assert not np.allclose(a.mean, c.mean)  # a fresh latent distribution per instance
    assert not np.allclose(a.cov, c.cov)


def _digest(data) -> str:
    h = hashlib.sha256()
    for arr in (data.X, data.mean, data.cov, data.structure):
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def test_synthetic_bit_identical_in_subprocess():
    seq = [2021, 3, 1]  # e.g. suite seed, data set, instance
    local = {name: _digest(decl.fn(instance=1, rng=np.random.default_rng(np.random.SeedSequence(seq)),
                                   **decl.params)) for name, decl in SYNTHETIC.items()}
    code = textwrap.dedent(f"""
        import hashlib, json, numpy as np
        from cmbench.builtins import datasets as ds
        out = {{}}
        for decl in ds.SYNTHETIC:
            d = decl.fn(instance=1, rng=np.random.default_rng(np.random.SeedSequence({seq})), **decl.params)
            h = hashlib.sha256()
            for arr in (d.X, d.mean, d.cov, d.structure):
                h.update(np.ascontiguousarray(arr).tobytes())
            out[decl.name] = h.hexdigest()
        print(json.dumps(out))
    """)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr

    assert json.loads(res.stdout) == local


def test_synthetic_parameters():
    data = _synthetic("synthetic-uniform", N=50, blocks=[[6, 3], [5, 2], [4, 4]])
    assert data.shape == (50, 15) and data.rank == 9 and data.structure.shape == (15, 9)
    with pytest.raises(cmdata.DataError, match="N = 10"):
        _synthetic("synthetic-gaussian", N=10)  # N < n = 16
    with pytest.raises(cmdata.DataError, match="blocks"):
        _synthetic("synthetic-gaussian", blocks=[[2, 4]])
    with pytest.raises(cmdata.DataError, match="cov_dof"):
        _synthetic("synthetic-gaussian", cov_dof=3)


# ----------------------------------------------------------------------- csv

def _csv(tmp_path, text, **params):
    path = tmp_path / "table.csv"
    path.write_text(text)
    return ds.CSV.fn(instance=0, rng=None, **{**ds.CSV.params, "path": str(path), **params})


def test_csv_loads_standardized(tmp_path):
    rows = "\n".join(f"{i},{(i * 7) % 5},{i * i % 11},{-i}" for i in range(20))
    data = _csv(tmp_path, "a,b,c,d\n" + rows + "\n", rank=2, columns=["a", "b", "c"], exclude=["a"])
    assert data.shape == (20, 2) and data.columns == ("b", "c") and data.rank == 2
    np.testing.assert_allclose(data.X.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(data.X.std(axis=0), 1)
    assert data.structure is None


def test_csv_non_numeric_column_named(tmp_path):
    text = "x,species,y\n1,setosa,2\n2,virginica,5\n3,setosa,4\n"
    with pytest.raises(cmdata.DataError, match=r"'species' is not numeric.*setosa"):
        _csv(tmp_path, text)
    assert _csv(tmp_path, text, exclude=["species"]).shape == (3, 2)
    with pytest.raises(cmdata.DataError, match=r"'y' is not numeric \(row 2: '\?'\)"):
        _csv(tmp_path, "x,y\n1,2\n2,?\n3,4\n")
    assert _csv(tmp_path, "x,y\n1,2\n2,?\n3,4\n", na_values=["?"], missing="drop-rows").shape == (2, 2)


def test_csv_constant_column_named(tmp_path):
    with pytest.raises(cmdata.DataError, match=r"'flat' is constant"):
        _csv(tmp_path, "x,flat,y\n1,3,2\n2,3,5\n3,3,4\n")


def test_csv_all_missing_column_named(tmp_path):
    with pytest.raises(cmdata.DataError, match=r"'gone' is entirely missing"):
        _csv(tmp_path, "x,gone,y\n1,,2\n2,,5\n3,,4\n", missing="impute-mean")


def test_csv_missing_values_need_a_policy(tmp_path):
    text = "x,y,z\n1,2,1\n2,,3\n3,4,2\n5,1,7\n"
    with pytest.raises(cmdata.DataError, match=r"'y' \(1\).*missing ="):
        _csv(tmp_path, text)
    assert _csv(tmp_path, text, missing="drop-rows").shape == (3, 3)
    data = _csv(tmp_path, text, missing="impute-mean", standardize=False)
    assert data.X[1, 1] == pytest.approx(7 / 3)


def test_csv_empty_and_headless_files(tmp_path):
    with pytest.raises(cmdata.DataError, match="empty"):
        _csv(tmp_path, "")
    with pytest.raises(cmdata.DataError, match="no rows"):
        _csv(tmp_path, "a,b\n")
    with pytest.raises(cmdata.DataError, match="at least 2"):
        _csv(tmp_path, "a,b\n1,2\n")
    with pytest.raises(cmdata.DataError, match="N = 2 rows < n = 3"):
        _csv(tmp_path, "a,b,c\n1,2,3\n2,5,4\n")


def test_csv_other_errors(tmp_path):
    with pytest.raises(cmdata.DataError, match="'nope'"):
        _csv(tmp_path, "a,b\n1,2\n3,5\n", columns=["a", "nope"])
    with pytest.raises(cmdata.DataError, match=r"'b' holds an infinite value \(row 2\)"):
        _csv(tmp_path, "a,b\n1,2\n3,inf\n4,1\n")
    with pytest.raises(cmdata.DataError, match="rank"):
        _csv(tmp_path, "a,b\n1,2\n3,5\n4,1\n", rank=3)
    with pytest.raises(cmdata.DataError, match="no such file"):
        ds.CSV.fn(instance=0, rng=None, path=str(tmp_path / "absent.csv"))
    with pytest.raises(cmdata.DataError, match="give the file"):
        ds.CSV.fn(instance=0, rng=None)


# ------------------------------------------------------------------ registry

def test_registered_through_the_hook():
    registry = cmbench.load_plugins()
    assert set(SYNTHETIC) | set(REAL) | {"csv"} <= set(registry.datasets)
    assert cmdata.DataError is cmbench.errors.DataError
    for name in REAL:
        decl = registry.datasets[name]
        assert decl.files and decl.folder and decl.rank and decl.shape
        assert all(len(f.sha256) == 64 for f in decl.files)
    assert len(REAL["wearable-sensor"].files) == 87
