"""Workers of cmbench's Dask LocalCluster allocate as its local workers do: no trim threshold."""
import os

import pytest

pytest.importorskip("distributed")


def test_local_cluster_workers_get_no_trim_threshold(monkeypatch):
    # Dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its workers, which fixes glibc's mmap
    # threshold and makes the estimators fault pages on every large temporary
    from cmbench.runner.executors import dask

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    seen = dict(dask(["MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS"], os.getenv, "local", 1))
    assert seen == {"MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": "1"}
    assert "MALLOC_TRIM_THRESHOLD_" not in os.environ  # nor leaked into this process by the nanny


def test_a_trim_threshold_the_user_sets_is_left_to_the_environment(monkeypatch):
    import dask

    from cmbench.runner.executors import spawn_environ

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1048576")  # inherited by the workers as it is
    assert "MALLOC_TRIM_THRESHOLD_" not in spawn_environ()
    assert spawn_environ()["OMP_NUM_THREADS"] == dask.config.get("distributed.nanny.pre-spawn-environ")[
        "OMP_NUM_THREADS"]
