"""Seeds derived from the suite seed and a cell's coordinates.

Every random stream is a `numpy.random.SeedSequence` whose spawn key is made of
stable hashes of the coordinates, so a result depends only on *where* it sits
in the grid, never on the order, the worker or the executor that computed it.
"""
from __future__ import annotations

import functools
import hashlib

import numpy as np


def _word(part) -> int:
    """A 32-bit word that names ``part`` the same way in every process."""
    return _word_of(f"{type(part).__name__}:{part!r}")


@functools.lru_cache(maxsize=4096)
def _word_of(text: str) -> int:
    # keyed by the text, not the part: 0.0 and -0.0 (equal, but named apart) keep their own words
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


def rng_for(seed: int, *coords) -> np.random.Generator:
    """The generator for one stage of one cell, e.g. ``rng_for(0, "corrupt", "leaf", 3, ...)``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(_word(c) for c in coords)))
