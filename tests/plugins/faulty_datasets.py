"""A third-party data set whose loader misbehaves on purpose, one way per ``fault``.

Tests copy this file next to their suite file and name it in the suite's
``plugins``. ``count``, when given, is a file to which each call of the loader
appends a line, so that a test can tell how often the data set was loaded.
"""
from __future__ import annotations

import os
import signal

import numpy as np

import cmbench
from cmbench import data as cmdata


class Escape(BaseException):
    """Not an Exception: a careless plugin's own control-flow signal."""


def load(*, instance, rng, fault="none", count="", path=""):
    if count:
        with open(count, "a") as log:
            log.write(f"{instance}\n")
    if fault == "os-exit":
        os._exit(0)
    if fault == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if fault == "keyboard-interrupt":
        raise KeyboardInterrupt
    if fault == "system-exit":
        raise SystemExit(0)
    if fault == "base-exception":
        raise Escape("out of here")
    if fault == "data-error":
        raise cmdata.DataError("table.csv: column 'x' is not numeric (row 3: 'abc')")
    if fault == "data-error-top":  # the same class, as a plugin finds it beside cmbench.Undefined
        raise cmbench.DataError("table.csv: column 'y' is empty")
    if fault == "size-limit":
        cmdata.check_file_size(path, "data set faulty")
    if fault == "bug":
        raise ValueError("a bug in the loader")
    X = rng.normal(size=(40, 3))
    return cmbench.Data(X=X, mean=np.zeros(3), cov=np.eye(3), rank=2)


@cmbench.hookimpl
def register_datasets():
    return [cmbench.Dataset("faulty", load, params={"fault": "none", "count": "", "path": ""},
                            description="a data set whose loader fails in the way its fault names")]
