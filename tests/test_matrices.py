"""Stored matrices: the delta layout round-trips bit for bit, old caches still read, a recovery
equal to its corruption is stored once, and loaded data sets are shared between experiments."""
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cmbench
from cmbench import run_suite  # the public keywords (out=, workers=, report=)
from cmbench.runner.matrices import Damaged, decode, encode, rows_of
from conftest import assert_same_cube

FIXTURES = Path(__file__).resolve().parent / "fixtures"

rng = np.random.default_rng(7)
X = rng.standard_normal((60, 9))


def scattered():
    M = X.copy()
    M[rng.random(X.shape) < 0.3] = np.nan
    M[0, 0] = -0.0 if X[0, 0] == 0 else X[0, 0] + 1e-300  # one ulp-sized change
    return M, None


def whole_rows():  # a sample-level adversary: some rows replaced entirely
    M = X.copy()
    M[[3, 4, 5, 40]] = rng.standard_normal((4, 9)) * 100
    return M, None


def mixed_rows():  # whole rows and single entries, including an identical value written back
    M = X.copy()
    M[[1, 59]] = 7.0
    M[10, 2] = np.nan
    M[11, 3] = X[11, 3]
    return M, None


def deletion():
    rows = np.array([5, 0, 59, 7, 7, 30])
    M = X[rows].copy()
    M[2] = 1.5
    M[4, 1] = np.nan
    return M, rows


def unchanged():
    return X.copy(), None


def nan_payloads():  # NaNs of other bit patterns than numpy's own: their bits are kept
    M = X.copy()
    M.view(np.uint64)[2, :4] = np.uint64(0x7FF8_0000_0000_0001)
    return M, None


CASES = [scattered, whole_rows, mixed_rows, deletion, unchanged, nan_payloads]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_matrices_round_trip_bit_for_bit(case):
    M, rows = case()
    blob = encode(M, X, rows)
    back = decode(blob, X)
    assert back.shape == M.shape and back.tobytes() == M.tobytes()
    assert (rows_of(blob) is None) == (rows is None)
    if rows is not None:
        assert rows_of(blob).tolist() == rows.tolist()
    with pytest.raises(ValueError):
        back.setflags(write=True)


def test_whole_rows_are_stored_without_a_mask_over_the_matrix():
    # 2 of 20,000 rows replaced: the blob holds their indices and values, not 20,000 x 9 mask bits
    big = np.random.default_rng(1).standard_normal((20_000, 9))
    M = big.copy()
    M[[17, 19_000]] = 3.0
    blob = encode(M, big)
    assert b'"mask": 0,' in blob[:300] and len(blob) < 400
    assert decode(blob, big).tobytes() == M.tobytes()


@pytest.mark.parametrize("cut", [0.25, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("case", [scattered, whole_rows, deletion], ids=lambda c: c.__name__)
def test_a_torn_matrix_is_damaged_not_wrong(case, cut):
    M, rows = case()
    blob = encode(M, X, rows)
    with pytest.raises(Damaged):
        decode(blob[: int(len(blob) * cut)], X)


def test_a_matrix_against_other_data_is_damaged():
    blob = encode(whole_rows()[0], X)
    with pytest.raises(Damaged):
        decode(blob, X[:30])
    with pytest.raises(Damaged):
        decode(b"not a matrix at all", X)


def test_matrices_of_the_first_layout_still_decode():
    # written by the first layout (a dense bit mask over the whole matrix) and kept as bytes
    old = np.load(FIXTURES / "matrices_v1.npz")
    for name in ("scattered", "deletion"):
        blob = old[f"{name}_blob"].tobytes()
        assert b'"v": 1' in blob[:200]
        back = decode(blob, old["X"])
        assert back.tobytes() == old[f"{name}_M"].tobytes()
    assert rows_of(old["deletion_blob"].tobytes()).tolist() == old["deletion_rows"].tolist()


def _suite(tmp_path, estimators='["mean", "cmedian"]', experiments=1):
    body = ""
    for i in range(experiments):
        body += textwrap.dedent(f"""
            [[experiment]]
            name = "e{i}"
            datasets = [{{ name = "gaussian", label = "g", d = 6, samples_per_dim = 50, mean = 1.0 }}]
            instances = 2
            adversaries = ["replace-mixture"]
            budgets = [0.1, 0.2]
            recoverers = ["none"]
            estimators = {estimators}
            metrics = ["l2"]
        """)
    path = tmp_path / "s.toml"
    path.write_text('name = "m"\nseed = 5\n' + body)
    return path


def test_a_recovery_equal_to_its_corruption_is_stored_once_and_reused_bit_for_bit(tmp_path):
    out = tmp_path / "out"
    run_suite(_suite(tmp_path), out=out, report=False)
    matrices = sorted((out / "m" / ".cache" / "matrices").iterdir())
    assert len(matrices) == 4  # 2 instances x 2 budgets: the corruptions; `none` adds no file
    # a new estimator estimates on `none`'s recovery, read back from the corruption's file
    grown = run_suite(_suite(tmp_path, '["mean", "cmedian", "trimmed-mean"]'), out=out, report=False)["e0"]
    assert sorted((out / "m" / ".cache" / "matrices").iterdir()) == matrices
    cold = run_suite(_suite(tmp_path, '["mean", "cmedian", "trimmed-mean"]'), out=tmp_path / "cold",
                     report=False)["e0"]
    assert_same_cube(grown, cold)


def test_unreadable_stored_matrices_are_recomputed_never_decoded_wrong(tmp_path):
    out = tmp_path / "out"
    run_suite(_suite(tmp_path), out=out, report=False)
    folder = out / "m" / ".cache" / "matrices"
    for path in folder.iterdir():
        path.write_bytes(b"")  # every matrix gone bad: recomputed, never decoded wrong
    grown = run_suite(_suite(tmp_path, '["mean", "trimmed-mean"]'), out=out, report=False)["e0"]
    cold = run_suite(_suite(tmp_path, '["mean", "trimmed-mean"]'), out=tmp_path / "cold", report=False)["e0"]
    assert_same_cube(grown, cold)


def test_experiments_sharing_a_data_set_share_its_loaded_instance(tmp_path):
    from cmbench.runner import memo

    memo._DATA.held.clear()
    memo._DATA.bytes = 0
    run_suite(_suite(tmp_path, experiments=2), out=tmp_path / "out", report=False, workers=1)
    # workers=1 runs in this process: the two experiments' units load each instance once
    keys = list(memo._DATA.held)
    assert len(keys) == 2 and {k[-1] for k in keys} == {0, 1}


def test_a_plugin_s_own_array_is_sealed_in_place_and_a_view_of_another_s_is_copied():
    from cmbench.runner.contracts import FAILED, OK, Outcome, _before, untouched
    from cmbench.runner.matrices import sealed

    mine = np.arange(12.0).reshape(4, 3)  # a plugin's fresh result (a view of all of it), which it may still hold
    fresh = np.zeros(5)  # one that owns its memory
    assert np.shares_memory(sealed(fresh), fresh)
    theirs = np.arange(12.0).reshape(4, 3)
    view = theirs[1:]  # a view into someone else's writeable array
    strided = np.arange(24.0).reshape(4, 6)[:, ::2].copy(order="F")
    kept, copied, other = sealed(mine), sealed(view), sealed(strided)
    assert np.shares_memory(kept, mine)  # taken over, not copied
    assert not np.shares_memory(copied, theirs) and not np.shares_memory(other, strided)
    for a, want in ((kept, mine), (copied, view), (other, strided)):
        assert a.tobytes() == np.ascontiguousarray(want).tobytes()
        with pytest.raises(ValueError):
            a.setflags(write=True)
    theirs[1, 0] = -1.0  # the owner of the view's base writes: the sealed copy does not change
    assert copied[0, 0] == 3.0
    # the plugin that kept its array writes into it while another component reads it: caught
    _before(kept)
    mine[0, 0] = 99.0
    assert untouched(Outcome(OK), kept).status == FAILED


def test_a_data_sets_arrays_are_taken_over_read_only_without_a_copy():
    from cmbench.runner.contracts import check_data

    X = np.random.default_rng(0).standard_normal((50, 4))  # a loader's fresh array
    entry = type("E", (), {"label": "d", "source": "test"})()
    data = check_data(cmbench.Data(X=X, mean=np.zeros(4)), entry)
    assert np.shares_memory(data.X, X)  # no second copy of a large X
    assert data.X.tobytes() == X.tobytes()
    for a in (data.X, data.mean):
        with pytest.raises(ValueError):
            a.setflags(write=True)

