"""No tracked file names a folder of one machine.

Tests, benchmarks and documents find the real data through ``$CMBENCH_DATA_DIR``
or a path relative to the repository (``../shared/datasets``); an absolute
folder such as a home directory or the development machine's work folder
works on that machine only, and elsewhere silently skips what depends on it.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# An absolute path into a machine's own folders (its work folder, a home directory, a Windows
# user folder, a mount), not preceded by a word character, '.', '~', '-' or '/', so that "~"
# paths, relative paths and URLs pass. The examples in the test below spell "/" as "@" and
# "\" as "%", so that this file does not name such a path itself.
MACHINE_PATH = re.compile(
    r"(?<![\w.~\-/])/(?:work|home|Users|root|mnt|scratch)/[\w.\-]"
    r"|\b[A-Za-z]:\\(?:Users|work)\\", re.IGNORECASE)


def _tracked() -> list[Path]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    res = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    if res.returncode != 0:
        pytest.skip("not a git checkout")
    return [ROOT / name for name in res.stdout.decode().split("\0") if name]


def machine_paths(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each line that names an absolute machine path."""
    return [(i, line.strip()) for i, line in enumerate(text.splitlines(), 1) if MACHINE_PATH.search(line)]


def test_the_pattern_catches_machine_paths_and_spares_relative_ones():
    def spell(text):
        return text.replace("@", "/").replace("%", "\\")

    flagged = [spell(t) for t in ['SHARED = Path("@work@shared@datasets")', "see @home@ana@data",
                                  "@Users@bo@x.csv", "C:%Users%bo%data", "export CMBENCH_DATA_DIR=@mnt@data@sets"]]
    spared = [spell(t) for t in ["..@shared@datasets", "~@work@data", "$CMBENCH_DATA_DIR@leaf",
                                 "https:@@x.org@home@page", "path@work@x", "cmbench@report@figures.py"]]
    assert [bool(machine_paths(t)) for t in flagged] == [True] * len(flagged)
    assert [bool(machine_paths(t)) for t in spared] == [False] * len(spared)


def test_no_tracked_file_names_an_absolute_machine_path():
    offenders = []
    for path in _tracked():
        if not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        raw = path.read_bytes()
        if b"\0" in raw[:8192]:  # binary (figures, tables)
            continue
        for lineno, line in machine_paths(raw.decode("utf-8", errors="replace")):
            offenders.append(f"{path.relative_to(ROOT)}:{lineno}: {line[:120]}")
    assert not offenders, ("absolute machine paths in tracked files (use $CMBENCH_DATA_DIR or a path "
                           "relative to the repository):\n" + "\n".join(offenders))
