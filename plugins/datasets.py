"""Built-in data sets: the paper's synthetic x = A z families, its five UCI tables, and a user's csv.

Synthetic (supplementary, "Mean Estimation on Synthetic Data")
    ``synthetic-gaussian``, ``synthetic-uniform``, ``synthetic-exponential``:
    x = A z with A block diagonal (two random 8 x 4 Gaussian blocks, drawn once
    from the constant seed `STRUCTURE_SEED`, so identical across experiments
    and instances) and z from the named latent family, whose parameters are
    drawn afresh per instance from the ``rng`` the runner passes. N = 1000.
    The true mean A E[z] and covariance A Cov(z) A^T are analytic.

Real (Table tab:dataset; files from UCI, checked by SHA-256)
    ``leaf`` 340 x 14, ``breast-cancer`` 699 x 10, ``blood-transfusion`` 748 x 5,
    ``wearable-sensor`` 52,081 x 9, ``mice-protein`` 1080 x 77, with the
    paper's ITHSVD ranks (3, 3, 3, 4, 10) as rank hints. As in the paper the
    numeric features are standardized; the "true mean" is the mean of the clean
    standardized data and ``cov`` its covariance (see `_tabular`). The tables
    ship with the package (``data/*.npz``, derived from the source files by the
    ``derive_*`` functions, licence CC BY 4.0 with attribution in each file's
    metadata and in ``data/README.md``); source files in ``$CMBENCH_DATA_DIR``
    or the cache folder take precedence (see `cmbench.data`).

User data
    ``csv``: ``{name = "csv", label = "my-data", path = "data.csv", columns = [...], rank = 5}``.

Download locations are UCI's classic ``machine-learning-databases`` URLs (not
checked against the live site: the tests run offline). Leaf and the wearable
sensor data are only distributed as zips, so their URLs name a zip member
(``ARCHIVE#MEMBER``, see `cmbench.data`).
"""
from __future__ import annotations

import csv
import io
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

import cmbench
from cmbench import data as cmdata
from cmbench.data import DataError

from .sample_sizes import sample_size

if TYPE_CHECKING:  # pandas is imported only where a table is parsed: loading the plugins stays fast
    import pandas as pd

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"

#: Seed of the synthetic structure A: a constant, so every experiment, instance
#: and process sees the same A (the paper's "fixed through the experiments").
STRUCTURE_SEED = 20210718
DEFAULT_BLOCKS = ((8, 4), (8, 4))

#: How values missing in the source (before any corruption) are handled.
MISSING_POLICIES = ("error", "impute-mean", "impute-median", "drop-rows")


# ====================================================================== common

def _tabular(name: str, X: np.ndarray, columns: Sequence[str], *, rank: Optional[int],
             missing: str = "error", standardize: bool = True, ddof: int = 0) -> cmbench.Data:
    """Validate a clean (N, n) table, apply the missing-value policy, standardize.

    Parameters
    ----------
    name : data set name used in error messages.
    X : (N, n) float array as read from the source (NaN = missing in the source).
    columns : the n column names.
    rank : rank hint passed through to `cmbench.Data`.
    missing : policy for NaN present before corruption: ``"error"`` (raise),
        ``"impute-mean"`` / ``"impute-median"`` (fill with the column's mean /
        median of the observed values, keeping N), ``"drop-rows"`` (keep the
        complete rows only).
    standardize : z-score every column: (x - mean) / std with ``ddof``.
    ddof : delta degrees of freedom of the standard deviation and of ``cov``.
        Default 0 (the population std, as scikit-learn's StandardScaler, the
        usual way to "standardize" in the paper's Python setting), so the
        standardized columns have ``X.std(axis=0) == 1`` exactly and ``cov`` is
        the correlation matrix (unit diagonal).

    Returns
    -------
    `cmbench.Data` with ``mean`` = X.mean(axis=0) of the clean standardized
    table (about 0), ``cov`` = Xc^T Xc / (N - ddof) (the sample covariance,
    possibly singular), ``structure`` None, ``rank`` the hint.

    Raises
    ------
    DataError
        An unknown policy; an infinite value; missing values under ``"error"``;
        an all-missing or constant column (standardizing would divide by zero);
        fewer than 2 rows, or N < n. Messages name the data set and column.
    """
    if missing not in MISSING_POLICIES:
        raise DataError(f"data set {name}: missing = {missing!r} is not one of "
                        f"{', '.join(MISSING_POLICIES)}")
    if ddof not in (0, 1):
        raise DataError(f"data set {name}: ddof must be 0 or 1, got {ddof!r}")
    X = np.array(X, dtype=np.float64)  # a copy: the policies below write into it
    columns = tuple(str(c) for c in columns)
    N, n = X.shape
    if n == 0:
        raise DataError(f"data set {name}: no columns")
    if N == 0:
        raise DataError(f"data set {name}: no rows")
    inf = np.isinf(X)
    if inf.any():
        i, j = np.argwhere(inf)[0]
        raise DataError(f"data set {name}: column {columns[j]!r} holds an infinite value "
                        f"(row {i + 1}); only finite values and NaN (missing) are allowed")
    X = _apply_missing(name, X, columns, missing)
    N = X.shape[0]
    if N < 2:
        raise DataError(f"data set {name}: {N} row(s); a mean and covariance need at least 2")
    if N < n:
        raise DataError(f"data set {name}: N = {N} rows < n = {n} columns; the covariance "
                        f"would be singular by construction (select fewer columns)")
    constant = np.flatnonzero(np.ptp(X, axis=0) == 0)
    if constant.size:
        j = constant[0]
        raise DataError(f"data set {name}: column {columns[j]!r} is constant ({X[0, j]:g}); "
                        f"standardizing would divide by zero: exclude it")
    if rank is not None and not (isinstance(rank, (int, np.integer)) and 1 <= rank <= n):
        raise DataError(f"data set {name}: rank = {rank!r} must be an integer between 1 and n = {n}")
    if standardize:
        X = (X - X.mean(axis=0)) / X.std(axis=0, ddof=ddof)
    mean = X.mean(axis=0)
    Xc = X - mean
    cov = (Xc.T @ Xc) / (N - ddof)
    cov = (cov + cov.T) / 2  # exactly symmetric for Cholesky / eigh downstream
    return cmbench.Data(X=X, mean=mean, cov=cov, structure=None,
                        rank=None if rank is None else int(rank), columns=columns)


def _apply_missing(name: str, X: np.ndarray, columns: tuple, missing: str) -> np.ndarray:
    nan = np.isnan(X)
    if not nan.any():
        return X
    counts = nan.sum(axis=0)
    empty = np.flatnonzero(counts == X.shape[0])
    if empty.size:
        raise DataError(f"data set {name}: column {columns[empty[0]]!r} is entirely missing")
    if missing == "error":
        worst = np.argsort(-counts, kind="stable")[: min(5, int((counts > 0).sum()))]
        listed = ", ".join(f"{columns[j]!r} ({counts[j]})" for j in worst)
        raise DataError(
            f"data set {name}: {int(counts.sum())} values are missing before any corruption, "
            f"in columns {listed}{', ...' if (counts > 0).sum() > 5 else ''}; choose a policy: "
            f"missing = 'impute-mean', 'impute-median' or 'drop-rows'")
    if missing == "drop-rows":
        return X[~nan.any(axis=1)]
    fill = np.nanmean(X, axis=0) if missing == "impute-mean" else np.nanmedian(X, axis=0)
    return np.where(nan, fill, X)


def _check_size(name: str, N: int, n: int) -> None:
    if N < 2 or N < n:
        raise DataError(f"data set {name}: N = {N} rows; need N >= 2 and N >= n = {n}")


# =================================================================== synthetic

def _blocks(name: str, blocks) -> tuple:
    try:
        out = tuple((int(rows), int(cols)) for rows, cols in blocks)
    except (TypeError, ValueError):
        raise DataError(f"data set {name}: blocks must be a list of [rows, cols] pairs, "
                        f"e.g. [[8, 4], [8, 4]]; got {blocks!r}") from None
    if not out or any(rows < 1 or cols < 1 or cols > rows for rows, cols in out):
        raise DataError(f"data set {name}: blocks = {blocks!r}: every block [rows, cols] needs "
                        f"1 <= cols <= rows (so A has full column rank)")
    return out


def structure_matrix(blocks: Sequence = DEFAULT_BLOCKS, seed: int = STRUCTURE_SEED) -> np.ndarray:
    """The block-diagonal structure A of the synthetic data.

    Parameters
    ----------
    blocks : (rows, cols) of each diagonal block; the paper's two 8 x 4 blocks by default.
    seed : the constant seed; the blocks' entries are i.i.d. N(0, 1) drawn in
        block order (a Gaussian A, as in the paper's analysis).

    Returns
    -------
    A : (sum rows, sum cols) float array, zero outside the blocks; full column
        rank with probability 1.
    """
    blocks = _blocks("synthetic", blocks)
    gen = np.random.default_rng(seed)
    A = np.zeros((sum(b[0] for b in blocks), sum(b[1] for b in blocks)))
    i = j = 0
    for rows, cols in blocks:
        A[i:i + rows, j:j + cols] = gen.standard_normal((rows, cols))
        i, j = i + rows, j + cols
    return A


def _linear(Z: np.ndarray, M: np.ndarray) -> np.ndarray:
    """Z @ M.T via einsum: no BLAS, so bit-identical whatever the thread count."""
    return np.einsum("nk,ik->ni", Z, M)


def _synthetic(name: str, rng, N: int, blocks, structure_seed: int, latent) -> cmbench.Data:
    """x = A z with z = latent(r, N, rng) -> (Z (N, r), E[z] (r,), Cov(z) (r, r))."""
    A = structure_matrix(_blocks(name, blocks), structure_seed)
    n, r = A.shape
    N = int(N)
    _check_size(name, N, n)
    rng = np.random.default_rng(rng)
    # Latent parameters first, then the sample: the order fixes the data for a given rng.
    Z, mean_z, cov_z = latent(r, N, rng)
    cov = A @ cov_z @ A.T
    return cmbench.Data(X=_linear(Z, A), mean=A @ mean_z, cov=(cov + cov.T) / 2, structure=A,
                        rank=int(np.linalg.matrix_rank(A)),
                        columns=tuple(f"x{i + 1}" for i in range(n)))


def _range(name: str, key: str, value) -> tuple[float, float]:
    lo, hi = (float(v) for v in value)
    if not 0 < lo <= hi:
        raise DataError(f"data set {name}: {key} = {value!r} must be [low, high] with 0 < low <= high")
    return lo, hi


def load_synthetic_gaussian(*, instance, rng, N: int = 1000, blocks=DEFAULT_BLOCKS,
                            structure_seed: int = STRUCTURE_SEED, mean_scale: float = 1.0,
                            cov_scale: float = 1.0, cov_dof: Optional[int] = None) -> cmbench.Data:
    """Gaussian latent z ~ N(mu, L L^T), a new (mu, L) per instance.

    mu ~ N(0, mean_scale^2 I_r); L is r x k with i.i.d. N(0, cov_scale^2 / k)
    entries, k = ``cov_dof`` (default 2r), so Cov(z) = L L^T is a Wishart draw
    with mean cov_scale^2 I. k = 2r rather than a square L keeps Cov(z) well
    conditioned (eigenvalues within about [0.09, 2.9] cov_scale^2), so the
    Mahalanobis error is not dominated by a nearly degenerate direction.

    Returns
    -------
    `cmbench.Data`: X (N, n), mean A mu, cov A L L^T A^T, structure A, rank r.
    """
    name = "synthetic-gaussian"

    def latent(r, N, rng):
        k = 2 * r if cov_dof is None else int(cov_dof)
        if k < r:
            raise DataError(f"data set {name}: cov_dof = {k} < r = {r} makes Cov(z) singular")
        mu = float(mean_scale) * rng.standard_normal(r)
        L = float(cov_scale) * rng.standard_normal((r, k)) / np.sqrt(k)
        return mu + _linear(rng.standard_normal((N, k)), L), mu, L @ L.T

    return _synthetic(name, rng, N, blocks, structure_seed, latent)


def load_synthetic_uniform(*, instance, rng, N: int = 1000, blocks=DEFAULT_BLOCKS,
                           structure_seed: int = STRUCTURE_SEED, bound: float = 1.0,
                           width=(0.5, 2.0)) -> cmbench.Data:
    """Uniform latent: independent z_j ~ U(a_j, a_j + w_j), new bounds per instance.

    a_j ~ U(-bound, bound), w_j ~ U(width[0], width[1]); E[z_j] = a_j + w_j / 2,
    Var z_j = w_j^2 / 12.
    """
    name = "synthetic-uniform"
    w_lo, w_hi = _range(name, "width", width)

    def latent(r, N, rng):
        low = float(bound) * rng.uniform(-1.0, 1.0, r)
        w = rng.uniform(w_lo, w_hi, r)
        return low + w * rng.random((N, r)), low + w / 2, np.diag(w ** 2 / 12)

    return _synthetic(name, rng, N, blocks, structure_seed, latent)


def load_synthetic_exponential(*, instance, rng, N: int = 1000, blocks=DEFAULT_BLOCKS,
                               structure_seed: int = STRUCTURE_SEED, bound: float = 1.0,
                               scale=(0.5, 2.0)) -> cmbench.Data:
    """Exponential latent: independent z_j = s_j + theta_j E_j, E_j ~ Exp(1), new (s, theta) per instance.

    s_j ~ U(-bound, bound), theta_j ~ U(scale[0], scale[1]); E[z_j] = s_j + theta_j,
    Var z_j = theta_j^2. Skewed, so mean and median differ (unlike the other two).
    """
    name = "synthetic-exponential"
    s_lo, s_hi = _range(name, "scale", scale)

    def latent(r, N, rng):
        shift = float(bound) * rng.uniform(-1.0, 1.0, r)
        theta = rng.uniform(s_lo, s_hi, r)
        return shift + theta * rng.standard_exponential((N, r)), shift + theta, np.diag(theta ** 2)

    return _synthetic(name, rng, N, blocks, structure_seed, latent)


# ======================================================================== real
#
# Each real data set has a ``derive_*`` function: source folder -> the arrays
# its loader needs ("X" float64 with NaN where the source has no value,
# "columns", and for the wearable sensor the trial of each row). The same
# arrays ship with the package (data/*.npz, see `cmbench.data.write_table`),
# so a loader runs offline; `cmbench.data.load_arrays` derives them from the
# source files instead whenever a data folder holds those.

#: Where the shipped tables live (package data of cmbench.builtins).
TABLES = Path(__file__).resolve().parent / "data"


def _read_csv(name: str, path: Path, **kwargs) -> pd.DataFrame:
    import pandas as pd

    try:
        return pd.read_csv(path, **kwargs)
    except (ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"data set {name}: cannot parse {path}: {exc}") from None


def _expect_width(name: str, path: Path, frame: pd.DataFrame, width: int) -> None:
    if frame.shape[1] != width:
        raise DataError(f"data set {name}: {path} has {frame.shape[1]} columns, expected {width}")


def _table(name: str, arrays: dict) -> tuple[np.ndarray, tuple]:
    """The float64 matrix (column-major) and column names of loaded arrays, checked."""
    X = _columns_first(arrays["X"])
    names = tuple(str(c) for c in arrays["columns"])
    if X.ndim != 2 or X.shape[1] != len(names):
        raise DataError(f"data set {name}: the table's X has shape {X.shape} for {len(names)} columns")
    return X, names


def _columns_first(X) -> np.ndarray:
    """X as a column-major float64 array.

    NumPy's column means sum in a different order for row- and column-major
    arrays, so the last bits of ``mean`` depend on the layout: one layout,
    whichever copy (source files or shipped table) the values came from, keeps
    the results identical.
    """
    return np.asfortranarray(X, dtype=np.float64)


LEAF_COLUMNS = (
    "Eccentricity", "Aspect Ratio", "Elongation", "Solidity", "Stochastic Convexity",
    "Isoperimetric Factor", "Maximal Indentation Depth", "Lobedness", "Average Intensity",
    "Average Contrast", "Smoothness", "Third moment", "Uniformity", "Entropy",
)


def derive_leaf(folder: Path) -> dict:
    """Leaf's table from ``leaf.csv``: columns 3-16 (the 14 shape and texture features), 340 rows.

    Parameters
    ----------
    folder : the folder holding ``leaf.csv`` (no header row).

    Returns
    -------
    ``{"X": (340, 14) float64, "columns": LEAF_COLUMNS}``.
    """
    path = Path(folder) / "leaf.csv"
    frame = _read_csv("leaf", path, header=None, dtype=np.float64)
    _expect_width("leaf", path, frame, 16)
    return {"X": frame.to_numpy()[:, 2:], "columns": np.array(LEAF_COLUMNS)}


def load_leaf(*, instance, rng, standardize: bool = True, ddof: int = 0) -> cmbench.Data:
    """Leaf (UCI 288): 340 x 14, the shape and texture features (columns 3-16 of leaf.csv).

    Columns 1-2 (species, specimen number) are labels, not features. No missing values.
    """
    X, columns = _table("leaf", cmdata.load_arrays(LEAF)[0])
    return _tabular("leaf", X, columns, rank=3, standardize=standardize, ddof=ddof)


BREAST_COLUMNS = (
    "Clump Thickness", "Uniformity of Cell Size", "Uniformity of Cell Shape", "Marginal Adhesion",
    "Single Epithelial Cell Size", "Bare Nuclei", "Bland Chromatin", "Normal Nucleoli", "Mitoses",
    "Class",
)


def derive_breast_cancer(folder: Path) -> dict:
    """Breast Cancer's table from ``breast-cancer-wisconsin.data``: columns 2-11, 699 rows.

    The 9 features and the class (2 benign, 4 malignant); the sample code
    number (column 1) is an id and is dropped. The 16 ``?`` of Bare Nuclei are NaN.

    Returns
    -------
    ``{"X": (699, 10) float64, "columns": BREAST_COLUMNS}``.
    """
    path = Path(folder) / "breast-cancer-wisconsin.data"
    frame = _read_csv("breast-cancer", path, header=None, na_values="?", dtype=np.float64)
    _expect_width("breast-cancer", path, frame, 11)
    return {"X": frame.to_numpy()[:, 1:11], "columns": np.array(BREAST_COLUMNS)}


def load_breast_cancer(*, instance, rng, include_class: bool = True, missing: str = "impute-mean",
                       standardize: bool = True, ddof: int = 0) -> cmbench.Data:
    """Breast Cancer Wisconsin (Original) (UCI 15): 699 x 10, the 9 features and the class column.

    The paper's Table tab:dataset says "69 x 10": 69 is read as 699 (UCI's row
    count; no 69-row version exists), and its 10 columns as the 9 features plus
    the class, kept as a column as Blood Transfusion keeps its target (the
    sample id is not data). ``include_class=False`` gives the 699 x 9 features
    only. The 16 '?' in Bare Nuclei are handled by ``missing``; the default
    ``"impute-mean"`` keeps the 699 rows and leaves the column's mean equal to
    the mean of its observed values (the "true mean" is the observed one);
    ``"drop-rows"`` gives the 683 complete rows.
    """
    X, columns = _table("breast-cancer", cmdata.load_arrays(BREAST_CANCER)[0])
    if not include_class:
        X, columns = X[:, :-1], columns[:-1]
    return _tabular("breast-cancer", X, columns, rank=3, missing=missing, standardize=standardize,
                    ddof=ddof)


def derive_blood_transfusion(folder: Path) -> dict:
    """Blood Transfusion's table from ``transfusion.data`` (one header row): all 5 columns, 748 rows.

    Returns
    -------
    ``{"X": (748, 5) float64, "columns": the file's header}``; the last column is the target.
    """
    path = Path(folder) / "transfusion.data"
    frame = _read_csv("blood-transfusion", path, header=0, skipinitialspace=True)
    _expect_width("blood-transfusion", path, frame, 5)
    return {"X": frame.to_numpy(dtype=np.float64), "columns": np.array([str(c) for c in frame.columns])}


def load_blood_transfusion(*, instance, rng, include_target: bool = True, standardize: bool = True,
                           ddof: int = 0) -> cmbench.Data:
    """Blood Transfusion Service Center (UCI 176): 748 x 5, target column included as in the paper.

    Monetary = 250 x Frequency in every row, so the covariance has rank 4 (3
    without the target): it is singular, by the data, not by accident.
    """
    X, columns = _table("blood-transfusion", cmdata.load_arrays(BLOOD_TRANSFUSION)[0])
    if not include_target:
        X, columns = X[:, :4], columns[:4]
    return _tabular("blood-transfusion", X, columns, rank=3, standardize=standardize, ddof=ddof)


WEARABLE_COLUMNS = (
    "time", "acc_frontal", "acc_vertical", "acc_lateral", "antenna_id", "rssi", "phase",
    "frequency", "activity",
)
_ROOMS = {"S1": ("S1_Dataset/",), "S2": ("S2_Dataset/",), "both": ("S1_Dataset/", "S2_Dataset/")}


def derive_wearable_sensor(folder: Path) -> dict:
    """The wearable sensor's table from its 87 trial files: 75,128 x 9 and each row's trial.

    The trial files of both rooms, concatenated in file-name order, each read
    without a header. The files are joined into one buffer and parsed once.

    Returns
    -------
    ``{"X": (75128, 9) float64, "columns": WEARABLE_COLUMNS, "trials": the 87
    trial paths ("S1_Dataset/d1p01M", ...), "trial": (75128,) uint8, row -> index into trials}``.
    """
    import pandas as pd

    name = "wearable-sensor"
    folder = Path(folder)
    trials = sorted(f.path for f in WEARABLE_SENSOR.files)
    parts, rows = [], []
    for p in trials:
        raw = (folder / p).read_bytes()
        raw = raw if raw.endswith(b"\n") else raw + b"\n"
        parts.append(raw)
        rows.append(raw.count(b"\n"))
    try:
        # One parse of the joined files: about twice as fast as one read_csv per file.
        frame = pd.read_csv(io.BytesIO(b"".join(parts)), header=None, dtype=np.float64)
    except (ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"data set {name}: cannot parse the trial files in {folder}: {exc}") from None
    _expect_width(name, folder, frame, 9)
    if frame.shape[0] != sum(rows):  # a blank line would shift every later row's trial
        raise DataError(f"data set {name}: the trial files in {folder} hold {sum(rows)} lines "
                        f"but {frame.shape[0]} rows (blank lines?)")
    return {"X": frame.to_numpy(), "columns": np.array(WEARABLE_COLUMNS), "trials": np.array(trials),
            "trial": np.repeat(np.arange(len(trials), dtype=np.uint8), rows)}


def load_wearable_sensor(*, instance, rng, room: str = "S1", exclude: Sequence[str] = ("d1p01M",),
                         standardize: bool = True, ddof: int = 0) -> cmbench.Data:
    """Activity recognition with a batteryless wearable sensor (UCI 427): 52,081 x 9 by default.

    All 9 columns (time, 3 accelerations, antenna id, RSSI, phase, frequency,
    activity label), the trial files of ``room`` ("S1", "S2" or "both")
    concatenated in file-name order, without the trial files named in
    ``exclude``. The default, room S1 without d1p01M, is the only single-file
    explanation of the paper's 52,081 rows (S1 has 52,482; d1p01M has 401).
    """
    name = "wearable-sensor"
    exclude = (exclude,) if isinstance(exclude, str) else tuple(exclude)
    if room not in _ROOMS:
        raise DataError(f"data set {name}: room = {room!r} is not one of {', '.join(_ROOMS)}")
    known = {Path(f.path).name for f in WEARABLE_SENSOR.files}
    unknown = sorted(set(exclude) - known)
    if unknown:
        raise DataError(f"data set {name}: exclude names {', '.join(unknown)}, which is not a "
                        f"trial file (d1p01M ... d1p60F, d2p01F ... d2p27F)")
    arrays = cmdata.load_arrays(WEARABLE_SENSOR)[0]
    X, columns = _table(name, arrays)
    trials = [str(t) for t in arrays["trials"]]
    chosen = [i for i, p in enumerate(trials) if p.startswith(_ROOMS[room]) and Path(p).name not in exclude]
    if not chosen:
        raise DataError(f"data set {name}: every trial file of room {room} is excluded")
    return _tabular(name, _columns_first(X[np.isin(arrays["trial"], chosen)]), columns, rank=4,
                    standardize=standardize, ddof=ddof)


def derive_mice_protein(folder: Path) -> dict:
    """Mice Protein's table from ``Data_Cortex_Nuclear.xls``: the 77 protein columns (2-78), 1080 rows.

    Read with ``pandas.read_excel(engine="calamine")``; empty cells are NaN.

    Returns
    -------
    ``{"X": (1080, 77) float64, "columns": the 77 protein names (*_N)}``.
    """
    import pandas as pd

    name = "mice-protein"
    path = Path(folder) / "Data_Cortex_Nuclear.xls"
    try:
        frame = pd.read_excel(path, sheet_name=0, engine="calamine")
    except Exception as exc:  # calamine raises its own types for damaged workbooks
        raise DataError(f"data set {name}: cannot read {path}: {exc}") from None
    proteins = frame.iloc[:, 1:78]
    if proteins.shape[1] != 77 or not all(str(c).endswith("_N") for c in proteins.columns):
        raise DataError(f"data set {name}: {path} does not have the 77 protein columns (*_N) "
                        f"in columns 2-78")
    return {"X": proteins.to_numpy(dtype=np.float64), "columns": np.array([str(c) for c in proteins.columns])}


def load_mice_protein(*, instance, rng, missing: str = "impute-mean", standardize: bool = True,
                      ddof: int = 0) -> cmbench.Data:
    """Mice Protein Expression (UCI 342): 1080 x 77, the protein columns 2-78 of the .xls.

    The source already misses 1,396 values (49 columns, 528 rows). Default
    ``missing="impute-mean"``: it keeps the paper's 1080 x 77, leaves each
    column's mean equal to the mean of its observed values (so the "true mean"
    is the observed one) and does not mix source gaps with the corruption the
    benchmark measures; ``"drop-rows"`` keeps the 552 complete rows;
    ``"error"`` refuses. Columns pS6_N and ARC_N are identical in the source,
    so the covariance has rank 76, not 77.
    """
    X, columns = _table("mice-protein", cmdata.load_arrays(MICE_PROTEIN)[0])
    return _tabular("mice-protein", X, columns, rank=10, missing=missing, standardize=standardize,
                    ddof=ddof)


# ========================================================================= csv

def load_csv(*, instance, rng, path: Optional[str] = None, columns: Optional[Sequence[str]] = None,
             exclude: Sequence[str] = (), rank: Optional[int] = None, missing: str = "error",
             standardize: bool = True, ddof: int = 0, sep: str = ",",
             na_values: Sequence[str] = ()) -> cmbench.Data:
    """A user's own table: a delimited text file with a header row.

    Parameters
    ----------
    path : the file (the suite loader makes it absolute, relative to the suite file).
    columns : the columns to use (default: all); ``exclude`` drops columns after that.
    rank : rank hint for structure-learning recoverers (optional).
    missing : policy for empty / NA cells (see `_tabular`); default ``"error"``,
        so a user's gaps are never silently filled.
    standardize, ddof : z-score the columns (see `_tabular`).
    sep : field separator.
    na_values : extra strings read as missing (e.g. ``["?"]``), besides pandas'
        defaults (empty, ``NA``, ``NaN``, ...).

    Raises
    ------
    DataError
        No path, a missing or empty file, unknown or non-numeric columns (named,
        with an offending value), an all-missing or constant column (named).
    """
    import pandas as pd

    if not path:
        raise DataError('data set csv: give the file, e.g. {name = "csv", path = "data.csv"}')
    path = Path(path)
    name = f"csv ({path})"
    try:
        # a regular file within the size limit, checked on its descriptor (never a device or FIFO)
        with cmdata.open_user_file(path, f"data set {name}") as fh, \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pd.errors.ParserWarning)
            # index_col=False: a header shorter than its rows never turns the first column into an index
            frame = pd.read_csv(fh, sep=sep, na_values=list(na_values) or None, index_col=False)
    except pd.errors.EmptyDataError:
        raise DataError(f"data set {name}: the file is empty") from None
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        if isinstance(exc, pd.errors.ParserError):
            _check_widths(name, path, sep)  # names the first bad line, not pandas' first long one
        raise DataError(f"data set {name}: cannot parse: {exc}") from None
    if caught or frame.isna().to_numpy().any():  # rows of another width show up only as these
        _check_widths(name, path, sep)
    frame.columns = [str(c) for c in frame.columns]
    frame = _select(name, frame, columns, exclude)
    if frame.shape[0] == 0:
        raise DataError(f"data set {name}: the file has a header but no rows")
    for col in frame.columns:
        if pd.api.types.is_numeric_dtype(frame[col]):
            continue
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = frame[col].notna() & values.isna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"data set {name}: column {col!r} is not numeric (row {i + 1}: "
                            f"{frame[col].iloc[i]!r}); drop it with exclude = [{col!r}] or "
                            f"pick columns with columns = [...]")
        frame[col] = values
    return _tabular(name, frame.to_numpy(dtype=np.float64), frame.columns, rank=rank,
                    missing=missing, standardize=standardize, ddof=ddof)


def _check_widths(name: str, path: Path, sep: str) -> None:
    """Every row has as many fields as the header, else a DataError naming file and line.

    pandas pads a short row with NaN and, without an index column, drops the
    extra fields of a long one; either would run the benchmark on another table.
    """
    if len(sep) != 1:  # a regular-expression separator: the csv module cannot split it
        return
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.reader(fh, delimiter=sep)
        header = next(reader, [])
        for row in reader:
            if row and len(row) != len(header):
                raise DataError(f"data set {name}: {path}:{reader.line_num}: {len(row)} fields, but the "
                                f"header (line 1) names {len(header)} columns; every row needs one field "
                                f"per column")


def _select(name: str, frame: pd.DataFrame, columns, exclude) -> pd.DataFrame:
    if isinstance(columns, str) or isinstance(exclude, str):
        raise DataError(f"data set {name}: columns and exclude are lists of column names")
    available = list(frame.columns)
    wanted = available if columns is None else [str(c) for c in columns]
    unknown = [c for c in [*wanted, *map(str, exclude)] if c not in available]
    if unknown:
        raise DataError(f"data set {name}: no column {unknown[0]!r}; the file has "
                        f"{', '.join(map(repr, available))}")
    kept = [c for c in wanted if c not in set(map(str, exclude))]
    if not kept:
        raise DataError(f"data set {name}: no columns left after columns/exclude")
    return frame[kept].copy()


# ================================================================ declarations

def _files(url_of, sha256: dict) -> tuple:
    return tuple(cmbench.DataFile(path, digest, url_of(path)) for path, digest in sha256.items())


# SHA-256 of the 87 trial files (PROVENANCE.md of wearable_sensor); the READMEs are not read.
_WEARABLE_SHA256 = {
    "S1_Dataset/d1p01M": "cedb8d3b6fa4eaad479bdce29fef67c9b4d7e6ca77afd3da98d1c744374ef219",
    "S1_Dataset/d1p02M": "38692309264f12b4ec00e5de428128745a7ae093163ae1339aea7e17dad481ec",
    "S1_Dataset/d1p03M": "20ca092c229925562222e4521e85801f7634fde43603e9ef770227a6ccd696ad",
    "S1_Dataset/d1p04M": "59313f49ef86ea949a48b2fbdd42fdb6130a460502095b40a2fce64b7c87b69e",
    "S1_Dataset/d1p05M": "f7f0b3f0d7cde4a367963fffb394343978e01b42b5719af88a101a23a4a6f748",
    "S1_Dataset/d1p06M": "bf856da2f2621901500201a221ea4901a2611a79f0aedb136315faf1c5e950a8",
    "S1_Dataset/d1p07M": "3f5f85a69ed6de146db8628acd8e24929ff5125609b516c6eadbd74cec46243f",
    "S1_Dataset/d1p08F": "3805a3bef41ede090189a934d9a6f9eb4ac3cafdcd2f0617f3e493e4441beac1",
    "S1_Dataset/d1p09F": "f559f0dfe86f14e48f89d7ff2a6de995cac5921dc7a5b263b6544e9e66020fb4",
    "S1_Dataset/d1p10F": "ca6967ae43d9377484ede2e4eb5cc0b9993257e8c9f67d5e50da61ca248c0f99",
    "S1_Dataset/d1p11F": "96a0a9caedd491a5cd6e1a138ea3fd8f4793cbb86aca5ca91d84adefd7c1d38b",
    "S1_Dataset/d1p12F": "298c1897d1e27414497233ddf8b66910bd0fa4aef6afdc61416c874225517495",
    "S1_Dataset/d1p13F": "b550e099088509c870e87c974aae54dc0b69e03ddd64620a506010641bf1b1fc",
    "S1_Dataset/d1p14F": "c93abd86e69f2982a2cead9574a15c37fe2878c93962dcee723e2282e77de6b5",
    "S1_Dataset/d1p15F": "f70259f9f58b2a255e1e09bc79d607d5a316831621406c99d90448c698afd762",
    "S1_Dataset/d1p16F": "87fc5948714b0bdbe02e0dfd84a08b64fa6c4687c30449c897422e1b233359d7",
    "S1_Dataset/d1p17F": "46a1ab360fc6d24545f0b6991a6a0de4f4c0bda921cdcd9469bb9157ac1e5842",
    "S1_Dataset/d1p18F": "6d425509122a9482acbd5233c1316ca5295267aebac3f1940ae017664ce593e2",
    "S1_Dataset/d1p19F": "7649ffc6a395067fdb1968aec835ed4f0646937a53326c508566c80f2be34bcf",
    "S1_Dataset/d1p20F": "353fd56221dedb51215244e086e0892ca0479785002c937f338464945b508a9d",
    "S1_Dataset/d1p21F": "ba34736ddca9265bb84dffdb292355948f56ddb1192277a7e7ce0a85b026cbfa",
    "S1_Dataset/d1p22F": "4d3742480ffd61cd5a58c3ad5e352a379e2b79f19605b757a55a2076e0e014e7",
    "S1_Dataset/d1p23F": "4db9cf309cada49c6cc9b99f925812376d04abe6054b0800f66c8a05be51d11f",
    "S1_Dataset/d1p24F": "b0c1d34550ff0b160f9ee427f9802954a3ba9c8b692928f4bd3a63ec3c5e76a3",
    "S1_Dataset/d1p25F": "c88cbf27038bb4d4b94160bc11b830b03ecd2a6246281fec1ea02fcc6e770411",
    "S1_Dataset/d1p26F": "56b5c02c5f4960a0e326877928ec2a3a8e8b4d3127bbff4d6a9785c437cbc903",
    "S1_Dataset/d1p27F": "6fe9c2b27bcea001f8cae755ff813f331dae5268be7a9da5c876ef7c93ffed78",
    "S1_Dataset/d1p28F": "3fac40305db4d5496395f7e358faf2117548d7e9e43dc7dd0b32c523c408c3ce",
    "S1_Dataset/d1p29F": "764928a86e2121af26d1f23396bf57728788a72532e94e8d608313526bd646ea",
    "S1_Dataset/d1p30F": "0e18ab3494ad70f33150fc56b4d129de07f1345e062ea6ec3d67ed0b557022fa",
    "S1_Dataset/d1p31F": "3fcd3c8ddf7385b7c9cc0adce24498dc35f47a659cd23a66b0c3dafc502aa246",
    "S1_Dataset/d1p32F": "c5353c38d122c6d75d4e0a4af30e62c35b92691c3f646a58361a7ac104749717",
    "S1_Dataset/d1p33F": "bcce6388136c1e72759262b1bca55d1898154f170d7fe741f27cbaaf3e1899a9",
    "S1_Dataset/d1p34F": "7ae44df0d88521175c4b270b43e7351444bf74ce78cd8512f614f1dd6bbea7c6",
    "S1_Dataset/d1p35F": "4b54b5024997372629865b3e63a03df4ceb0dd8847fce590b6a2b247601f8d58",
    "S1_Dataset/d1p36M": "684c27a036a3dc45a75b07577cf65c149841c08b5ea32d33a6c73fe9d013140c",
    "S1_Dataset/d1p37M": "08e8fdff460ba301a4b4e4a3f2b53c58b5fc3e59619a28c16bf288104483f8e2",
    "S1_Dataset/d1p38M": "4188313f554fdd2431bf5d764e0d01f4348f3ab492ea0782a5e749aa153100df",
    "S1_Dataset/d1p39M": "401fae07ce30423cc84f19372bec5599d41fb1418fa3ea5241bd974e0db15148",
    "S1_Dataset/d1p40M": "126ac43d0733a7f061600525edc70c8140a79647400c5f0166114abc20ccc39a",
    "S1_Dataset/d1p41M": "f33f41316e27e8f02ccf7f8c8b1c91108ecfbbe6e73fd7d2a35b1562d1c07a86",
    "S1_Dataset/d1p42M": "85596ce9d0e195ee781c0947c86d921bb7065ff9036052de97001032e88f3c75",
    "S1_Dataset/d1p43M": "0e8183cabf0d2dc80e307729b94c36fb3ed3549cd5570f1edcce82c41a0615cd",
    "S1_Dataset/d1p44M": "6cd20b544c1ac2f825137c02d30eb304b1f6b39ee4b8e6ac990831bf11e2c63d",
    "S1_Dataset/d1p45M": "773cd54298863602c2674e2dac5c4aa2856b26a8e2be3ee27a59715e91afa4c6",
    "S1_Dataset/d1p46M": "5f66fac82a901be54d0c8a06eb2c3b33c99af576d7b5cc3503fa011e47975ebe",
    "S1_Dataset/d1p47M": "933c2858c27502bc8712477a9e515276ce4b6babd0e1154b2a3b4774ff01412e",
    "S1_Dataset/d1p48M": "8de501509272d4e58558fcee1275f603076f26aec3ef373c8b05ba7e9a099983",
    "S1_Dataset/d1p49F": "c83cd658730566a4e506668868889c91dedc6abf337d984a4ad411f17da78974",
    "S1_Dataset/d1p50F": "c68b8f52298c9ecd6c3f4d092a3e2bd1bdd77640b30e9464ea237b27884c078b",
    "S1_Dataset/d1p51F": "7da4de0586d99fd5cbfdfff7f914dda6b1660cc460727edf4cdec716485832c4",
    "S1_Dataset/d1p52F": "49bce078721d350304043c12628c065b6631ebbcc2fd895847f6de9d3d32b854",
    "S1_Dataset/d1p53F": "919fa99ef0f4dce81ad26b12319fe40d8bbefe015282efa417441651296a72a8",
    "S1_Dataset/d1p54F": "d4fe0679bdc134779cd3d74107643c95584d69a78e3bdc6eb8a89b104e499c41",
    "S1_Dataset/d1p55F": "bc1dc86ab450f5b1836d37a3e4f87fa63235cf8b3c25638e35e58a31db2ef28a",
    "S1_Dataset/d1p56F": "f3c02a715410d204bb450b32725ce844e1256907ed7ee7f42dde4b9bd41f1583",
    "S1_Dataset/d1p57F": "4bb3f928ba61bae15e0ad2985fbcaf8f53b742bfa7cdee90351d311e92b79127",
    "S1_Dataset/d1p58F": "2b7903b8c39138d436cc8c1958791fa38c58b28d32ba3447c65d22c412aef334",
    "S1_Dataset/d1p59F": "dad21ac64e2d548eab700a1ea676b9fa58386e60d8b24f130ce3f285f7c92bea",
    "S1_Dataset/d1p60F": "fb0d7b65694b6303bd82a0336945dc3c213a7443e00f2fc2295925b173ce54a8",
    "S2_Dataset/d2p01F": "18729c2cd2fe57d1a27f25fcdb6cf5f2b4c5163db62b117c71eb3260cbc2bf63",
    "S2_Dataset/d2p02F": "27ad4f1a9d15136b66aed6e9a2b7927692cf4ef15b489626f901e45805114ca6",
    "S2_Dataset/d2p03F": "83ee29af7772f9549bc78f8b5bfb717f184932b9686a22cdc17f001ef65cb04b",
    "S2_Dataset/d2p04F": "f7a634355c95c882d58fccfbb2f922e39a8d2fcb6b9bc71a0a03ac87fc313541",
    "S2_Dataset/d2p05F": "3f8eded06d3e237c55fcf2f225dd08b1760928944d7ef342a6f33c8a9534b72c",
    "S2_Dataset/d2p06F": "77e4d91a870dfc41d0a00102942476fa5e6a878bfb3dcb6a0c0363bcd01e2f49",
    "S2_Dataset/d2p07F": "64ef802ab03d3e2352f9e5ecdd4c18080b169ea936312897cec2fb9aaff3dc50",
    "S2_Dataset/d2p08F": "fcd3100d1504f30ae7cdbe496fda9a4e5e0c50f171418927199e64691e285210",
    "S2_Dataset/d2p09F": "42fd50fde9644629452755b0abe9294644c62073f424305233e03479b4d1ae53",
    "S2_Dataset/d2p10F": "78a574b51b951d116052d81434e290f0da33d4218ed5c36f87db4edfade4e107",
    "S2_Dataset/d2p11F": "f620cd5b34fa1e9ce2b6719b81a875aaf369d7b53b97fe1d2b44f2795041c6ae",
    "S2_Dataset/d2p12F": "25a3f67ab48f48297caa04b760663b2403f7dca23e545c4ef108549e007b3331",
    "S2_Dataset/d2p13F": "7d0136721892a24a1cbfee8fd84d974399f05c6ae0eb40def5b6c85c13b9c938",
    "S2_Dataset/d2p14F": "aac670402e4999fb72729474a9a82e2a4cb532fd323595d793b747abe19260cf",
    "S2_Dataset/d2p15F": "cb7d31f3b0d74afb1bd0f9abcd6d1a3a533188ce72b9ab1fc58991d4f6b9f9c0",
    "S2_Dataset/d2p16F": "146b731f6e7652080a2ea06a90dae8ae2ade4b671bf695a8d38b34ce0d6ef8d2",
    "S2_Dataset/d2p17F": "273a5f1490677c4dc8ccd76613ba62fd9b7c8152da0bb85e79a0231ad61222be",
    "S2_Dataset/d2p18M": "40ea7b2f6b2e86584abbc7270531f7eb89409e678bed9fec6e1b016b06e49e6d",
    "S2_Dataset/d2p19M": "219fca8ae2d6faff9c577cdb5166134591ce6a1a7f81313fdf4c55359511ac04",
    "S2_Dataset/d2p20M": "3ad4f60f6b0288b1ec2bc7c9a957f6780d9597f32570c24d05b175b2b66c09f6",
    "S2_Dataset/d2p21M": "217d9ad77db4f15fbb1ab9f5ee629d88cd354d0c71382deee492cb39c7fd1139",
    "S2_Dataset/d2p22M": "559f458a7333607a2615553ec8c64c9127290d3f7d2e5acf5491b1260e2324be",
    "S2_Dataset/d2p23F": "082f4faa7dbd6543b7ce28a67ea96ac1962081f8997303ca95a02bc91dc545c0",
    "S2_Dataset/d2p24F": "b5a20e0f97a83ab2093a8ba5d6a871620454d53e5e51f4194e26b8f045bc981a",
    "S2_Dataset/d2p25F": "7a5ff2a908fb8fba6acb38869dee819c7bc665051b3d34bc83821b7015354a3d",
    "S2_Dataset/d2p26F": "b319303521442be9b6e70c7bd5d29947c1956b276f7156efd8f8aeda9fff21b0",
    "S2_Dataset/d2p27F": "238bea168b0802d5943399b430eb63f1530e515105024e6352e92b3467307223",
}

_REAL_PARAMS = {"standardize": True, "ddof": 0}
_REAL_CHOICES = {"ddof": (0, 1)}

_CC_BY = "CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/), as UCI lists it"


def _uci_table(file: str, derive, *, uci_id: int, title: str, doi: str, authors: str, derivation: str,
               credit: str = "") -> cmbench.ShippedTable:
    """The shipped table ``file`` of a UCI data set, with UCI's citation and licence.

    ``authors`` is the citation's "Names (year)"; ``credit`` follows the DOI when UCI asks for more.
    """
    slug = re.sub(r"[()]", "", title).lower().replace(" ", "+")
    about = {"title": f"{title} (UCI id {uci_id})", "source": f"https://archive.ics.uci.edu/dataset/{uci_id}/{slug}",
             "doi": doi, "licence": _CC_BY,
             "attribution": f"{authors}. {title} [Dataset]. UCI Machine Learning Repository. {doi}{credit}",
             "derivation": derivation}
    return cmbench.ShippedTable(str(TABLES / file), derive, about)


LEAF = cmbench.Dataset(
    "leaf", load_leaf, params=dict(_REAL_PARAMS), choices=_REAL_CHOICES,
    description="UCI Leaf: 340 x 14 shape/texture features, standardized (rank hint 3)",
    shape=(340, 14), rank=3, folder="leaf",
    files=_files(lambda p: f"{UCI}/00288/leaf.zip#{p}",
                 {"leaf.csv": "9d372307705b6be3cb6d7d99045a65517d7d89124e620197656d97c08a41537e"}),
    table=_uci_table(
        "leaf.npz", derive_leaf, uci_id=288, title="Leaf", doi="https://doi.org/10.24432/C53C78",
        authors="Silva, P. & Marcal, A. (2013)",
        derivation="leaf.csv (no header), columns 3-16 as float64; the species and specimen "
                   "columns are dropped"),
)
BREAST_CANCER = cmbench.Dataset(
    "breast-cancer", load_breast_cancer,
    params={"include_class": True, "missing": "impute-mean", **_REAL_PARAMS},
    choices={"missing": MISSING_POLICIES, "ddof": (0, 1)},
    description="UCI Breast Cancer Wisconsin (Original): 699 x 10, the 9 features and the class column "
                "(kept, as Blood Transfusion keeps its target), '?' mean-imputed, standardized (rank hint 3)",
    shape=(699, 10), rank=3, folder="breast_cancer_wisconsin",
    files=_files(lambda p: f"{UCI}/breast-cancer-wisconsin/{p}",
                 {"breast-cancer-wisconsin.data":
                  "402c585309c399237740f635ef9919dc512cca12cbeb20de5e563a4593f22b64"}),
    table=_uci_table(
        "breast-cancer.npz", derive_breast_cancer, uci_id=15, title="Breast Cancer Wisconsin (Original)",
        doi="https://doi.org/10.24432/C5HP4Z", authors="Wolberg, W. (1992)",
        credit=". Data from Dr. William H. Wolberg, University of Wisconsin Hospitals, Madison",
        derivation="breast-cancer-wisconsin.data (no header), columns 2-11 (9 features and the "
                   "class) as float64, '?' as NaN; the sample code number is dropped"),
)
BLOOD_TRANSFUSION = cmbench.Dataset(
    "blood-transfusion", load_blood_transfusion, params={"include_target": True, **_REAL_PARAMS},
    choices=_REAL_CHOICES,
    description="UCI Blood Transfusion: 748 x 5 with the target, standardized; covariance rank 4 (rank hint 3)",
    shape=(748, 5), rank=3, folder="blood_transfusion",
    files=_files(lambda p: f"{UCI}/blood-transfusion/{p}",
                 {"transfusion.data": "96c8e1091b9c037bcaf25a19b24b49d07771cd88689ffd273e056e9e8845ffe7"}),
    table=_uci_table(
        "blood-transfusion.npz", derive_blood_transfusion, uci_id=176,
        title="Blood Transfusion Service Center", doi="https://doi.org/10.24432/C5GS39",
        authors="Yeh, I-Cheng (2008)",
        derivation="transfusion.data (one header row), all 5 columns as float64, the header as "
                   "column names"),
)
WEARABLE_SENSOR = cmbench.Dataset(
    "wearable-sensor", load_wearable_sensor,
    params={"room": "S1", "exclude": ("d1p01M",), **_REAL_PARAMS},
    choices={"room": tuple(_ROOMS), "ddof": (0, 1)},
    description="UCI batteryless wearable sensor, room S1 without d1p01M: 52,081 x 9, standardized (rank hint 4)",
    shape=(52081, 9), rank=4, folder="wearable_sensor",
    files=_files(lambda p: f"{UCI}/00427/Datasets_Healthy_Older_People.zip#{p}", _WEARABLE_SHA256),
    table=_uci_table(
        "wearable-sensor.npz", derive_wearable_sensor, uci_id=427,
        title="Activity recognition with healthy older people using a batteryless wearable sensor",
        doi="https://doi.org/10.24432/C5GG6B", authors="Torres, R., Visvanathan, R. & Ranasinghe, D. (2016)",
        derivation="the 87 trial files of S1_Dataset and S2_Dataset (no header) concatenated in "
                   "file-name order as float64 (75,128 x 9), with each row's trial file"),
)
# UCI's own .xls differs from this copy in two Excel metadata fields (last
# user, a timestamp; the cells are identical, see PROVENANCE.md), so fetching
# it from UCI fails the checksum; `cmbench datasets fetch mice-protein
# --verify` compares the cells it holds with the shipped table instead.
MICE_PROTEIN = cmbench.Dataset(
    "mice-protein", load_mice_protein, params={"missing": "impute-mean", **_REAL_PARAMS},
    choices={"missing": MISSING_POLICIES, "ddof": (0, 1)},
    description="UCI Mice Protein Expression: 1080 x 77 proteins, source gaps mean-imputed, standardized (rank hint 10)",
    shape=(1080, 77), rank=10, folder="mice_protein",
    files=_files(lambda p: f"{UCI}/00342/{p}",
                 {"Data_Cortex_Nuclear.xls": "8459fda0b8b2157fd3a45196c630bc2010f45c4f1f2f088fe35210c348cfd00a"}),
    table=_uci_table(
        "mice-protein.npz", derive_mice_protein, uci_id=342, title="Mice Protein Expression",
        doi="https://doi.org/10.24432/C50S3Z", authors="Higuera, C., Gardiner, K. & Cios, K. (2015)",
        derivation="Data_Cortex_Nuclear.xls (sheet 1, read with calamine), the 77 protein columns "
                   "2-78 as float64, empty cells as NaN"),
)

_SYNTHETIC_COMMON = {"N": 1000, "blocks": DEFAULT_BLOCKS, "structure_seed": STRUCTURE_SEED}
_SYNTHETIC_RANGES = {"N": (2, None), "structure_seed": (0, 2 ** 63 - 1)}
_SHAPE = (1000, 16)

SYNTHETIC = (
    cmbench.Dataset(
        "synthetic-gaussian", load_synthetic_gaussian,
        params={**_SYNTHETIC_COMMON, "mean_scale": 1.0, "cov_scale": 1.0, "cov_dof": None},
        ranges={**_SYNTHETIC_RANGES, "mean_scale": (None, None), "cov_scale": (0.0, None), "cov_dof": (1, None)},
        description="x = A z, A two fixed random 8x4 blocks, z Gaussian with random mean and covariance",
        shape=_SHAPE, rank=8),
    cmbench.Dataset(
        "synthetic-uniform", load_synthetic_uniform,
        params={**_SYNTHETIC_COMMON, "bound": 1.0, "width": (0.5, 2.0)},
        ranges={**_SYNTHETIC_RANGES, "bound": (0.0, None)},
        description="x = A z, A two fixed random 8x4 blocks, z independent uniforms with random bounds",
        shape=_SHAPE, rank=8),
    cmbench.Dataset(
        "synthetic-exponential", load_synthetic_exponential,
        params={**_SYNTHETIC_COMMON, "bound": 1.0, "scale": (0.5, 2.0)},
        ranges={**_SYNTHETIC_RANGES, "bound": (0.0, None)},
        description="x = A z, A two fixed random 8x4 blocks, z independent shifted exponentials with random scales",
        shape=_SHAPE, rank=8),
)

def gaussian_size(d: int = 10, N: Optional[int] = None, samples_per_dim: Optional[float] = None,
                  **_) -> tuple[int, int]:
    """The (N, d) that `load_gaussian` draws for these parameters, without drawing it.

    ``N`` wins when given; else ``N = floor(samples_per_dim * d)``; else 100 d.
    It is the data set's ``shape``, so that a run describes it without drawing it
    (``mean`` and ``sd`` come along and do not change the size).
    """
    return sample_size("gaussian", d, N, samples_per_dim)


def variance_vector(name: str, variances, d: int) -> np.ndarray:
    """The (d,) diagonal ``variances`` stand for: a list of d positive numbers, or
    ``{linspace = [first, last]}``, d values evenly spaced from first to last
    (``numpy.linspace(first, last, d)``; Anderson and Phillips' diagonal is
    ``{linspace = [25, 0.1]}``). `DataError` naming the data set otherwise."""
    if isinstance(variances, dict):
        ends = variances.get("linspace")
        if set(variances) != {"linspace"} or not isinstance(ends, (list, tuple)) or len(ends) != 2:
            raise DataError(f"data set {name}: variances = {variances!r}: expected a list of d numbers "
                            "or {linspace = [first, last]}")
        try:
            v = np.linspace(float(ends[0]), float(ends[1]), d)
        except (TypeError, ValueError):
            raise DataError(f"data set {name}: variances.linspace = {ends!r} must be two numbers") from None
    else:
        try:
            v = np.asarray(variances, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(f"data set {name}: variances = {variances!r} must be numbers") from None
        if v.shape != (d,):
            raise DataError(f"data set {name}: variances has shape {v.shape}; give d = {d} numbers "
                            "or {linspace = [first, last]}")
    if not (np.all(np.isfinite(v)) and np.all(v > 0)):
        raise DataError(f"data set {name}: every variance must be a positive number")
    return v


def load_gaussian(*, instance, rng, d: int = 10, N: Optional[int] = None,
                  samples_per_dim: Optional[float] = None, mean=None, sd: float = 1.0,
                  variances=None) -> cmbench.Data:
    """Gaussian N(mean, sd^2 I_d), or N(mean, diag(variances)), the inliers of the sample-level studies.

    DKK17's Figure 1 draws N(1_d, I_d) with N = 1000 d (``samples_per_dim =
    1000, mean = 1``); Gao et al. (2019) N(0, I_p) with N = 50,000. The size
    is fixed by the parameters (`gaussian_size`), so a suite's size check
    sees it before anything is drawn.

    Parameters
    ----------
    d : dimension.
    N : number of rows; when None, ``floor(samples_per_dim * d)``.
    samples_per_dim : rows per dimension when N is None (default 100), so that
        one grid over d keeps N proportional to d.
    mean : a number (every coordinate) or a vector of length d; None is 0
        (so that a list in a suite is a vector, not a grid of values).
    sd : standard deviation of every coordinate, > 0.
    variances : None (``sd^2`` everywhere), or the diagonal of the covariance
        (`variance_vector`: d numbers or ``{linspace = [first, last]}``); then
        ``sd`` must stay 1.

    Returns
    -------
    `cmbench.Data`: X (N, d), the analytic mean and covariance (sd^2 I_d or diag(variances)).
    """
    N, d = gaussian_size(d, N, samples_per_dim)
    name = "gaussian"
    mu = np.asarray(0.0 if mean is None else mean, dtype=np.float64)
    if mu.ndim == 0:
        mu = np.full(d, float(mu))
    if mu.shape != (d,) or not np.all(np.isfinite(mu)):
        raise DataError(f"data set {name}: mean must be a finite number or a vector of length d = {d}; "
                        f"got shape {mu.shape}")
    if not (isinstance(sd, (int, float, np.number)) and np.isfinite(sd) and sd > 0):
        raise DataError(f"data set {name}: sd = {sd!r} must be a positive number")
    if variances is not None and sd != 1.0:
        raise DataError(f"data set {name}: give sd or variances, not both")
    var = np.full(d, float(sd) ** 2) if variances is None else variance_vector(name, variances, d)
    X = np.random.default_rng(rng).standard_normal((N, d))
    if variances is not None:
        X *= np.sqrt(var)
    elif sd != 1.0:
        X *= sd
    X += mu  # in place: the (N, d) sample is the only large array
    return cmbench.Data(X=X, mean=mu, cov=np.diag(var), rank=d,
                        columns=tuple(f"x{i + 1}" for i in range(d)))


GAUSSIAN = cmbench.Dataset(
    "gaussian", load_gaussian, ranges={"d": (1, None), "sd": (0.0, None, "()"), "N": (2, None),
                                       "samples_per_dim": (0.0, None, "()")},
    description="Gaussian N(mean, sd^2 I_d) or N(mean, diag(variances)), d and N (or samples_per_dim) as parameters",
    shape=gaussian_size)


CSV = cmbench.Dataset(
    "csv", load_csv,
    params={"path": None, "columns": None, "exclude": (), "rank": None, "missing": "error",
            "standardize": True, "ddof": 0, "sep": ",", "na_values": ()},
    choices={"missing": MISSING_POLICIES, "ddof": (0, 1)}, ranges={"rank": (1, None)},
    description="your own table: path = 'file.csv' (header row), optional columns/exclude/rank, standardized",
)

REAL = (LEAF, BREAST_CANCER, BLOOD_TRANSFUSION, WEARABLE_SENSOR, MICE_PROTEIN)


@cmbench.hookimpl
def register_datasets():
    return [*SYNTHETIC, *REAL, CSV, GAUSSIAN]
