"""Errors that are the user's to fix: the CLI prints them on one line and exits 2."""
from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input (suite file, plugin, data file, option)."""


class SuiteError(UserError):
    """A suite file that cannot be read or validated; the message names file and key."""


class PluginError(UserError):
    """A plugin that cannot be loaded or breaks the contract; the message names it."""


class DataError(UserError):
    """A data file that is missing, malformed or fails its checksum."""
