"""File helpers shared by the runner and the report: atomic writes, file digests, cleaning a folder.

Both packages write outputs and cache entries that a killed process must not
leave half-written, and both stamp files with their SHA-256; these helpers
live here so that neither package imports the other.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from .output import follow_umask


#: the drawn report pages' folder inside a suite's cache, and the names cmbench
#: writes there (`cmbench.report.pagecache`);
#: `cmbench cache clear` removes only these
PAGES = "pages"
PAGE_FILE = re.compile(r"^([0-9a-f]{64}\.pdf|index\.json|reports\.json)$")
TEMP_FILE = re.compile(r"^\..+\.tmp$")


def atomic_write(path: Path, data: bytes, durable: bool = False) -> None:
    """Write ``data`` to a temporary name in the same folder, then rename it over ``path``.

    A killed process cannot leave a renamed file half-written, so cache
    entries skip ``fsync`` (it costs milliseconds per file, thousands of times
    per run): a power cut that tears one is caught by its checksum and the
    entry recomputed.

    Parameters
    ----------
    path : the file to write; its folder must exist.
    data : its whole content.
    durable : sync the file to disk before the rename.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def replaced(path: Path, *, prefix: Optional[str] = None, suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary file beside ``path`` that becomes ``path`` when the block ends without error.

    For outputs written by a library that wants a file name (netCDF, PDF,
    Parquet): a reader never sees a half-written file, a failed write leaves
    no temporary behind, and the file gets the mode a plain ``open`` would
    give it (`cmbench.output.follow_umask`).

    Parameters
    ----------
    path : the output file; its folder must exist.
    prefix, suffix : of the temporary file's name (as `tempfile.mkstemp` takes them).

    Yields
    ------
    The temporary file's path, to be written inside the block.
    """
    fd, tmp = tempfile.mkstemp(dir=Path(path).parent, prefix=prefix, suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        follow_umask(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
