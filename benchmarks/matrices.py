"""Decoding a stored sample-level corruption: the changed rows' layout against the dense bit mask.

```
python benchmarks/matrices.py                 # d = 400, N = 400,000, 10% of the rows replaced
python benchmarks/matrices.py --d 200 --rounds 5
```

What adding an estimator to a finished full-size ``dkk17`` unit pays before the
estimator runs: decoding the stored corruption against the clean X. The
baseline is the first stored layout (a dense N x d bit mask, `encode_dense`
below, as ``cmbench/runner/matrices.py`` wrote it until this layout), decoded by
the same `decode` (which still reads it); the fast path is today's `encode`.
Both decode to the same bits (checked). Medians of interleaved rounds, wall and
CPU seconds of this process. It is a report: it always exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import time
import zlib

import numpy as np

from cmbench.runner.matrices import MAGIC, _deflate, decode, encode


def encode_dense(M: np.ndarray, base: np.ndarray) -> bytes:
    """The first layout (version 1): a bit mask over all N x d entries, then the changed values."""
    changed = M.view(np.uint64) != base.view(np.uint64)
    mask = zlib.compress(np.packbits(changed, axis=None).tobytes(), 1)
    where = np.flatnonzero(changed)
    flag, values = _deflate(M.reshape(-1)[where].tobytes())
    head = json.dumps({"v": 1, "shape": list(M.shape), "mask": len(mask), "deflated": flag,
                       "count": int(where.size)}).encode()
    return MAGIC + struct.pack("<I", len(head)) + head + mask + values


def timed(fn, *args) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=400)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    N, d = 1000 * args.d, args.d
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, d)) + 1.0
    M = X.copy()
    bad = rng.choice(N, int(args.eps * N), replace=False)
    M[bad] = rng.integers(0, 2, (bad.size, d)).astype(float)  # DKK17's noise: whole rows replaced
    old, new = encode_dense(M, X), encode(M, X)
    assert decode(old, X).tobytes() == decode(new, X).tobytes() == M.tobytes()
    runs: dict = {"dense mask (v1)": [], "changed rows (v2)": []}
    for _ in range(args.rounds):
        runs["dense mask (v1)"].append(timed(decode, old, X))
        runs["changed rows (v2)"].append(timed(decode, new, X))
    print(f"decode a stored corruption: N = {N:,}, d = {d}, {bad.size:,} rows replaced; "
          f"median of {args.rounds} interleaved rounds; load average {os.getloadavg()[0]:.2f} "
          "(a shared, loaded machine: ratios carry over, seconds do not)")
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    for (k, (wall, cpu)), blob in zip(med.items(), (old, new)):
        print(f"  {k:18} wall {wall:6.2f} s  CPU {cpu:6.2f} s  stored {len(blob) / 1e6:7.1f} MB")
    ratio = med["dense mask (v1)"][0] / med["changed rows (v2)"][0]
    print(f"  speed-up {ratio:.1f}x (of which copying X, the floor of both: see the v2 figure)")


if __name__ == "__main__":
    main()
