"""Adaptive worst-case adversaries: search, within a budget, for the corruption
that maximizes the error of the pipeline under attack.

The paper's adversaries are adaptive ("they are allowed to inspect the samples
before choosing a fraction of the coordinates to corrupt", Section
sec:corruptionModels); a benchmark that attacks with one fixed corruption only
bounds the worst case from below by that attack. The six adversaries here,
``worst-case-a{1,2,3}-{hide,replace}`` (level A1 = ``"sample"``, A2 =
``"value"``, A3 = ``"coordinate"``; mode missing or replace), are declared
``adaptive=True``: the runner hands each one the pipeline it attacks,

    ``pipeline(X_corrupted) -> float``: the l2 error of the pipeline's (recover,
    then estimate) mean against the true mean,

and an ``evaluations`` compute budget: the pipeline is called at most that many
times (the runner counts the calls and records them in the cube).

Search
------
1. **Portfolio** of structured attacks, all within the budget (`portfolio`):
   the built-in attacks of this level and mode (and those of the weaker levels
   the paper's Proposition adversaryLemma lets this one simulate at the same
   budget: A3 runs A2 and A1 attacks, A2 runs A1 attacks); the tails of each
   coordinate (lower, upper, the heavier one, the one aligned with a principal
   direction; concentrated on single columns or spread); whole rows at the tail
   of the top ``directions`` principal directions (both signs); and the m_A
   structured attack of ``hide-structured`` / ``replace-structured`` (the
   critical coordinates of the rows that lie furthest along a direction), with
   A known or estimated. Candidates are evaluated in rounds (each family's
   first variant, then each family's second, ...) so that a small
   ``evaluations`` still tries every family; at most ``portfolio_share`` of the
   evaluations go to it (at least one).
2. **Local search** from the best portfolio candidate, for the remaining
   evaluations (`local_search`): a (1+1) hill climb that accepts moves that are
   not worse (plateaus are common: a median moves only when its middle entries
   do). Moves keep the budget: swap hidden (or replaced) entries within a
   column, across columns (A3), or move a touched row's pattern to another row;
   spend unused budget; and, for replacements, scale all displacements or
   jitter some planted values ("shift replaced values"). Which entries move is
   drawn by Gumbel-perturbed scores: a candidate is likelier to be hidden (or
   overwritten) when its value lies opposite to the current shift of the mean,
   so the search pushes the shift further; a random temperature mixes guided
   and uniform proposals. The number of entries per move adapts: doubled after
   an improvement, shrunk after a failure.

Candidates are boolean masks (plus planted values for replacements) over the
(N, n) sample; identical candidates are evaluated once (a cache keyed by the
mask's bytes), so the budget buys distinct corruptions only.

Choices of this search (each a parameter):

* Non-finite errors. ``pipeline`` may return NaN or inf (or raise
  `cmbench.Undefined`) when the corruption breaks it, e.g. every row of a
  complete-row estimator hidden. ``breaks="max"`` (default) ranks such a
  candidate above every finite error: breaking the pipeline is the worst case,
  and the search stops there (nothing beats it). In a tie (equal scores) the
  earlier candidate stays and a finite error wins over a non-finite one.
  ``breaks="avoid"`` ranks them below every finite error instead (the worst
  case that still returns a number).
* Replacement values are confined to a box per coordinate, ``[min_j - reach
  s_j, max_j + reach s_j]`` (clean range widened by ``reach`` standard
  deviations s_j), otherwise the worst case against the mean is unbounded and
  the search only grows one displacement. ``reach=3`` holds ``replace-values``
  (top values pushed 3 s_j out) exactly; a built-in replacement attack that
  plants beyond the box is evaluated as clipped to it.
* An unknown structure (real data) is estimated as the top principal subspace
  explaining ``explained`` of the variance, as ``hide-structured`` does.
* ``evaluations=0`` returns the first portfolio candidate unevaluated; a
  budget that buys nothing returns an unchanged copy without calling
  ``pipeline``.

Budget rules as for every cmbench adversary (see `cmbench.builtins.adversaries`):
sample level ``floor(eps N)`` rows, value level ``floor(rho N)`` entries per
column, coordinate level ``floor(alpha N n)`` entries; entries already NaN count
as hidden and cost nothing; X is never modified; the result is deterministic
given ``rng`` (and a deterministic pipeline).

The portfolio runs the built-in adversaries by their registered names, found
through `cmbench.load_plugins` as a third-party plugin would find them; the
structural pieces it shares with ``hide-structured`` (critical set, hidden
direction, budget rounding) come from `cmbench.theory`.
"""
from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

import cmbench
from cmbench.theory import budget_count, changed_entries, critical_set, hidden_direction

__all__ = [
    "worst_case", "search_worst_case", "SearchResult", "portfolio", "local_search",
    "worst_case_a1_hide", "worst_case_a1_replace", "worst_case_a2_hide",
    "worst_case_a2_replace", "worst_case_a3_hide", "worst_case_a3_replace",
    "register_adversaries",
]

LEVEL_TAGS = {"sample": "a1", "value": "a2", "coordinate": "a3"}
MODE_TAGS = {"missing": "hide", "replace": "replace"}
BREAKS = ("max", "avoid")

DEFAULTS = {"evaluations": 200, "portfolio_share": 0.5, "directions": 2, "reach": 3.0,
            "breaks": "max", "explained": 0.95}



# --------------------------------------------------------------------------- the problem

@dataclass
class Candidate:
    """One corruption: ``mask`` (N, n) bool of touched entries (never an entry
    already NaN in X) and, in replace mode, ``values`` (N, n) planted where
    ``mask`` holds (ignored elsewhere). ``label`` names the attack it came from."""

    mask: np.ndarray
    values: Optional[np.ndarray] = None
    label: str = ""

    def key(self) -> bytes:
        h = hashlib.blake2b(np.packbits(self.mask).tobytes(), digest_size=16)
        if self.values is not None:
            h.update(np.ascontiguousarray(self.values[self.mask]).tobytes())
        return h.digest()


@dataclass
class Problem:
    """The clean sample and everything the attacks share.

    ``X`` (N, n) clean (a private copy), ``visible`` its non-NaN entries,
    ``mu``/``sd`` (n,) column means and standard deviations of the visible
    entries (sd 1 for a constant column), ``lo``/``hi`` (n,) the replacement
    box, ``cap`` what the budget buys in the level's unit.
    """

    X: np.ndarray
    level: str
    mode: str
    cap: int
    visible: np.ndarray
    mu: np.ndarray
    sd: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def make(cls, X: np.ndarray, budget: float, level: str, mode: str, reach: float) -> "Problem":
        X = np.array(X, dtype=np.float64, copy=True)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D (N, n) array, got shape {X.shape}")
        N, n = X.shape
        unit = {"sample": N, "value": N, "coordinate": N * n}[level]
        visible = ~np.isnan(X)
        count = np.maximum(visible.sum(axis=0), 1)
        mu = np.where(visible, X, 0.0).sum(axis=0) / count
        sd = np.sqrt(np.where(visible, (X - mu) ** 2, 0.0).sum(axis=0) / count)
        sd[~(sd > 0)] = 1.0
        has = visible.any(axis=0)
        lo = np.where(has, np.nanmin(np.where(visible, X, np.inf), axis=0), mu) - reach * sd
        hi = np.where(has, np.nanmax(np.where(visible, X, -np.inf), axis=0), mu) + reach * sd
        return cls(X, level, mode, budget_count(budget, unit), visible, mu, sd, lo, hi)

    @property
    def shape(self) -> tuple:
        return self.X.shape

    @property
    def replace(self) -> bool:
        return self.mode == "replace"

    def build(self, cand: Candidate) -> np.ndarray:
        """The corrupted sample (a new array)."""
        if self.replace:
            planted = np.clip(cand.values, self.lo, self.hi)
            return np.where(cand.mask, planted, self.X)
        return np.where(cand.mask, np.nan, self.X)

    def usage(self, mask: np.ndarray) -> int:
        """What ``mask`` spends, in the level's unit."""
        if self.level == "sample":
            return int(mask.any(axis=1).sum())
        if self.level == "value":
            return int(mask.sum(axis=0).max(initial=0))
        return int(mask.sum())

    def fits(self, mask: np.ndarray) -> bool:
        return self.usage(mask) <= self.cap and not (mask & ~self.visible).any()

    def z(self) -> np.ndarray:
        """Standardized clean values, 0 where hidden."""
        return np.where(self.visible, (self.X - self.mu) / self.sd, 0.0)


def _from_output(prob: Problem, out: np.ndarray, label: str) -> Optional[Candidate]:
    """A candidate from a corrupted array (a built-in attack's output); None if
    it spends more than the budget (it never should)."""
    out = np.asarray(out, dtype=float)
    if out.shape != prob.shape:
        return None
    X = prob.X
    changed = changed_entries(out, X) & prob.visible
    if prob.replace:
        mask = changed & np.isfinite(out)
        cand = Candidate(mask, np.where(mask, out, X), label)
    else:
        cand = Candidate(changed & np.isnan(out), None, label)
    return cand if prob.fits(cand.mask) else None


# --------------------------------------------------------------------------- scoring

class _Exhausted(Exception):
    pass


class Evaluator:
    """Calls ``pipeline`` at most ``limit`` times; caches scores by candidate.

    A score is ``(value, finite)`` compared as a tuple: ``value`` is the error,
    or +inf (``breaks="max"``) / -inf (``"avoid"``) when the pipeline returned
    a non-finite error or raised `cmbench.Undefined`; ``finite`` is 1 for a
    finite error, so a finite error wins a tie against a broken pipeline.
    """

    def __init__(self, prob: Problem, pipeline: Callable, limit: int, breaks: str):
        self.prob, self.pipeline, self.limit, self.breaks = prob, pipeline, int(limit), breaks
        self.calls = 0
        self.cache: dict[bytes, tuple] = {}

    @property
    def left(self) -> int:
        return self.limit - self.calls

    def known(self, cand: Candidate) -> Optional[tuple]:
        return self.cache.get(cand.key())

    def __call__(self, cand: Candidate) -> tuple:
        key = cand.key()
        if key in self.cache:
            return self.cache[key]
        if self.calls >= self.limit:
            raise _Exhausted()
        self.calls += 1
        Xc = self.prob.build(cand)
        Xc.setflags(write=False)
        try:
            err = float(self.pipeline(Xc))
        except cmbench.Undefined:
            err = math.nan
        if math.isfinite(err):
            score = (err, 1)
        else:
            score = (math.inf if self.breaks == "max" else -math.inf, 0)
        self.cache[key] = score
        return score


def _broken(score: tuple) -> bool:
    return score[1] == 0 and score[0] == math.inf


# --------------------------------------------------------------------------- geometry

def _principal(prob: Problem, k: int) -> np.ndarray:
    """Top-k principal directions (n, k) of the mean-imputed clean data, each with
    its largest-magnitude entry positive."""
    Xc = np.where(prob.visible, prob.X - prob.mu, 0.0)
    w, V = np.linalg.eigh(Xc.T @ Xc)
    V = V[:, ::-1][:, :max(1, min(k, V.shape[1]))]
    idx = np.argmax(np.abs(V), axis=0)
    return V * np.sign(V[idx, np.arange(V.shape[1])])


def _structure(prob: Problem, structure, explained: float) -> Optional[np.ndarray]:
    """A (n x r) given, or the top principal subspace explaining ``explained``."""
    n = prob.shape[1]
    if structure is not None:
        A = np.asarray(structure, dtype=float)
        return A if A.ndim == 2 and A.shape[0] == n else None
    Xc = np.where(prob.visible, prob.X - prob.mu, 0.0)
    w, V = np.linalg.eigh(Xc.T @ Xc)
    w, V = np.clip(w[::-1], 0, None), V[:, ::-1]
    if w.sum() <= 0:
        return None
    k = int(np.searchsorted(np.cumsum(w) / w.sum(), explained - 1e-12) + 1)
    return V[:, :min(max(k, 1), n)]


def _critical_and_direction(A: np.ndarray) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """The critical coordinates of A (`cmbench.theory.critical_set`, as
    ``hide-structured`` uses) and a unit vector w of range(A) vanishing off them
    (`cmbench.theory.hidden_direction`): moving a sample along w changes only
    those coordinates and keeps it structured. None when A has no such set
    (rank 0, not finite)."""
    try:
        cols = critical_set(A)
        return cols, hidden_direction(A, cols)
    except ValueError:
        return None


def _top_rows(prob: Problem, d: np.ndarray, count: int, cols: Optional[np.ndarray] = None) -> np.ndarray:
    """The ``count`` rows with the largest projection on ``d`` (ties: lower index),
    among rows with something visible (in ``cols`` when given)."""
    Xc = np.where(prob.visible, prob.X - prob.mu, 0.0)
    p = Xc @ d
    vis = prob.visible if cols is None else prob.visible[:, cols]
    eligible = np.flatnonzero(vis.any(axis=1))
    order = eligible[np.argsort(-p[eligible], kind="stable")]
    return order[:max(count, 0)]


# --------------------------------------------------------------------------- portfolio

def _tail_candidate(prob: Problem, quota: np.ndarray, up: np.ndarray, label: str) -> Candidate:
    """Per column j, the ``quota[j]`` visible entries at the tail that, once hidden
    (or moved to the far edge of the box), shift column j's mean the way ``up[j]``
    says: up -> the smallest values, down -> the largest."""
    X, N = prob.X, prob.shape[0]
    key = np.where(up, X, -X)
    key = np.where(prob.visible, key, np.inf)
    order = np.argsort(key, axis=0, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(N)[:, None].repeat(X.shape[1], 1), axis=0)
    mask = (rank < quota[None, :]) & prob.visible
    values = None
    if prob.replace:
        values = np.where(mask, np.where(up, prob.hi, prob.lo)[None, :], X)
    return Candidate(mask, values, label)


def _tail_sums(prob: Problem, z: np.ndarray, quota: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the sums of the ``quota[j]`` smallest and largest visible ``z``."""
    N = prob.shape[0]
    rank = np.arange(N)[:, None]
    asc = np.sort(np.where(prob.visible, z, np.inf), axis=0)
    desc = np.sort(np.where(prob.visible, -z, np.inf), axis=0)
    take = rank < quota[None, :]
    low = np.where(take & np.isfinite(asc), asc, 0.0).sum(axis=0)
    high = -np.where(take & np.isfinite(desc), desc, 0.0).sum(axis=0)
    return low, high


def _column_quotas(prob: Problem) -> list[tuple[str, np.ndarray]]:
    """Per-column quotas the budget affords: all columns at the A2 quota, or (A3)
    concentrated on the highest-variance columns, spilling over in variance order."""
    N, n = prob.shape
    vis = prob.visible.sum(axis=0)
    if prob.level == "value":
        return [("", np.minimum(np.full(n, prob.cap), vis))]
    if prob.level != "coordinate":
        return []
    out = [("spread", np.minimum(np.full(n, prob.cap // max(n, 1)), vis))]
    order = np.argsort(-(prob.sd ** 2) * (vis > 0), kind="stable")
    for first in order[:2]:
        seq = np.concatenate([[first], order[order != first]])
        spent = np.cumsum(vis[seq]) - vis[seq]
        q = np.empty(n, dtype=np.int64)
        q[seq] = np.clip(prob.cap - spent, 0, vis[seq])
        out.append((f"column {first}", q))
    return out


def _row_candidate(prob: Problem, rows: np.ndarray, cols: Optional[np.ndarray],
                   planted: Optional[np.ndarray], label: str) -> Candidate:
    """Touch ``cols`` (all when None) of ``rows``; plant ``planted`` (len(rows), n)
    there in replace mode."""
    N, n = prob.shape
    mask = np.zeros((N, n), dtype=bool)
    if cols is None:
        mask[rows] = True
    else:
        mask[np.ix_(rows, cols)] = True
    mask &= prob.visible
    values = None
    if prob.replace:
        values = prob.X.copy()
        values[rows] = planted
    return Candidate(mask, values, label)


def _rows_for(prob: Problem, width: int) -> int:
    """Rows affordable when each costs ``width`` entries."""
    if prob.level == "coordinate":
        return prob.cap // max(width, 1)
    return prob.cap  # sample: rows; value: entries per column = rows


_SIDES = ("auto", "positive", "negative")
# The built-in attacks of each level and mode, by registered name, in evaluation order.
_OWN = {
    ("sample", "missing"): [("hide-samples", {"side": s}) for s in _SIDES],
    ("sample", "replace"): [("replace-samples", {"side": s}) for s in _SIDES],
    ("value", "missing"): [("hide-smallest", {}), ("hide-random", {})],
    ("value", "replace"): [("replace-values", {})],
    ("coordinate", "missing"): [("hide-structured", {"side": "auto"}),
                                ("hide-tail", {"side": "largest"}),
                                ("hide-tail", {"side": "smallest"}),
                                ("hide-structured", {"side": "positive"}),
                                ("hide-structured", {"side": "negative"})],
    ("coordinate", "replace"): [("replace-structured", {"side": s}) for s in _SIDES],
}
_WEAKER = {"value": ["sample"], "coordinate": ["value", "sample"], "sample": []}


@functools.lru_cache(maxsize=1)
def _attacks() -> dict:
    """The callables of the built-in attacks in `_OWN`, by name, looked up in the
    plugin registry (once per process) as a third-party plugin would."""
    table = cmbench.load_plugins().adversaries
    return {name: table[name].fn for specs in _OWN.values() for name, _ in specs}


def _builtin_family(prob: Problem, budget: float, rng: np.random.Generator, structure) -> list:
    """The built-in attacks this adversary can run at its budget (Prop. adversaryLemma:
    A3 simulates A2 and A1 at the same budget, A2 simulates A1)."""
    specs = list(_OWN[(prob.level, prob.mode)])
    for lv in _WEAKER[prob.level]:
        specs += _OWN[(lv, prob.mode)][:1]
    attacks = _attacks()
    out = []
    for name, kw in specs:
        try:
            res = attacks[name](prob.X, budget, rng=rng, structure=structure, **kw)
        except (cmbench.NotApplicable, cmbench.Undefined, ValueError, np.linalg.LinAlgError):
            continue  # e.g. a structure of rank 0: the attack does not exist here
        label = name + "".join(f" {v}" for v in kw.values())
        cand = _from_output(prob, res, label)
        if cand is not None:
            out.append(cand)
    return out


def portfolio(prob: Problem, budget: float, rng: np.random.Generator, structure=None, *,
              directions: int = 2, explained: float = 0.95) -> list[Candidate]:
    """Structured attacks within the budget, in evaluation order (rounds over families).

    Parameters
    ----------
    prob : the clean sample, level, mode and budget (`Problem.make`).
    budget : the budget fraction (for the built-in attacks).
    rng : draws hide-random's entries and replace-samples' noise rows.
    structure : A (n x r) or None (then estimated for the m_A attack).
    directions : principal directions used (both signs each).

    Returns
    -------
    Candidates, duplicates removed (first kept), each within the budget.
    """
    N, n = prob.shape
    V = _principal(prob, directions)
    dirs = [(f"pc{i + 1}{sgn}", s * V[:, i]) for i in range(V.shape[1])
            for sgn, s in (("+", 1.0), ("-", -1.0))]
    families: list[list[Candidate]] = [_builtin_family(prob, budget, rng, structure)]

    # tails of each coordinate
    tails = []
    z = prob.z()
    for qname, quota in _column_quotas(prob):
        low, high = _tail_sums(prob, z, quota)
        heavier = np.abs(low) >= np.abs(high)  # hiding the lower tail shifts column j more
        sides = [("heavier tail", heavier), ("lower tails", np.ones(n, bool)),
                 ("upper tails", np.zeros(n, bool))]
        sides += [(f"tails along {nm}", d >= 0) for nm, d in dirs]
        tails += [_tail_candidate(prob, quota, up, f"{side} {qname}".strip()) for side, up in sides]
    families.append(tails)

    # whole rows at the tail of each direction
    if prob.level in ("sample", "value") or prob.cap >= n:
        rows_fam = []
        for nm, d in dirs:
            rows = _top_rows(prob, d, _rows_for(prob, n))
            planted = None
            if prob.replace:  # a cluster on the opposite side: removal and insertion shift alike
                s = float(np.std(np.where(prob.visible, prob.X - prob.mu, 0.0) @ d)) or 1.0
                planted = np.broadcast_to(prob.mu - 3.0 * s * d, (rows.size, n))
            rows_fam.append(_row_candidate(prob, rows, None, planted, f"rows along {nm}"))
        families.append(rows_fam)

    # the m_A structured attack: critical coordinates of the rows furthest along a direction
    A = _structure(prob, structure, explained)
    crit = _critical_and_direction(A) if A is not None else None
    if crit is not None:
        cols, w = crit
        if w @ V[:, 0] < 0:
            w = -w
        struct_dirs = [("w+", w), ("w-", -w)] + dirs
        sfam = []
        m = max(_rows_for(prob, cols.size), 0)
        for nm, d in struct_dirs:
            rows = _top_rows(prob, d, m, cols)
            planted = None
            if prob.replace:  # move the row along -w: structured, differs only on the critical set
                Xc = np.where(prob.visible, prob.X - prob.mu, 0.0)
                t = 3.0 * (float(np.std(Xc @ w)) or 1.0) * (1.0 if nm == "w-" else -1.0)
                planted = prob.X[rows] + t * w
            sfam.append(_row_candidate(prob, rows, cols, planted,
                                       f"m_A critical coordinates, rows along {nm}"))
        families.append(sfam)

    out, seen = [], set()
    for i in range(max(map(len, families), default=0)):
        for fam in families:
            if i < len(fam):
                c = fam[i]
                if not c.mask.any() or not prob.fits(c.mask):
                    continue
                key = c.key()
                if key not in seen:
                    seen.add(key)
                    out.append(c)
    return out


# --------------------------------------------------------------------------- local search

def _gumbel_key(score: np.ndarray, eligible: np.ndarray, tau: float,
                rng: np.random.Generator) -> np.ndarray:
    """``score / tau`` plus Gumbel noise, -inf where not eligible: taking the top
    of this key samples without replacement with probabilities ~ exp(score / tau)
    (tau = inf: uniformly)."""
    key = np.full(score.shape, -np.inf)
    # -log of a standard exponential is Gumbel, at half the cost of rng.gumbel
    noise = -np.log(np.maximum(rng.standard_exponential(int(np.count_nonzero(eligible))), 1e-300))
    key[eligible] = noise if math.isinf(tau) else score[eligible] / tau + noise
    return key


def _top(key: np.ndarray, count: int) -> np.ndarray:
    """Flat indices of the ``count`` largest finite keys, largest first."""
    flat = key.ravel()
    count = int(min(count, np.isfinite(flat).sum()))
    if count <= 0:
        return np.empty(0, dtype=np.intp)
    idx = np.argpartition(-flat, count - 1)[:count]
    return idx[np.argsort(-flat[idx], kind="stable")]


def _column_top(key: np.ndarray, count: int) -> np.ndarray:
    """(count, n) rows of each column with the largest keys, largest first (a
    column with fewer finite keys ends in -inf rows: check the key)."""
    count = int(min(max(count, 1), key.shape[0]))
    part = np.argpartition(-key, count - 1, axis=0)[:count]
    order = np.argsort(-np.take_along_axis(key, part, axis=0), axis=0, kind="stable")
    return np.take_along_axis(part, order, axis=0)


class _Mover:
    """Proposes budget-preserving changes to a candidate (see the module docstring)."""

    def __init__(self, prob: Problem, rng: np.random.Generator):
        self.prob, self.rng = prob, rng
        self.zs = prob.z()
        pc = _principal(prob, 1)[:, 0] / prob.sd  # fallback shift direction, standardized
        self.pc = pc / (np.linalg.norm(pc) or 1.0)
        self.has_rows = prob.visible.any(axis=1)
        # move kinds and their weights; "grow" joins while budget is unspent
        self.kinds = {
            "sample": {"row": 1.0},
            "value": {"row": 0.3, "column": 0.7},
            "coordinate": {"row": 0.25, "column": 0.35, "cross": 0.4},
        }[prob.level]
        if prob.replace:
            self.kinds = {k: 0.5 * v for k, v in self.kinds.items()} | {"scale": 0.2, "jitter": 0.3}

    # -- guidance ----------------------------------------------------------
    def _scores(self, cand: Candidate) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Entry score e (N, n), row score r (N,) and the unit shift direction g (n,):
        low scores mark what to hide or overwrite next to push the shift along g."""
        prob = self.prob
        Xc = prob.build(cand)
        seen = ~np.isnan(Xc)
        cnt = seen.sum(axis=0)
        mean = np.where(cnt > 0, np.where(seen, Xc, 0.0).sum(axis=0) / np.maximum(cnt, 1), prob.mu)
        g = (mean - prob.mu) / prob.sd
        norm = np.linalg.norm(g)
        g = g / norm if norm > 1e-12 else self.pc
        e = self.zs * (g / np.abs(g).max())[None, :]
        r = self.zs @ g
        r = r / (r.std() or 1.0)
        return e, r, g

    # -- proposal ----------------------------------------------------------
    def propose(self, cand: Candidate, frac: float) -> Optional[Candidate]:
        prob, rng = self.prob, self.rng
        mask = cand.mask.copy()
        values = None if cand.values is None else cand.values.copy()
        e, r, g = self._scores(cand)
        tau = float(rng.choice([0.25, 1.0, math.inf]))
        kinds = dict(self.kinds)
        if prob.usage(mask) < prob.cap:
            kinds["grow"] = 0.3
        names = sorted(kinds)
        w = np.array([kinds[k] for k in names])
        kind = names[int(rng.choice(len(names), p=w / w.sum()))]
        getattr(self, f"_{kind}")(mask, values, e, r, g, frac, tau)
        if values is not None:
            values = np.clip(values, prob.lo, prob.hi)
            values = np.where(mask, values, prob.X)
        out = Candidate(mask, values, cand.label)
        if not mask.any() or not prob.fits(mask):
            return None
        return out

    def _count(self, pool: int, frac: float) -> int:
        return max(1, int(round(frac * pool)))

    def _row(self, mask, values, e, r, g, frac, tau):
        """Move the touched pattern of some rows to untouched rows."""
        prob, rng = self.prob, self.rng
        touched = mask.any(axis=1)
        s = self._count(int(touched.sum()), frac)
        src = _top(_gumbel_key(r, touched, tau, rng), s)
        tgt = _top(_gumbel_key(-r, ~touched & self.has_rows, tau, rng), src.size)
        src = src[:tgt.size]
        if not src.size:
            return
        pattern = mask[src] & prob.visible[tgt]
        if values is not None:
            if prob.level == "sample":  # the planted row itself moves
                values[tgt] = np.where(pattern, values[src], prob.X[tgt])
            else:  # the displacement moves (a structured shift x + t w stays structured)
                disp = np.where(mask[src], values[src] - prob.X[src], 0.0)
                values[tgt] = np.where(pattern, prob.X[tgt] + disp, prob.X[tgt])
        mask[src] = False
        mask[tgt] = pattern

    def _column(self, mask, values, e, r, g, frac, tau):
        """Swap touched entries with untouched ones of the same column."""
        prob, rng = self.prob, self.rng
        n = mask.shape[1]
        s = self._count(int(mask.sum()), frac)
        src = _top(_gumbel_key(e, mask, tau, rng), s)  # best first
        si, sj = np.divmod(src, n)
        per_col = np.bincount(sj, minlength=n)
        tkey = _gumbel_key(-e, prob.visible & ~mask, tau, rng)
        tgt = _column_top(tkey, int(per_col.max()))
        ok = np.isfinite(np.take_along_axis(tkey, tgt, axis=0))
        # the r-th source of column j pairs with its r-th target
        rank = np.zeros(src.size, dtype=np.intp)
        order = np.lexsort((np.arange(src.size), sj))
        start = np.concatenate([[0], np.cumsum(per_col)[:-1]])
        rank[order] = np.arange(src.size) - np.repeat(start, per_col)
        keep = ok[rank, sj]
        si, sj, ti = si[keep], sj[keep], tgt[rank[keep], sj[keep]]
        if values is not None:
            values[ti, sj] = values[si, sj]  # the planted value moves
        mask[si, sj] = False
        mask[ti, sj] = True

    def _cross(self, mask, values, e, r, g, frac, tau):
        """Move touched entries anywhere (A3)."""
        prob, rng = self.prob, self.rng
        s = self._count(int(mask.sum()), frac)
        src = _top(_gumbel_key(e, mask, tau, rng), s)
        tgt = _top(_gumbel_key(-e, prob.visible & ~mask, tau, rng), src.size)
        src = src[:tgt.size]
        if not src.size:
            return
        n = mask.shape[1]
        si, sj = np.divmod(src, n)
        ti, tj = np.divmod(tgt, n)
        if values is not None:  # the displacement moves, in standard deviations of its column
            disp = (values[si, sj] - prob.X[si, sj]) / prob.sd[sj]
            values[ti, tj] = prob.X[ti, tj] + disp * prob.sd[tj]
        mask[si, sj] = False
        mask[ti, tj] = True

    def _grow(self, mask, values, e, r, g, frac, tau):
        """Spend budget left unused: more entries (or rows) at the guided tail."""
        prob, rng = self.prob, self.rng
        free = prob.visible & ~mask
        edge = np.where(g >= 0, prob.hi, prob.lo)  # planted values pull along g
        if prob.level == "sample":
            touched = mask.any(axis=1)
            slack = prob.cap - int(touched.sum())
            rows = _top(_gumbel_key(-r, ~touched & self.has_rows, tau, rng),
                        min(slack, self._count(int(touched.sum()), frac)))
            if values is not None:
                donors = np.flatnonzero(touched)
                plant = (values[rng.choice(donors, size=rows.size)] if donors.size
                         else np.broadcast_to(edge, (rows.size, edge.size)))
                values[rows] = plant
            mask[rows] = prob.visible[rows]
            return
        if prob.level == "coordinate":
            slack = prob.cap - int(mask.sum())
            idx = _top(_gumbel_key(-e, free, tau, rng), min(slack, self._count(int(mask.sum()), frac)))
            add = np.zeros(mask.size, dtype=bool)
            add[idx] = True
            add = add.reshape(mask.shape)
        else:  # value: per column, up to its own slack
            slack = prob.cap - mask.sum(axis=0)
            step = min(self._count(int(mask.sum()), frac), prob.cap)
            key = _gumbel_key(-e, free, tau, rng)
            quota = np.minimum(slack, step)
            top = _column_top(key, int(quota.max(initial=0)))
            take = (np.arange(top.shape[0])[:, None] < quota[None, :]) & \
                np.isfinite(np.take_along_axis(key, top, axis=0))
            add = np.zeros_like(mask)
            add[top[take], np.nonzero(take)[1]] = True
        if values is not None:
            values[add] = np.broadcast_to(edge, mask.shape)[add]
        mask |= add

    def _scale(self, mask, values, e, r, g, frac, tau):
        """Scale every displacement by one factor (about the clean rows; A1: about the mean)."""
        prob = self.prob
        c = float(np.exp(0.5 * self.rng.standard_normal()))
        ref = np.broadcast_to(prob.mu, mask.shape) if prob.level == "sample" else prob.X
        values[mask] = (ref + c * (values - ref))[mask]

    def _jitter(self, mask, values, e, r, g, frac, tau):
        """Move some planted values by half a standard deviation, at random."""
        prob, rng = self.prob, self.rng
        if prob.level == "sample":
            touched = np.flatnonzero(mask.any(axis=1))
            rows = rng.choice(touched, size=min(self._count(touched.size, frac), touched.size), replace=False)
            noise = 0.5 * rng.standard_normal((rows.size, mask.shape[1])) * prob.sd
            values[rows] = np.where(mask[rows], values[rows] + noise, values[rows])
            return
        idx = np.flatnonzero(mask.ravel())
        pick = rng.choice(idx, size=min(self._count(idx.size, frac), idx.size), replace=False)
        i, j = np.divmod(pick, mask.shape[1])
        values[i, j] += 0.5 * rng.standard_normal(pick.size) * prob.sd[j]


@dataclass
class LocalStats:
    """Counts of a `local_search`: moves proposed, accepted (not worse) and improving."""

    proposals: int = 0
    accepted: int = 0
    improved: int = 0


def local_search(prob: Problem, evaluator: Evaluator, start: Candidate, start_score: tuple,
                 rng: np.random.Generator) -> tuple[Candidate, tuple, LocalStats]:
    """(1+1) hill climb from ``start`` until ``evaluator`` runs out of calls.

    A proposal replaces the incumbent when its score is not lower (so the
    incumbent is always the best seen). The fraction of entries (or rows) a
    move touches starts at 0.1, doubles after an improvement (at most 0.5) and
    shrinks by 1.25 after a failure (a move touches at least one). Proposals
    already evaluated cost no call; the search also stops after 20 proposals
    per call left, or as soon as the pipeline is broken (``breaks="max"``).

    Parameters
    ----------
    prob : Problem
        The clean sample, level, mode and budget.
    evaluator : Evaluator
        Scores candidates; its call limit ends the search.
    start : Candidate
        The incumbent to climb from (the best portfolio candidate).
    start_score : tuple
        Its score.
    rng : numpy.random.Generator
        Draws the moves.

    Returns
    -------
    best : Candidate
        The best candidate seen.
    score : tuple
        Its score.
    stats : LocalStats
        Counts of proposals, accepted and improving moves.
    """
    mover = _Mover(prob, rng)
    cur, cur_s = start, start_score
    frac, stats = 0.1, LocalStats()
    limit = 20 * max(evaluator.left, 1)
    while evaluator.left > 0 and stats.proposals < limit and not _broken(cur_s):
        stats.proposals += 1
        cand = mover.propose(cur, frac)
        if cand is None:
            continue
        s = evaluator(cand)
        if s > cur_s:
            stats.improved += 1
            frac = min(0.5, frac * 2.0)
        elif s < cur_s:
            frac /= 1.25
        if s >= cur_s:
            cur, cur_s = cand, s
            stats.accepted += 1
    return cur, cur_s, stats


# --------------------------------------------------------------------------- the search

@dataclass
class SearchResult:
    """What `search_worst_case` found.

    ``X`` the corrupted sample; ``best`` its candidate and ``score``
    (error, finite); ``start``/``start_score`` the best portfolio candidate;
    ``tried`` (label, score) per evaluated portfolio candidate; ``evaluations``
    pipeline calls made; ``local`` the local search's counts.
    """

    X: np.ndarray
    best: Optional[Candidate] = None
    score: Optional[tuple] = None
    start: Optional[Candidate] = None
    start_score: Optional[tuple] = None
    tried: list = field(default_factory=list)
    evaluations: int = 0
    local: LocalStats = field(default_factory=LocalStats)

    @property
    def error(self) -> float:
        return float("nan") if self.score is None else float(self.score[0])


def search_worst_case(X: np.ndarray, budget: float, *, level: str, mode: str, rng=None,
                      structure=None, pipeline: Optional[Callable[[np.ndarray], float]] = None,
                      evaluations: int = 200, portfolio_share: float = 0.5, directions: int = 2,
                      reach: float = 3.0, breaks: str = "max", explained: float = 0.95) -> SearchResult:
    """Search for the corruption within ``budget`` that maximizes ``pipeline``'s error.

    Parameters
    ----------
    X : (N, n) float clean sample, NaN = missing. Not modified.
    budget : eps, rho or alpha in [0, 1], read by ``level``.
    level : ``"sample"`` (A1), ``"value"`` (A2) or ``"coordinate"`` (A3).
    mode : ``"missing"`` or ``"replace"``.
    rng : numpy Generator (the search's only source of randomness).
    structure : A (n x r) or None.
    pipeline : ``pipeline(X_corrupted) -> float``, the error to maximize.
    evaluations : most calls to ``pipeline``.
    portfolio_share : largest share of ``evaluations`` spent on the portfolio.
    directions : principal directions the portfolio attacks along.
    reach : replacement box, in standard deviations beyond each column's range.
    breaks : ``"max"`` or ``"avoid"``: how a non-finite error ranks.
    explained : variance share of the estimated structure when A is unknown.

    Returns
    -------
    `SearchResult`; ``.X`` is the (N, n) corrupted sample.
    """
    if level not in LEVEL_TAGS:
        raise ValueError(f"level must be one of {', '.join(LEVEL_TAGS)}, got {level!r}")
    if mode not in MODE_TAGS:
        raise ValueError(f"mode must be 'missing' or 'replace', got {mode!r}")
    if breaks not in BREAKS:
        raise ValueError(f"breaks must be 'max' or 'avoid', got {breaks!r}")
    if int(evaluations) < 0 or not 0.0 <= float(portfolio_share) <= 1.0:
        raise ValueError(f"evaluations must be >= 0 and portfolio_share in [0, 1], got "
                         f"{evaluations!r} and {portfolio_share!r}")
    if not float(reach) >= 0:
        raise ValueError(f"reach must be >= 0, got {reach!r}")
    if pipeline is None:
        raise cmbench.NotApplicable("a worst-case adversary needs the pipeline under attack; "
                                    "this runner supplies none to adaptive adversaries")
    rng = np.random.default_rng(rng)
    prob = Problem.make(X, budget, level, mode, float(reach))
    if prob.cap == 0:
        return SearchResult(prob.X.copy())
    cands = portfolio(prob, budget, rng, structure, directions=int(directions), explained=explained)
    if not cands:  # nothing visible to corrupt
        return SearchResult(prob.X.copy())
    if int(evaluations) == 0:
        return SearchResult(prob.build(cands[0]), best=cands[0], start=cands[0])
    ev = Evaluator(prob, pipeline, int(evaluations), breaks)
    share = max(1, math.floor(float(portfolio_share) * int(evaluations)))
    best, best_s, tried = None, None, []
    for cand in cands:
        if ev.known(cand) is None and ev.calls >= share:
            break
        s = ev(cand)
        tried.append((cand.label, s))
        if best is None or s > best_s:
            best, best_s = cand, s
        if _broken(best_s):
            break
    cur, cur_s, stats = local_search(prob, ev, best, best_s, rng)
    return SearchResult(prob.build(cur), cur, cur_s, best, best_s, tried, ev.calls, stats)


def worst_case(X: np.ndarray, budget: float, *, level: str, mode: str, rng=None, structure=None,
               pipeline=None, **params) -> np.ndarray:
    """`search_worst_case`'s corrupted sample alone.

    Parameters
    ----------
    X, budget, level, mode, rng, structure, pipeline, **params
        As for `search_worst_case`.

    Returns
    -------
    ndarray of shape (N, n)
        The corrupted sample.
    """
    return search_worst_case(X, budget, level=level, mode=mode, rng=rng, structure=structure,
                             pipeline=pipeline, **params).X


# --------------------------------------------------------------------------- declarations

def _declare(level: str, mode: str) -> Callable:
    name = f"worst_case_{LEVEL_TAGS[level]}_{MODE_TAGS[mode]}"

    def corrupt(X: np.ndarray, budget: float, *, rng=None, structure=None, pipeline=None,
                evaluations: int = 200, portfolio_share: float = 0.5, directions: int = 2,
                reach: float = 3.0, breaks: str = "max", explained: float = 0.95) -> np.ndarray:
        return search_worst_case(
            X, budget, level=level, mode=mode, rng=rng, structure=structure, pipeline=pipeline,
            evaluations=evaluations, portfolio_share=portfolio_share, directions=directions,
            reach=reach, breaks=breaks, explained=explained).X

    corrupt.__name__ = corrupt.__qualname__ = name
    corrupt.__module__ = __name__
    unit = {"sample": "floor(eps N) rows", "value": "floor(rho N) entries per column",
            "coordinate": "floor(alpha N n) entries"}[level]
    corrupt.__doc__ = f"""Worst case found for the pipeline: A{LEVEL_TAGS[level][1]} ({level}), {mode} mode.

    Portfolio of structured attacks, then local search, at most ``evaluations``
    calls of ``pipeline`` (see the module docstring and `search_worst_case`).
    Budget rule: at most {unit}.

    Parameters
    ----------
    X : (N, n) float array, NaN = missing. Not modified.
    budget : the fraction of the level's unit.
    rng : numpy Generator; the result is deterministic given it.
    structure : A (n x r) or None (estimated for the m_A attack).
    pipeline : ``pipeline(X_corrupted) -> float`` (supplied by the runner).
    evaluations, portfolio_share, directions, reach, breaks, explained :
        see `search_worst_case`.

    Returns
    -------
    (N, n) float array, the corrupted sample.
    """
    return corrupt


worst_case_a1_hide = _declare("sample", "missing")
worst_case_a1_replace = _declare("sample", "replace")
worst_case_a2_hide = _declare("value", "missing")
worst_case_a2_replace = _declare("value", "replace")
worst_case_a3_hide = _declare("coordinate", "missing")
worst_case_a3_replace = _declare("coordinate", "replace")

_WHAT = {"sample": "the eps-fraction of rows", "value": "the rho-fraction per coordinate",
         "coordinate": "the alpha-fraction of entries"}
_DECLARED = tuple(
    (fn, level, mode, f"A{LEVEL_TAGS[level][1]}: {'hide' if mode == 'missing' else 'replace'} "
                      f"{_WHAT[level]} that hurts the pipeline most (adaptive search)")
    for fn, level, mode in (
        (worst_case_a1_hide, "sample", "missing"), (worst_case_a1_replace, "sample", "replace"),
        (worst_case_a2_hide, "value", "missing"), (worst_case_a2_replace, "value", "replace"),
        (worst_case_a3_hide, "coordinate", "missing"), (worst_case_a3_replace, "coordinate", "replace")))


@cmbench.hookimpl
def register_adversaries():
    """The six adaptive worst-case adversaries (levels A1-A3 x missing/replace)."""
    return [cmbench.Adversary(fn.__name__.replace("_", "-"), fn, params=dict(DEFAULTS),
                              choices={"breaks": BREAKS},
                              ranges={"evaluations": (0, None), "portfolio_share": (0.0, 1.0),
                                      "reach": (0.0, None), "directions": (1, None),
                                      "explained": (0.0, 1.0, "(]")},
                              description=desc, level=level, mode=mode, adaptive=True)
            for fn, level, mode, desc in _DECLARED]
