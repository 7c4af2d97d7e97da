"""The corruption schemes of Anderson and Phillips, "Robust High-Dimensional Mean
Estimation With Low Data Size, an Empirical Study" (TMLR 2025), as one adversary, ``ap25``.

Their experiments draw ``round((1 - eta) n)`` inliers and append ``round(eta n)``
outliers (additive schemes), or draw n inliers and delete the eta n with the
largest projection on a random direction (subtractive). Here the data set draws
N i.i.d. rows and the adversary replaces the last ``k = floor(eps N)`` of them by
the scheme's outliers (the same distribution: the first N - k rows are the
inliers, the last k the appended noise) or deletes k rows (``subtractive``, the
adversary's ``delete`` mode). The schemes are centred on the true mean (and the
diagonal variants read the true covariance's diagonal): the adversary declares
``needs_truth`` and receives both from the data set.

Schemes (``mu`` the true mean, ``s`` the parameter ``std``, ``Q`` a random rotation;
every noise cluster has covariance I / 10):

``dkk``
    ``k - floor(k/2)`` rows ``mu + b``, each b_j drawn from {-s, 0}; ``floor(k/2)``
    copies of one point ``mu + (a_1, a_2, -1, ..., -1)``, a_1 from {-s, 11 s},
    a_2 from {-3 s, -s} (one draw each; the -1 is not scaled by s, as in the original).
``gaus-one``
    one cluster at ``mu + s Q 1`` (distance s sqrt(d) from mu, random direction).
``gaus-two``
    two clusters at distance s sqrt(d) from mu, ``angle`` degrees apart around mu,
    a random plane; ``round(weight k)`` rows in the first, the rest in the second.
``unif-top``
    ``mu + U(0, 2 s)^d``.
``obvious``
    two clusters at ``mu + 10 s sqrt(d) u`` and ``mu + 20 s sqrt(d) w``, u, w unit
    vectors ``angle`` degrees apart in a random plane; weight as ``gaus-two``.
``subtractive``
    project the rows on a random unit direction v, ``(x - mu) . v``; delete the k
    with the largest projection and return the rest in increasing projection.
``mixture``
    the noise of their Gaussian-mixture experiment: N(2 1, I), not centred on mu.
``gaus-one-diag``, ``unif-top-diag``, ``obvious-diag``, ``subtractive-diag``
    their non-spherical variants for a diagonal covariance with diagonal D:
    one cluster at ``mu + sqrt(D)`` (no rotation); ``mu + U(0, 2)^d * sqrt(D)``;
    ``obvious`` with s = sqrt(mean(D)) and the plane of the first two coordinate
    axes (no rotation); deletion along the axis of the largest variance.

Where this departs from the original code, on purpose: exactly ``floor(eps N)``
rows are corrupted (the original's ``round`` halves to even, so at .5 cases it
appends one more or one fewer; its dkk and two-cluster splits round each part,
which can total k + 1), and deletion keeps exactly ``N - floor(eps N)`` rows (the
original's ``ceil((1 - eps) n)`` may keep one more in floating point). The random
rotation is a uniformly random orthonormal frame (a Gaussian matrix's QR, with the
signs fixed so that it is Haar), drawn only as far as the scheme needs it (one
or two directions), so that d = 1000 does not cost a 1000 x 1000 QR.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

import cmbench
from cmbench.theory import budget_count

__all__ = ["ap25", "ap25_subtractive", "SCHEMES", "AP25", "AP25_DELETE", "register_adversaries"]

#: additive schemes (rows replaced) and deleting ones
ADDITIVE = ("dkk", "gaus-one", "gaus-two", "unif-top", "obvious", "mixture",
            "gaus-one-diag", "unif-top-diag", "obvious-diag")
DELETING = ("subtractive", "subtractive-diag")
SCHEMES = ADDITIVE + DELETING
PLACEMENTS = ("last", "random")


def _directions(r: np.random.Generator, d: int, count: int) -> np.ndarray:
    """``count`` orthonormal vectors of R^d, uniformly random (columns, (d, count))."""
    q, rr = np.linalg.qr(r.standard_normal((d, count)))
    return q * np.sign(np.diag(rr))  # the signs that make the frame Haar-distributed


def _pair(r: np.random.Generator, d: int, angle: float, rotate: bool) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors ``angle`` degrees apart: in a random plane, or the plane of e_1, e_2."""
    if d < 2:
        raise cmbench.NotApplicable("a two-cluster scheme needs d >= 2")
    a = math.radians(angle)
    if rotate:
        frame = _directions(r, d, 2)
        u, w = frame[:, 0], frame[:, 1]
    else:
        u, w = np.eye(d)[0], np.eye(d)[1]
    # the original rotates e_1 by [[cos, sin], [-sin, cos]]: (cos a, -sin a) in the e_1, e_2 plane
    return u, math.cos(a) * u - math.sin(a) * w


def _clusters(r: np.random.Generator, centres: list, counts: list, d: int) -> np.ndarray:
    rows = [c + r.standard_normal((m, d)) / math.sqrt(10.0) for c, m in zip(centres, counts)]
    return np.concatenate(rows, axis=0)


def _split(k: int, weight: float) -> list[int]:
    first = min(k, max(0, int(round(weight * k))))
    return [first, k - first]


def _diagonal(true_cov: Optional[np.ndarray], scheme: str, d: int) -> np.ndarray:
    if true_cov is None:
        raise cmbench.NotApplicable(f"scheme {scheme!r} reads the covariance's diagonal, which this "
                                    "data set does not know")
    D = np.diag(np.asarray(true_cov, dtype=float)).copy()
    if D.shape != (d,) or not np.all(D >= 0):
        raise ValueError(f"scheme {scheme!r}: the covariance's diagonal must be {d} non-negative numbers")
    return D


def noise(scheme: str, k: int, d: int, mu: np.ndarray, r: np.random.Generator, *, std: float,
          angle: float, weight: float, true_cov: Optional[np.ndarray] = None) -> np.ndarray:
    """The k outlier rows of an additive ``scheme`` (see the module docstring), (k, d)."""
    if scheme == "dkk":
        half = k // 2
        Y1 = mu + r.choice([-std, 0.0], size=(k - half, d))
        point = np.full(d, -1.0)
        point[0] = r.choice([-std, 11.0 * std])
        if d > 1:
            point[1] = r.choice([-3.0 * std, -std])
        return np.concatenate([Y1, np.broadcast_to(mu + point, (half, d))], axis=0)
    if scheme == "gaus-one":
        centre = mu + std * math.sqrt(d) * _directions(r, d, 1)[:, 0]
        return _clusters(r, [centre], [k], d)
    if scheme == "gaus-two":
        u, w = _pair(r, d, angle, rotate=True)
        return _clusters(r, [mu + std * math.sqrt(d) * u, mu + std * math.sqrt(d) * w], _split(k, weight), d)
    if scheme == "unif-top":
        return mu + r.uniform(0.0, 2.0 * std, size=(k, d))
    if scheme in ("obvious", "obvious-diag"):
        s = std if scheme == "obvious" else math.sqrt(float(np.mean(_diagonal(true_cov, scheme, d))))
        u, w = _pair(r, d, angle, rotate=scheme == "obvious")
        far = 10.0 * math.sqrt(d) * s
        return _clusters(r, [mu + far * u, mu + 2.0 * far * w], _split(k, weight), d)
    if scheme == "mixture":
        return 2.0 + r.standard_normal((k, d))
    if scheme == "gaus-one-diag":
        return _clusters(r, [mu + np.sqrt(_diagonal(true_cov, scheme, d))], [k], d)
    if scheme == "unif-top-diag":
        return mu + r.uniform(0.0, 2.0, size=(k, d)) * np.sqrt(_diagonal(true_cov, scheme, d))
    raise ValueError(f"scheme {scheme!r} is not one of {', '.join(SCHEMES)}")


def ap25(X: np.ndarray, budget: float, *, rng=None, structure=None, true_mean=None, true_cov=None,
         scheme: str = "gaus-one", std: float = 1.0, angle: float = 75.0, weight: float = 0.7,
         placement: str = "last") -> np.ndarray:
    """Anderson and Phillips' (2025) corruption ``scheme`` at eta = ``budget`` (A1^eps).

    Additive schemes replace ``k = floor(eps N)`` rows by the scheme's outliers: the
    last k (``placement = "last"``, their appended outliers) or k drawn at random
    (``"random"``). The deleting schemes (``subtractive``, ``subtractive-diag``)
    remove k rows and return the others in increasing projection; this adversary
    is then in delete mode (`AP25_DELETE`), since a scheme is a parameter and a
    declaration has one mode: a suite names ``ap25-subtractive`` for them.
    Algorithms: see the module docstring.

    Parameters
    ----------
    X : (N, d) clean sample, not modified.
    budget : eta in [0, 1).
    rng : numpy Generator (or seed) drawing the outliers, directions and placement.
    structure : unused.
    true_mean, true_cov : the data set's truth (the runner passes them).
    scheme : one of `ADDITIVE` here.
    std : the noise scale s (the inliers' standard deviation in their experiments: 1, or 5 for 25 I).
    angle : degrees between the two clusters of ``gaus-two`` and ``obvious``.
    weight : share of the first cluster of ``gaus-two`` and ``obvious``.
    placement : ``"last"`` or ``"random"``.

    Returns
    -------
    ndarray (N, d): X with k rows replaced.
    """
    if scheme not in ADDITIVE:
        raise ValueError(f"scheme {scheme!r} deletes rows: use the adversary 'ap25-subtractive'"
                         if scheme in DELETING else f"scheme {scheme!r} is not one of {', '.join(ADDITIVE)}")
    out = np.array(X, dtype=np.float64, copy=True)
    N, d = out.shape
    k = budget_count(budget, N)
    if k == 0:
        return out
    r = np.random.default_rng(rng)
    mu = np.asarray(true_mean, dtype=float)
    Y = noise(scheme, k, d, mu, r, std=float(std), angle=float(angle), weight=float(weight), true_cov=true_cov)
    rows = np.arange(N - k, N) if placement == "last" else np.sort(r.choice(N, size=k, replace=False))
    out[rows] = Y
    return out


def ap25_subtractive(X: np.ndarray, budget: float, *, rng=None, structure=None, true_mean=None,
                     true_cov=None, scheme: str = "subtractive") -> np.ndarray:
    """Anderson and Phillips' (2025) subtractive corruption at eta = ``budget`` (A1^eps, delete mode).

    ``subtractive``: draw a uniformly random unit direction v; ``subtractive-diag``: v the
    coordinate axis of the largest variance (the first on ties). Project the rows,
    ``p_i = (x_i - mu) . v``, sort them by p (increasing) and drop the last
    ``k = floor(eps N)``: the result is the ``N - k`` rows of smallest projection, in
    increasing projection. When k = 0 the sample is returned as given (the original sorts
    it even then, which only an order-dependent estimator sees: cmbench's budget 0 changes
    nothing).

    Parameters
    ----------
    X : (N, d) clean sample, not modified.
    budget : eta in [0, 1).
    rng : numpy Generator (or seed) drawing v.
    true_mean, true_cov : the data set's truth (the runner passes them).
    scheme : ``"subtractive"`` or ``"subtractive-diag"``.

    Returns
    -------
    ndarray (N - k, d), rows of X.
    """
    if scheme not in DELETING:
        raise ValueError(f"scheme {scheme!r} is not one of {', '.join(DELETING)}")
    X = np.asarray(X, dtype=np.float64)
    N, d = X.shape
    k = budget_count(budget, N)
    if k == 0:  # nothing to delete: the sample as given (the original sorts it even then)
        return X.copy()
    if scheme == "subtractive":
        g = np.random.default_rng(rng).standard_normal(d)
        v = g / np.linalg.norm(g)
    else:
        v = np.zeros(d)
        v[int(np.argmax(_diagonal(true_cov, scheme, d)))] = 1.0
    p = (X - np.asarray(true_mean, dtype=float)) @ v
    order = np.argsort(p, kind="stable")
    return X[order[:N - k]]


_RANGES = {"std": (0.0, None, "()"), "angle": (0.0, 180.0), "weight": (0.0, 1.0)}

AP25 = cmbench.Adversary(
    "ap25", ap25, choices={"scheme": ADDITIVE, "placement": PLACEMENTS}, ranges=_RANGES,
    level="sample", mode="replace", needs_truth=True, placement="last",
    description="A1: Anderson & Phillips (2025) additive schemes (dkk, gaus-one, gaus-two, unif-top, obvious, "
                "mixture, *-diag) on the last eps N rows")
AP25_DELETE = cmbench.Adversary(
    "ap25-subtractive", ap25_subtractive, choices={"scheme": DELETING}, level="sample", mode="delete",
    needs_truth=True,
    description="A1, delete: Anderson & Phillips (2025) subtractive scheme: drop the eps N rows of largest "
                "projection, the rest sorted by it")


@cmbench.hookimpl
def register_adversaries():
    """Anderson and Phillips' (2025) schemes: ``ap25`` (additive) and ``ap25-subtractive`` (deleting)."""
    return [AP25, AP25_DELETE]
