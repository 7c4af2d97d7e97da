"""The stage cache of a suite: content-addressed records and matrices under ``<out>/<suite>/.cache``.

Every stage is stored under a digest of what determines it (`stages.unit_keys`):

- ``units/<corruption key>.json``: the records of one corruption and of what
  was computed on it (recoveries, estimates, adaptive pairs), each under its
  own key, so that adding or editing one component touches only its records;
- ``matrices/<key>.bin``: a corrupted or recovered matrix (`matrices.encode`);
- ``info/<key>.json``: a data set's shape, rank and thresholds for the cube.

JSON, never pickle: nothing executable is read back. A document is checked
before use: its checksum (a torn or edited file), its key (a file copied over
another), its cmbench version, and its structure against the schema below; a
document that fails any check is ignored and its stages recomputed. A checksum
cannot tell a forged but well-formed number from a computed one: the cache
protects against accidents (kills, full disks, stray edits), not against
someone who rewrites a record and its checksum.

Only failed or timed-out records are never stored: they are computed again by
the next run, while the records around them are reused. The cache is capped
(``cache_size`` in the suite, ``--cache-size``; 2 GB by default): beyond it
the least recently used matrices, then records, are evicted and simply
recomputed when needed again. Paths are built only from hex digests and fixed
folder names, and the cache never lies outside the output folder; clearing it
deletes only files cmbench wrote (in a folder carrying cmbench's marker, with
the names cmbench gives them).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Optional

from ..cube import FAILURES, STATUSES
from ..files import PAGE_FILE, PAGES, TEMP_FILE, atomic_write, check_target, remove_matching
from ..version import __version__
from ..errors import UserError
from .matrices import MatrixRef, matrix_digest

# 4: a stored matrix is checked by its XXH3-128 digest (3: SHA-256; 2: recovered_fraction within a
# tolerance of the clean value, recovery_rmse); documents of another format are recomputed
FORMAT = 4
DEFAULT_CACHE_SIZE = 2 * 1000 ** 3
MARKER = "CMBENCH_CACHE.json"
KINDS = ("units", "matrices", "info")
_SUFFIX = {"units": ".json", "matrices": ".bin", "info": ".json"}
_NAME = re.compile(r"^[0-9a-f]{64}\.(json|bin)$")
_TEMP = re.compile(r"^\.[0-9a-f]{64}\.(json|bin)\.[A-Za-z0-9_]+\.tmp$")
CACHED_STATUSES = tuple(s for s in STATUSES if s not in FAILURES)  # failures are computed again, never stored


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


# ---------------------------------------------------------------- the schema of stored records
def _number(v) -> bool:
    return v is None or isinstance(v, (int, float))  # a bool too


_HEX = re.compile(r"[0-9a-f]{64}")
_DIGEST = re.compile(r"[0-9a-f]{32}")  # `matrix_digest`


def _hex(v) -> bool:
    return isinstance(v, str) and _HEX.fullmatch(v) is not None


_PLAIN = frozenset((int, float, bool, type(None)))  # what JSON gives for a number (or null)

#: the checks of a record's typed fields; any other field is a number (or null), which leaves
#: room for new per-stage variables without a schema change
_TYPED = {
    "status": lambda v: True,  # checked first, by `valid_record`
    "error": lambda v: isinstance(v, str),
    "info": lambda v: isinstance(v, dict) and all(isinstance(a, str) and _number(b) for a, b in v.items()),
    "matrix": lambda v: (isinstance(v, dict) and set(v) == {"xxh3", "bytes"} and isinstance(v["xxh3"], str)
                         and _DIGEST.fullmatch(v["xxh3"]) is not None and type(v["bytes"]) is int
                         and v["bytes"] >= 0),
    # a corruption's untouched rows' mean (`metrics.inlier_mean`)
    "inlier_mean": lambda v: v is None or (isinstance(v, list) and all(type(x) in _PLAIN and x is not None
                                                                       for x in v)),
    # an adaptive pair's three records
    "corruption": lambda v: v is None or valid_record(v),
    "recovery": lambda v: v is None or valid_record(v),
    "cell": lambda v: valid_record(v),
}


def valid_record(rec) -> bool:
    """A stage's record: a cacheable status, a string error, numbers, and the typed fields of `_TYPED`."""
    if not isinstance(rec, dict) or rec.get("status") not in CACHED_STATUSES:
        return False
    for k, v in rec.items():
        if type(v) in _PLAIN and type(k) is str and k not in _TYPED:
            continue  # a number, the common case: decided without the checks below
        if not isinstance(k, str) or not _TYPED.get(k, _number)(v):
            return False
    return True


def valid_body(body) -> bool:
    if not isinstance(body, dict) or set(body) != {"corruption", "recoveries", "cells", "pairs"}:
        return False
    if body["corruption"] is not None and not valid_record(body["corruption"]):
        return False
    for part in ("recoveries", "cells", "pairs"):
        table = body[part]
        if not isinstance(table, dict) or not all(_hex(k) and valid_record(v) for k, v in table.items()):
            return False
    return True


def valid_info(info) -> bool:
    if not isinstance(info, dict):
        return False
    shape = info.get("shape")
    return (isinstance(info.get("name"), str) and isinstance(shape, list) and len(shape) == 2
            and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape)
            and isinstance(info.get("structure_known"), bool) and isinstance(info.get("thresholds"), dict)
            and all(isinstance(k, str) and isinstance(v, dict) and _number(v.get("value"))
                    and isinstance(v.get("label"), str) for k, v in info["thresholds"].items())
            and all(_number(info.get(k)) for k in ("rank", "m_a", "r"))
            and not ({"error"} & set(info)))


def _stored_canonically(raw: bytes, checksum) -> bool:
    """Whether ``raw`` holds its body as the canonical text that ``checksum`` covers (as written).

    The body is the text between ``,"body":`` (the first: the fields before it
    are a number, the version and a hex key) and the trailing checksum field.
    False for a document laid out otherwise (written by an older cmbench, or
    edited): the caller then checks the parsed body the slow way.
    """
    if not isinstance(checksum, str):
        return False
    tail = b',"checksum":"%s"}' % checksum.encode()
    start = raw.find(b',"body":')
    if start < 0 or not raw.endswith(tail):
        return False
    return hashlib.sha256(raw[start + 8:len(raw) - len(tail)]).hexdigest() == checksum


def empty_body() -> dict:
    return {"corruption": None, "recoveries": {}, "cells": {}, "pairs": {}}


class Store:
    """The stage cache of one suite's output folder (see the module docstring)."""

    def __init__(self, root: Path, cap: Optional[int] = None, out: Optional[Path] = None) -> None:
        self.root = Path(root)
        self.cache = self.root / ".cache"
        if out is not None:
            check_target(self.cache, root=out, kind="folder")
        self.cap = DEFAULT_CACHE_SIZE if cap is None else int(cap)
        self.stale = 0  # documents ignored because they were damaged or malformed
        self.other_versions: dict = {}  # cmbench version -> documents it wrote, ignored
        self.evicted = 0
        self._lock = None
        self._docs: dict = {}  # corruption key -> body, as read or last written
        self._sizes: Optional[dict] = None  # (kind, name) -> (bytes, last use)
        self._total = 0  # bytes in _sizes
        self._used: set = set()  # files used by this run: evicted last
        self._ready = False  # the folders and the marker exist

    # -------------------------------------------------------------- files
    def _path(self, kind: str, key: str) -> Path:
        if kind not in KINDS or not _hex(key):
            raise ValueError(f"not a cache address: {kind}/{key}")
        return self.cache / kind / f"{key}{_SUFFIX[kind]}"

    def _prepare(self) -> None:
        """Create the cache folders and the marker that says cmbench owns them (once per run)."""
        if self._ready:
            return
        self.check_folders()
        marker = self.cache / MARKER
        if not marker.exists():
            self.cache.mkdir(parents=True, exist_ok=True)
            atomic_write(marker, canonical({"cmbench_cache": FORMAT}).encode())
        for kind in KINDS:
            (self.cache / kind).mkdir(exist_ok=True)
        self._ready = True

    def check_folders(self, action: str = "write") -> None:
        """Refuse a cache whose folders (``units``, ``matrices``, ``info``, ``pages``, the marker) are
        symbolic links: they could lead outside the output folder (`cmbench.files.check_target`)."""
        for name in (*KINDS, PAGES):
            check_target(self.cache / name, root=self.cache, kind="folder", action=action)
        check_target(self.cache / MARKER, root=self.cache, action=action)

    def _write(self, kind: str, key: str, data: bytes) -> None:
        self._prepare()
        path = self._path(kind, key)
        try:
            atomic_write(path, data)
        except FileNotFoundError:  # the folders went away during the run (a cache clear): make them again
            self._ready = False
            self._prepare()
            atomic_write(path, data)
        self._account(kind, path.name, len(data))

    def _touch(self, kind: str, path: Path) -> None:
        self._used.add((kind, path.name))
        try:
            os.utime(path)
        except OSError:
            pass

    def _read_doc(self, kind: str, key: str) -> Optional[dict]:
        """A document's checked payload, or None (absent, damaged or another version's)."""
        path = self._path(kind, key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            self.stale += 1
            return None
        doc = None
        try:
            doc = json.loads(raw)
            ok = (isinstance(doc, dict) and doc.get("format") == FORMAT
                  and doc.get("cmbench_version") == __version__ and doc.get("key") == key
                  and (_stored_canonically(raw, doc.get("checksum"))
                       or doc.get("checksum") == hashlib.sha256(canonical(doc.get("body")).encode()).hexdigest()))
        except (ValueError, TypeError, RecursionError):
            ok = False
        if not ok:
            version = doc.get("cmbench_version") if isinstance(doc, dict) else None
            if isinstance(version, str) and version != __version__:
                self.other_versions[version] = self.other_versions.get(version, 0) + 1
            else:
                self.stale += 1
            return None
        self._touch(kind, path)
        return doc["body"]

    def _write_doc(self, kind: str, key: str, body) -> None:
        text = canonical(body).encode()
        checksum = hashlib.sha256(text).hexdigest()
        if kind != "units":  # as given: the order of a data set's facts is the order of its cube attribute
            doc = {"format": FORMAT, "cmbench_version": __version__, "key": key, "body": body, "checksum": checksum}
            self._write(kind, key, json.dumps(doc, separators=(",", ":")).encode())
            return
        # A unit's records (read by name only) are written in their canonical form, the very text
        # the checksum covers: a reader checks the bytes without serializing the body again.
        self._write(kind, key, b'{"format":%d,"cmbench_version":%s,"key":%s,"body":%s,"checksum":"%s"}' % (
            FORMAT, json.dumps(__version__).encode(), json.dumps(key).encode(), text, checksum.encode()))

    # -------------------------------------------------------------- units
    def unit(self, key: str) -> dict:
        """The stored records of the corruption ``key`` (an empty body when none or damaged)."""
        if key not in self._docs:
            body = self._read_doc("units", key)
            if body is not None and not valid_body(body):
                self.stale += 1
                body = None
            self._docs[key] = body if body is not None else empty_body()
        return self._docs[key]

    def add(self, key: str, records: dict, matrices: dict) -> None:
        """Merge ``records`` (a body's parts, cacheable records only) into unit ``key``; write blobs first.

        Matrices are written before the document that names them, so a kill
        between the two leaves an unused matrix, never a record whose matrix
        is missing.
        """
        for mkey, blob in matrices.items():
            self._write("matrices", mkey, blob)
        body = self.unit(key)
        changed = False
        if records.get("corruption") is not None and body["corruption"] != records["corruption"]:
            body["corruption"] = records["corruption"]
            changed = True
        for part in ("recoveries", "cells", "pairs"):
            for k, rec in records.get(part, {}).items():
                if body[part].get(k) != rec:
                    body[part][k] = rec
                    changed = True
        if changed:
            self._write_doc("units", key, body)
            self.evict()

    # -------------------------------------------------------------- matrices
    def matrix(self, key: str, meta: dict) -> Optional[bytes]:
        """A stored matrix whose size and digest (`matrix_digest`) match ``meta``; None when absent or damaged."""
        return self._matrix(key, meta, by_reference=False)

    def matrix_ref(self, key: str, meta: dict) -> Optional[MatrixRef]:
        """Where a stored matrix of ``meta``'s size lies, for a local worker to read and check
        (`MatrixRef`); None when it is absent or of another size (then deleted, as `matrix` does)."""
        return self._matrix(key, meta, by_reference=True)

    def _matrix(self, key: str, meta: dict, by_reference: bool):
        """A damaged matrix (of another size or, read here, digest) is counted and deleted: it is recomputed."""
        path = self._path("matrices", key)
        try:
            blob = None if by_reference else path.read_bytes()
            size = os.stat(path).st_size if by_reference else len(blob)
        except OSError:
            return None
        if size != meta.get("bytes") or (blob is not None and matrix_digest(blob) != meta.get("xxh3")):
            self.stale += 1
            path.unlink(missing_ok=True)
            self._account("matrices", path.name, None)
            return None
        self._touch("matrices", path)
        # a reference's form is checked by `valid_record`
        return MatrixRef(os.path.abspath(path), size, meta["xxh3"]) if by_reference else blob

    # -------------------------------------------------------------- data set facts
    def info(self, key: str) -> Optional[dict]:
        body = self._read_doc("info", key)
        if body is not None and not valid_info(body):
            self.stale += 1
            return None
        return body

    def put_info(self, key: str, info: dict) -> None:
        self._write_doc("info", key, info)

    # -------------------------------------------------------------- size, eviction
    def _scan(self) -> dict:
        if self._sizes is None:
            self._sizes = {}
            self._total = 0
            for kind in ("matrices", "units", "info"):
                try:
                    entries = list(os.scandir(self.cache / kind))
                except OSError:
                    continue
                for e in entries:
                    if _NAME.match(e.name):
                        try:
                            st = e.stat()
                        except OSError:
                            continue
                        self._sizes[(kind, e.name)] = (st.st_size, st.st_mtime)
                        self._total += st.st_size
        return self._sizes

    def _account(self, kind: str, name: str, size: Optional[int]) -> None:
        """A file written with ``size`` bytes, or deleted (None), in the sizes `evict` keeps up to date."""
        if self._sizes is not None:
            old = self._sizes.pop((kind, name), None)
            self._total += (size or 0) - (old[0] if old else 0)
            if size is not None:
                self._sizes[(kind, name)] = (size, time.time())
        self._used.add((kind, name))

    def evict(self) -> int:
        """Delete least recently used files until the cache fits its cap: matrices, then records.

        Files used by this run go last within each kind; what is evicted is
        recomputed when it is needed again.
        """
        sizes = self._scan()
        if self._total <= self.cap:  # kept up to date by every write: no sum over the files per unit
            return 0
        order = sorted(sizes, key=lambda f: (f[0] != "matrices", f in self._used, sizes[f][1]))
        removed = 0
        for kind, name in order:
            if self._total <= self.cap:
                break
            (self.cache / kind / name).unlink(missing_ok=True)
            self._total -= sizes.pop((kind, name))[0]
            if kind == "units":
                self._docs.pop(name[:-5], None)
            removed += 1
        self.evicted += removed
        return removed

    def summary(self) -> dict:
        """Counts and bytes per kind of file, and the cap."""
        sizes = self._scan()
        out = {kind: {"files": 0, "bytes": 0} for kind in KINDS}
        for (kind, _), (size, _) in sizes.items():
            out[kind]["files"] += 1
            out[kind]["bytes"] += size
        return {"folder": str(self.cache), "kinds": out, "bytes": sum(v["bytes"] for v in out.values()),
                "cap": self.cap}

    def clear(self) -> int:
        """Delete what cmbench wrote here (in a folder carrying its marker); return the files deleted."""
        if not (self.cache / MARKER).is_file():
            return 0
        self.check_folders("delete")
        removed = 0
        for kind in KINDS:
            removed += remove_matching(self.cache / kind, _NAME, _TEMP)
        from ..stamps import CUBE_STAMPS

        if (self.cache / CUBE_STAMPS).is_file():  # every cube is then rewritten by the next run
            (self.cache / CUBE_STAMPS).unlink()
            removed += 1
        removed += remove_matching(self.cache / PAGES, PAGE_FILE, TEMP_FILE)
        self._docs.clear()
        self._sizes = None
        self._used.clear()
        self._ready = False
        return removed

    # -------------------------------------------------------------- the run lock
    def lock(self) -> None:
        """Refuse a second run writing the same folder at the same time (any platform)."""
        from filelock import FileLock, Timeout

        self.root.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.root / ".lock"), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise UserError(f"another cmbench run is writing {self.root}; wait for it to finish "
                            "or choose another --out") from None
        self._lock = lock
        try:
            if self.cache.is_dir():
                self.check_folders()
        except BaseException:
            self.unlock()
            raise

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None
