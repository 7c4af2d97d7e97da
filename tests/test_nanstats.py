"""`cmbench.nanquantile` gives np.nanquantile(X, q, axis=0)'s numbers (equal as floats; a zero's sign may differ)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import cmbench


def reference(X, q):
    with warnings.catch_warnings():  # numpy warns on an all-NaN column; cmbench does not
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(X, q, axis=0)


def samples(rng, count=400):
    """Matrices with ties, integers, infinities, hidden entries and columns with none visible."""
    for trial in range(count):
        N, n = int(rng.integers(1, 50)), int(rng.integers(1, 6))
        X = rng.normal(size=(N, n))
        if trial % 4 == 1:
            X = np.round(X, 1)
        elif trial % 4 == 2:
            X = rng.integers(0, 3, size=(N, n)).astype(float)
        X[rng.random((N, n)) < rng.random() * 0.8] = np.nan
        if trial % 7 == 0:
            X[:, 0] = np.nan
        if trial % 11 == 0:
            X[rng.random((N, n)) < 0.1] = np.inf
            X[rng.random((N, n)) < 0.1] = -np.inf
        yield X


@pytest.mark.parametrize("q", [[0.05, 0.95], [0.0, 1.0, 0.5, 0.25, 1 / 3], 0.1, 0.5, 1.0])
def test_equals_numpy_as_floats(q):
    rng = np.random.default_rng(7)
    for X in samples(rng):
        got, want = cmbench.nanquantile(X, q), reference(X, q)
        assert got.shape == want.shape
        # -0.0 == 0.0 here on purpose: which one a tie of signed zeros gives depends on
        # the order numpy's sort kernel (by version and CPU) leaves equal entries in
        assert np.array_equal(got, want, equal_nan=True), (X, q, got, want)


def test_random_quantiles_and_a_large_matrix_equal_numpy():
    rng = np.random.default_rng(8)
    X = rng.standard_t(3, size=(5000, 9))
    X[rng.random(X.shape) < 0.2] = np.nan
    q = rng.random(6)
    assert np.array_equal(cmbench.nanquantile(X, q), reference(X, q))


def test_a_column_with_no_visible_entry_is_nan_without_a_warning():
    X = np.array([[np.nan, 1.0], [np.nan, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = cmbench.nanquantile(X, [0.5])
    assert np.isnan(out[0, 0]) and out[0, 1] == 2.0


@pytest.mark.parametrize("X, q, message", [
    (np.ones(3), 0.5, "must be 2-D"),
    (np.ones((3, 2)), 1.5, r"must be in \[0, 1\]"),
    (np.ones((3, 2)), [-0.1, 0.5], r"must be in \[0, 1\]"),
])
def test_bad_input_is_refused(X, q, message):
    with pytest.raises(ValueError, match=message):
        cmbench.nanquantile(X, q)
