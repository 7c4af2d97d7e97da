"""Output paths: checked before anything is written, and kept inside the output folder.

Everything `cmbench suite` writes lives under ``--out``; a file-system problem
with an output path (a read-only file system, a file where a folder should be,
a name too long) is the user's to fix, so it becomes a one-line `UserError`
instead of a traceback halfway through a sweep.
"""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from .errors import UserError

#: errno values that mean "this path cannot be written as asked": the user's to fix.
USER_ERRNOS = frozenset(getattr(errno, name) for name in (
    "EACCES", "EPERM", "EROFS", "ENOSPC", "EDQUOT", "ENOTDIR", "EISDIR", "EEXIST", "ENAMETOOLONG",
    "ENOENT", "ELOOP", "EMLINK") if hasattr(errno, name))


def describe(exc: OSError) -> str:
    """'reason' of an OSError without the repeated path: ``[Errno 30] ...`` -> ``read-only file system``."""
    reason = exc.strerror or str(exc)
    return reason[:1].lower() + reason[1:]


def writable_folder(path: str | os.PathLike, what: str) -> Path:
    """Make ``path`` a folder (parents too) and prove it can hold a new file.

    Parameters
    ----------
    path : the folder.
    what : what it is for, in the error message (e.g. ``"output folder"``).

    Returns
    -------
    The folder, as a `Path`.

    Raises
    ------
    UserError
        A file is in the way, the file system is read-only or full, the name is
        too long, or permission is denied; the message names the path.
    """
    path = Path(path)
    for parent in (path, *path.parents):
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise UserError(f"cannot use {path} as the {what}: {parent} is a file, not a folder")
            break
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".cmbench-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        if exc.errno not in USER_ERRNOS:
            raise
        raise UserError(f"cannot write the {what} {path}: {describe(exc)}") from None
    return path



def can_make_folder(path: str | os.PathLike, what: str) -> Path:
    """Check, without making or writing anything, what `writable_folder` would find: ``--dry-run``'s check.

    The nearest existing folder on the way to ``path`` (``path`` itself when it
    exists) must be a folder this process may write in (``os.access``, which
    also says no on a read-only file system).

    Raises
    ------
    UserError
        A file is in the way, or the folder cannot be written; the message names the path.
    """
    path = Path(path)
    for parent in (path, *path.parents):
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise UserError(f"cannot use {path} as the {what}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise UserError(f"cannot write the {what} {path}: {parent} is not writable"
                                + (" (a read-only file system)" if _read_only(parent) else ""))
            break
    return path


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & getattr(os, "ST_RDONLY", 1))
    except (OSError, AttributeError):
        return False


def follow_umask(path: str | os.PathLike) -> None:
    """Give a file made by `tempfile.mkstemp` (always 0600) the mode a plain ``open`` would give it.

    Outputs are written to a temporary file and renamed into place; without this
    the cube or report would be readable by its owner only, whatever the umask.
    """
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)
