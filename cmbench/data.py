"""Locating, checking and fetching the files of real data sets.

A data set declares its files (`cmbench.DataFile`: a path under the data set's
``folder``, a SHA-256 and a download URL). They are looked for, in order, in

1. ``$CMBENCH_DATA_DIR`` (if set), e.g. a shared read-only copy;
2. the per-user cache folder: ``$CMBENCH_CACHE_DIR``, else
   ``$XDG_CACHE_HOME/cmbench``, else ``~/.cache/cmbench``.

A folder counts only when it holds every file, each with the declared digest.
Downloads go to the cache folder only, and only verified bytes land there.

Shipped tables
--------------
A data set may also declare a `cmbench.ShippedTable`: the arrays its loader
needs, derived from those files once and shipped inside its plugin (a
compressed ``.npz``, see `write_table`), with the source's URL, licence,
attribution and the files' SHA-256 in its metadata. `load_arrays` derives the
arrays from the source files when a data folder above holds them, else reads
the shipped table, and only downloads when neither is there. The values are
bit-identical either way (a test compares them), so results do not depend on
which copy was read. `verify` downloads the source and compares the derived
arrays, not the files' bytes, with the shipped table.

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

import functools
import hashlib
import io
import json
import os
import shutil
import stat
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

import numpy as np

from .components import DataFile, Dataset
from .errors import DataError
from .files import check_target, kind_of

__all__ = [
    "ChecksumError", "DataError", "Verification", "cache_dir", "check_file_size", "compare_tables",
    "data_dirs", "derive_table", "fetch", "file_url", "load_arrays", "locate", "max_file_bytes",
    "read_table", "require", "sha256_file", "status", "table_meta", "verify", "write_table",
]

ENV_DATA_DIR = "CMBENCH_DATA_DIR"
ENV_CACHE_DIR = "CMBENCH_CACHE_DIR"
ENV_MIRROR = "CMBENCH_MIRROR"
ENV_OFFLINE = "CMBENCH_OFFLINE"
ENV_MAX_FILE_GB = "CMBENCH_MAX_FILE_GB"
DEFAULT_MAX_FILE_GB = 1.0  # a table read whole into memory takes a few times its size on disk

TIMEOUT = 60.0  # seconds without a byte before a download is abandoned

class ChecksumError(DataError):
    """A data file whose SHA-256 is not the declared one (message: the file and both digests)."""


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

def env_limit(var: str, default: float, kind: type = float, error: type = DataError,
              what: str = "a positive number") -> float:
    """A limit from environment variable ``var`` (``default`` when unset or blank), as ``kind``.

    Raises ``error`` naming the variable when it is not a positive finite number.
    """
    text = os.environ.get(var, "").strip()
    try:
        value = kind(float(text)) if text else default
    except (ValueError, OverflowError):
        value = float("nan")
    if not (0 < value < float("inf")):
        raise error(f"environment variable {var}={text!r}: expected {what}")
    return value


def max_file_bytes() -> int:
    """Largest user data file read into memory: ``$CMBENCH_MAX_FILE_GB`` GB, default 1 GB."""
    return int(env_limit(ENV_MAX_FILE_GB, DEFAULT_MAX_FILE_GB, what="a positive number of GB") * 1e9)


def _size(n: int) -> str:
    """A size in a message, in the unit that shows it (a tiny limit reads 100 B, not 0.00 GB)."""
    from .sizes import format_size

    return format_size(n)


#: bytes read at a time from a user's file (hashing and reading)
CHUNK = 1 << 20




def open_user_file(path: Path | str, what: str, limit: Optional[int] = None):
    """Open a user's data file for reading: the one way cmbench opens one.

    The file is opened without blocking (a FIFO cannot hang the open) and
    checked on its descriptor before a byte is read: a regular file only (a
    device, FIFO, socket or folder is refused: its reported size means
    nothing and reading it may never end), of at most ``limit`` bytes.

    Parameters
    ----------
    path : the file.
    what : who reads it, for the message (e.g. ``"data set csv (x.csv)"``).
    limit : largest size in bytes; default `max_file_bytes`.

    Returns
    -------
    A binary file object (close it, or use it in a ``with`` block); its
    ``size`` attribute is not set: use ``os.fstat(f.fileno()).st_size``.

    Raises
    ------
    DataError
        One line naming the file and why: absent, unreadable, not a regular
        file, or larger than the limit.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise DataError(f"{what}: {path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{what}: {path} is a folder, not a regular file") from None
    except OSError as exc:
        raise DataError(f"{what}: {path} cannot be read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DataError(f"{what}: {path} is {kind_of(st.st_mode)}, not a regular file")
        limit = max_file_bytes() if limit is None else limit
        if st.st_size > limit:
            raise DataError(f"{what}: {path} is {_size(st.st_size)}, above the limit of {_size(limit)} "
                            f"for a file read into memory; set {ENV_MAX_FILE_GB} (in GB) to raise it")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def hash_user_file(path: Path | str, what: str, limit: Optional[int] = None) -> str:
    """Hex SHA-256 of a user's file (`open_user_file`), read in bounded chunks: a file that grows
    past the limit while it is read is refused, not read to the end."""
    limit = max_file_bytes() if limit is None else limit
    h, total = hashlib.sha256(), 0
    with open_user_file(path, what, limit) as f:
        while chunk := f.read(CHUNK):
            total += len(chunk)
            if total > limit:
                raise DataError(f"{what}: {path} grew past the limit of {_size(limit)} while it was read")
            h.update(chunk)
    return h.hexdigest()


def check_file_size(path: Path | str, what: str) -> Path:
    """Refuse a file too large to read whole into memory, before a byte of it is read.

    Parameters
    ----------
    path : the file.
    what : who reads it, for the message (e.g. ``"data set csv (x.csv)"``).

    Raises
    ------
    DataError
        The file is not a regular file (`open_user_file`) or is larger than
        `max_file_bytes`; the message gives both sizes and how to raise the limit.
    """
    path = Path(path)
    open_user_file(path, what).close()  # a regular file within the limit, checked on its descriptor
    return path


def sha256_file(path: Path | str) -> str:
    """Hex SHA-256 of a file, memoised per (path, size, mtime) within the process: a sweep
    hashes each data or plugin file once, and a file replaced in place is hashed again.

    Raises `DataError` for a device, FIFO or folder (`open_user_file`), OSError when absent.
    """
    st = os.stat(path)  # before Path(): "" names no file, while Path("") is the working directory
    return _digest((str(Path(path).resolve()), st.st_size, st.st_mtime_ns))


@functools.lru_cache(maxsize=1024)
def _digest(key: tuple[str, int, int]) -> str:
    """The digest of file ``key[0]`` as it was at (size, mtime) ``key[1:]``."""
    return _hash_file(Path(key[0]))


def _hash_file(path: Path) -> str:
    # no size limit: declared source files are checked by their digest, and a plugin's or a data
    # file's digest keys the cache, whatever their size (a loader reading a file whole applies it)
    return hash_user_file(path, "file", limit=1 << 62)


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


def _shipped(dataset: Dataset) -> Optional[Path]:
    """The data set's shipped table file, when it declares one that is installed."""
    table = getattr(dataset, "table", None)
    if table is None or not table.path:
        return None
    path = Path(table.path)
    return path if path.is_file() else None


def require(dataset: Dataset) -> Path:
    """Where the data set will be read from: its source folder, else its shipped table.

    `locate` the source folder; else the shipped table file (nothing is
    downloaded when the data set ships one); else `fetch` the files (unless
    offline); else raise.

    Returns
    -------
    The source folder (``<dir>/<folder>``) or the shipped table's file.

    Raises
    ------
    DataError
        Not found and not downloadable; the message says where it looked and
        how to fetch. Also a checksum mismatch (see `locate`, `fetch`).
    """
    if not dataset.files:
        raise DataError(f"data set {dataset.name} declares no data files (generated data needs none)")
    return _present(dataset) or _fetch_or_explain(dataset)


def _present(dataset: Dataset) -> Optional[Path]:
    """The source folder (`locate`), else the installed shipped table, else None: nothing is downloaded."""
    return locate(dataset) or _shipped(dataset)


def _fetch_or_explain(dataset: Dataset) -> Path:
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
        while chunk := resp.read(CHUNK):
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
                shutil.copyfileobj(src, out, CHUNK)
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
    staging = _staging(dest)
    try:
        _fetch_into(dataset, todo, staging, progress)
        _install(todo, staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


def _staging(dest: Path) -> Path:
    """A fresh temporary folder beside ``dest`` (same file system, so renames are atomic)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent))


def _install(files: Iterable[DataFile], staging: Path, dest: Path) -> None:
    for f in files:
        target = check_target(dest / f.path, root=dest)  # a declared path cannot lead out of the cache
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / "files" / f.path, target)


def _fetch_into(dataset: Dataset, todo: list[DataFile], staging: Path, progress: bool,
                check: bool = True) -> dict[str, str]:
    """Download every file of ``todo`` under ``staging/files``; return their SHA-256 by path.

    With ``check`` a file whose digest is not the declared one raises
    `ChecksumError`; without, the digests are only returned.
    """
    from tqdm import tqdm  # only needed when downloading

    archives: dict[str, Path] = {}  # archive URL -> downloaded copy
    digests: dict[str, str] = {}
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
            actual = digests[f.path] = _hash_file(target)
            if check and actual != f.sha256.lower():
                raise _mismatch(dataset, Path(dataset.folder) / f.path, f.sha256, actual,
                                f"downloaded from {url}; nothing was cached (a changed upstream "
                                f"file or a bad mirror); `cmbench datasets fetch {dataset.name} "
                                f"--verify` compares the data it holds with the shipped table")
    return digests


# --------------------------------------------------------------------- tables

TABLE_FORMAT = "cmbench-table/1"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed zip timestamps: the same arrays give the same bytes


def _encode_column(col: np.ndarray) -> dict[str, np.ndarray]:
    """A float64 column as its raw values, or as distinct values and an index when that is smaller.

    Distinct values are taken over the bit patterns, so -0.0, 0.0 and every NaN
    payload survive: decoding gives back the same bytes.
    """
    bits = np.ascontiguousarray(col, dtype=np.float64).view(np.uint64)
    values, index = np.unique(bits, return_inverse=True)
    itype = np.min_scalar_type(max(values.size - 1, 0))  # the smallest unsigned type that indexes them
    if values.size * 8 + bits.size * itype.itemsize < bits.size * 8 // 2:
        return {"values": values.view(np.float64), "index": index.reshape(-1).astype(itype)}
    return {"raw": bits.view(np.float64)}


def write_table(path: Path | str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> Path:
    """Write named arrays and their metadata as a compressed ``.npz`` that `read_table` reads.

    Float arrays (1-D or 2-D) are stored column by column, each either as is or
    as its distinct values plus a small-integer index, whichever is smaller;
    other arrays (integers, strings) as they are. The zip members carry a fixed
    timestamp, so equal inputs give byte-identical files. Plain ``numpy.load``
    opens the file too (the metadata is the JSON string in member ``meta``).

    Parameters
    ----------
    path : the file to write (its folder must exist).
    arrays : name -> array; names hold no ``.``; no object arrays.
    meta : JSON-serialisable metadata (source, licence, ...); the key
        ``arrays`` is reserved for the encoding.

    Returns
    -------
    The path written.
    """
    members: dict[str, np.ndarray] = {}
    layout = {}
    for name, array in arrays.items():
        array = np.asarray(array)
        if "." in name or array.dtype.hasobject:
            raise ValueError(f"array {name!r}: names hold no '.', and object arrays cannot be stored")
        if array.dtype == np.float64 and array.ndim in (1, 2):
            cols = array.reshape(array.shape[0], -1)
            encodings = []
            for j in range(cols.shape[1]):
                parts = _encode_column(cols[:, j])
                encodings.append("dictionary" if "index" in parts else "raw")
                members.update({f"{name}.{j}.{k}": v for k, v in parts.items()})
            layout[name] = {"dtype": "float64", "shape": list(array.shape), "columns": encodings}
        else:
            members[name] = array
            layout[name] = {"dtype": array.dtype.str, "shape": list(array.shape)}
    doc = {"format": TABLE_FORMAT, **{k: v for k, v in meta.items() if k != "arrays"}, "arrays": layout}
    members = {"meta": np.array(json.dumps(doc, indent=1, ensure_ascii=False)), **members}
    path = Path(path)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for key, value in members.items():
            buf = io.BytesIO()
            value = np.asarray(value)
            if not value.flags.c_contiguous:  # (ascontiguousarray would turn a 0-d array 1-d)
                value = np.ascontiguousarray(value)
            np.lib.format.write_array(buf, value, allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue(), compresslevel=9)
    return path


def read_table(path: Path | str) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays and metadata of a table written by `write_table`.

    Raises
    ------
    DataError
        The file is missing, damaged or not a cmbench table (the message names it).
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            meta = json.loads(str(npz["meta"][()]))
            if meta.get("format") != TABLE_FORMAT:
                raise DataError(f"{path}: not a cmbench table (format {meta.get('format')!r}, "
                                f"expected {TABLE_FORMAT!r})")
            arrays = {}
            for name, spec in meta["arrays"].items():
                if "columns" not in spec:
                    arrays[name] = npz[name]
                    continue
                cols = []
                for j, how in enumerate(spec["columns"]):
                    if how == "dictionary":
                        cols.append(npz[f"{name}.{j}.values"][npz[f"{name}.{j}.index"]])
                    else:
                        cols.append(npz[f"{name}.{j}.raw"])
                arrays[name] = np.stack(cols, axis=1).reshape(spec["shape"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot read the table ({type(exc).__name__}: {exc})") from None
    return arrays, meta


def table_meta(dataset: Dataset) -> dict:
    """The metadata `derive_table` writes for ``dataset``: its ``about``, source files and their SHA-256."""
    return {"name": dataset.name, **dict(dataset.table.about),
            "source_files": {f.path: f.sha256.lower() for f in dataset.files}}


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise: equal bits (so -0.0 differs from 0.0), or both NaN."""
    if a.dtype.kind == "f":
        bits = np.dtype(f"u{a.dtype.itemsize}")
        a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
        return (a.view(bits) == b.view(bits)) | (np.isnan(a) & np.isnan(b))
    return a == b


def compare_tables(expected: Mapping[str, np.ndarray], actual: Mapping[str, np.ndarray],
                   labels: tuple[str, str] = ("shipped", "derived")) -> Optional[str]:
    """The first difference between two sets of named arrays, or None when they are identical.

    Floats must agree bit for bit (any NaN equals any NaN). The message names
    the array, the row, and the column (by name when a ``columns`` array is
    present), with both values.
    """
    a_name, b_name = labels
    for name in sorted(set(expected) | set(actual)):
        if name not in actual or name not in expected:
            where = b_name if name not in actual else a_name
            return f"array {name!r} is absent from the {where} table"
        a, b = np.asarray(expected[name]), np.asarray(actual[name])
        if a.dtype.kind != b.dtype.kind or (a.dtype.kind == "f" and a.dtype != b.dtype):
            return f"array {name!r}: dtype {a.dtype} in the {a_name} table, {b.dtype} {b_name}"
        if a.shape != b.shape:
            return f"array {name!r}: shape {a.shape} in the {a_name} table, {b.shape} {b_name}"
        differ = ~_same(a, b)
        if not differ.any():
            continue
        pos = tuple(int(i) for i in np.argwhere(differ)[0])
        where = f"row {pos[0] + 1}" if pos else "value"
        if len(pos) == 2:
            columns = expected.get("columns")
            col = pos[1]
            label = repr(str(columns[col])) if columns is not None and len(columns) > col else str(col + 1)
            where += f", column {label}"
        return (f"array {name!r} {where}: {a[pos].item()!r} in the {a_name} table, {b[pos].item()!r} {b_name} "
                f"({int(differ.sum())} of {differ.size} values differ)")
    return None


def load_arrays(dataset: Dataset) -> tuple[dict[str, np.ndarray], str]:
    """The arrays a data set's loader needs, and which copy they came from.

    From the source files when a data folder holds them (`locate`), else from
    the shipped table, else from the files after `require` downloads them.

    Returns
    -------
    (arrays, origin) with origin ``"source files in <folder>"`` or ``"shipped table <file>"``.

    Raises
    ------
    DataError
        No copy found (see `require`), a damaged source file or table.
    """
    if getattr(dataset, "table", None) is None:
        raise DataError(f"data set {dataset.name} declares no table to load")
    where = require(dataset)
    if where.is_dir():
        return dict(dataset.table.derive(where)), f"source files in {where}"
    return read_table(where)[0], f"shipped table {where}"


def derive_table(dataset: Dataset, out: Path | str) -> Path:
    """Derive the data set's table from its located source files and write it into folder ``out``.

    Returns the file written (named like the shipped one).

    Raises
    ------
    DataError
        The data set ships no table, or its source files are not found.
    """
    if getattr(dataset, "table", None) is None:
        raise DataError(f"data set {dataset.name} declares no table")
    folder = locate(dataset)
    if folder is None:
        raise DataError(f"data set {dataset.name}: source files not found; looked in {_looked(dataset)}")
    arrays = dataset.table.derive(folder)
    target = check_target(Path(out) / Path(dataset.table.path).name, root=out, kind="zip")
    return write_table(target, arrays, table_meta(dataset))


@dataclass
class Verification:
    """What `verify` found.

    Attributes
    ----------
    name : the data set.
    difference : the first difference between the shipped table and the
        table derived from the download (`compare_tables`), or None.
    digests : path -> (declared SHA-256, downloaded SHA-256), every file.
    cached : the cache folder the files were installed into (only when every
        digest matched), else None.
    """

    name: str
    difference: Optional[str]
    digests: dict = field(default_factory=dict)
    cached: Optional[Path] = None

    @property
    def bytes_differ(self) -> list[str]:
        return [p for p, (want, got) in self.digests.items() if want != got]


def verify(dataset: Dataset, *, progress: bool = True) -> Verification:
    """Download the data set's source, derive its table, and compare it with the shipped table.

    The table is compared, not the files' bytes: a source re-saved with other
    metadata (an ``.xls`` opened in Excel) but the same cells verifies. Files
    whose digests all match the declared ones are installed into the cache
    folder, as `fetch` does; otherwise nothing is cached (`locate` would refuse them).

    Raises
    ------
    DataError
        The data set ships no table, a download failed, or the download cannot be parsed.
    """
    if _shipped(dataset) is None:  # also None when the data set declares no table
        raise DataError(f"data set {dataset.name} ships no table to verify against; "
                        f"`cmbench datasets fetch {dataset.name}` downloads and checks its files")
    shipped, _ = read_table(dataset.table.path)
    dest = cache_dir() / dataset.folder
    staging = _staging(dest)
    try:
        digests = _fetch_into(dataset, list(dataset.files), staging, progress, check=False)
        derived = dataset.table.derive(staging / "files")
        result = Verification(dataset.name, compare_tables(shipped, derived),
                              {f.path: (f.sha256.lower(), digests[f.path]) for f in dataset.files})
        if not result.bytes_differ:
            _install(dataset.files, staging, dest)
            result.cached = dest
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


# --------------------------------------------------------------------- status

def status(registry: Any) -> list[dict]:
    """One row per data set of a `cmbench.load_plugins()` registry.

    Returns
    -------
    list of dicts with keys ``name``, ``shape`` (nominal (N, n) or None),
    ``rank`` (hint or None), ``present`` (True/False, or None for generated
    data), ``copy`` (which copy a run reads: ``"source files"``, ``"shipped
    table"``, or None when absent or generated), ``where`` (that copy's folder
    or file as a str; else the list of folders looked in; None for generated
    data) and ``error`` (a checksum problem's message, else None). Nothing is
    downloaded.
    """
    rows = []
    for name, ds in sorted(registry.datasets.items()):
        row = {"name": name, "shape": ds.shape_for(), "rank": ds.rank, "present": None, "copy": None,
               "where": None, "error": None}
        if ds.files:
            try:
                found = _present(ds)
            except DataError as exc:
                found, row["error"] = None, str(exc)
            row["present"] = found is not None
            if found is not None:
                row["copy"], row["where"] = "source files" if found.is_dir() else "shipped table", str(found)
            else:
                row["where"] = [str(base / ds.folder) for base in data_dirs()]
        rows.append(row)
    return rows
