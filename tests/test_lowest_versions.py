"""CI's second job installs the lowest versions pyproject.toml admits: the pins cover every dependency."""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_dependency_has_a_lower_bound_and_ci_pins_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["test"]
    out = subprocess.run([sys.executable, str(ROOT / ".ci" / "lower_bounds.py"), "test"],
                         capture_output=True, text=True, check=True).stdout
    pins = dict(line.split("==") for line in out.split())
    for req in requirements:
        m = re.match(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*>=\s*([^,;\s]+)", req)
        assert m, f"{req}: no lower bound, so CI's lowest-versions job cannot pin it"
        assert pins[m[1].lower()] == m[2], req
