"""A small hand-made results cube, as the runner writes one: pages drawn without a suite run.

`example_cube` is what ``cmbench check`` builds a plugin's report pages on
(`cmbench.check_pages`), and the report tests' cube: a few data sets,
instances and budgets, and methods whose errors grow with the budget in a
known order (method k's error is about ``(k + 1) * budget``).
"""
from __future__ import annotations

import json

import numpy as np
import xarray as xr

__all__ = ["EXAMPLE_METHODS", "THRESHOLDS", "example_cube"]

#: method label -> (recoverer, estimator)
EXAMPLE_METHODS = {"Empirical Mean": ["none", "mean"], "C-Median": ["none", "coord-median"],
                   "Two-Step-E": ["exact", "mean"]}


# cmbench.theory.thresholds(A) for m_A = 5, n = 16, with its labels
THRESHOLDS = {
    "m_a/2n": {"value": 5 / 32, "label": "m_A/2n (missing, Cor. 2)"},
    "m_a/4n": {"value": 5 / 64, "label": "m_A/4n (replace, Cor. 2)"},
    "rho_learn": {"value": 4 / 28,
                  "label": "(m_A-1)/(n+(m_A-1)(m_A-2)) (A2 learnable, Lemma 3)"},
    "rho_unlearnable": {"value": 4 / 16, "label": "(m_A-1)/n (A2 unrecoverable, Lemma 3)"},
    "1/n": {"value": 1 / 16, "label": "1/n (A3 unknown A, Lemma 2)"},
}


def example_cube(*, datasets=("gaussian", "uniform"), instances=3, adversaries=("min-rho",),
                 budgets=(0.0, 0.1, 0.2, 0.3), methods=EXAMPLE_METHODS, metrics=("mahalanobis", "l2"),
                 real=(), seed=0, experiment="synthetic", attrs=True) -> xr.Dataset:
    """A cube as the runner writes it, with made-up errors.

    Method k (in the order of ``methods``, a label -> (recoverer, estimator)
    mapping) has l2 error ``(k + 1) * (0.05 + budget)`` times a noise of 10%
    drawn from ``seed``, and Mahalanobis error 1.7 times that, so the methods'
    order is known. Data sets in ``real`` have no structure and no Mahalanobis
    error. ``attrs=False`` leaves out the attributes a written cube carries.

    Returns
    -------
    xarray.Dataset
        Dimensions (dataset, instance, adversary, budget, recoverer, estimator);
        the variables of `metrics`, ``seconds``, ``status`` (all "ok"), ``error``,
        ``recovered_fraction`` and ``discarded_fraction``.
    """
    rng = np.random.default_rng(seed)
    recs = sorted({p[0] for p in methods.values()})
    ests = sorted({p[1] for p in methods.values()})
    coords = {"dataset": list(datasets), "instance": np.arange(instances),
              "adversary": list(adversaries), "budget": np.asarray(budgets, float),
              "recoverer": recs, "estimator": ests}
    dims = tuple(coords)
    shape = tuple(len(v) for v in coords.values())
    b = np.asarray(budgets, float)[None, None, None, :, None, None]
    scale = np.zeros(shape[4:])
    for k, (r, e) in enumerate(methods.values()):
        scale[recs.index(r), ests.index(e)] = k + 1
    l2 = scale * (0.05 + b) * (1 + 0.1 * rng.standard_normal(shape))
    maha = 1.7 * l2
    for d in real:
        maha[list(datasets).index(d)] = np.nan
    status = np.full(shape, "ok", dtype=object)
    ds = xr.Dataset(
        {"l2": (dims, l2), "mahalanobis": (dims, maha),
         "seconds": (dims, 0.01 * (1 + scale) * np.ones(shape)),
         "status": (dims, status), "error": (dims, np.full(shape, "", dtype=object)),
         "recovered_fraction": (dims[:5], np.ones(shape[:5])),
         "discarded_fraction": (dims[:5], np.zeros(shape[:5]))},
        coords=coords)
    if attrs:
        ds.attrs.update({
            "suite": "smoke", "suite_file": "suites/smoke.toml", "suite_hash": "ab" * 32,
            "experiment": experiment, "description": "hand-made cube", "seed": 7,
            "cmbench_version": "0.1.0", "created": "2024-01-02T03:04:05+00:00",
            "host": "testhost",
            "plugins": json.dumps([{"plugin": "cmbench.builtins.estimators", "version": "0.1.0"}]),
            "metrics": json.dumps(list(metrics)), "methods": json.dumps(methods),
            "datasets_info": json.dumps({d: {
                "name": "real-data" if d in real else "synthetic-linear",
                "shape": [200, 16], "rank": 8, "structure_known": d not in real,
                "m_a": None if d in real else 5,
                "thresholds": {} if d in real else THRESHOLDS}
                for d in datasets}),
            "adversaries_info": json.dumps({a: {"name": "min-value", "level": "value",
                                                "mode": "missing"} for a in adversaries}),
        })
    return ds
