"""cmbench's version: the one place it is written.

The package's metadata (``pyproject.toml`` reads it from here), results cubes,
stage-cache records, reports and ``cmbench --version`` all take it from this
module. Inner modules import it from here rather than from the package facade
(``cmbench/__init__.py``), so that importing any of them never imports the
whole public API.
"""
from __future__ import annotations

__version__ = "0.1.0"
