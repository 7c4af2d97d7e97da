"""Print a pip constraints file pinning every dependency of pyproject.toml to its lower bound.

CI installs the project with these constraints in a second venv and runs the same
tests, so that the lowest versions `pyproject.toml` admits are tested, not only the
newest ones the registry serves. A requirement without a lower bound is left free.

    python .ci/lower_bounds.py [EXTRA ...] > constraints.txt
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

LOWER = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$")


def lower_bounds(requirements: list[str]) -> dict[str, str]:
    """Map each requirement's name to its ``>=`` bound (markers are not used here)."""
    pins: dict[str, str] = {}
    for req in requirements:
        name, _extras, spec = LOWER.match(req.split(";")[0]).groups()
        for clause in spec.split(","):
            clause = clause.strip()
            if clause.startswith(">="):
                pins[name.lower()] = clause[2:].strip()
    return pins


def main(extras: list[str]) -> None:
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    pins = lower_bounds(requirements)
    for name, version in sorted(pins.items()):
        print(f"{name}=={version}")


if __name__ == "__main__":
    main(sys.argv[1:])
