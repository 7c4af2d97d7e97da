"""Where a report may be written, and writing it: checked before anything is drawn.

A report is rendered whole in memory, then written to a hidden temporary name
beside its path (``.<name>.<random>.tmp``, which `cmbench cache clear` and the
next report of that path remove) and renamed over it, so a reader never sees
half a report, and an error names the report's path, never the temporary file.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from ...errors import UserError
from ...files import check_target, replaced

__all__ = ["check_out", "write_bytes"]


def check_out(out: str | os.PathLike, inputs: Sequence = (), *, kind: str) -> Path:
    """``out`` as a path a report of ``kind`` may be written to, its folder made.

    Raises
    ------
    UserError
        ``out`` is one of ``inputs`` (the cubes read), a folder, an existing file
        that is not a ``kind`` report (by suffix), or its folder cannot be made.
    """
    out = Path(out)
    if out.is_dir():
        raise UserError(f"{out}: is a folder; give the report's file name with -o")
    if out.exists():
        for item in inputs:
            if isinstance(item, (str, os.PathLike)) and Path(item).exists() and os.path.samefile(item, out):
                raise UserError(f"refusing to write the report over its input {item}; choose another -o")
    out = Path(check_target(out, inputs=[i for i in inputs if isinstance(i, (str, os.PathLike))], kind=kind))
    blocker = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise UserError(f"{out}: {blocker} is a file, not a folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{out}: cannot make its folder: {exc.strerror or exc}") from None
    if not os.access(out.parent, os.W_OK):
        raise UserError(f"{out}: its folder {out.parent} is not writable")
    return out


def write_bytes(out: Path, blob: bytes) -> None:
    """Write a rendered report to ``out`` (a temporary file renamed over it).

    Raises
    ------
    UserError
        The file cannot be written; the message names ``out``.
    """
    _remove_stale(out)
    try:
        with replaced(out, prefix=f".{out.name}.", suffix=".tmp") as tmp:  # the mode a plain open gives
            tmp.write_bytes(blob)
    except OSError as exc:
        raise UserError(f"{out}: cannot write the report: {exc.strerror or exc}") from None


def _remove_stale(out: Path) -> None:
    """Temporary files of an earlier write of ``out`` that was killed before its rename (older
    than a minute: a write in progress takes milliseconds)."""
    import re
    import time

    pattern = re.compile(rf"^\.{re.escape(out.name)}\.[A-Za-z0-9_]+\.tmp$")
    try:
        entries = list(os.scandir(out.parent))
    except OSError:
        return
    for entry in entries:
        if (pattern.match(entry.name) and entry.is_file(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_mtime < time.time() - 60):
            try:
                os.unlink(entry.path)
            except OSError:
                pass
