"""A test plugin: the Empirical Mean after a nap, logging each call.

``slow-mean`` appends ``estimate`` to the file named by ``$CMBENCH_TEST_LOG``
(when set) and sleeps ``delay`` seconds, so that a test can count the units a
run computed and interrupt a sweep mid-way.
"""
import os
import time

import numpy as np

import cmbench


def _log(what):
    path = os.environ.get("CMBENCH_TEST_LOG")
    if path:
        with open(path, "a") as f:
            f.write(what + "\n")


def slow_mean(X, *, rng, delay=0.0):
    _log("estimate")
    time.sleep(delay)
    return np.nanmean(X, 0)


@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("slow-mean", slow_mean, params={"delay": 0.0},
                              description="the mean, after a nap (counts its calls)")]
