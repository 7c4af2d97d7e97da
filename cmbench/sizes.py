"""Sizes in bytes, read from and written for people: ``2GB`` <-> 2000000000.

A leaf module (it imports only `cmbench.errors`), so that the options, the data
loader and the CLI read and show sizes without importing the runner.
"""
from __future__ import annotations

import math
import re

from .errors import UserError


def parse_size(text: "str | int | float") -> int:
    """A size such as ``'2GB'``, ``'500M'``, ``'1.5G'``, ``'0'`` or a number of bytes, in bytes.

    Units are decimal (k = 1000); a trailing ``B`` or ``iB`` is allowed.

    Parameters
    ----------
    text : str or number
        The size.

    Returns
    -------
    int
        The number of bytes.

    Raises
    ------
    UserError
        When ``text`` is not a size, or is negative or not finite.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
        if not m:
            raise UserError(f"cache size {text!r}: expected a size such as 2GB, 500MB or 0")
        value, unit = float(m.group(1)), m.group(2).upper()
    if not math.isfinite(value) or value < 0:
        raise UserError(f"cache size {text!r}: must be a non-negative size")
    return int(value * 1000 ** " KMGT".index(unit or " "))


def format_size(n: float) -> str:
    """``n`` bytes for people: ``'512 B'``, ``'1.5 kB'``, ..., at most in GB.

    Parameters
    ----------
    n : number
        A number of bytes.

    Returns
    -------
    str
    """
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"
