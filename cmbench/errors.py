"""Errors that are the user's to fix: the CLI prints them on one line and exits 2."""
from __future__ import annotations

import os
import traceback
from typing import Callable


class UserError(Exception):
    """A mistake in the user's input (suite file, plugin, data file, option)."""


class SuiteError(UserError):
    """A suite file that cannot be read or validated; the message names file and key."""


class PluginError(UserError):
    """A plugin that cannot be loaded or breaks the contract; the message names it."""


class DataError(UserError):
    """A data file that is missing, malformed or fails its checksum."""


class CellsFailedWarning(UserWarning):
    """`cmbench.run_suite` wrote cubes in which some cells failed or timed out: the message gives
    how many and the first errors (``errors="raise"`` raises `CellsFailed` instead)."""


class CellsFailed(Exception):
    """`cmbench.run_suite(..., errors="raise")`: some cells failed or timed out. The message is
    `CellsFailedWarning`'s; ``cubes`` holds the cubes written (by experiment name)."""

    def __init__(self, message: str, cubes: dict) -> None:
        super().__init__(message)
        self.cubes = cubes


def describe_error(exc: BaseException, home: "str | os.PathLike | Callable | None" = None) -> str:
    """One line naming an exception a plugin raised and where: ``"Type: message (file:line)"``.

    Every failure of plugin code (a hook, an import, a component's call, a
    check) is reported in this form, in the cube's ``error`` variable and in
    error messages, so that the plugin's author finds the line at once.

    Parameters
    ----------
    exc : BaseException
        The exception, with its traceback.
    home : str, path-like, callable or None
        The plugin's own file (a path, or a function whose code lives there):
        the line named is the last frame in that file, so an error raised deep
        inside NumPy still points at the plugin's call. None, or no frame in
        that file: the innermost frame.

    Returns
    -------
    str
        The exception's type and message, then ``(file:line)`` when the
        traceback has a frame. A ``ValueError`` about a read-only array gets
        ``" - the plugin modified its input in place"``: cmbench hands
        components read-only arrays, so that is what such an error means.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    if callable(home):
        home = getattr(getattr(home, "__code__", None), "co_filename", None)
    own = [f for f in frames if home is not None and f.filename == os.fspath(home)]
    frame = own[-1] if own else (frames[-1] if frames else None)
    loc = f" ({frame.filename}:{frame.lineno})" if frame else ""
    msg = str(exc)
    if isinstance(exc, ValueError) and "read-only" in msg:
        msg += " - the plugin modified its input in place"
    return f"{type(exc).__name__}: {msg}{loc}"
