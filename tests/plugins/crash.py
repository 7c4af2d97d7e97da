"""A test plugin: estimators that end their worker process with ``os._exit(7)``.

``crash`` always does. ``crash-once`` does on the first call that finds no file
at ``$CMBENCH_TEST_MARKER`` (and creates it); later calls sleep 0.3 s and log
``pid start end`` to ``$CMBENCH_TEST_LOG``, so that a test can see whether
calls overlapped in time.
"""
import os
import time

import numpy as np

import cmbench


def crash(X, *, rng):
    os._exit(7)


def crash_once(X, *, rng):
    start = time.time()
    marker = os.environ["CMBENCH_TEST_MARKER"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(7)
    time.sleep(0.3)
    with open(os.environ["CMBENCH_TEST_LOG"], "a") as f:
        f.write(f"{os.getpid()} {start} {time.time()}\n")
    return np.nanmean(X, axis=0)


@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("crash", crash), cmbench.Estimator("crash-once", crash_once)]
