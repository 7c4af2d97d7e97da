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
    data = real("breast-cancer")
    assert data.shape == (699, 10) and data.columns[-1] == "Class"  # the class is kept, as in the paper
    raw_class = real("breast-cancer", standardize=False).X[:, -1]
    assert sorted(np.unique(raw_class)) == [2, 4] and (raw_class == 2).sum() == 458
    assert real("breast-cancer", include_class=False).shape == (699, 9)
    assert "Class" not in real("breast-cancer", include_class=False).columns
    assert real("breast-cancer", missing="drop-rows").shape == (683, 10)
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


# --------------------------------------------------- the paper's Table tab:dataset

# The table's row label -> data set; the paper's "69" samples of Breast Cancer is a
# typo for 699 (UCI's count; no 69-row version exists: see its PROVENANCE.md).
PAPER_NAMES = {"Leaf": "leaf", "Breast Cancer": "breast-cancer", "Blood Transfusion": "blood-transfusion",
               "Wearable Sensor": "wearable-sensor", "Mice Protein Expr.": "mice-protein"}
PAPER_TYPOS = {("breast-cancer", 69): 699}


def _shared(sub: str) -> Path | None:
    """``shared/<sub>`` beside the data folder or beside the repository, if present."""
    places = [Path(__file__).resolve().parents[1].parent / "shared" / sub]
    if os.environ.get("CMBENCH_DATA_DIR"):
        places.insert(0, Path(os.environ["CMBENCH_DATA_DIR"]).parent / sub)
    return next((p for p in places if p.exists()), None)


def paper_table() -> dict:
    """Data set -> (samples, features, ITHSVD rank), read from the paper's .tex."""
    folder = _shared("paper")
    tex = folder / "coordinate-level-corruption.tex" if folder else None
    if tex is None or not tex.is_file():
        if os.environ.get("CI"):
            pytest.fail("CI is set but the paper (../shared/paper) is not found")
        pytest.skip("the paper's .tex (../shared/paper) is not present")
    text = tex.read_text()
    body = text[text.index(r"\label{tab:dataset}"):]
    body = body[body.index(r"\midrule"):body.index(r"\bottomrule")]
    rows = {}
    for line in body.splitlines()[1:]:
        cells = [c.strip() for c in line.replace("\\\\", "").split("&")]
        if len(cells) == 4:
            rows[PAPER_NAMES[cells[0]]] = tuple(int(c) for c in cells[1:])
    assert set(rows) == set(REAL), rows
    return rows


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_shapes_are_the_papers_table(real, name):
    samples, features, rank = paper_table()[name]
    samples = PAPER_TYPOS.get((name, samples), samples)
    decl, data = REAL[name], real(name)
    assert decl.shape == data.shape == (samples, features)
    assert decl.rank == data.rank == rank
    # the PROVENANCE.md of the source files states the same shape
    provenance = (cmdata.locate(decl) / "PROVENANCE.md").read_text()
    assert f"{samples:,} x {features}" in provenance or f"{samples} x {features}" in provenance


# ------------------------------------------------------------ shipped tables

@pytest.mark.parametrize("name", sorted(REAL))
def test_shipped_table_is_what_the_source_files_derive(real, name):
    decl = REAL[name]
    folder = cmdata.locate(decl)
    assert folder == Path(os.environ["CMBENCH_DATA_DIR"]) / decl.folder
    shipped, meta = cmdata.read_table(decl.table.path)
    assert cmdata.compare_tables(shipped, decl.table.derive(folder)) is None
    assert shipped["X"].dtype == np.float64 and shipped["X"].shape[1] == decl.shape[1]
    assert meta["source_files"] == {f.path: f.sha256 for f in decl.files}
    assert {k: v for k, v in meta.items() if k not in ("format", "arrays")} == cmdata.table_meta(decl)
    assert meta["licence"].startswith("CC BY 4.0") and meta["source"].startswith("https://archive.ics.uci.edu/")
    provenance = (folder / "PROVENANCE.md").read_text()
    assert meta["doi"] in provenance and meta["doi"] in meta["attribution"]


def _bits(data) -> list[bytes]:
    return [np.ascontiguousarray(a).tobytes() for a in (data.X, data.mean, data.cov)]


@pytest.mark.parametrize("name", sorted(REAL))
def test_shipped_table_loads_bit_identically_without_the_files(real, name, monkeypatch, tmp_path):
    decl = REAL[name]
    variants = [{}] + ([{"room": "both", "exclude": ()}] if name == "wearable-sensor" else [])
    from_files = [real(name, **v) for v in variants]
    monkeypatch.delenv("CMBENCH_DATA_DIR")
    monkeypatch.setenv("CMBENCH_CACHE_DIR", str(tmp_path / "empty-cache"))
    arrays, origin = cmdata.load_arrays(decl)
    assert origin == f"shipped table {decl.table.path}"
    for v, expected in zip(variants, from_files):
        data = decl.fn(instance=0, rng=np.random.default_rng(0), **{**decl.params, **v})
        assert _bits(data) == _bits(expected)
        assert data.columns == expected.columns and data.rank == expected.rank
    assert not (tmp_path / "empty-cache").exists()  # nothing downloaded or cached


def test_shipped_tables_are_small_and_declared_as_package_data():
    files = sorted(Path(ds.TABLES).glob("*.npz"))
    assert sorted(Path(d.table.path) for d in REAL.values()) == files
    assert sum(f.stat().st_size for f in files) < 2_000_000
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    if pyproject.is_file():
        assert '"data/*.npz"' in pyproject.read_text()


@pytest.mark.skipif(not os.environ.get("CMBENCH_DATA_DIR"), reason="CMBENCH_DATA_DIR is not set")
def test_suite_cubes_are_identical_from_files_and_from_tables(tmp_path, monkeypatch):
    suite = tmp_path / "tiny.toml"
    suite.write_text(textwrap.dedent("""
        name = "tiny"
        seed = 7
        [[experiment]]
        name = "real"
        datasets = ["leaf", "breast-cancer", "blood-transfusion", "wearable-sensor", "mice-protein"]
        instances = 1
        adversaries = ["hide-smallest"]
        budgets = [0.1]
        recoverers = ["none"]
        estimators = ["mean", "cmedian"]
        metrics = ["l2"]
    """))
    monkeypatch.setenv("CMBENCH_OFFLINE", "1")
    monkeypatch.setenv("CMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    from_files = cmbench.run_suite(str(suite), out=str(tmp_path / "files"), report=False)["real"]
    monkeypatch.delenv("CMBENCH_DATA_DIR")
    assert all(row["copy"] in (None, "shipped table") for row in cmdata.status(cmbench.load_plugins()))
    from_tables = cmbench.run_suite(str(suite), out=str(tmp_path / "tables"), report=False)["real"]
    assert (from_files["status"] == "ok").all()
    a, b = (c.drop_vars([v for v in c.data_vars if v == "seconds"]) for c in (from_files, from_tables))
    for var in a.data_vars:
        assert np.array_equal(a[var].values, b[var].values, equal_nan=a[var].dtype.kind == "f"), var


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
