"""A test plugin: a data set with one declared file whose SHA-256 is ``$CMBENCH_TEST_DIGEST``."""
import os

import pandas as pd

import cmbench
from cmbench import data as cmdata


def load(*, instance, rng):
    X = pd.read_csv(cmdata.require(CHECKED) / "table.csv").to_numpy(dtype=float)
    return cmbench.Data(X=X, mean=X.mean(0))


CHECKED = cmbench.Dataset("checked-table", load, folder="checked",
                          files=(cmbench.DataFile("table.csv", os.environ["CMBENCH_TEST_DIGEST"],
                                                  "https://example.invalid/t.csv"),))


@cmbench.hookimpl
def register_datasets():
    return [CHECKED]
