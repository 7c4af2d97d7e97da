"""Locating, checking and fetching the files of real data sets.

A data set declares its files (`cmbench.DataFile`: a path under the data set's
``folder``, a SHA-256 and a download URL). They are looked for, in order, in

1. ``$CMBENCH_DATA_DIR`` (if set), e.g. a shared read-only copy;
2. the per-user cache folder: ``$CMBENCH_CACHE_DIR``, else
   ``$XDG_CACHE_HOME/cmbench``, else ``~/.cache/cmbench``.

A folder counts only when it holds every file, each with the declared digest.
Downloads go to the cache folder only, and only verified bytes land there.

Environment variables
---------------------
CMBENCH_DATA_DIR
    First directory searched; never written to.
CMBENCH_CACHE_DIR
    The cache folder (downloads go here).
CMBENCH_MIRROR
    Base URL of a mirror laid out like the data directory: file ``path`` of a
    data set is fetched from ``$CMBENCH_MIRROR/<folder>/<path>`` instead of its
    declared URL (tests point it at a local HTTP server; ``file://`` works too).
CMBENCH_OFFLINE
    When set (to anything but ``""`` or ``"0"``), `require` never downloads.

Download URLs
-------------
A `DataFile.url` is either the file itself or ``ARCHIVE_URL#MEMBER``: a member
of a zip archive (UCI ships some data sets only as zips). The archive is
downloaded once per `fetch` and the member is matched exactly, else as the
unique member whose name ends in ``/MEMBER``.

Plugins import this module as ``cmbench.data``; it re-exports `DataError`, the
error they raise for unusable data.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import Any, Iterable, Optional

from .components import DataFile, Dataset
from .errors import DataError

__all__ = [
    "ChecksumError", "DataError", "cache_dir", "data_dirs", "fetch", "file_url", "locate", "require",
    "sha256_file", "status",
]

ENV_DATA_DIR = "CMBENCH_DATA_DIR"
ENV_CACHE_DIR = "CMBENCH_CACHE_DIR"
ENV_MIRROR = "CMBENCH_MIRROR"
ENV_OFFLINE = "CMBENCH_OFFLINE"

TIMEOUT = 60.0  # seconds without a byte before a download is abandoned
_CHUNK = 1 << 16

class ChecksumError(DataError):
    """A data file whose SHA-256 is not the declared one (message: the file and both digests)."""


# (resolved path, size, mtime_ns) -> hex digest: a sweep checks each file once
# per process, and a file replaced in place (new size or mtime) is rehashed.
_DIGESTS: dict[tuple[str, int, int], str] = {}
_DIGESTS_LOCK = threading.Lock()


# --------------------------------------------------------------------- places

def cache_dir() -> Path:
    """The per-user cache folder that `fetch` downloads into."""
    if os.environ.get(ENV_CACHE_DIR):
        return Path(os.environ[ENV_CACHE_DIR]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "cmbench"
    return Path.home() / ".cache" / "cmbench"


def data_dirs() -> list[Path]:
    """Directories searched for data, in order: ``$CMBENCH_DATA_DIR`` (if set), then `cache_dir`."""
    dirs = []
    if os.environ.get(ENV_DATA_DIR):
        dirs.append(Path(os.environ[ENV_DATA_DIR]).expanduser())
    cache = cache_dir()
    if cache not in dirs:
        dirs.append(cache)
    return dirs


def _offline() -> bool:
    return os.environ.get(ENV_OFFLINE, "") not in ("", "0")


# ------------------------------------------------------------------- checking

def sha256_file(path: Path | str) -> str:
    """Hex SHA-256 of a file, memoised per (path, size, mtime) within the process."""
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _DIGESTS_LOCK:
        if key in _DIGESTS:
            return _DIGESTS[key]
    digest = _hash_file(path)
    with _DIGESTS_LOCK:
        _DIGESTS[key] = digest
    return digest


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _mismatch(dataset: Dataset, path: Path, expected: str, actual: str, hint: str) -> ChecksumError:
    return ChecksumError(
        f"data set {dataset.name}: {path} has SHA-256 {actual}, expected {expected}; {hint}")


def _missing_files(folder: Path, files: Iterable[DataFile]) -> list[str]:
    return [f.path for f in files if not (folder / f.path).is_file()]


def locate(dataset: Dataset) -> Optional[Path]:
    """The first data folder that holds every file of ``dataset``, verified.

    Parameters
    ----------
    dataset : a `cmbench.Dataset` with ``files`` and ``folder``.

    Returns
    -------
    ``<dir>/<dataset.folder>`` for the first dir of `data_dirs` holding all the
    files, or None (also for a data set without files, i.e. generated data).

    Raises
    ------
    ChecksumError (a DataError)
        A file is present but its SHA-256 differs from the declared one; the
        message names the file and both digests.
    """
    if not dataset.files:
        return None
    for base in data_dirs():
        folder = base / dataset.folder
        if _missing_files(folder, dataset.files):
            continue
        for f in dataset.files:
            path = folder / f.path
            actual = sha256_file(path)
            if actual != f.sha256.lower():
                raise _mismatch(
                    dataset, path, f.sha256, actual,
                    "the file is damaged or a different version: replace it, or delete it "
                    f"and run `cmbench datasets fetch {dataset.name}`")
        return folder
    return None


def _looked(dataset: Dataset) -> str:
    """Where `locate` looked, and what was missing in each place."""
    parts = []
    for base in data_dirs():
        folder = base / dataset.folder
        missing = _missing_files(folder, dataset.files) if folder.is_dir() else None
        if missing is None:
            parts.append(f"{folder} (absent)")
        else:
            parts.append(f"{folder} (missing {len(missing)} of {len(dataset.files)} files, "
                         f"e.g. {missing[0]})")
    return "; ".join(parts)


def require(dataset: Dataset) -> Path:
    """`locate` the data set's folder, else `fetch` it (unless offline), else raise.

    Raises
    ------
    DataError
        Not found and not downloadable; the message says where it looked and
        how to fetch. Also a checksum mismatch (see `locate`, `fetch`).
    """
    if not dataset.files:
        raise DataError(f"data set {dataset.name} declares no data files (generated data needs none)")
    found = locate(dataset)
    if found is not None:
        return found
    looked = _looked(dataset)
    how = (f"run `cmbench datasets fetch {dataset.name}` on a machine with network access, or put "
           f"the folder {dataset.folder}/ under one of those directories (set {ENV_DATA_DIR} to "
           f"the directory that holds it)")
    if _offline():
        raise DataError(f"data set {dataset.name}: files not found; looked in {looked}; "
                        f"{ENV_OFFLINE} is set, so nothing was downloaded; {how}")
    try:
        return fetch(dataset)
    except ChecksumError:
        raise  # already says which file and both digests
    except DataError as exc:
        raise DataError(f"data set {dataset.name}: files not found; looked in {looked}; "
                        f"downloading failed: {exc}; {how}") from None


# ------------------------------------------------------------------- fetching

def file_url(dataset: Dataset, f: DataFile) -> str:
    """Where `fetch` downloads ``f`` from: ``$CMBENCH_MIRROR/<folder>/<path>`` or ``f.url``."""
    mirror = os.environ.get(ENV_MIRROR, "")
    if mirror:
        tail = "/".join(urllib.parse.quote(p) for p in f"{dataset.folder}/{f.path}".split("/") if p)
        return f"{mirror.rstrip('/')}/{tail}"
    return f.url


def _download(url: str, target: Path, bar: Any) -> None:
    req = urllib.request.Request(url, headers={"User-Agent": "cmbench (+https://archive.ics.uci.edu)"})
    with urllib.request.urlopen(req, timeout=TIMEOUT) as resp, open(target, "wb") as out:
        while True:
            chunk = resp.read(_CHUNK)
            if not chunk:
                break
            out.write(chunk)
            bar.update(len(chunk))


def _extract(archive: Path, member: str, target: Path, url: str) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            names = zf.namelist()
            if member not in names:
                ends = [n for n in names if n.endswith("/" + member)]
                if len(ends) != 1:
                    raise DataError(f"{url}: the archive has {'no' if not ends else 'several'} member "
                                    f"{member!r}" + (f" ({', '.join(ends)})" if ends else ""))
                member = ends[0]
            with zf.open(member) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, _CHUNK)
    except zipfile.BadZipFile as exc:
        raise DataError(f"{url}: not a zip archive ({exc})") from None


def fetch(dataset: Dataset, *, progress: bool = True) -> Path:
    """Download the data set's files into the cache folder; return ``<cache>/<folder>``.

    Files already in the cache with the right digest are kept. The others are
    downloaded into a temporary folder next to the cache entry, each verified
    against its SHA-256, and only when all are verified renamed into place, so a
    failed fetch caches nothing.

    Parameters
    ----------
    dataset : the `cmbench.Dataset` to fetch; it must declare ``files``.
    progress : show a tqdm progress bar (bytes) on stderr.

    Raises
    ------
    DataError
        The data set has no files, a download failed (the message names the
        file and URL), or a downloaded file has the wrong SHA-256 (the message
        names the file and both digests).
    """
    if not dataset.files:
        raise DataError(f"data set {dataset.name} declares no data files: nothing to fetch")
    dest = cache_dir() / dataset.folder
    todo = [f for f in dataset.files
            if not ((dest / f.path).is_file() and sha256_file(dest / f.path) == f.sha256.lower())]
    if not todo:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{Path(dataset.folder).name}.", suffix=".part",
                                    dir=dest.parent))
    try:
        _fetch_into(dataset, todo, staging, progress)
        for f in todo:
            target = dest / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / "files" / f.path, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


def _fetch_into(dataset: Dataset, todo: list[DataFile], staging: Path, progress: bool) -> None:
    """Download and verify every file of ``todo`` under ``staging/files``."""
    from tqdm import tqdm  # only needed when downloading

    archives: dict[str, Path] = {}  # archive URL -> downloaded copy
    with tqdm(desc=f"fetch {dataset.name}", unit="B", unit_scale=True, unit_divisor=1024,
              file=sys.stderr, disable=not progress) as bar:
        for f in todo:
            url = file_url(dataset, f)
            if not url:
                raise DataError(f"data set {dataset.name}: no download URL for {f.path}")
            target = staging / "files" / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            base, _, member = url.partition("#")
            try:
                if member:
                    if base not in archives:
                        archives[base] = staging / f"archive-{len(archives)}.zip"
                        _download(base, archives[base], bar)
                    _extract(archives[base], urllib.parse.unquote(member), target, base)
                else:
                    _download(url, target, bar)
            except urllib.error.HTTPError as exc:
                exc.close()  # an HTTPError holds the open response
                raise DataError(f"data set {dataset.name}: could not download {f.path} "
                                f"from {base}: HTTP {exc.code} {exc.reason}") from None
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", None) or exc
                raise DataError(f"data set {dataset.name}: could not download {f.path} "
                                f"from {base}: {reason}") from None
            actual = _hash_file(target)
            if actual != f.sha256.lower():
                raise _mismatch(dataset, Path(dataset.folder) / f.path, f.sha256, actual,
                                f"downloaded from {url}; nothing was cached (a changed upstream "
                                f"file or a bad mirror)")


# --------------------------------------------------------------------- status

def status(registry: Any) -> list[dict]:
    """One row per data set of a `cmbench.load_plugins()` registry.

    Returns
    -------
    list of dicts with keys ``name``, ``shape`` (nominal (N, n) or None),
    ``rank`` (hint or None), ``present`` (True/False, or None for generated
    data), ``where`` (the folder found as a str; else the list of folders
    looked in; None for generated data) and ``error`` (a checksum problem's
    message, else None). Nothing is downloaded.
    """
    rows = []
    for name, ds in sorted(registry.datasets.items()):
        row = {"name": name, "shape": ds.shape, "rank": ds.rank, "present": None,
               "where": None, "error": None}
        if ds.files:
            looked = [str(base / ds.folder) for base in data_dirs()]
            try:
                found = locate(ds)
            except DataError as exc:
                found, row["error"] = None, str(exc)
            row["present"] = found is not None
            row["where"] = str(found) if found is not None else looked
        rows.append(row)
    return rows
