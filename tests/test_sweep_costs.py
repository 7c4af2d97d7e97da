"""The sweep's fixed costs kept cheap without changing what it checks or computes.

Stored documents read back on their fast path and on the old one, damaged ones
are refused on both; matrices decode bit for bit; a started pool serves the
sweep; and the cost order puts the long units first.
"""
import hashlib
import json
import operator

import numpy as np
import pytest

from cmbench.runner import executors, store as stores, units
from cmbench.runner.matrices import Damaged, decode, encode, frozen

KEY = "ab" * 32
BODY = {"corruption": {"status": "ok", "error": "", "seconds": 1.5, "d_tv": 0.25},
        "recoveries": {"cd" * 32: {"status": "ok", "error": "", "seconds": 2.0, "info": {"iterations": 7.0}}},
        "cells": {"ef" * 32: {"status": "undefined", "error": "all rows filtered", "l2": None}}, "pairs": {}}


def _doc(tmp_path):
    return tmp_path / ".cache" / "units" / f"{KEY}.json"


def test_a_document_is_written_as_the_canonical_text_its_checksum_covers(tmp_path):
    stores.Store(tmp_path)._write_doc("units", KEY, BODY)
    raw = _doc(tmp_path).read_bytes()
    doc = json.loads(raw)
    assert doc["checksum"] == hashlib.sha256(stores.canonical(BODY).encode()).hexdigest()
    assert stores.canonical(BODY).encode() in raw
    fresh = stores.Store(tmp_path)
    assert fresh.unit(KEY) == BODY and fresh.stale == 0


def test_a_document_laid_out_otherwise_with_a_valid_checksum_is_read(tmp_path):
    stores.Store(tmp_path)._write_doc("units", KEY, BODY)
    doc = json.loads(_doc(tmp_path).read_bytes())
    reordered = {"checksum": doc["checksum"], "body": dict(reversed(list(BODY.items()))),
                 **{k: doc[k] for k in ("key", "cmbench_version", "format")}}
    _doc(tmp_path).write_text(json.dumps(reordered, indent=1))  # as an older cmbench or a person wrote it
    fresh = stores.Store(tmp_path)
    assert fresh.unit(KEY) == BODY and fresh.stale == 0


@pytest.mark.parametrize("spoil", [
    lambda raw: raw.replace(b'"seconds":1.5', b'"seconds":2.5'),  # a changed number, canonical layout
    lambda raw: raw.replace(b'"d_tv":0.25', b'"d_tv": 0.25'),  # same meaning, other bytes: still checked
    lambda raw: raw[:-5],  # torn
])
def test_a_damaged_document_is_never_used(tmp_path, spoil):
    stores.Store(tmp_path)._write_doc("units", KEY, BODY)
    _doc(tmp_path).write_bytes(spoil(_doc(tmp_path).read_bytes()))
    fresh = stores.Store(tmp_path)
    body = fresh.unit(KEY)
    if body == BODY:  # only a change of layout may pass, and only through the full check
        assert b'"d_tv": 0.25' in _doc(tmp_path).read_bytes()
    else:
        assert body == stores.empty_body() and fresh.stale == 1


def test_a_cleared_cache_is_made_again_by_the_next_write(tmp_path):
    store = stores.Store(tmp_path)
    store._write_doc("units", KEY, BODY)
    store.clear()
    import shutil

    shutil.rmtree(tmp_path / ".cache")
    store._write_doc("units", KEY, BODY)
    assert stores.Store(tmp_path).unit(KEY) == BODY


def test_matrices_with_scattered_changes_decode_bit_for_bit():
    rng = np.random.default_rng(3)
    X = frozen(rng.standard_normal((500, 7)))
    M = np.array(X)
    hit = rng.random(X.shape) < 0.3
    M[hit] = rng.standard_normal(int(hit.sum()))
    M[0, 0], M[1, 1], M[2, 2] = np.nan, -0.0, np.inf
    blob = encode(M, X)
    out = decode(blob, X)
    assert np.array_equal(out.view(np.uint64), M.view(np.uint64))
    assert not out.flags.writeable
    head = json.loads(blob[8:8 + int.from_bytes(blob[4:8], "little")])
    assert head["count"] == int((M.view(np.uint64) != X.view(np.uint64)).sum())
    with pytest.raises(Damaged):
        decode(blob[:-8], X)  # one value short of the mask


def test_local_workers_run_the_jobs():
    out = dict(executors.run_jobs([1, 2, 3], operator.neg, workers=2))
    assert out == {1: -1, 2: -2, 3: -3}


def test_long_units_go_first():
    from cmbench.runner import _cost
    from cmbench.runner.dataset_loading import Loaded
    from cmbench.runner.units import Job, Work

    data = {("e", "big"): Loaded({"shape": [1000, 50]}), ("e", "small"): Loaded({"shape": [100, 5]})}

    def job(dataset, budget, work):
        return Job("", "e", dataset, 0, "hide", budget, work=work)

    recover = Work(recover=("r",), estimate=(("r", "a"),))
    estimate = Work(corruption=False, recovered=(("r", b"", 1.0),), estimate=(("r", "a"),))
    assert _cost(job("big", 0.1, recover), data) > _cost(job("small", 0.5, recover), data)
    assert _cost(job("big", 0.5, recover), data) > _cost(job("big", 0.1, recover), data)
    assert _cost(job("big", 0.1, recover), data) > _cost(job("big", 0.1, estimate), data)
    assert _cost(job("unknown", 0.1, recover), data) > 0


def test_every_input_is_digested_before_the_call_that_gets_it():
    import ctypes

    X, A = frozen(np.arange(6.0).reshape(3, 2)), frozen(np.eye(2))
    units._before(X, A, None)
    ctypes.memmove(A.ctypes.data, np.full(1, 7.0).ctypes.data, 8)  # a first call writing into the structure
    assert units.untouched(units.Outcome(units.OK), X, A).status == units.FAILED
    assert units.untouched(units.Outcome(units.OK), X).status == units.OK
