"""File helpers shared by the runner and the report: the path guard, atomic writes, file digests,
cleaning a folder.

Both packages write outputs and cache entries that a killed process must not
leave half-written, and both stamp files with their SHA-256; these helpers
live here so that neither package imports the other.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Optional

from .errors import UserError
from .output import follow_umask


#: the drawn report pages' folder inside a suite's cache, and the names cmbench
#: writes there (`cmbench.report.pagecache`);
#: `cmbench cache clear` removes only these
PAGES = "pages"
PAGE_FILE = re.compile(r"^([0-9a-f]{64}\.(pdf|svg)|index\.json|reports\.json)$")
TEMP_FILE = re.compile(r"^\..+\.tmp$")


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary name in the same folder, then rename it over ``path``.

    A killed process cannot leave a renamed file half-written, so cache
    entries skip ``fsync`` (it costs milliseconds per file, thousands of times
    per run): a power cut that tears one is caught by its checksum and the
    entry recomputed.

    Parameters
    ----------
    path : the file to write; its folder must exist.
    data : its whole content.
    """
    with replaced(path, prefix=f".{path.name}.", umask=False) as tmp:
        tmp.write_bytes(data)


@contextmanager
def replaced(path: Path, *, prefix: Optional[str] = None, suffix: str = ".tmp", umask: bool = True
             ) -> Iterator[Path]:
    """A temporary file beside ``path`` that becomes ``path`` when the block ends without error.

    For outputs written by a library that wants a file name (netCDF, PDF,
    Parquet): a reader never sees a half-written file, a failed write leaves
    no temporary behind, and the file gets the mode a plain ``open`` would
    give it (`cmbench.output.follow_umask`).

    Parameters
    ----------
    path : the output file; its folder must exist.
    prefix, suffix : of the temporary file's name (as `tempfile.mkstemp` takes them).
    umask : give the file the umask's mode (False: the owner's only, as `atomic_write`'s cache entries).

    Yields
    ------
    The temporary file's path, to be written inside the block.
    """
    fd, tmp = tempfile.mkstemp(dir=Path(path).parent, prefix=prefix, suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        if umask:
            follow_umask(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        # a full disk or a file size limit surfaces as OSError, or as a library's own error
        # (netCDF's "HDF error"): both are the user's to fix, and nothing was replaced
        why = _no_room(Path(tmp)) if isinstance(exc, (OSError, RuntimeError)) else ""
        Path(tmp).unlink(missing_ok=True)
        if why:
            raise UserError(f"{path}: cannot write it: {why}; nothing was replaced") from None
        raise


def _no_room(tmp: Path) -> str:
    """Why a write into ``tmp`` failed for lack of room ('' when there was room): a full file
    system, or the file size limit (``ulimit -f``) reached."""
    try:
        import resource  # POSIX only

        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        limited = soft != resource.RLIM_INFINITY
    except (ImportError, OSError, ValueError):
        soft, limited = 0, False
    try:
        size = tmp.stat().st_size
    except OSError:
        size = 0
    if limited and size + _SLACK >= soft:
        return f"the file size limit (ulimit -f) of {soft:,} bytes is reached"
    try:
        st = os.statvfs(tmp.parent)
    except (OSError, AttributeError):
        return ""
    if st.f_bavail * st.f_frsize < _SLACK:
        return "the file system is full"
    return ""


#: room below which a failed write is put down to a full disk or a size limit (a netCDF chunk or a
#: cache record is larger than what is left)
_SLACK = 1 << 20


def sha256_of(path: Path) -> Optional[str]:
    """The SHA-256 of a file's content (hex), or None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def remove_matching(folder: Path, *patterns: re.Pattern) -> int:
    """Delete the plain files in ``folder`` whose name matches one of ``patterns``; return how many.

    A missing or unreadable folder removes nothing; links and folders are never removed.
    """
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if any(p.match(entry.name) for p in patterns) and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
            removed += 1
    return removed


# ---------------------------------------------------------------- the path guard
#: the file names each kind of output takes (a kind without an entry takes any name)
KIND_SUFFIXES = {
    "pdf": (".pdf",), "html": (".html", ".htm"), "netcdf": (".nc",), "csv": (".csv",),
    "parquet": (".parquet",), "tex": (".tex",), "png": (".png",),
}
#: leading bytes -> kind (`sniff`)
_MAGIC = (
    (b"%PDF", "pdf"), (b"CDF\x01", "netcdf"), (b"CDF\x02", "netcdf"), (b"CDF\x05", "netcdf"),
    (b"\x89HDF\r\n\x1a\n", "netcdf"), (b"PAR1", "parquet"), (b"\x89PNG\r\n\x1a\n", "png"),
    (b"PK\x03\x04", "zip"),
)
_SNIFF_BYTES = 1024


def sniff(path: str | os.PathLike) -> str:
    """The kind of an existing regular file, from its first bytes (never from its name).

    Returns
    -------
    str
        ``"empty"``, ``"pdf"``, ``"netcdf"`` (netCDF-3 or HDF5), ``"parquet"``,
        ``"png"``, ``"zip"`` (a data table), ``"html"`` (``<!DOCTYPE html`` or ``<html``), ``"tex"``
        (a table cmbench wrote), ``"csv"`` (text whose first line has a
        comma), ``"json"``, ``"text"`` or ``"binary"``.
    """
    with open(path, "rb") as f:
        head = f.read(_SNIFF_BYTES)
    if not head:
        return "empty"
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if b"\0" in head:
        return "binary"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = head[:-4].decode("utf-8", "replace") if len(head) == _SNIFF_BYTES else ""
        if not text or "\ufffd" in text:
            return "binary"
    lead = text.lstrip("\ufeff \t\r\n").lower()
    if lead.startswith(("<!doctype html", "<html")):
        return "html"
    if lead.startswith("% written by cmbench"):
        return "tex"
    if lead.startswith(("{", "[")):
        return "json"
    if "," in lead.split("\n", 1)[0]:
        return "csv"
    return "text"


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, from its ``st_mode``: ``"a folder"``, ``"a FIFO
    (named pipe)"``, ``"a character device"``...; every message refusing one names it so."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def file_problem(path: str | os.PathLike) -> str:
    """Why ``path`` cannot be read as a regular file ('' when it can), in the words of a message:
    ``"does not exist"``, ``"is a folder, not a file"``, ``"is a FIFO (named pipe), not a file"``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return f"is {kind_of(st.st_mode)}, not a file"
    return ""


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_target(path: str | os.PathLike, *, root: str | os.PathLike | None = None,
                 inputs: Iterable[str | os.PathLike] = (), kind: Optional[str] = None,
                 action: str = "write") -> Path:
    """Decide whether cmbench may write (or delete) ``path``: the one guard of every writer and cleaner.

    Parameters
    ----------
    path : the file (or, for ``action="delete"`` of a folder's content, the folder) to write or delete.
    root : the folder cmbench owns (``--out``, a cache folder); when given,
        ``path`` must lie inside it and no folder on the way from ``root`` down
        to ``path`` (nor ``path`` itself) may be a symbolic link, which could
        lead outside it. ``root`` itself may be a link: the user chose it.
    inputs : files the command reads; ``path`` may be none of them.
    kind : the kind of file written (a key of `KIND_SUFFIXES`, ``"json"``..., or ``"folder"``):
        ``path`` must carry one of its suffixes, and an existing file there
        must be empty or of the same kind by its content (`sniff`), so that a
        cube, a table or a user's file is never replaced by a report.
    action : ``"write"`` or ``"delete"`` (said in the message).

    Returns
    -------
    Path
        ``path`` as a `Path`.

    Raises
    ------
    cmbench.errors.UserError
        One line naming ``path`` and why cmbench refuses it.
    """
    path = Path(path)
    verb = "delete" if action == "delete" else "write"
    for given in inputs:
        if _same_file(path, Path(given)):
            raise UserError(f"{path}: cmbench will not {verb} it: it is one of the inputs")
    if kind is not None and kind in KIND_SUFFIXES and path.suffix.lower() not in KIND_SUFFIXES[kind]:
        raise UserError(f"{path}: a {kind.upper() if len(kind) <= 4 else kind} file needs a name ending in "
                        f"{' or '.join(KIND_SUFFIXES[kind])}, not {path.suffix or '(no suffix)'!r}")
    if root is not None:
        root = Path(root)
        absolute = Path(os.path.abspath(path))
        base = Path(os.path.abspath(root))
        try:
            rel = absolute.relative_to(base)
        except ValueError:
            raise UserError(f"{path}: cmbench will not {verb} it: it lies outside {root}") from None
        step = base
        for part in rel.parts:
            step = step / part
            if step.is_symlink():  # False when absent or unreadable: the write itself says why
                raise UserError(f"{path}: cmbench will not {verb} it: {step} is a symbolic link "
                                f"inside {root}, which could lead outside it; remove the link")
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        for parent in path.parents:  # the nearest existing folder on the way must be a folder
            if parent.exists() or parent.is_symlink():
                if not parent.is_dir():
                    raise UserError(f"{path}: cmbench will not {verb} it: {parent} is a file, "
                                    "not a folder") from None
                break
        return path
    except OSError:
        return path  # the write itself reports an unreadable path, naming it
    if kind == "folder" or stat.S_ISDIR(st.st_mode):
        if stat.S_ISDIR(st.st_mode) and (kind == "folder" or action == "delete"):
            return path
        raise UserError(f"{path}: cmbench will not {verb} it: it is "
                        + ("a file, not a folder" if kind == "folder" else "a folder"))
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path}: cmbench will not {verb} it: it is not a regular file")
    if kind is not None:
        found = sniff(path)
        if found not in ("empty", kind):
            raise UserError(f"{path}: cmbench will not {verb} it: it holds a file of another kind "
                            f"({found}, not {kind}); remove it or choose another name")
    return path
