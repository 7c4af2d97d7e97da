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
    """Check what `writable_folder` would find, leaving nothing behind: ``--dry-run``'s check.

    The nearest existing folder on the way to ``path`` (``path`` itself when it
    exists) must be a folder in which this process can make an entry: a probe
    folder is made there and removed at once (``os.access`` alone says yes to
    root where the file system says no).

    Raises
    ------
    UserError
        A file is in the way, or the folder cannot be written (read-only, no
        permission); the message names the path.
    """
    path = Path(path)
    for parent in (path, *path.parents):
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise UserError(f"cannot use {path} as the {what}: {parent} is a file, not a folder")
            try:
                os.rmdir(tempfile.mkdtemp(dir=parent, prefix=".cmbench-probe."))
            except OSError as exc:
                if exc.errno not in USER_ERRNOS:
                    raise
                raise UserError(f"cannot write the {what} {path}: {describe(exc)}") from None
            break
    return path


def follow_umask(path: str | os.PathLike) -> None:
    """Give a file made by `tempfile.mkstemp` (always 0600) the mode a plain ``open`` would give it.

    Outputs are written to a temporary file and renamed into place; without this
    the cube or report would be readable by its owner only, whatever the umask.
    """
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)
