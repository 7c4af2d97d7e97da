"""Persistence of finished units: one JSON file each, written atomically.

A unit's file is named by a digest of everything that determines its result
(seed, coordinates, every component's name and parameters), so a rerun finds
exactly the units it can reuse. JSON, never pickle: nothing executable is read
back from disk. A file that does not parse, fails its checksum, or comes from
another cmbench version is ignored and the unit recomputed.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Optional

from .. import __version__
from ..errors import UserError
from ..suite import Experiment, Suite
from .units import Job

# 2: recovered_fraction counts entries within a tolerance of the clean value (was: filled),
# recovery_rmse added; units cached in format 1 are recomputed
FORMAT = 2


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def unit_key(suite: Suite, exp: Experiment, job: Job) -> dict:
    def spec(entries, label):
        return next(e.spec() for e in entries if e.label == label)

    return {
        "format": FORMAT, "seed": suite.seed, "experiment": exp.name,
        "dataset": spec(exp.datasets, job.dataset), "instance": job.instance,
        "adversary": spec(exp.adversaries, job.adversary), "budget": job.budget,
        "recoverers": [e.spec() for e in exp.recoverers],
        "estimators": [e.spec() for e in exp.estimators],
    }


class Store:
    """The cache folder of one suite run: ``<out>/<suite>/.cache/<experiment>/<digest>.json``."""

    def __init__(self, root: Path, suite: Suite) -> None:
        self.root = Path(root)
        self.suite = suite
        self.cache = self.root / ".cache"
        self.stale = 0  # files ignored because they were damaged
        self.other_versions: dict = {}  # cmbench version -> units cached by it, ignored
        self._lock_file = None

    def path(self, exp: Experiment, job: Job) -> Path:
        digest = hashlib.sha256(_canonical(unit_key(self.suite, exp, job)).encode()).hexdigest()[:32]
        return self.cache / exp.name / f"{digest}.json"

    def get(self, exp: Experiment, job: Job) -> Optional[dict]:
        path = self.path(exp, job)
        doc = None
        try:
            doc = json.loads(path.read_text())
            ok = (doc["format"] == FORMAT and doc["cmbench_version"] == __version__
                  and doc["key"] == json.loads(_canonical(unit_key(self.suite, exp, job)))
                  and doc["checksum"] == hashlib.sha256(_canonical(doc["result"]).encode()).hexdigest())
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            version = doc.get("cmbench_version") if isinstance(doc, dict) else None
            if version and version != __version__:
                self.other_versions[version] = self.other_versions.get(version, 0) + 1
            else:
                self.stale += 1
            return None
        return doc["result"]

    def put(self, exp: Experiment, job: Job, result: dict) -> None:
        path = self.path(exp, job)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"format": FORMAT, "cmbench_version": __version__,
               "key": unit_key(self.suite, exp, job), "result": result,
               "checksum": hashlib.sha256(_canonical(result).encode()).hexdigest()}
        atomic_write_text(path, json.dumps(doc))

    def clear(self) -> None:
        for pattern in ("*.json", ".*.tmp"):  # temporaries of a killed run too
            for file in self.cache.rglob(pattern):
                file.unlink()

    def lock(self) -> None:
        """Refuse a second run writing the same folder at the same time."""
        self.root.mkdir(parents=True, exist_ok=True)
        handle = open(self.root / ".lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.close()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise UserError(f"another cmbench run is writing {self.root}; wait for it to finish "
                                "or choose another --out") from None
            raise
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._lock_file = handle

    def unlock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None


def atomic_write_text(path: Path, text: str) -> None:
    """Write to a temporary name in the same folder, fsync, then rename over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
