"""Compact, exact storage of corrupted and recovered matrices, and arrays no plugin can make writeable.

A corrupted or recovered matrix differs from the clean data only where the
adversary or the recoverer touched it, so it is stored as a delta against the
clean ``X``: the indices of the rows that differ anywhere, a bit mask of the
entries whose 64-bit patterns differ within those rows (left out when every
entry of every such row differs, as when a sample-level adversary replaces
whole rows) and the differing values (deflated when that pays, e.g. runs of
NaN). Decoding needs the clean data, which a worker loads anyway, gives the
very same bits back, and costs in proportion to the changed rows, not to the
whole N x n matrix. A deleting adversary's corruption (and what is recovered
from it) has fewer rows: it is stored as the selection of clean rows it keeps,
in its order, and the delta against those rows. Matrices stored by the first
layout (a dense N x n bit mask, version 1) still decode.
"""
from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from typing import Optional

import numpy as np
import xxhash

MAGIC = b"CMBM"
VERSION = 2  # 1: a dense bit mask over the whole matrix (still decoded)


class Damaged(ValueError):
    """A stored matrix that does not decode (torn, truncated or not ours)."""


def frozen(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` backed by an immutable ``bytes`` buffer.

    Unlike ``setflags(write=False)``, no plugin can undo this with
    ``setflags(write=True)``: numpy refuses to make an array writeable when its
    memory belongs to a read-only buffer, and nothing else refers to the copy.
    """
    a = np.ascontiguousarray(a)
    return np.frombuffer(a.tobytes(), dtype=a.dtype).reshape(a.shape)


def _owned_readonly(a: np.ndarray) -> np.ndarray:
    """``a`` (C-contiguous, owning its buffer) through a read-only view of that buffer: no copy.

    numpy refuses ``setflags(write=True)`` on the view; ``a`` itself stays
    writeable for whoever still holds it (see `sealed`).
    """
    return np.frombuffer(memoryview(a).cast("B").toreadonly(), dtype=a.dtype).reshape(a.shape)


def sealed(a: np.ndarray) -> np.ndarray:
    """A plugin's result, taken over by cmbench and made read-only for the components after it.

    An array that owns its memory, or a contiguous view of all of an array
    that does (a plugin's fresh result, reshaped perhaps), is wrapped in place,
    through a read-only view of that buffer, without a copy (a full-size
    corruption or recovery at d = 400, N = 400,000 is 1.28 GB); anything else
    (a view into part of another array, which may be writeable data of
    someone else, a buffer numpy does not own, a non-contiguous or subclassed
    array) is copied, as `frozen` does.

    What this guarantees: ``setflags(write=True)`` is refused on the result,
    so no component can make it writeable through numpy. What it does not: the
    plugin that returned the array may keep its own reference (or reach it
    through the result's ``.base`` chain) and write into it. Such a write is
    caught while another component's call gets the array as input: its
    digest is taken before the call and checked after it (`checks.untouched`,
    which fails that call); the stored copy of the matrix is encoded right
    after the call that made it.
    """
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if (type(a) is np.ndarray and a.flags.c_contiguous and root.flags.owndata
            and root.nbytes == a.nbytes and root.ctypes.data == a.ctypes.data):
        return _owned_readonly(a)
    return frozen(a)


def digest(a: np.ndarray) -> str:
    """A digest of an array's shape, type and bytes (to detect writes into an input).

    XXH3-128 is not cryptographic: it detects accidental writes (a plugin that
    goes around numpy's read-only flag), which is all this digest is for, at
    memory speed, so that checking every call stays a small part of the call.
    """
    h = xxhash.xxh3_128()
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()


def matrix_digest(blob: bytes) -> str:
    """The checksum a stored matrix is read back against: XXH3-128, 32 hex digits.

    It detects a torn or damaged file, not an attack (the cache is the user's own
    folder); a rerun with a new estimator reads back some 60 MB of recovered
    matrices, which SHA-256 took 0.1 s over and XXH3 takes 0.015 s.
    """
    return xxhash.xxh3_128_hexdigest(blob)


@dataclass(frozen=True)
class MatrixRef:
    """A stored matrix (`encode`'s bytes) that a local worker reads from the cache itself.

    Local workers share the client's file system: the client sends them where
    the matrix lies instead of its bytes, so that the 60 MB of recovered
    matrices of a rerun with a new estimator are read by the workers, in
    parallel, not copied through the pool's pipe by the client. The worker
    checks size and checksum (`read`); a Dask worker on another machine gets
    the bytes instead (`stages.lookup`'s ``ship``).
    """

    path: str
    size: int
    xxh3: str

    def read(self) -> Optional[bytes]:
        """The bytes, if the file still holds them (size and `matrix_digest`); else None
        (evicted or damaged since the client looked: the caller computes the matrix anew)."""
        try:
            with open(self.path, "rb") as f:
                blob = f.read()
        except OSError:
            return None
        return blob if len(blob) == self.size and matrix_digest(blob) == self.xxh3 else None


@dataclass(frozen=True)
class SameMatrix:
    """A recovered matrix that is its corruption's, bit for bit: stored once, as the corruption.

    A worker sends this in place of the recovery's bytes; the recovery's
    record names the corruption's size and digest, by which the client finds
    the corruption's file when the recovery is needed again.
    """

    xxh3: str
    size: int

    @classmethod
    def of(cls, blob) -> "SameMatrix":
        """The stand-in for ``blob``, a stored matrix's bytes or a `MatrixRef` (its checked digest)."""
        if isinstance(blob, MatrixRef):
            return cls(blob.xxh3, blob.size)
        return cls(matrix_digest(blob), len(blob))


def stored(matrix) -> Optional[bytes]:
    """The bytes of a matrix given as bytes or as a `MatrixRef` (None: a reference no longer valid)."""
    return matrix.read() if isinstance(matrix, MatrixRef) else matrix


def _deflate(raw: bytes) -> tuple[int, bytes]:
    """Deflate only when a sample says it pays: filled-in floats do not compress."""
    if not raw:
        return 0, raw
    sample = raw[: 1 << 16]
    if len(zlib.compress(sample, 1)) > 0.8 * len(sample):
        return 0, raw
    return 1, zlib.compress(raw, 1)


def _indices(raw: bytes, width: int) -> np.ndarray:
    return np.frombuffer(raw, dtype="<u4" if width == 4 else "<u8").astype(np.int64)


def _packed_indices(idx: np.ndarray, bound: int) -> tuple[bytes, int]:
    """Increasing indices below ``bound`` as deflated gaps (runs of neighbours deflate to almost nothing)."""
    width = 4 if bound < 2 ** 32 else 8
    gaps = np.diff(idx, prepend=np.int64(-1))
    return zlib.compress(gaps.astype("<u4" if width == 4 else "<u8").tobytes(), 1), width


def encode(M: np.ndarray, base: np.ndarray, rows: Optional[np.ndarray] = None) -> bytes:
    """``M`` as a delta against ``base`` (same shape, float64), or against ``base[rows]``
    when ``rows`` is given (a deletion: the row of ``base`` each row of ``M`` comes from)."""
    M = np.ascontiguousarray(M, dtype=np.float64)
    base = np.ascontiguousarray(base, dtype=np.float64)
    head: dict = {"v": VERSION}
    picked = b""
    if rows is not None:
        rows = np.asarray(rows, dtype=np.int64)
        if rows.ndim != 1 or (rows.size and (rows.min() < 0 or rows.max() >= base.shape[0])):
            raise ValueError(f"cannot encode against rows outside 0..{base.shape[0] - 1}")
        picked = zlib.compress(rows.astype("<u4" if base.shape[0] < 2 ** 32 else "<u8").tobytes(), 1)
        head.update(rows=int(rows.size), rows_bytes=len(picked), rows_width=4 if base.shape[0] < 2 ** 32 else 8)
        base = base[rows]
    if M.shape != base.shape or M.ndim != 2:
        raise ValueError(f"cannot encode shape {M.shape} against {base.shape}")
    changed = M.view(np.uint64) != base.view(np.uint64)
    touched = np.flatnonzero(changed.any(axis=1))
    packed, width = _packed_indices(touched, M.shape[0])
    within = changed[touched]
    full = bool(within.all())  # whole rows replaced: their values alone, no mask
    mask = b"" if full else zlib.compress(np.packbits(within, axis=None).tobytes(), 1)
    values = M[touched]
    flag, raw = _deflate((values if full else values[within]).tobytes())  # C order, as the mask takes them
    head.update(shape=list(M.shape), touched=int(touched.size), touched_bytes=len(packed), width=width,
                mask=len(mask), deflated=flag, count=int(values.size if full else np.count_nonzero(within)))
    header = json.dumps(head).encode()
    return MAGIC + struct.pack("<I", len(header)) + header + picked + packed + mask + raw


def _header(blob: bytes) -> tuple[dict, int]:
    if blob[:4] != MAGIC:
        raise Damaged("not a cmbench matrix")
    (size,) = struct.unpack("<I", blob[4:8])
    return json.loads(blob[8:8 + size]), 8 + size


def rows_of(blob: bytes) -> Optional[np.ndarray]:
    """The clean rows a stored matrix selects (a deletion's), or None for a full-size one;
    `Damaged` if it does not decode."""
    try:
        head, start = _header(blob)
        if "rows" not in head:
            return None
        rows = _indices(zlib.decompress(blob[start:start + int(head["rows_bytes"])]), int(head["rows_width"]))
        if rows.size != int(head["rows"]):
            raise Damaged("row count does not match the header")
        return rows
    except Damaged:
        raise
    except (ValueError, KeyError, TypeError, IndexError, struct.error, zlib.error) as exc:
        raise Damaged(f"matrix does not decode: {exc}") from None


def decode(blob: bytes, base: np.ndarray) -> np.ndarray:
    """The matrix ``encode(M, base[, rows])`` stored, as a read-only array; `Damaged` if it does not decode."""
    try:
        head, start = _header(blob)
        rows = rows_of(blob)
        if rows is not None:
            if rows.size and rows.max() >= base.shape[0]:
                raise Damaged(f"selects row {int(rows.max())} of {base.shape[0]}")
            start += int(head["rows_bytes"])
            base = base[rows]
        shape = tuple(int(s) for s in head["shape"])
        if head["v"] not in (1, VERSION) or shape != tuple(base.shape):
            raise Damaged(f"matrix of shape {shape}, expected {tuple(base.shape)}")
        if head["v"] == 1:
            return _decode_dense_mask(blob, start, head, base)
        end = start + int(head["touched_bytes"])
        touched = np.cumsum(_indices(zlib.decompress(blob[start:end]), int(head["width"]))) - 1
        if touched.size != int(head["touched"]) or (touched.size and touched[-1] >= shape[0]):
            raise Damaged("changed rows do not match the header")
        mask = blob[end:end + int(head["mask"])]
        raw = blob[end + int(head["mask"]):]
        values = np.frombuffer(zlib.decompress(raw) if head["deflated"] else raw, dtype=np.float64)
        if values.size != int(head["count"]):
            raise Damaged("value count does not match the header")
        M = np.array(base, dtype=np.float64, copy=True)
        if not mask:
            if values.size != touched.size * shape[1]:
                raise Damaged("value count does not match the changed rows")
            M[touched] = values.reshape(touched.size, shape[1])
        else:
            bits = np.frombuffer(zlib.decompress(mask), dtype=np.uint8)
            within = np.unpackbits(bits, count=touched.size * shape[1]).view(bool).reshape(touched.size, shape[1])
            if int(np.count_nonzero(within)) != values.size:
                raise Damaged("value count does not match the mask")
            part = M[touched]
            part[within] = values
            M[touched] = part
    except Damaged:
        raise
    except (ValueError, KeyError, TypeError, IndexError, struct.error, zlib.error) as exc:
        raise Damaged(f"matrix does not decode: {exc}") from None
    return _owned_readonly(M)


def _decode_dense_mask(blob: bytes, start: int, head: dict, base: np.ndarray) -> np.ndarray:
    """A matrix of the first layout: a bit mask over every entry of ``base`` (read back from older caches)."""
    bits = np.frombuffer(zlib.decompress(blob[start:start + int(head["mask"])]), dtype=np.uint8)
    # the changed entries, in C order (flatnonzero is 3x faster on bools than on the 0/1 bytes)
    where = np.flatnonzero(np.unpackbits(bits, count=base.size).view(bool))
    raw = blob[start + int(head["mask"]):]
    raw = zlib.decompress(raw) if head["deflated"] else raw
    values = np.frombuffer(raw, dtype=np.float64)
    if values.size != int(head["count"]) or values.size != where.size:
        raise Damaged("value count does not match the mask")
    M = np.array(base, dtype=np.float64, copy=True)
    M.reshape(-1)[where] = values
    return _owned_readonly(M)
